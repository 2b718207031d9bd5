"""Where a run's walk stands: the cursor every move returns and the walk (`walk.py`) acts on.

The invariant: the walk is always in exactly one named place. It must read the
phase's open steps (`NeedsRead`), it has the phase's head step before it
(`Head`: the open steps as last read, never empty, lowest seq first), the phase
has no open step left (`Drained`: it is left), the phase must be closed first
(`Closing`), the phase is drained but its condition is not met (`Held`: the
walk stops, and the run's wake time waits for the condition), or it has stopped
(`Done`). Each carries the run's status as last seen and the phase it stands in;
a cursor is a value: it is never changed, only replaced by the next.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..lifecycle import RunStatus
from ..model import Step


@dataclass(frozen=True)
class NeedsRead:
    """The phase's open steps must be read before going on."""

    status: RunStatus  # the run's, as last seen
    phase: int


@dataclass(frozen=True)
class Head:
    """The phase's open steps as last read, lowest seq first: the first is the one the walk may work."""

    status: RunStatus
    phase: int
    steps: tuple[Step, ...]  # never empty
    more: bool = False  # the read was cut at its page size: there may be more after these

    @property
    def step(self) -> Step:
        return self.steps[0]

    def after_head(self) -> Cursor:
        """Where the walk is once the head step is over."""
        if len(self.steps) > 1:
            return Head(self.status, self.phase, self.steps[1:], self.more)
        # guard: a-truncated-read-is-never-read-again
        if self.more:
            return NeedsRead(self.status, self.phase)  # the read was truncated: read the rest
        return Drained(self.status, self.phase)


@dataclass(frozen=True)
class Drained:
    """The phase has no open step left: it is left (next phase, ending or completed) unless it is held."""

    status: RunStatus
    phase: int


@dataclass(frozen=True)
class Closing:
    """The phase must be closed before anything else of it: its condition was met (a signal) or its
    deadline passed. Closing is a move of its own (`phase_end.close_phase`); then the phase is read again."""

    status: RunStatus
    phase: int


@dataclass(frozen=True)
class Held:
    """A drained phase whose condition is not met: the walk stops here at no cost, and the run's
    wake time waits for the condition (its deadline, or a person or signal meeting it)."""

    status: RunStatus
    phase: int
    began: bool = False  # the hold began in this unit of work: once it commits, the cue channel is told


@dataclass(frozen=True)
class Done:
    """The walk stops: the run's status as it left it, or None when someone moved the run first
    (a guard lost, a fence matched nothing, a disposition stopped the run): read it again."""

    status: RunStatus | None


Cursor = NeedsRead | Head | Drained | Closing | Held | Done


def opened(status: RunStatus, phase: int, rows: list[Step], *, more: bool = False) -> Head | Drained:
    """A phase as read or materialised: its head, or drained when none of its steps is open."""
    open_steps = tuple(s for s in rows if not s.status.terminal)
    return Head(status, phase, open_steps, more) if open_steps else Drained(status, phase)
