"""The statements people drive (skip, cancel, requeue), delay_next, and the phase cursor."""

from datetime import timedelta

from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.store import steps
from tests.conftest import START
from tests.support.factory import make_run, materialise, specs, step_row


def _phase(db, clock, n=4):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    return run, materialise(db, run, 1, specs(*["world.spawn"] * n))


def _claim(db, clock, s):
    return db.autocommit(lambda tx: steps.claim(tx, step_row(db, s.id), clock.now(), 120))


def _set(db, s, **cols):
    assignments = ", ".join(f"{k} = %s" for k in cols)
    db.autocommit(lambda tx: tx.execute(f"UPDATE event_run_steps SET {assignments} WHERE id = %s", (*cols.values(), s.id)))


def test_skip_takes_pending_and_parked_steps_but_not_a_leased_one(db, clock):
    _, (pending, parked, leased, _) = _phase(db, clock)
    db.transaction(lambda tx: steps.park(tx, _claim(db, clock, parked), None))
    _claim(db, clock, leased)
    assert not db.transaction(lambda tx: steps.skip_by_human(tx, pending.id, clock.now(), None, parked=True))
    assert not db.transaction(lambda tx: steps.skip_by_human(tx, parked.id, clock.now(), None, parked=False))
    assert db.transaction(lambda tx: steps.skip_by_human(tx, pending.id, clock.now(), "not tonight", parked=False))
    assert db.transaction(lambda tx: steps.skip_by_human(tx, parked.id, clock.now(), None, parked=True))
    for parked_as in (True, False):
        assert not db.transaction(lambda tx: steps.skip_by_human(tx, leased.id, clock.now(), None, parked=parked_as))
    assert [step_row(db, s.id).status for s in (pending, parked, leased)] == [StepStatus.SKIPPED, StepStatus.SKIPPED, StepStatus.RUNNING]
    assert step_row(db, pending.id).last_error == "not tonight"


def test_skip_refuses_a_terminal_step(db, clock):
    _, (s, *_) = _phase(db, clock)
    _set(db, s, status="failed")
    for parked_as in (True, False):
        assert not db.transaction(lambda tx: steps.skip_by_human(tx, s.id, clock.now(), None, parked=parked_as))
    assert step_row(db, s.id).status is StepStatus.FAILED


def test_cancel_open_closes_pending_and_parked_and_leaves_a_leased_step(db, clock):
    run, (done, parked, leased, pending) = _phase(db, clock)
    _set(db, done, status="done")
    db.transaction(lambda tx: steps.park(tx, _claim(db, clock, parked), None))
    claim = _claim(db, clock, leased)
    assert db.transaction(lambda tx: steps.cancel_open(tx, run.id, clock.now())) == 2
    assert [step_row(db, s.id).status for s in (done, parked, leased, pending)] == [
        StepStatus.DONE, StepStatus.CANCELLED, StepStatus.RUNNING, StepStatus.CANCELLED]
    assert step_row(db, leased.id).claimed_by == claim.token


def test_cancel_pending_leaves_parked_and_leased_steps(db, clock):
    run, (parked, leased, pending, _) = _phase(db, clock)
    db.transaction(lambda tx: steps.park(tx, _claim(db, clock, parked), None))
    _claim(db, clock, leased)
    assert db.transaction(lambda tx: steps.cancel_pending(tx, run.id, clock.now())) == 2
    assert [step_row(db, s.id).status for s in (parked, leased, pending)] == [StepStatus.RUNNING, StepStatus.RUNNING, StepStatus.CANCELLED]


def _requeue(db, run, s):
    return db.transaction(lambda tx: steps.requeue_where_stopped(tx, run.id, s.id, START))


def test_requeue_takes_only_a_failed_step_and_renews_its_allowance_keeping_its_attempts(db, clock):
    run, (*_, last) = _phase(db, clock)
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET status = 'paused' WHERE id = %s", (run.id,)))
    for status in ("done", "refused", "skipped", "pending", "cancelled"):
        _set(db, last, status=status, attempts=2)
        assert not _requeue(db, run, last)
        assert step_row(db, last.id).attempts == 2
    _set(db, last, status="failed", attempts=3, last_error="503", due_at=clock.now())
    assert _requeue(db, run, last)
    after = step_row(db, last.id)
    assert (after.status, after.attempts, after.attempts_allowed_from, after.last_error, after.due_at) == (
        StepStatus.PENDING, 3, 3, None, None)


