"""The runner's state changes and their log rows commit together: a log row the database refuses
takes its change back with it (the sweep, the start, an answer, leaving a phase)."""

import pymysql
import pytest

from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import StepSpec
from chalicelib.events.runner import Budget
from chalicelib.events.store import steps
from tests.support.factory import document, make_run, run_row
from tests.support.interference import log_rows_refused
from tests.support.runner_kit import log_of, schedule, step, tick
from tests.support.scenes import snapshot

TWO_PHASES = document([[step("world.spawn")], [step("world.reward")]])


def _tick_with_log_refused(db, runner, condition):
    """A tick while the log refuses some rows: the run it was advancing ends its turn in error."""
    with log_rows_refused(db, condition):
        report = runner.tick(Budget.for_seconds(60))
    assert report.errors == 1


def _steps(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))


def test_a_sweep_whose_log_rows_fail_takes_no_step_back(db, clock, runner):
    run = schedule(db, clock.now(), TWO_PHASES)
    db.transaction(lambda tx: tx.execute("UPDATE event_runs SET status = 'running', current_phase = 1 WHERE id = %s", (run.id,)))
    (spawn,) = db.transaction(lambda tx: steps.materialise_phase(tx, run.id, 1, [StepSpec("world.spawn")]))
    db.autocommit(lambda tx: steps.claim(tx, spawn, clock.now(), runner.rules.lease_seconds))  # its claimer dies
    clock.advance(runner.rules.lease_seconds + 1)
    before = snapshot(db, run.id)

    with log_rows_refused(db, "JSON_VALUE(NEW.detail, '$.cause') = 'lease expired'"), pytest.raises(pymysql.err.MySQLError):
        runner.tick(Budget.for_seconds(60))
    assert snapshot(db, run.id) == before  # still running under its expired lease, nothing logged

    tick(runner)  # the next sweep takes it back, logged, and the step is dispatched again
    causes = [e.detail.get("cause") for e in log_of(db, run.id) if e.step_id == spawn.id and e.kind == "step.status"]
    assert causes[0] == "lease expired"


def test_a_start_whose_log_rows_fail_leaves_the_run_scheduled(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), TWO_PHASES)
    _tick_with_log_refused(db, runner, "NEW.kind = 'run.phase'")
    after = run_row(db, run.id)
    assert (after.status, after.current_phase) == (RunStatus.SCHEDULED, None)
    assert _steps(db, run.id) == [] and log_of(db, run.id) == [] and game_bridge.received() == []


def test_an_answer_whose_log_rows_fail_leaves_the_step_in_flight(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), TWO_PHASES)
    _tick_with_log_refused(db, runner, "NEW.kind = 'step.dispatch'")
    (spawn,) = _steps(db, run.id)
    assert (spawn.status, spawn.attempts) == (StepStatus.RUNNING, 1) and spawn.claimed_by is not None
    assert not [e for e in log_of(db, run.id) if e.step_id == spawn.id]


def test_a_phase_change_whose_log_rows_fail_leaves_the_run_in_its_phase(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), TWO_PHASES)
    _tick_with_log_refused(db, runner, "NEW.kind = 'run.phase' AND NEW.phase = 2")
    after = run_row(db, run.id)
    assert (after.status, after.current_phase) == (RunStatus.RUNNING, 1)
    assert [s.phase for s in _steps(db, run.id)] == [1]


def test_an_ending_whose_log_rows_fail_leaves_the_run_running(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), document([[step("world.spawn")]]))
    _tick_with_log_refused(db, runner, "JSON_VALUE(NEW.detail, '$.to') = 'completed'")
    after = run_row(db, run.id)
    assert (after.status, after.current_phase) == (RunStatus.RUNNING, 1)
    assert [e.detail["to"] for e in log_of(db, run.id) if e.kind == "run.status"] == ["starting", "running"]


def _tries_of_a_unit_killed_before_its_commit_is_answered(db, last=None) -> int:
    """How many times the unit ran whose connection was killed once, before its COMMIT's answer came back
    (`last`: the unit's last write, sent with its COMMIT; without one the COMMIT goes alone)."""
    calls = []
    killer = db.connect()

    def work(tx):
        calls.append(tx.one("SELECT CONNECTION_ID() AS id")["id"])
        if len(calls) == 1:
            with killer.cursor() as cursor:
                cursor.execute(f"KILL CONNECTION {int(calls[0])}")  # what is sent next gets no answer
        if last is not None:
            tx.ends_with_next()
            last(tx)

    try:
        with pytest.raises(pymysql.err.MySQLError):
            db.transaction(work)
    finally:
        killer.close()
    return len(calls)


def test_a_unit_of_work_whose_commit_went_unanswered_is_not_run_again(db):
    # Its outcome is unknown (the server may have committed): running it again could do it twice.
    assert _tries_of_a_unit_killed_before_its_commit_is_answered(db) == 1


def test_a_unit_whose_last_statement_carried_its_commit_and_went_unanswered_is_not_run_again(db, clock):
    """The runner's claim takes the COMMIT with it (`Tx.ends_with_next`): once that request has gone out,
    a lost answer leaves the outcome as unknown as a COMMIT's of its own."""
    run = make_run(db, clock.now())
    bump = "UPDATE event_runs SET grace_seconds = grace_seconds + 1 WHERE id = %s"
    assert _tries_of_a_unit_killed_before_its_commit_is_answered(db, lambda tx: tx.execute(bump, (run.id,))) == 1
