"""The claim and the claimer's fenced writes: park, reschedule, finish."""

from datetime import timedelta

import pytest

from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.store import steps
from tests.support.factory import make_run, materialise, specs, step_row

LEASE = 120


def _one_step(db, clock, status=RunStatus.RUNNING):
    run = make_run(db, clock.now(), status=status, current_phase=1)
    (s,) = materialise(db, run, 1, specs("world.spawn"))
    return run, s


def _claim(db, s, now, lease=LEASE):
    return db.autocommit(lambda tx: steps.claim(tx, s, now, lease))


def test_claim_takes_a_pending_step_with_a_lease_and_counts_the_attempt(db, clock):
    _, s = _one_step(db, clock)
    claim = _claim(db, s, clock.now())
    assert claim is not None and claim.attempt == 1
    after = step_row(db, s.id)
    assert after.status is StepStatus.RUNNING and after.attempts == 1
    assert after.claimed_by == claim.token
    assert after.claim_expires_at == clock.now() + timedelta(seconds=LEASE)
    assert after.started_at == clock.now()


def test_a_step_is_claimed_once(db, clock):
    _, s = _one_step(db, clock)
    assert _claim(db, s, clock.now()) is not None
    assert _claim(db, s, clock.now()) is None
    assert step_row(db, s.id).attempts == 1


def test_a_claim_from_a_stale_read_loses(db, clock):
    _, s = _one_step(db, clock)
    first = _claim(db, s, clock.now())
    db.transaction(lambda tx: steps.reschedule(tx, first, clock.now()))
    # `s` still says attempts == 0, but the row is at 1 now
    assert _claim(db, s, clock.now()) is None
    assert _claim(db, step_row(db, s.id), clock.now()).attempt == 2


def test_a_step_not_yet_due_is_not_claimed(db, clock):
    _, s = _one_step(db, clock)
    later = clock.now() + timedelta(seconds=60)
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET due_at = %s WHERE id = %s", (later, s.id)))
    s = step_row(db, s.id)
    assert _claim(db, s, clock.now()) is None
    assert _claim(db, s, clock.advance(60)) is not None


@pytest.mark.parametrize("status", ["scheduled", "paused", "completed", "cancelled", "failed", "missed"])
def test_a_step_of_a_run_that_is_not_runnable_is_not_claimed(db, clock, status):
    _, s = _one_step(db, clock, status=RunStatus(status))
    assert _claim(db, s, clock.now()) is None
    assert step_row(db, s.id).status is StepStatus.PENDING


@pytest.mark.parametrize("status", ["starting", "running", "ending"])
def test_a_step_of_a_runnable_run_is_claimed(db, clock, status):
    _, s = _one_step(db, clock, status=RunStatus(status))
    assert _claim(db, s, clock.now()) is not None


def test_a_step_without_its_idempotency_key_is_not_claimed(db, clock):
    _, s = _one_step(db, clock)
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET idempotency_key = '' WHERE id = %s", (s.id,)))
    assert _claim(db, s, clock.now()) is None


def test_started_at_is_kept_from_the_first_attempt(db, clock):
    _, s = _one_step(db, clock)
    first_start = clock.now()
    claim = _claim(db, s, first_start)
    db.transaction(lambda tx: steps.reschedule(tx, claim, clock.now(), "503"))
    _claim(db, step_row(db, s.id), clock.advance(30))
    assert step_row(db, s.id).started_at == first_start


def test_finish_records_the_outcome_and_clears_the_lease(db, clock):
    _, s = _one_step(db, clock)
    claim = _claim(db, s, clock.now())
    assert db.transaction(lambda tx: steps.finish(tx, claim, StepStatus.REFUSED, clock.advance(1), "no spawn point"))
    after = step_row(db, s.id)
    assert (after.status, after.last_error, after.claimed_by, after.claim_expires_at) == (StepStatus.REFUSED, "no spawn point", None, None)
    assert after.finished_at == clock.now()


