"""core.wait holds the next step once, from the wait's first start; core.cue parks for a person."""

from datetime import timedelta

from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.store import steps
from tests.support.factory import document, run_row
from tests.support.runner_kit import RULES, log_of, schedule, step, tick

WAIT_THEN_SPAWN = document([[step("core.wait", seconds=60), step("world.spawn"), step("world.reward")]])


def _steps(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))


def test_wait_delays_the_next_step_by_its_seconds_and_only_that_step(db, clock, runner, game_bridge):
    start = clock.now()
    run = schedule(db, start, WAIT_THEN_SPAWN)
    tick(runner)
    wait, spawn, reward = _steps(db, run.id)
    assert wait.status is StepStatus.DONE
    assert spawn.due_at == start + timedelta(seconds=60) and reward.due_at is None
    clock.advance(59)
    assert tick(runner).dispatched == 0
    clock.advance(1)
    tick(runner)
    assert [r.action_id for r in game_bridge.received()] == ["world.spawn", "world.reward"]
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_a_second_dispatch_of_the_wait_does_not_delay_the_next_step_twice(db, clock, runner):
    start = clock.now()
    run = schedule(db, start, WAIT_THEN_SPAWN)
    tick(runner)
    wait = _steps(db, run.id)[0]
    # As if the wait's answer had been lost: it is pending again, and dispatched again 30 s later.
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET status = 'pending', finished_at = NULL WHERE id = %s", (wait.id,)))
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET wake_at = %s WHERE id = %s", (start, run.id)))  # the sweep's wake
    clock.advance(30)
    tick(runner)
    wait, spawn, _ = _steps(db, run.id)
    assert wait.status is StepStatus.DONE and wait.attempts == 2 and wait.started_at == start
    assert spawn.status is StepStatus.PENDING and spawn.due_at == start + timedelta(seconds=60)


def test_a_wait_re_dispatched_after_a_crash_holds_from_its_first_start(db, clock, runner, game_bridge):
    start = clock.now()
    run = schedule(db, start, WAIT_THEN_SPAWN)
    tick(runner)  # started; the wait ran. Rewind the wait to "claimed at start by a process that died".
    wait = _steps(db, run.id)[0]
    db.autocommit(lambda tx: tx.execute(
        "UPDATE event_run_steps SET status = 'running', attempts = 1, claimed_by = 'dead', claim_expires_at = %s,"
        " finished_at = NULL WHERE id = %s", (start + timedelta(seconds=RULES.lease_seconds), wait.id)))
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET due_at = NULL WHERE run_id = %s AND seq = 1", (run.id,)))
    clock.advance(20)
    assert tick(runner).dispatched == 0  # the dead process's lease still stands
    clock.set(start + timedelta(seconds=RULES.lease_seconds + 1))
    report = tick(runner)
    assert report.requeued == 1
    wait, spawn, _ = _steps(db, run.id)
    assert wait.attempts == 2 and spawn.due_at == start + timedelta(seconds=60)  # not now + 60
    assert spawn.status is StepStatus.DONE  # long due by now, so it went in the same tick


def test_a_cue_parks_and_no_number_of_ticks_or_sweeps_re_dispatches_it(db, clock, runner):
    run = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire"), step("core.announce", message="lit")]]))
    tick(runner)
    for _ in range(5):
        clock.advance(RULES.lease_seconds * 10)
        report = tick(runner)
        assert report.dispatched == 0 and report.requeued == 0 and report.gave_up == 0
    cue, after = _steps(db, run.id)
    assert cue.parked and cue.attempts == 1 and cue.last_error == "waiting for a game master: Light the bonfire"
    assert after.status is StepStatus.PENDING
    assert runner.actions.cue_channel.posts == ["Light the bonfire"]
    assert [e.detail["outcome"] for e in log_of(db, run.id) if e.kind == "step.dispatch"] == ["parked"]


def test_a_cue_skipped_by_a_person_lets_the_phase_move_on(db, clock, runner):
    run = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire"), step("core.announce", message="lit")]]))
    tick(runner)
    cue = _steps(db, run.id)[0]
    assert db.transaction(lambda tx: steps.skip_by_human(tx, cue.id, clock.now(), "rained out", parked=True))
    tick(runner)
    assert [s.status for s in _steps(db, run.id)] == [StepStatus.SKIPPED, StepStatus.DONE]
    assert run_row(db, run.id).status is RunStatus.COMPLETED
