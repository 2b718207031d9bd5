"""pause, resume and cancel: every legal source state, every illegal one, and the log row each writes."""

from datetime import timedelta

import pytest

from chalicelib.events import commands
from chalicelib.events.errors import Conflict, NotFound
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import Health
from chalicelib.events.store import log
from tests.support.factory import make_run, run_row, step_row
from tests.support.scenes import log_rows, put_step_in, run_with_steps, set_run, snapshot

ALL = list(RunStatus)


def _refused(db, run, control, **kwargs):
    before = snapshot(db, run.id)
    with pytest.raises(Conflict) as refused:
        control(db, run.id, actor="mod", **kwargs)
    assert f"is {run.status.value}" in str(refused.value) or f"already {run.status.value}" in str(refused.value)
    assert snapshot(db, run.id) == before
    return refused.value


# ── pause ──────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("status", [RunStatus.STARTING, RunStatus.RUNNING])
def test_pause_from_a_run_in_flight_clears_its_claim_and_logs_the_actor(db, clock, status):
    run = make_run(db, clock.now(), status=status, current_phase=1 if status is RunStatus.RUNNING else None)
    set_run(db, run.id, claimed_by="tick", claim_expires_at=clock.now() + timedelta(seconds=60))
    paused = commands.pause(db, run.id, actor="mod", now=clock.advance(1), reason="  boss bugged  ")
    assert paused.status is RunStatus.PAUSED and paused.claimed_by is None and paused.claim_expires_at is None
    [entry] = log_rows(db, run.id)
    assert entry["actor"] == "mod" and entry["kind"] == "run.status"
    assert entry["detail"] == {"control": "pause", "from": status.value, "to": "paused", "reason": "boss bugged"}


@pytest.mark.parametrize("status", [s for s in ALL if s not in (RunStatus.STARTING, RunStatus.RUNNING, RunStatus.CLEANING_UP)])
def test_pause_is_refused_from_every_other_status(db, clock, status):
    _refused(db, make_run(db, clock.now(), status=status), commands.pause, now=clock.now())


def test_pause_of_an_unknown_run_is_not_found(db, clock):
    with pytest.raises(NotFound):
        commands.pause(db, 999_999, actor="mod", now=clock.now())


@pytest.mark.parametrize(
    "raw, kept", [(None, None), ("   ", None), ("  x  ", "x"), ("y" * 600, "y" * 500), (" " + "z" * 499 + " ", "z" * 499)]
)
def test_a_reason_is_trimmed_and_kept_to_500_characters(db, clock, raw, kept):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    commands.pause(db, run.id, actor="mod", now=clock.now(), reason=raw)
    assert log_rows(db, run.id)[0]["detail"]["reason"] == kept


# ── resume ─────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("phase, back_to", [(2, RunStatus.RUNNING), (None, RunStatus.STARTING)])
def test_resume_goes_back_to_where_the_phase_says_clears_the_error_and_keeps_health(db, clock, phase, back_to):
    run = make_run(db, clock.now(), status=RunStatus.PAUSED, current_phase=phase)
    set_run(db, run.id, last_error="world.spawn: 503", health="degraded")
    resumed = commands.resume(db, run.id, actor="alice", now=clock.advance(1))
    assert (resumed.status, resumed.current_phase, resumed.last_error, resumed.health) == (back_to, phase, None, Health.DEGRADED)
    [entry] = log_rows(db, run.id)
    assert entry["actor"] == "alice"
    assert entry["detail"] == {"control": "resume", "from": "paused", "to": back_to.value}


@pytest.mark.parametrize("status", [s for s in ALL if s is not RunStatus.PAUSED])
def test_resume_is_refused_unless_paused(db, clock, status):
    _refused(db, make_run(db, clock.now(), status=status, current_phase=None), commands.resume, now=clock.now())


def test_resume_of_an_unknown_run_is_not_found(db, clock):
    with pytest.raises(NotFound):
        commands.resume(db, 999_999, actor="mod", now=clock.now())


# ── cancel ─────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("status", [s for s in ALL if not s.terminal])
def test_cancel_from_any_live_status_closes_pending_and_parked_steps_but_not_a_leased_one(db, clock, status):
    run, (done, parked, leased, pending) = run_with_steps(db, clock.now(), status, n=4)
    put_step_in(db, done, "done", clock.now())
    put_step_in(db, parked, "parked", clock.now())
    put_step_in(db, leased, "leased", clock.now())
    cancelled = commands.cancel(db, run.id, actor="mod", now=clock.advance(1), reason="storm")
    assert cancelled.status is RunStatus.CANCELLED and cancelled.finished_at == clock.now()
    assert cancelled.last_error == "storm"
    assert [step_row(db, s.id).status for s in (done, parked, leased, pending)] == [
        StepStatus.DONE, StepStatus.CANCELLED, StepStatus.RUNNING, StepStatus.CANCELLED]
    [entry] = log_rows(db, run.id)
    assert entry["actor"] == "mod"
    assert entry["detail"] == {"control": "cancel", "from": status.value, "to": "cancelled", "reason": "storm", "cancelled_steps": 2}


def test_cancel_without_a_reason_says_who_called_it_off(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.SCHEDULED)
    assert commands.cancel(db, run.id, actor="mod", now=clock.now()).last_error == "cancelled by staff"


@pytest.mark.parametrize("status", [s for s in ALL if s.terminal])
def test_cancel_is_refused_once_the_run_is_over(db, clock, status):
    run, _ = run_with_steps(db, clock.now(), status)
    _refused(db, run, commands.cancel, now=clock.now())


def test_the_state_change_and_its_log_row_commit_together(db, clock, monkeypatch):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    before = snapshot(db, run.id)

    def broken_append(*args, **kwargs):
        raise RuntimeError("log write failed")

    monkeypatch.setattr(log, "append", broken_append)
    with pytest.raises(RuntimeError):
        commands.pause(db, run.id, actor="mod", now=clock.now())
    assert snapshot(db, run.id) == before and run_row(db, run.id).status is RunStatus.RUNNING