@pytest.mark.parametrize("write", ["finish", "park", "reschedule"])
def test_a_write_with_a_stale_token_changes_nothing(db, clock, write):
    _, s = _one_step(db, clock)
    claim = _claim(db, s, clock.now())
    stale = type(claim)(claim.step_id, "someone-else", claim.attempt)
    wrong_attempt = type(claim)(claim.step_id, claim.token, claim.attempt + 1)
    calls = {
        "finish": lambda tx, c: steps.finish(tx, c, StepStatus.DONE, clock.now()),
        "park": lambda tx, c: steps.park(tx, c, "cue posted"),
        "reschedule": lambda tx, c: steps.reschedule(tx, c, clock.now(), "503"),
    }
    before = step_row(db, s.id)
    for fence in (stale, wrong_attempt):
        assert db.transaction(lambda tx: calls[write](tx, fence)) is False
    assert step_row(db, s.id) == before
    assert db.transaction(lambda tx: calls[write](tx, claim)) is True


def test_finish_refuses_statuses_that_belong_to_people(db, clock):
    _, s = _one_step(db, clock)
    claim = _claim(db, s, clock.now())
    for status in ("skipped", "cancelled", "pending", "exploded"):
        with pytest.raises(ValueError):
            db.transaction(lambda tx: steps.finish(tx, claim, status, clock.now()))
    assert step_row(db, s.id).status is StepStatus.RUNNING


def test_reschedule_returns_to_pending_with_a_due_time_and_keeps_attempts(db, clock):
    _, s = _one_step(db, clock)
    claim = _claim(db, s, clock.now())
    due = clock.now() + timedelta(seconds=30)
    db.transaction(lambda tx: steps.reschedule(tx, claim, due, "bridge answered 503"))
    after = step_row(db, s.id)
    assert (after.status, after.attempts, after.due_at, after.claimed_by, after.last_error) == (
        StepStatus.PENDING, 1, due, None, "bridge answered 503")


def test_park_leaves_the_step_running_with_no_lease_and_confirm_finishes_it(db, clock):
    _, s = _one_step(db, clock)
    claim = _claim(db, s, clock.now())
    assert db.transaction(lambda tx: steps.park(tx, claim, "Light the bonfire"))
    parked = step_row(db, s.id)
    assert parked.parked and parked.claimed_by is None and parked.last_error == "Light the bonfire"
    assert db.transaction(lambda tx: steps.confirm_parked(tx, s.id, clock.advance(5), "lit it"))
    done = step_row(db, s.id)
    assert (done.status, done.last_error, done.finished_at) == (StepStatus.DONE, "lit it", clock.now())


def test_confirm_refuses_a_step_with_a_live_lease_and_a_pending_one(db, clock):
    _, s = _one_step(db, clock)
    assert not db.transaction(lambda tx: steps.confirm_parked(tx, s.id, clock.now(), None))
    _claim(db, s, clock.now())
    assert not db.transaction(lambda tx: steps.confirm_parked(tx, s.id, clock.now(), None))
    assert step_row(db, s.id).status is StepStatus.RUNNING


def test_a_zombie_claimer_cannot_overwrite_the_step_after_it_was_reclaimed(db, clock):
    _, s = _one_step(db, clock)
    zombie = _claim(db, s, clock.now(), lease=10)
    clock.advance(11)
    db.transaction(lambda tx: steps.reclaim_stale(tx, clock.now(), 3))
    live = _claim(db, step_row(db, s.id), clock.now())
    assert live.attempt == 2
    assert db.transaction(lambda tx: steps.finish(tx, live, StepStatus.DONE, clock.now()))
    assert not db.transaction(lambda tx: steps.finish(tx, zombie, StepStatus.FAILED, clock.now(), "late"))
    assert step_row(db, s.id).status is StepStatus.DONE


def test_bad_lease_is_rejected_before_anything_is_written(db, clock):
    _, s = _one_step(db, clock)
    for bad in (-1, "120", None, True):
        with pytest.raises(ValueError):
            _claim(db, s, clock.now(), lease=bad)
    assert step_row(db, s.id).status is StepStatus.PENDING
