"""Branches at run time: a phase or a step whose `only_if` is not met is passed over, with a log row saying why.

The invariant: an only_if is read when its phase would open or its step's turn has come, from what is settled
by then (`events/branching.py`): the answer of an earlier cue (its step's `choice`), or a field of the payload
of the first receipt of a signal, if it came before its phase ended. A phase passed over is never opened
(the run's `leave_phase` goes straight to the phase after it; its log row commits with that move); a step is
skipped only by its own compare-and-set (`steps.pass_over`), in a unit of work with its log row. Nothing is
read for a programme without an only_if.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...db import Tx
from .. import journal
from ..lifecycle import PhaseKind, SignalEffect, StepStatus
from ..model import OnlyIf, Step
from ..programme import PhasePlan, Programme
from ..store import signals, steps
from .cursor import Cursor, Done, Head


def gated(programme: Programme, step: Step) -> bool:
    """Whether the head step's only_if must be read before it is claimed: it has one, and it was never tried
    (a step tried once was let through already, and its answer cannot have changed since)."""
    spec = programme.spec(step.phase, step.seq)
    return step.attempts == 0 and step.status is StepStatus.PENDING and spec is not None and spec.only_if is not None


def unmet_at_turn(tx: Tx, run_id: int, programme: Programme, step: Step) -> str | None:
    """Why the step's only_if is not met now (the cause of its skip); None when it runs."""
    spec = programme.spec(step.phase, step.seq)
    return None if spec is None or spec.only_if is None else unmet(tx, run_id, programme, spec.only_if)


def pass_over(tx: Tx, now: datetime, head: Head, cause: str, log_rows: list[journal.Entry]) -> Cursor:
    """The head step skipped, its cause the only_if it did not meet; the walk goes on after it (Done(None) if
    the guard lost: a person moved the step or the run first)."""
    step = head.step
    if not steps.pass_over(tx, step, now, cause):
        return Done(None)
    log_rows.append(journal.step_status(step, StepStatus.PENDING, StepStatus.SKIPPED, cause=cause))
    return head.after_head()


def next_to_open(tx: Tx, run_id: int, programme: Programme, number: int) -> tuple[PhasePlan | None, list[journal.Entry]]:
    """The phase the walk opens after phase `number` — the next whose only_if is met, or the ending — and the
    log rows of the main phases it passes over (written with the move that leaves `number`, only if it takes)."""
    passed: list[journal.Entry] = []
    plan = programme.after(number)
    # guard: a-phase-whose-only-if-is-not-met-opens
    while plan is not None and plan.kind is PhaseKind.MAIN and plan.only_if is not None:
        cause = unmet(tx, run_id, programme, plan.only_if)
        if cause is None:
            break
        passed.append(journal.run_phase_skipped(run_id, plan.number, plan.name, cause))
        plan = programme.after(plan.number)
    return plan, passed


def unmet(tx: Tx, run_id: int, programme: Programme, only_if: OnlyIf) -> str | None:
    """Why `only_if` is not met by the run's rows as they stand ("skipped: cue arena answered north, not one
    of [south]"); None when it is."""
    among = f"not one of [{', '.join(OnlyIf.shown(value) for value in only_if.among)}]"
    if only_if.choice is not None:
        place = programme.named(only_if.choice)
        found = None if place is None else steps.answer_of(tx, run_id, *place)
        answer = None if found is None else found[1]
        # guard: a-branch-not-taken-runs-anyway
        if only_if.admits(answer):
            return None
        return f"skipped: cue {only_if.choice} {_answered(found)}, {among}"
    receipt = signals.get(tx, run_id, str(only_if.signal))
    # A receipt that came after its phase ended has no value: a branch read before it came saw none, and one
    # signal gives one answer in a run.
    # guard: a-late-signal-answers-a-branch
    late = receipt is not None and receipt.effect is SignalEffect.PHASE_OVER
    payload: Any = None if receipt is None or late else receipt.payload
    value = payload.get(only_if.field) if isinstance(payload, dict) else None
    # guard: a-signal-branch-not-taken-runs-anyway
    if only_if.admits(value):
        return None
    if receipt is None:
        said = "has not come"
    elif late:
        said = "came after its phase had ended"
    elif not isinstance(payload, dict) or only_if.field not in payload:
        said = f"carries no {only_if.field}"
    else:
        said = f"has {only_if.field} {OnlyIf.shown(value)}"
    return f"skipped: signal {only_if.signal} {said}, {among}"


def _answered(found: tuple[StepStatus, str | None] | None) -> str:
    """What became of the cue: its answer, or why it has none."""
    if found is None:
        return "was never asked (its phase was passed over)"
    status, choice = found
    if choice is not None:
        return f"answered {choice}"
    return f"was {status.value} without an answer" if status.terminal else "has no answer yet"
