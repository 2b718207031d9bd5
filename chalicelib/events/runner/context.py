"""What every move of a tick's walks is given: the tick's one clock read, its budget and its rules.

The invariant: every move of one tick reads the same `now` (the tick's one clock
read) and the same budget, so a move never reads a clock of its own, and every
step this tick claims counts its lease from that same read (`leases_lapse_at`).
The walk (`walk.py`) builds one per tick and bridge, and passes it to the moves
that need more than `now`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from ..actions.perform import Actions
from ..model import Run
from .budget import Budget
from .outcomes import Rules


@dataclass(frozen=True)
class WalkContext:
    actions: Actions  # the run's bridge and channels (a dry run's are its own)
    rules: Rules
    now: datetime  # the tick's one clock read
    budget: Budget
    step_worst_case_seconds: float  # a dispatch's longest outbound deadline, and its claim's and outcome's margin
    leases_lapse_at: float = math.inf  # on the budget's clock: a lease taken in this tick ends then

    def escalate_at(self, run: Run) -> datetime | None:
        """When a wait for a person of `run` that begins in this tick is escalated, on the run's clock (a dry
        run's speed divides the interval); None: never."""
        return self.actions.escalation_due(self.now, run.time_scale)
