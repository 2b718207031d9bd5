"""The tick's first step: take back expired step leases, and never let a give-up pass silently."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ...db import Tx
from ..model import StepStatus
from ..store import log, steps
from .outcomes import apply_failure, step_entry


@dataclass(frozen=True)
class Swept:
    requeued: int
    gave_up: int
    abandoned: int


def reclaim(tx: Tx, now: datetime, max_attempts: int) -> Swept:
    """One transaction: the sweep, a log row per step, and each given-up step's on_failure."""
    reclaimed = steps.reclaim_stale(tx, now, max_attempts)
    entries = [
        step_entry(step, StepStatus.PENDING, "lease expired", attempts=step.attempts) for step in reclaimed.requeued
    ] + [
        step_entry(step, StepStatus.CANCELLED, steps.RUN_ENDED, attempts=step.attempts) for step in reclaimed.abandoned
    ]
    for step in reclaimed.gave_up:
        entries.append(
            step_entry(step, StepStatus.FAILED, steps.GAVE_UP, attempts=step.attempts, on_failure=step.on_failure.value)
        )
        entries.extend(apply_failure(tx, step, steps.GAVE_UP, now))
    log.append_many(tx, entries, now)
    return Swept(requeued=len(reclaimed.requeued), gave_up=len(reclaimed.gave_up), abandoned=len(reclaimed.abandoned))