def test_requeue_refuses_a_step_behind_the_cursor_or_of_a_run_not_paused(db, clock):
    run, (a, b, c, _d) = _phase(db, clock)
    _set(db, a, status="failed")  # failed under on_failure skip: the runner went past it
    _set(db, b, status="done")
    _set(db, c, status="failed")
    assert not _requeue(db, run, c)  # the run is running, not paused
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET status = 'paused' WHERE id = %s", (run.id,)))
    assert not _requeue(db, run, a)
    assert step_row(db, a.id).status is StepStatus.FAILED
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET current_phase = 2 WHERE id = %s", (run.id,)))
    assert not _requeue(db, run, c)  # the run has left the step's phase
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET current_phase = 1 WHERE id = %s", (run.id,)))
    other_run, _ = _phase(db, clock)
    assert not _requeue(db, other_run, c)  # not this run's step
    assert _requeue(db, run, c)


def test_hold_next_delays_the_next_pending_step_once(db, clock):
    run, (wait, nxt, later, _) = _phase(db, clock)
    due = clock.now() + timedelta(seconds=60)
    assert db.transaction(lambda tx: steps.delay_next(tx, run.id, 1, wait.seq, due))
    assert step_row(db, nxt.id).due_at == due and step_row(db, later.id).due_at is None
    # a second dispatch of the same wait computes the same due time: no second push
    assert not db.transaction(lambda tx: steps.delay_next(tx, run.id, 1, wait.seq, due))
    # and an earlier hold never pulls the step in
    assert not db.transaction(lambda tx: steps.delay_next(tx, run.id, 1, wait.seq, due - timedelta(seconds=30)))
    assert step_row(db, nxt.id).due_at == due


def test_hold_next_skips_a_step_that_is_not_pending(db, clock):
    run, (wait, nxt, later, _) = _phase(db, clock)
    _set(db, nxt, status="skipped")
    due = clock.now() + timedelta(seconds=60)
    db.transaction(lambda tx: steps.delay_next(tx, run.id, 1, wait.seq, due))
    assert step_row(db, nxt.id).due_at is None and step_row(db, later.id).due_at == due


def test_the_next_open_step_is_the_lowest_pending_or_running_one(db, clock):
    run, (a, b, c, d) = _phase(db, clock)
    _set(db, a, status="failed")
    assert [s.id for s in db.autocommit(lambda tx: steps.open_steps(tx, run.id, 1))] == [b.id, c.id, d.id]
    db.transaction(lambda tx: steps.park(tx, _claim(db, clock, b), None))
    occupied = db.autocommit(lambda tx: steps.open_steps(tx, run.id, 1, limit=1))
    assert [s.id for s in occupied] == [b.id] and occupied[0].parked
    for s in (b, c, d):
        _set(db, s, status="done")
    assert db.autocommit(lambda tx: steps.open_steps(tx, run.id, 1)) == []


def test_last_started_seq_is_the_furthest_step_that_is_not_pending(db, clock):
    run, (a, b, c, d) = _phase(db, clock)
    assert db.autocommit(lambda tx: steps.last_started_seq(tx, run.id, 1)) is None
    _set(db, a, status="failed")  # failed under on_failure skip: behind the cursor
    _set(db, b, status="done")
    _set(db, c, status="failed")
    assert db.autocommit(lambda tx: steps.last_started_seq(tx, run.id, 1)) == c.seq
    assert step_row(db, d.id).status is StepStatus.PENDING


def test_status_counts(db, clock):
    run, (a, b, _c, _d) = _phase(db, clock)
    _set(db, a, status="done")
    _set(db, b, status="done")
    assert db.autocommit(lambda tx: steps.status_counts(tx, run.id)) == {"done": 2, "pending": 2}
