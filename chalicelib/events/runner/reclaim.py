"""The tick's first step: take back expired step leases, and never let a give-up pass silently.

A give-up is applied as its answer would have been: its `on_failure`, and under
the document's `cleanup_on: fail` an `abort_run` reverts what the run left first
(`compensates`, which reads the run's programme). A revert the sweep ends, given
up or abandoned, moves its resource as any other end of a revert does
(`resources.follow_steps`): a give-up is a failed revert its cleanup pauses on,
an abandoned one leaves its thing live for a later Clean up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ...db import Tx
from .. import journal
from ..lifecycle import OnFailure, ParkReason, StepStatus
from ..model import Step
from ..store import log, resources, steps
from .outcomes import apply_failure


@dataclass(frozen=True)
class Swept:
    requeued: int
    gave_up: int
    abandoned: int
    parked: int = 0  # in doubt at the attempt ceiling under on_doubt park: a person decides


def reclaim(tx: Tx, now: datetime, max_attempts: int, *, escalate_after_seconds: int = 0,
            compensates: Callable[[Tx, int], bool] = lambda tx, run_id: False) -> Swept:
    """One transaction: the sweep, a log row per step, and each given-up step's on_failure
    (`escalate_after_seconds`: the deployment's escalation of a step parked in doubt, 0 for none;
    `compensates(tx, run_id)`: whether the run cleans up on a failure)."""
    reclaimed = steps.reclaim_stale(tx, now, max_attempts, escalate_after_seconds=escalate_after_seconds)
    # guard: a-swept-revert-leaves-its-resource-reverting
    resources.follow_steps(tx, [step.id for step in (*reclaimed.gave_up, *reclaimed.abandoned) if step.resource_id is not None],
                           now)
    entries = [_taken_back(step, StepStatus.PENDING, "lease expired") for step in reclaimed.requeued]
    entries += [_taken_back(step, StepStatus.CANCELLED, step.last_error or steps.RUN_ENDED) for step in reclaimed.abandoned]
    entries += [_taken_back(step, StepStatus.RUNNING, "lease expired at the attempt ceiling: parked for a decision",
                            park_reason=ParkReason.DOUBT.value) for step in reclaimed.parked]
    for step in reclaimed.gave_up:
        entries.append(_taken_back(step, StepStatus.FAILED, steps.GAVE_UP, on_failure=step.on_failure.value))
        # guard: a-sweeps-give-up-ignores-cleanup-on
        compensate = step.on_failure is OnFailure.ABORT_RUN and compensates(tx, step.run_id)
        entries.extend(apply_failure(tx, step, steps.GAVE_UP, now, compensate=compensate))
    # guard: sweep-commits-before-its-log-rows
    log.append_many(tx, entries, now)
    return Swept(requeued=len(reclaimed.requeued), gave_up=len(reclaimed.gave_up), abandoned=len(reclaimed.abandoned),
                 parked=len(reclaimed.parked))


def _taken_back(step: Step, to: StepStatus, cause: str, **detail: str) -> journal.Entry:
    """The row of a step the sweep took back: in doubt (its attempt may or may not have reached the game)."""
    return journal.step_status(step, StepStatus.RUNNING, to, cause=cause, attempts=step.attempts, in_doubt=True, **detail)
