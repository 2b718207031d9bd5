"""event_run_steps, a branch not taken: a step whose `only_if` is not met passed over, and a cue's answer read.

The invariant: the tick passes over only a step whose turn has come and that was never tried (pending, no
attempt), of a run it may work and of a phase that still takes claims — the claim's own terms — so a step a
person retried, or one of a paused run or an ending phase, is never skipped by the engine. The answer it
read is settled (`events/branching.py`): a cue's choice is written once, by the statement that finishes it.
"""

from __future__ import annotations

from datetime import datetime

from ....db import Tx
from ...lifecycle import PASS_OVER, RunSQL, StepStatus
from ...model import Step, kept_note
from .. import phases
from .fragments import NOT_LEFT_BEHIND
from .write import write

_WITH_ITS_RUN_AND_PHASE = (" JOIN event_runs r ON r.id = s.run_id"
                           " LEFT JOIN event_run_phases p ON p.run_id = s.run_id AND p.number = s.phase")


def pass_over(tx: Tx, step: Step, now: datetime, cause: str) -> bool:
    """The step is skipped, its cause the only_if it did not meet: a compare-and-set on its being pending and
    never tried, its run runnable and its phase taking claims (as a claim would find them)."""
    # guard: a-branch-passes-over-a-tried-step
    # guard: a-branch-passes-over-a-step-of-a-paused-run
    return write(
        tx, PASS_OVER,
        f"""s.id = %s AND s.attempts = 0
               AND r.status IN ({RunSQL.RUNNABLE}) AND {NOT_LEFT_BEHIND}
               AND (p.run_id IS NULL OR {phases.TAKES_CLAIMS})""",
        (step.id, now), now=now, sets="s.last_error = %s", set_args=(kept_note(cause),),
        joins=_WITH_ITS_RUN_AND_PHASE, alias="s",
    ) == 1


def answer_of(tx: Tx, run_id: int, phase: int, seq: int) -> tuple[StepStatus, str | None] | None:
    """The status and the chosen answer of the run's step at (phase, seq); None when it has no such step (its
    phase was passed over, or never opened)."""
    row = tx.one("SELECT status, choice FROM event_run_steps WHERE run_id = %s AND phase = %s AND seq = %s",
                 (run_id, phase, seq))
    return None if row is None else (StepStatus(row["status"]), row["choice"])
