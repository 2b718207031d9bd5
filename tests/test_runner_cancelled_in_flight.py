"""A step still in flight when its run is cancelled ends cancelled, never pending or parked in a finished run."""

import threading

from chalicelib.events import commands
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import StepSpec
from chalicelib.events.store import steps
from chalicelib.events.store.steps import RUN_ENDED
from devtools.kit.game_bridge import Answer
from tests.support.factory import document, run_row
from tests.support.runner_kit import log_of, schedule, step, tick


def _cancel_while_in_flight(db, clock, game_bridge, answer_status):
    """The bridge answers only after a person has cancelled the run (which leaves the leased step alone)."""
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("world.reward")]]))
    release = threading.Event()
    game_bridge.script("world.spawn", Answer(answer_status, gate=release))

    def cancel_then_answer():
        game_bridge.wait_for(1)
        commands.cancel(db, run.id, actor="alice", now=clock.now(), reason="storm")
        release.set()

    canceller = threading.Thread(target=cancel_then_answer)
    canceller.start()
    return run, canceller


def _steps(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))


def test_a_retry_answer_for_a_cancelled_run_cancels_the_step(db, clock, runner, game_bridge):
    run, canceller = _cancel_while_in_flight(db, clock, game_bridge, 503)
    tick(runner)
    canceller.join()
    spawn, reward = _steps(db, run.id)
    assert (spawn.status, spawn.last_error, spawn.claimed_by) == (StepStatus.CANCELLED, RUN_ENDED, None)
    assert reward.status is StepStatus.CANCELLED  # closed by the cancel itself
    assert run_row(db, run.id).status is RunStatus.CANCELLED
    last = [e for e in log_of(db, run.id) if e.step_id == spawn.id][-1]
    assert (last.kind, last.detail["from"], last.detail["to"]) == ("step.status", "running", "cancelled")
    clock.advance(3600)
    tick(runner)
    assert len(game_bridge.received("world.spawn")) == 1


def test_a_done_answer_for_a_cancelled_run_is_still_recorded_done(db, clock, runner, game_bridge):
    run, canceller = _cancel_while_in_flight(db, clock, game_bridge, 200)
    tick(runner)
    canceller.join()
    assert [s.status for s in _steps(db, run.id)] == [StepStatus.DONE, StepStatus.CANCELLED]


def test_the_sweep_cancels_an_expired_step_of_a_finished_run_instead_of_requeueing_it(db, clock, runner):
    run = schedule(db, clock.now(), document([[step("world.spawn")]]))
    db.transaction(lambda tx: tx.execute("UPDATE event_runs SET status = 'running', current_phase = 1 WHERE id = %s", (run.id,)))
    spawn = db.transaction(lambda tx: steps.materialise_phase(tx, run.id, 1, [StepSpec("world.spawn")]))[0]
    db.autocommit(lambda tx: steps.claim(tx, spawn, clock.now(), 60))  # its claimer then dies
    commands.cancel(db, run.id, actor="alice", now=clock.now())
    assert _steps(db, run.id)[0].status is StepStatus.RUNNING  # leased: the cancel left it alone
    clock.advance(61)
    report = tick(runner)
    assert (report.abandoned, report.requeued, report.gave_up) == (1, 0, 0)
    assert _steps(db, run.id)[0].status is StepStatus.CANCELLED
