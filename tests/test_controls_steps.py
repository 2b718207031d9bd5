"""confirm, skip and retry: legal and illegal source states, the near miss, another run's step,
and the console's list of controls agreeing with what the controls actually do."""

import pytest

from chalicelib.events import commands
from chalicelib.events.errors import Conflict, NotFound
from chalicelib.events.lifecycle import PhaseKind, RunStatus, StepStatus
from chalicelib.events.programme import PhasePlan
from chalicelib.events.store import phases, steps
from chalicelib.roles import CONTROLLERS
from tests.support.factory import run_row, step_row
from tests.support.plans import moved_by
from tests.support.scenes import STEP_STATES, log_rows, put_step_in, run_with_steps, runs_each_with_a_step_in, snapshot


def _refused(db, run, control, step_id, expected_status, **kwargs):
    before = snapshot(db, run.id)
    with pytest.raises(Conflict) as refused:
        control(db, run.id, step_id, actor="mod", **kwargs)
    assert f"is {expected_status}" in str(refused.value)
    assert snapshot(db, run.id) == before


# ── confirm ────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("run_status", [RunStatus.RUNNING, RunStatus.PAUSED])
def test_confirm_finishes_a_parked_step_as_done_with_the_note(db, clock, run_status):
    run, (cue, *_) = run_with_steps(db, clock.now(), run_status)
    put_step_in(db, cue, "parked", clock.now())
    done = commands.confirm(db, run.id, cue.id, actor="gm-lead", now=clock.advance(3), note=" bonfire lit ")
    assert (done.status, done.last_error, done.finished_at) == (StepStatus.DONE, "bonfire lit", clock.now())
    [entry] = log_rows(db, run.id)
    assert (entry["actor"], entry["step_id"], entry["kind"]) == ("gm-lead", cue.id, "step.status")
    assert entry["detail"] == {"control": "confirm", "action": "world.spawn", "from": "running", "to": "done", "note": "bonfire lit"}


@pytest.mark.parametrize("state", [s for s in STEP_STATES if s != "parked"])
def test_confirm_is_refused_for_a_step_that_is_not_parked(db, clock, state):
    run, (s, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, s, state, clock.now())
    _refused(db, run, commands.confirm, s.id, "running under a live lease" if state == "leased" else state, now=clock.now())


# ── skip ───────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("state", ["pending", "parked"])
@pytest.mark.parametrize("run_status", [RunStatus.STARTING, RunStatus.RUNNING, RunStatus.PAUSED, RunStatus.ENDING])
def test_skip_takes_a_pending_or_parked_step_of_a_live_run(db, clock, state, run_status):
    run, (s, *_) = run_with_steps(db, clock.now(), run_status)
    put_step_in(db, s, state, clock.now())
    skipped = commands.skip(db, run.id, s.id, actor="mod", now=clock.advance(1), reason="not tonight")
    assert (skipped.status, skipped.last_error) == (StepStatus.SKIPPED, "not tonight")
    [entry] = log_rows(db, run.id)
    assert entry["actor"] == "mod"
    assert entry["detail"] == {
        "control": "skip", "action": "world.spawn", "from": "pending" if state == "pending" else "running",
        "to": "skipped", "reason": "not tonight"}


@pytest.mark.parametrize("state", [s for s in STEP_STATES if s not in ("pending", "parked")])
def test_skip_is_refused_for_a_leased_or_finished_step(db, clock, state):
    run, (s, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, s, state, clock.now())
    _refused(db, run, commands.skip, s.id, "running under a live lease" if state == "leased" else state, now=clock.now())


@pytest.mark.parametrize("run_status", [s for s in RunStatus if s.terminal])
def test_skip_is_refused_once_the_run_is_over_even_for_a_pending_step(db, clock, run_status):
    run, (s, *_) = run_with_steps(db, clock.now(), run_status)
    _refused(db, run, commands.skip, s.id, run_status.value, now=clock.now())


# ── retry ──────────────────────────────────────────────────────────────────
def _stopped_at_failure(db, clock, run_status=RunStatus.PAUSED):
    """A run stopped at its second step, which failed on its third attempt."""
    run, (first, failed, rest) = run_with_steps(db, clock.now(), run_status)
    put_step_in(db, first, "done", clock.now())
    put_step_in(db, failed, "failed", clock.now())
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET attempts = 3, last_error = '503' WHERE id = %s", (failed.id,)))
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET last_error = '503', health = 'degraded' WHERE id = %s", (run.id,)))
    return run_row(db, run.id), first, failed, rest


def test_retry_requeues_the_failed_step_and_resumes_the_run_in_one_action(db, clock):
    run, _, failed, _ = _stopped_at_failure(db, clock)
    result = commands.retry(db, run.id, failed.id, actor="mod", now=clock.advance(5))
    assert result.resumed is True
    # attempts only rise: the retry keeps them and renews the allowance the ceiling counts
    assert (result.step.status, result.step.attempts, result.step.attempts_allowed_from, result.step.last_error) == (
        StepStatus.PENDING, 3, 3, None)
    assert (result.run.status, result.run.last_error, result.run.health.value) == (RunStatus.RUNNING, None, "degraded")
    requeued, resumed = log_rows(db, run.id)
    assert requeued["actor"] == resumed["actor"] == "mod"
    assert requeued["detail"] == {"control": "retry", "action": "world.spawn", "from": "failed", "to": "pending", "attempts": 3}
    assert resumed["detail"] == {"control": "retry", "from": "paused", "to": "running"}


