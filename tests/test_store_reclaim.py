"""reclaim_stale: the ceiling first, never a parked step, never attempts."""


import pytest

from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.store import steps
from chalicelib.events.store.steps import GAVE_UP
from tests.support.factory import make_run, materialise, specs, step_row

MAX = 3


def _claimed(db, clock, lease=60, attempts_before=0):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    (s,) = materialise(db, run, 1, specs("world.spawn"))
    if attempts_before:
        db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET attempts = %s WHERE id = %s", (attempts_before, s.id)))
        s = step_row(db, s.id)
    claim = db.autocommit(lambda tx: steps.claim(tx, s, clock.now(), lease))
    return s, claim


def _reclaim(db, clock):
    return db.transaction(lambda tx: steps.reclaim_stale(tx, clock.now(), MAX))


def test_an_expired_lease_goes_back_to_pending_with_its_attempts(db, clock):
    s, _ = _claimed(db, clock)
    clock.advance(61)
    result = _reclaim(db, clock)
    assert [r.id for r in result.requeued] == [s.id] and result.gave_up == []
    after = step_row(db, s.id)
    assert (after.status, after.attempts, after.claimed_by, after.claim_expires_at) == (StepStatus.PENDING, 1, None, None)


def test_a_live_lease_is_left_alone(db, clock):
    s, claim = _claimed(db, clock)
    clock.advance(59)
    assert _reclaim(db, clock).requeued == []
    assert step_row(db, s.id).claimed_by == claim.token


def test_a_parked_step_survives_any_number_of_sweeps_for_any_time(db, clock):
    s, claim = _claimed(db, clock)
    db.transaction(lambda tx: steps.park(tx, claim, "wait for a GM"))
    for days in (1, 30, 3650):
        clock.advance(days * 86400)
        result = _reclaim(db, clock)
        assert result.requeued == [] and result.gave_up == []
    assert step_row(db, s.id).parked


def test_at_the_ceiling_an_expired_step_fails_instead_of_being_requeued(db, clock):
    s, _ = _claimed(db, clock, attempts_before=MAX - 1)
    clock.advance(61)
    result = _reclaim(db, clock)
    assert [g.id for g in result.gave_up] == [s.id] and result.requeued == []
    after = step_row(db, s.id)
    assert (after.status, after.attempts, after.last_error) == (StepStatus.FAILED, MAX, GAVE_UP)
    assert after.finished_at == clock.now()


def test_the_sweep_never_resets_attempts(db, clock):
    s, _ = _claimed(db, clock)
    for expected in (1, 2):
        clock.advance(61)
        _reclaim(db, clock)
        assert step_row(db, s.id).attempts == expected
        db.autocommit(lambda tx: steps.claim(tx, step_row(db, s.id), clock.now(), 60))
    clock.advance(61)
    _reclaim(db, clock)
    assert (step_row(db, s.id).status, step_row(db, s.id).attempts) == (StepStatus.FAILED, 3)


@pytest.mark.parametrize("bad", [0, -1, "3", None, 2.5])
def test_a_bad_ceiling_is_rejected(db, clock, bad):
    s, claim = _claimed(db, clock)
    clock.advance(61)
    with pytest.raises(ValueError):
        db.transaction(lambda tx: steps.reclaim_stale(tx, clock.now(), bad))
    assert step_row(db, s.id).claimed_by == claim.token
