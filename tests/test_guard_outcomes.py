"""What an answer does to its run: the ceiling turns a retry into a failure, abort_run ends a paused run,
and nothing an answer says rewrites a run that has already finished."""

import pytest

from chalicelib.events import commands
from chalicelib.events.actions.outcome import Outcome
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import Health
from chalicelib.events.runner import Rules
from chalicelib.events.store import steps
from tests.support.factory import run_row, step_row
from tests.support.runner_kit import apply_outcome, log_of
from tests.support.scenes import run_with_steps, set_step

RULES = Rules(lease_seconds=120, max_attempts=3, retry_seconds=30)


def _in_flight(db, clock, on_failure="pause", attempts_before=0, run_status=RunStatus.RUNNING):
    run, (first, second) = run_with_steps(db, clock.now(), run_status, n=2, on_failure=on_failure)
    if attempts_before:
        first = set_step(db, first, attempts=attempts_before)
    claim = db.autocommit(lambda tx: steps.claim(tx, first, clock.now(), RULES.lease_seconds))
    return run, first, second, claim


def _answer(db, clock, s, claim, outcome):
    return db.transaction(lambda tx: apply_outcome(tx, s, claim, outcome, clock.now(), RULES))


def test_a_retry_answer_at_the_attempt_ceiling_fails_the_step(db, clock):
    run, spawn, _, claim = _in_flight(db, clock, attempts_before=RULES.max_attempts - 1)
    assert claim.attempt == RULES.max_attempts
    _answer(db, clock, spawn, claim, Outcome.retry("HTTP 503"))
    after = step_row(db, spawn.id)
    assert (after.status, after.last_error) == (StepStatus.FAILED, "gave up after 3 attempts: HTTP 503")
    assert run_row(db, run.id).status is RunStatus.PAUSED


def test_a_retry_answer_below_the_ceiling_is_tried_again(db, clock):
    run, spawn, _, claim = _in_flight(db, clock, attempts_before=RULES.max_attempts - 2)
    _answer(db, clock, spawn, claim, Outcome.retry("HTTP 503"))
    assert step_row(db, spawn.id).status is StepStatus.PENDING
    assert run_row(db, run.id).status is RunStatus.RUNNING


def test_abort_run_still_fails_a_run_a_person_paused_while_the_step_was_in_flight(db, clock):
    run, spawn, reward, claim = _in_flight(db, clock, on_failure="abort_run")
    commands.pause(db, run.id, actor="mod-mia", now=clock.now(), reason="checking")
    _answer(db, clock, spawn, claim, Outcome.failed("HTTP 400"))
    after = run_row(db, run.id)
    assert (after.status, after.health) == (RunStatus.FAILED, Health.DEGRADED)
    assert step_row(db, reward.id).status is StepStatus.CANCELLED
    last = [e.detail for e in log_of(db, run.id) if e.kind == "run.status"][-1]
    assert (last["from"], last["to"]) == ("paused", "failed")


@pytest.mark.parametrize("on_failure", ["pause", "skip", "abort_run"])
def test_a_failing_answer_after_a_cancel_leaves_the_cancelled_run_as_the_person_left_it(db, clock, on_failure):
    run, spawn, _, claim = _in_flight(db, clock, on_failure=on_failure)
    commands.cancel(db, run.id, actor="mod-mia", now=clock.now(), reason="storm over the square")
    cancelled = run_row(db, run.id)
    clock.advance(5)
    _answer(db, clock, spawn, claim, Outcome.failed("HTTP 400: unknown zone"))

    after = run_row(db, run.id)
    assert (after.status, after.health, after.last_error) == (RunStatus.CANCELLED, Health.OK, "storm over the square")
    assert after.updated_at == cancelled.updated_at
    late = [e for e in log_of(db, run.id) if e.step_id == spawn.id]
    assert [e.kind for e in late] == ["step.dispatch", "step.status"]  # the late answer is still on the step
    assert (late[-1].detail["to"], late[-1].detail["cause"]) == ("failed", "HTTP 400: unknown zone")
    assert [e.detail["to"] for e in log_of(db, run.id) if e.kind == "run.status"] == ["cancelled"]


def test_a_failing_ending_step_still_degrades_its_run(db, clock):
    run, spawn, _, claim = _in_flight(db, clock, on_failure="pause", run_status=RunStatus.ENDING)
    _answer(db, clock, spawn, claim, Outcome.failed("HTTP 400"))
    after = run_row(db, run.id)
    assert (after.status, after.health) == (RunStatus.ENDING, Health.DEGRADED)
    assert "HTTP 400" in after.last_error