@pytest.mark.parametrize("run_status", [s for s in RunStatus if s is not RunStatus.PAUSED])
def test_retry_is_refused_unless_the_run_is_paused(db, clock, run_status):
    run, _, failed, _ = _stopped_at_failure(db, clock, run_status)
    _refused(db, run, commands.retry, failed.id, run_status.value, now=clock.now())


@pytest.mark.parametrize("state", [s for s in STEP_STATES if s != "failed"])
def test_retry_is_refused_for_a_step_that_did_not_fail(db, clock, state):
    run, _, failed, _ = _stopped_at_failure(db, clock)
    put_step_in(db, failed, state, clock.now())
    _refused(db, run, commands.retry, failed.id, "running under a live lease" if state == "leased" else state, now=clock.now())


def test_retry_is_refused_for_a_failed_step_of_a_phase_the_run_has_left(db, clock):
    run, _, failed, _ = _stopped_at_failure(db, clock)
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET current_phase = 2 WHERE id = %s", (run.id,)))
    run = run_row(db, run.id)
    before = snapshot(db, run.id)
    with pytest.raises(Conflict, match="phase 1, which the run has left"):
        commands.retry(db, run.id, failed.id, actor="mod", now=clock.now())
    assert snapshot(db, run.id) == before


def test_the_near_miss_a_failed_and_skipped_step_behind_the_cursor_is_not_retryable(db, clock):
    # Step 0 failed under on_failure skip and the phase moved on; step 2 then failed and paused the run.
    run, (behind, done, stopped_at) = run_with_steps(db, clock.now(), RunStatus.PAUSED, on_failure="skip")
    put_step_in(db, behind, "failed", clock.now())
    put_step_in(db, done, "done", clock.now())
    put_step_in(db, stopped_at, "failed", clock.now())
    before = snapshot(db, run.id)
    with pytest.raises(Conflict, match="not stopped at this step"):
        commands.retry(db, run.id, behind.id, actor="mod", now=clock.now())
    assert snapshot(db, run.id) == before
    assert commands.retry(db, run.id, stopped_at.id, actor="mod", now=clock.now()).step.status is StepStatus.PENDING
    assert step_row(db, behind.id).status is StepStatus.FAILED


# ── scoping ────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("control", [commands.confirm, commands.skip, commands.retry])
def test_a_step_of_another_run_is_not_found_and_left_alone(db, clock, control):
    mine, _ = run_with_steps(db, clock.now(), RunStatus.PAUSED)
    other, _, theirs, _ = _stopped_at_failure(db, clock)
    put_step_in(db, theirs, "parked" if control is commands.confirm else "pending" if control is commands.skip else "failed", clock.now())
    before = snapshot(db, other.id)
    with pytest.raises(NotFound):
        control(db, mine.id, theirs.id, actor="mod", now=clock.now())
    assert snapshot(db, other.id) == before


@pytest.mark.parametrize("control", [commands.confirm, commands.skip, commands.retry])
def test_a_step_control_on_an_unknown_run_or_step_is_not_found(db, clock, control):
    run, (s, *_) = run_with_steps(db, clock.now(), RunStatus.PAUSED)
    with pytest.raises(NotFound):
        control(db, 999_999, s.id, actor="mod", now=clock.now())
    with pytest.raises(NotFound):
        control(db, run.id, 999_999, actor="mod", now=clock.now())


# ── the console's list agrees with the controls ──────────────────────────
@pytest.mark.parametrize("run_status", list(RunStatus))
@pytest.mark.parametrize("state", [*STEP_STATES, "parked_in_doubt", "held"])
def test_offered_controls_are_exactly_the_ones_that_succeed(db, clock, run_status, state):
    every_control = commands.RUN_CONTROLS + commands.STEP_CONTROLS
    # A run of its own for each control, all built in one transaction.
    for control, (run, target, furthest_seq) in zip(
        every_control, runs_each_with_a_step_in(db, clock.now(), run_status, state, len(every_control)), strict=True
    ):
        def phase_row(tx, run=run):  # its phase 1 as a started run has it, for advance
            phases.insert_plan(tx, run.id, [PhasePlan(1, PhaseKind.MAIN, "part 1", ())], 1, clock.now())
            return phases.get(tx, run.id, 1), steps.holding_phase(tx, run.id, 1, clock.now())

        phase, flying = db.autocommit(phase_row)
        offer = commands.offered(run, [target], furthest_seq, phase, flying, caller=commands.Caller("mod", CONTROLLERS))
        offered = control in offer["run"] + offer["steps"][str(target.id)]
        press = getattr(commands, control.replace("-", "_"))
        args = (run.id,) if control in commands.RUN_CONTROLS else (run.id, target.id)
        args += (1,) if control == "advance" else ()
        args += tuple(moved_by(control, clock.now()))  # postpone's new time, extend_cue's seconds
        note = {"note": "Rowan went offline"} if commands.CONTROLS[control].note_required else {}
        try:
            press(db, *args, actor="mod", now=clock.now(), **note)
            succeeded = True
        except Conflict:
            succeeded = False
        assert offered == succeeded, (control, run_status, state)
