"""Retry follows where the runner really got to: a later step a person skipped before it ever started
does not move the cursor, and a refusal only says what is true."""

import pytest

from chalicelib.events import commands
from chalicelib.events.actions.outcome import Outcome
from chalicelib.events.errors import Conflict
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.runner import Rules
from chalicelib.events.store import steps
from chalicelib.roles import CONTROLLERS
from tests.support.factory import run_row, step_row
from tests.support.runner_kit import apply_outcome
from tests.support.scenes import furthest, run_with_steps, snapshot

RULES = Rules(lease_seconds=120, max_attempts=3, retry_seconds=30)
MODERATING = commands.Caller("mod-mia", CONTROLLERS)


def _dispatch(db, clock, s, outcome):
    claim = db.autocommit(lambda tx: steps.claim(tx, step_row(db, s.id), clock.now(), RULES.lease_seconds))
    assert claim is not None
    db.transaction(lambda tx: apply_outcome(tx, s, claim, outcome, clock.now(), RULES))


def _offered_for(db, run_id, s):
    run = run_row(db, run_id)
    return commands.offered(run, [step_row(db, s.id)], furthest(db, run_id, run.current_phase), caller=MODERATING)["steps"][str(s.id)]


def test_retry_works_after_a_person_skipped_a_later_step_that_never_started(db, clock):
    run, (stopped_at, later, last) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    _dispatch(db, clock, stopped_at, Outcome.failed("HTTP 400"))  # on_failure pause: the run stops here
    assert run_row(db, run.id).status is RunStatus.PAUSED
    commands.skip(db, run.id, later.id, actor="mod-mia", now=clock.now(), reason="not tonight")

    assert "retry" in _offered_for(db, run.id, stopped_at)
    retried = commands.retry(db, run.id, stopped_at.id, actor="mod-mia", now=clock.now())
    assert (retried.step.status, retried.run.status) == (StepStatus.PENDING, RunStatus.RUNNING)
    assert [step_row(db, s.id).status for s in (later, last)] == [StepStatus.SKIPPED, StepStatus.PENDING]


def test_retry_of_a_step_behind_a_later_step_that_started_is_refused_saying_so(db, clock):
    run, (behind, later, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING, on_failure="skip")
    _dispatch(db, clock, behind, Outcome.failed("HTTP 400"))  # on_failure skip: the runner went on
    _dispatch(db, clock, later, Outcome.parked("a GM must light the bonfire"))
    commands.skip(db, run.id, later.id, actor="mod-mia", now=clock.now())  # it had started: skipped when parked
    commands.pause(db, run.id, actor="mod-mia", now=clock.now())

    assert "retry" not in _offered_for(db, run.id, behind)
    before = snapshot(db, run.id)
    with pytest.raises(Conflict) as refused:
        commands.retry(db, run.id, behind.id, actor="mod-mia", now=clock.now())
    assert "a later step of its phase has already started" in str(refused.value)
    assert snapshot(db, run.id) == before
