"""A lease holds up to and including its expiry instant; the sweep never requeues a step at its ceiling."""

from datetime import timedelta

from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.runner import Budget
from chalicelib.events.runner.walk import RunWalker
from chalicelib.events.store import runs, steps
from tests.support.factory import document, make_run, materialise, run_row, specs, step_row
from tests.support.runner_kit import log_of, schedule, step

LEASE = 60
MAX = 3
MICROSECOND = timedelta(microseconds=1).total_seconds()


def _claimed_step(db, clock, attempts_before=0):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    (s,) = materialise(db, run, 1, specs("world.spawn"))
    if attempts_before:
        db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET attempts = %s WHERE id = %s", (attempts_before, s.id)))
        s = step_row(db, s.id)
    return s, db.autocommit(lambda tx: steps.claim(tx, s, clock.now(), LEASE))


def _sweep(db, clock, limit=500):
    return db.transaction(lambda tx: steps.reclaim_stale(tx, clock.now(), MAX, limit))


def test_a_step_lease_still_holds_at_its_exact_expiry_instant(db, clock):
    s, claim = _claimed_step(db, clock)
    clock.advance(LEASE)  # now == claim_expires_at
    swept = _sweep(db, clock)
    assert (swept.requeued, swept.gave_up, swept.abandoned) == ([], [], [])
    assert step_row(db, s.id).claimed_by == claim.token

    clock.advance(MICROSECOND)
    assert [r.id for r in _sweep(db, clock).requeued] == [s.id]


def test_a_run_lease_still_holds_at_its_exact_expiry_instant(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    assert db.autocommit(lambda tx: runs.take_lease(tx, run.id, "first-worker", clock.now(), LEASE))
    clock.advance(LEASE)
    assert not db.autocommit(lambda tx: runs.take_lease(tx, run.id, "second-worker", clock.now(), LEASE))
    assert run_row(db, run.id).claimed_by == "first-worker"

    clock.advance(MICROSECOND)
    assert db.autocommit(lambda tx: runs.take_lease(tx, run.id, "second-worker", clock.now(), LEASE))
    assert run_row(db, run.id).claimed_by == "second-worker"


def test_a_tick_does_not_pick_up_a_run_whose_lease_expires_this_instant(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    db.autocommit(lambda tx: runs.take_lease(tx, run.id, "first-worker", clock.now(), LEASE))
    clock.advance(LEASE)
    assert db.autocommit(lambda tx: runs.find_due(tx, clock.now(), 10)) == []
    clock.advance(MICROSECOND)
    assert [r.id for r in db.autocommit(lambda tx: runs.find_due(tx, clock.now(), 10))] == [run.id]


def test_a_step_at_its_ceiling_is_never_requeued_when_the_give_up_sweep_is_cut_short(db, clock):
    first, _ = _claimed_step(db, clock, attempts_before=MAX - 1)
    second, _ = _claimed_step(db, clock, attempts_before=MAX - 1)
    clock.advance(LEASE + 1)

    swept = _sweep(db, clock, limit=1)  # the give-up sweep takes one; the other must wait for the next sweep
    assert len(swept.gave_up) == 1 and swept.requeued == []
    left = second if swept.gave_up[0].id == first.id else first
    waiting = step_row(db, left.id)
    assert (waiting.status, waiting.attempts) == (StepStatus.RUNNING, MAX)
    assert step_row(db, left.id).claimed_by is not None

    swept = _sweep(db, clock, limit=1)
    assert [g.id for g in swept.gave_up] == [left.id] and swept.requeued == []
    assert step_row(db, left.id).status is StepStatus.FAILED


def test_a_step_in_flight_is_not_claimed_again_even_from_a_fresh_read(db, clock):
    s, claim = _claimed_step(db, clock)
    fresh = step_row(db, s.id)  # running at attempt 1: the attempt count matches, only the status says no
    assert db.autocommit(lambda tx: steps.claim(tx, fresh, clock.now(), LEASE)) is None
    db.transaction(lambda tx: steps.park(tx, claim, "a GM must look"))
    assert db.autocommit(lambda tx: steps.claim(tx, step_row(db, s.id), clock.now(), LEASE)) is None
    after = step_row(db, s.id)
    assert (after.status, after.attempts, after.claimed_by) == (StepStatus.RUNNING, 1, None)


def test_a_scheduled_run_another_worker_holds_is_not_started(db, clock, runner, game_bridge):
    """The run lease is the first statement of the start's transaction: lost, the start writes nothing."""
    run = schedule(db, clock.now(), document([[step("world.spawn")]]))
    assert db.autocommit(lambda tx: runs.take_lease(tx, run.id, "first-worker", clock.now(), LEASE))
    walker = RunWalker(db, runner.actions, runner.rules, runner._programme_for, clock.now(),
                       Budget.for_seconds(60), runner.step_worst_case_seconds)
    report = walker.walk(run_row(db, run.id))
    assert (report.leased, report.status, report.dispatched) == (False, None, 0)
    after = run_row(db, run.id)
    assert (after.status, after.claimed_by) == (RunStatus.SCHEDULED, "first-worker")
    assert log_of(db, run.id) == [] and game_bridge.received() == []
