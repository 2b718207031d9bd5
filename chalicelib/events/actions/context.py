"""What an action is told about the attempt it makes: its run, the run's mode, the step, the attempt,
what the previous attempt came to, the tick's clock and the run's time scale.

The invariant: an action reads everything it needs from its context and writes
nothing; what it came to is its Outcome, which the runner applies. The context
is built by the runner from the step as it claimed it, so a later attempt sees
the same step (its key, its first start) and what the one before it came to.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ..lifecycle import RunMode
from ..model import Run, Step


@dataclass(frozen=True)
class ActionContext:
    step: Step
    attempt: int  # 1 for the first
    now: datetime  # the tick's one clock read
    mode: RunMode = RunMode.LIVE
    previous: str | None = None  # what the previous attempt came to (its error); None on the first
    time_scale: float = 1.0  # run seconds per authored second: a wait of N s holds N × time_scale
    auto_confirm_seconds: int | None = None  # a rehearsal's: the engine confirms a parked cue after it (run seconds)

    @classmethod
    def of(cls, step: Step, attempt: int, now: datetime, run: Run | None = None) -> ActionContext:
        """The context of `attempt` at `step` of `run` (None: a live run's), as the runner claimed it: the
        step's last_error is what the attempt before this one came to (a retry's reschedule wrote it)."""
        previous = step.last_error if attempt > 1 else None
        if run is None or run.rehearsal is None:
            return cls(step, attempt, now, RunMode.LIVE, previous)
        return cls(step, attempt, now, run.mode, previous, run.time_scale, run.rehearsal.auto_confirm_seconds)

    @property
    def run_id(self) -> int:
        return self.step.run_id

    def scaled(self, seconds: float) -> timedelta:
        """An authored duration on the run's clock."""
        return timedelta(seconds=seconds * self.time_scale)
