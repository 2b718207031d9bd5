"""A step attempt: whether it may be claimed and dispatched, what it comes to, and where its outcome
leaves the walk.

The invariant: an attempt starts only if its worst case fits the tick's budget
and its dispatch is over before its claim's lease lapses, counted from the
tick's one clock read, so a sweep never hands a step on while its attempt is
still open. A step in doubt (its last attempt has no known outcome) is asked
about before it is sent again, and under `on_doubt: park` is parked for a
person's decision rather than sent blind. An outcome is written on its claim's
fence (`outcomes.settle_outcome`): a claimer whose lease was taken over changes
nothing and stops walking the run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from ...db import Tx
from .. import journal
from ..actions.context import ActionContext
from ..actions.outcome import Outcome, Status
from ..lifecycle import RUNNABLE, CleanupOn, OnDoubt, StepStatus
from ..model import Attention, Claim, Run, Step
from ..programme import Programme
from .context import WalkContext
from .cursor import Cursor, Done, Head, NeedsRead
from .outcomes import settle_outcome

DOUBT_NOTE = "its last attempt has no known outcome: the game may or may not have applied it"


def claimable(step: Step, now: datetime) -> bool:
    """Pending and due, as last read: the claim re-checks both."""
    return step.status is StepStatus.PENDING and (step.due_at is None or step.due_at <= now)


@dataclass(frozen=True)
class Need:
    """What one attempt at `step` needs of its tick's time."""

    step: Step
    dispatch_seconds: float  # its outbound deadlines: two for a step in doubt asked about first
    worst_case_seconds: float  # those, and its claim's and outcome's margin


def need_of(ctx: WalkContext, step: Step) -> Need:
    seconds = ctx.actions.dispatch_seconds(step)
    return Need(step, seconds, ctx.step_worst_case_seconds + seconds - ctx.actions.longest_dispatch_seconds)


def may_dispatch(ctx: WalkContext, step: Step) -> bool:
    """A step starts only if its worst case fits the tick's budget, and its dispatch is over
    before its claim's lease lapses — counted, like every time of the tick, from the tick's
    one clock read. Else a sweep could hand the step on while this attempt is still open.
    A step in doubt that is asked about first counts two outbound deadlines (`dispatch_seconds`)."""
    need = need_of(ctx, step)
    seconds, worst_case = need.dispatch_seconds, need.worst_case_seconds
    # guard: the-lease-check-counts-one-deadline-for-a-probed-attempt
    dispatch_over_by = ctx.budget.monotonic() + seconds
    # guard: dispatch-started-past-its-lease
    return ctx.budget.allows(worst_case) and dispatch_over_by < ctx.leases_lapse_at


def next_claim(ctx: WalkContext, cursor: Cursor) -> Step | None:
    """The head step a unit claims in its own transaction: due, and the budget allows its dispatch."""
    if not isinstance(cursor, Head) or cursor.status not in RUNNABLE:
        return None
    first = cursor.step
    # guard: claim-in-an-outcome-unit-past-the-budget
    if not claimable(first, ctx.now) or not may_dispatch(ctx, first):
        return None
    return first


def outcome_of(ctx: WalkContext, run: Run, step: Step, claim: Claim) -> Outcome:
    """What the claimed attempt comes to: the action performed. A step in doubt is first asked about, when
    the bridge asks (GAME_BRIDGE_STATUS): applied is done with nothing sent (refused, when the key's answer
    was a refusal), in progress is a retry still in doubt, not applied is sent; with no answer (or nobody
    asked), `on_doubt: park` sends nothing and parks the step for a person's decision, `resend` sends it.
    The probe's answer goes with the outcome."""
    context = ActionContext.of(step, claim.attempt, ctx.now, run)
    if not step.in_doubt:
        return ctx.actions.perform(context)
    # guard: a-step-in-doubt-is-re-sent-without-asking
    probe = ctx.actions.probe(context)
    asked = None if probe is None else probe.detail
    # guard: applied-is-sent-again
    if probe is not None and probe.status is Status.APPLIED:
        # guard: an-applied-refusal-is-done
        if probe.refused is not None:
            return Outcome.refused(probe.refused, result=probe.answer, http_status=probe.http_status,
                                   latency_ms=probe.latency_ms, probe=asked)
        return Outcome.done(result=probe.answer, http_status=probe.http_status, latency_ms=probe.latency_ms,
                            probe=asked)
    # guard: in-progress-is-sent-again
    if probe is not None and probe.status is Status.IN_PROGRESS:
        return Outcome.retry("the game is still applying it", in_doubt=True, http_status=probe.http_status,
                             latency_ms=probe.latency_ms, probe=asked)
    # guard: a-step-in-doubt-under-park-is-sent-again
    if (probe is None or probe.status is Status.UNKNOWN) and step.on_doubt is OnDoubt.PARK:
        # guard: a-decision-is-never-escalated
        parked = Outcome.parked_in_doubt(DOUBT_NOTE, Attention(escalate_at=ctx.escalate_at(run)))
        return replace(parked, probe=asked)
    return replace(ctx.actions.perform(context), probe=asked)


def settle(tx: Tx, ctx: WalkContext, programme: Programme, run: Run, head: Head, claim: Claim, outcome: Outcome,
           log_rows: list[journal.Entry], *, unwritten: str | None = None) -> Cursor:
    """The dispatched head step's outcome, written on its claim's fence with its log rows, and where it
    leaves the walk: on in the phase when the step is over, else stopped (a decision it parks for is
    escalated on `run`'s clock). `unwritten`: why a first try at these writes failed; this one records the
    outcome plainly (`settle_outcome`)."""
    applied, rows = settle_outcome(tx, head.step, claim, outcome, ctx.now, ctx.rules,
                                   static_revert=programme.static_revert(head.phase, head.step.seq),
                                   compensate=CleanupOn.FAIL in programme.cleanup_on,
                                   escalate_at=ctx.escalate_at(run), unwritten=unwritten)
    log_rows += rows
    # guard: fenced-out-dispatcher-goes-on
    if not applied.written or applied.run_stopped:
        # guard: fenced-out-dispatcher-keeps-looking
        return Done(None)  # fenced out, or the disposition paused or failed the run: as it now stands
    if not applied.status.terminal:
        return Done(head.status)  # parked, or pending a retry: the phase is occupied
    if applied.hold:
        return NeedsRead(head.status, head.phase)  # a wait moved the next step's due_at: read it again
    return head.after_head()
