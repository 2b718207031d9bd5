"""Applying what a dispatch came to: one fenced write, its log rows, the resources it listed, and the
on_failure disposition.

Everything here runs inside the caller's transaction and returns the log rows
that record it, for the caller to write in the same transaction: a state change
and its log rows commit together. The resources an answer lists are recorded
whether or not the fence took (a late answer's world changed too), and cost no
statement when it lists none (`_record_resources`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from ... import storable
from ...db import Tx
from .. import journal, ledger
from ..actions.outcome import Outcome, Verdict
from ..lifecycle import STEP_FAILURES, OnDoubt, OnFailure, ParkReason, RunStatus, StepStatus
from ..model import Attention, Claim, Revert, Step
from ..store import resources, runs, steps

KEPT_LIVE = "listed by a revert: recorded live, not reverted by this cleanup"


@dataclass(frozen=True)
class Rules:
    lease_seconds: float
    max_attempts: int
    retry_seconds: float
    # EVENT_MODULE_ACTIONS, what the game bridge declares: a revert an answer lists naming any other is recorded,
    # never sent (`ledger.declared_reverts`); None: none declared, every module action is sent as written
    module_actions: frozenset[str] | None = None


@dataclass(frozen=True)
class Applied:
    written: bool  # False: the fence matched nothing (our lease was taken over); nothing changed
    status: StepStatus  # the step's status after the write (running when parked)
    hold: bool = False  # a wait finished: the next step's due_at may differ from what the caller read
    run_stopped: bool = False  # the disposition paused or failed the run


def settle_outcome(
    tx: Tx, step: Step, claim: Claim, outcome: Outcome, now: datetime, rules: Rules, *,
    static_revert: Revert | None = None, compensate: bool = False, escalate_at: datetime | None = None,
    unwritten: str | None = None,
) -> tuple[Applied, list[journal.Entry]]:
    """The outcome's writes, and the log rows that record them: the caller writes those in the same transaction.

    `static_revert`: the step's authored revert (a done answer records one resource with it); `compensate`:
    the document's `cleanup_on` has `fail` (an abort_run cleans up first); `escalate_at`: when a step parked
    in doubt by this outcome is escalated (a retry in doubt at the attempt ceiling under `on_doubt: park` is
    parked for a decision, not failed); `unwritten`: why a first try at these writes failed — this try records
    the outcome as the game gave it, its error cleaned and none of its resources, and degrades the run naming
    the failure (the answer is kept, never lost to a re-send)."""
    if unwritten is not None:
        outcome = replace(outcome, error=None if outcome.error is None else storable.cleaned(outcome.error))
    verdict, error, in_doubt = outcome.verdict, outcome.error, outcome.in_doubt
    # An answer to try later says this attempt did nothing, not that an earlier one in doubt did nothing (the
    # kits answer 429 while another delivery of the key is still being applied): the doubt stays.
    # guard: a-later-answer-clears-an-earlier-attempts-doubt
    if verdict is Verdict.RETRY and step.in_doubt:
        in_doubt = True
    attention = outcome.attention
    # The ceiling counts the attempts since a person last retried or resent the step (its allowance).
    # guard: retry-answer-at-the-ceiling-retried
    # guard: the-ceiling-counts-attempts-before-the-retry
    if verdict is Verdict.RETRY and claim.of_allowance >= rules.max_attempts:
        # guard: a-step-in-doubt-under-resend-parks-at-the-ceiling
        if in_doubt and step.on_doubt is OnDoubt.PARK:
            verdict, error = Verdict.PARKED, f"gave up after {_attempts_spent(claim)}: {error}: waits for a decision"
            attention = Attention(escalate_at=escalate_at)
        else:
            verdict, error = Verdict.FAILED, f"gave up after {_attempts_spent(claim)}: {error}"

    held = False
    if verdict is Verdict.DONE:
        status, written = StepStatus.DONE, steps.finish(tx, claim, StepStatus.DONE, now)
        if written and step.retries:  # a step a person retried has succeeded: the trouble may have ended
            runs.recover(tx, step.run_id, now)
        if written and outcome.hold_until is not None:
            held = steps.delay_next(tx, step.run_id, step.phase, step.seq, outcome.hold_until)
    elif verdict in (Verdict.PARKED, Verdict.RETRY) and \
            (ended := steps.cancel_if_over(tx, claim, now, in_doubt=in_doubt)) is not None:
        # Its run or its phase ended while the step was in flight: nobody will confirm or retry it.
        status, written, error = StepStatus.CANCELLED, True, ended
    elif verdict is Verdict.PARKED:
        reason = ParkReason.DOUBT if in_doubt else ParkReason.CUE
        status, written = StepStatus.RUNNING, steps.park(tx, claim, outcome.note or error, attention, reason)
    elif verdict is Verdict.RETRY:
        retry_at = now + timedelta(seconds=rules.retry_seconds)
        status, written = StepStatus.PENDING, steps.reschedule(tx, claim, retry_at, error, in_doubt=in_doubt)
    else:
        status = StepStatus.REFUSED if verdict is Verdict.REFUSED else StepStatus.FAILED
        written = steps.finish(tx, claim, status, now, error, in_doubt=in_doubt)

    recorded = _record_resources(tx, step, outcome, verdict, now, static_revert, unwritten, rules.module_actions)
    if written and step.resource_id is not None and status.terminal:
        resources.follow_steps(tx, [step.id], now)  # a revert ended: its resource follows
    entries = [journal.step_dispatch(step, claim.attempt, outcome, fenced_out=not written, **recorded)]
    run_stopped = False
    if written and status is not StepStatus.RUNNING:
        detail: dict[str, Any] = {"hold_until": outcome.hold_until} if held else {}
        if status in STEP_FAILURES:
            detail["on_failure"] = step.on_failure.value
        if in_doubt:
            detail["in_doubt"] = True
        entries.append(journal.step_status(step, StepStatus.RUNNING, status, cause=error, attempt=claim.attempt, **detail))
    # guard: fenced-out-failure-applies-on-failure
    if written and status in STEP_FAILURES:
        # guard: a-failure-in-an-ended-phase-applies-its-on-failure
        if steps.phase_ended(tx, step.run_id, step.phase, now):
            # The phase ended while the step was in flight: the failure degrades the run, its on_failure is moot.
            runs.degrade(tx, step.run_id, now, f"{step.named} {error or status.value}")
        else:
            disposition = apply_failure(tx, step, error or status.value, now, compensate=compensate)
            entries.extend(disposition)
            run_stopped = bool(disposition)
    # Re-read after any hold, taken or not: the caller's list may predate the next step's due_at.
    return Applied(written, status, written and outcome.hold_until is not None, run_stopped), entries


def _attempts_spent(claim: Claim) -> str:
    """"3 attempts", or after a person's retry or resend "3 attempts since a person sent it again (5 in all)"."""
    if claim.allowed_from == 0:
        return f"{claim.attempt} attempts"
    return f"{claim.of_allowance} attempts since a person sent it again ({claim.attempt} in all)"


def _record_resources(
    tx: Tx, step: Step, outcome: Outcome, verdict: Verdict, now: datetime, static_revert: Revert | None,
    unwritten: str | None, module_actions: frozenset[str] | None,
) -> dict[str, Any]:
    """What the answer listed (and, for a done step with a static revert, the step itself), recorded in one
    INSERT; the dispatch row's detail saying so. A bad list, or one past the run's cap, records nothing and
    degrades the run; the step's outcome is what it would have been without it. An answer that lists nothing
    writes nothing; a plain try after failed writes (`unwritten`) records nothing and degrades the run naming the failure.
    A resource whose revert names an undeclared module action is recorded, its revert refused (never sent),
    and the run degraded saying so (`resources_cannot_revert`)."""
    if unwritten is not None:
        runs.degrade(tx, step.run_id, now, f"{step.named} {unwritten}")
        return {"resources_refused": unwritten}
    listed, problem = ledger.listed(outcome.result)
    if problem is None and static_revert is not None and verdict is Verdict.DONE:
        listed += (ledger.Listed(step.action_id[:ledger.KIND_CHARS], step.idempotency_key, static_revert),)
    listed = ledger.declared_reverts(listed, module_actions)
    recorded = resources.record(tx, step.run_id, step.id, listed, now) if listed else None
    if recorded is not None and recorded.refused is not None:
        problem = recorded.refused  # the run's cap: nothing of it written
    if problem is not None:
        runs.degrade(tx, step.run_id, now, f"{step.named} listed resources the ledger refused: {problem}")
        return {"resources_refused": problem}
    if recorded is None:
        return {}
    detail: dict[str, Any] = {"resources": recorded.stored}
    if step.resource_id is not None:
        detail["resources_kept_live"] = KEPT_LIVE
    refused = ledger.refused_words(listed)
    if refused is not None:
        runs.degrade(tx, step.run_id, now, f"{step.named} listed {refused}")
        detail["resources_cannot_revert"] = refused
    return detail


def apply_failure(tx: Tx, step: Step, error: str, now: datetime, *, compensate: bool = False) -> list[journal.Entry]:
    """The step's on_failure, as guarded run writes; returns the run.status rows of what changed.

    The guards make an ending never pause or abort: its run is `ending`, which
    neither source list names, so it is only degraded and goes on to complete;
    so is a cleanup's revert (its run is `cleaning_up`; a revert's on_failure is skip).
    With `compensate` (cleanup_on: fail) abort_run moves the run into cleaning_up
    toward failed when it has something to revert.
    A run a person paused meanwhile keeps their pause; it is degraded and, under
    abort_run, still failed.
    """
    cause = f"{step.named} {error}"  # "Phase 1 · step 3 (world.spawn) HTTP 400: …": as a person sees the step
    if step.on_failure is OnFailure.PAUSE:
        if runs.transition(
            # guard: on-failure-pause-pauses-an-ending
            tx, step.run_id, [RunStatus.RUNNING], RunStatus.PAUSED, now, last_error=cause, degrade=True
        ):
            return [journal.run_status(step.run_id, step.phase, RunStatus.RUNNING, RunStatus.PAUSED, cause=cause)]
    elif step.on_failure is OnFailure.ABORT_RUN:
        # guard: abort-run-spares-a-paused-run
        for source in (RunStatus.RUNNING, RunStatus.PAUSED):
            # cleanup_on: fail — the run reverts what it left first, then fails (only if it left something).
            if compensate and runs.begin_cleanup(tx, step.run_id, [source], RunStatus.FAILED, now, last_error=cause,
                                                 degrade=True):
                cancelled = steps.cancel_pending(tx, step.run_id, now)
                return [journal.run_status(step.run_id, step.phase, source, RunStatus.CLEANING_UP, cause=cause,
                                           cancelled_steps=cancelled, cleanup_target=RunStatus.FAILED.value)]
            if runs.transition(tx, step.run_id, [source], RunStatus.FAILED, now, last_error=cause, degrade=True):
                cancelled = steps.cancel_pending(tx, step.run_id, now)
                return [
                    journal.run_status(
                        step.run_id, step.phase, source, RunStatus.FAILED, cause=cause, cancelled_steps=cancelled
                    )
                ]
    runs.degrade(tx, step.run_id, now, cause)
    return []
