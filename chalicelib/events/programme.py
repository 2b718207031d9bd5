"""The programme the runner walks: a stored definition document read as its phases and steps, in order.

`programme_of` reads a stored document: its phases in authored order, then its `ending`, then the cleanup
phase, numbered from 1 in that walk (the one place a phase gets its number; nothing else computes one). A
document is never validated again once stored (`document.validate` binds what is saved), so a version that
cannot be walked is UnreadableDocument here, and its run fails with the cause.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import ledger
from .errors import UnreadableDocument
from .lifecycle import (
    After,
    CleanupOn,
    Condition,
    OnDeadline,
    OnDoubt,
    OnFailure,
    OnTimeout,
    Overlap,
    PhaseKind,
    Signalled,
    StepsDone,
    condition_of,
)
from .model import OnlyIf, Revert, StepSpec


@dataclass(frozen=True)
class PhaseLimit:
    """How long a phase may stay open, from when it opened, and what happens then: `close` its open
    steps and leave it (`after`, or a timeout that advances), or `pause` the run once."""

    seconds: int
    on_deadline: OnDeadline


@dataclass(frozen=True)
class PhasePlan:
    """One phase as authored: its number (its place in the walk), kind, name and steps."""

    number: int
    kind: PhaseKind
    name: str
    specs: tuple[StepSpec, ...]
    condition: Condition = field(default_factory=StepsDone)  # what must be met before it may be left once drained
    limit: PhaseLimit | None = None
    only_if: OnlyIf | None = None  # it opens only when this is met; else the walk passes over it (`branching`)

    @property
    def signal(self) -> str | None:
        """The signal that ends it, if it waits for one."""
        return self.condition.name if isinstance(self.condition, Signalled) else None


@dataclass(frozen=True)
class Programme:
    """The phases of a version in the order the runner walks them: the main phases, then the ending.

    Numbers are places in this walk, given once here (`programme_of`); nothing else
    computes a phase's number. The ending is always the last phase, with or without
    steps (an empty ending is passed through: its run completes at once).
    """

    phases: tuple[PhasePlan, ...]
    # The phase a cleanup's reverts run in, after the ending: its steps are written by the tick, one per
    # resource to revert, never authored (numbered here too, the walk's last place).
    cleanup: PhasePlan
    cleanup_on: frozenset[CleanupOn] = frozenset()  # when it cleans up without a cancel (docs/contract.md)
    overlap: Overlap = Overlap.ALLOW  # an occurrence due while an earlier run is live (runner/overlap.py)

    @property
    def first(self) -> PhasePlan:
        return self.phases[0]

    @property
    def ending(self) -> PhasePlan:
        return self.phases[-1]

    def phase(self, number: int) -> PhasePlan:
        """The phase of this number (KeyError if the version has none)."""
        for plan in self.phases:
            if plan.number == number:
                return plan
        raise KeyError(f"the programme has no phase {number}")

    def after(self, number: int) -> PhasePlan | None:
        """The phase the walk goes on to after this one; None after the ending."""
        later = [plan for plan in self.phases if plan.number > number]
        return later[0] if later else None

    def static_revert(self, phase: int, seq: int) -> Revert | None:
        """The authored revert of the step at (phase, seq), if it has one (a cleanup's reverts have none)."""
        plan = next((p for p in self.phases if p.number == phase), None)
        return plan.specs[seq].revert if plan is not None and seq < len(plan.specs) else None

    def spec(self, phase: int, seq: int) -> StepSpec | None:
        """The authored step at (phase, seq), if there is one (a cleanup's reverts are not authored)."""
        plan = next((p for p in self.phases if p.number == phase), None)
        return plan.specs[seq] if plan is not None and seq < len(plan.specs) else None

    def named(self, name: str) -> tuple[int, int] | None:
        """The (phase, seq) of the step named `name` (what an only_if calls a cue by); None if none is."""
        return next(((p.number, seq) for p in self.phases for seq, spec in enumerate(p.specs) if spec.name == name), None)

    @property
    def rows(self) -> tuple[PhasePlan, ...]:
        """The phases a run gets a row for: every one with steps."""
        return tuple(plan for plan in self.phases if plan.specs)


def programme_of(document: dict[str, Any]) -> Programme:
    try:
        authored = [
            (PhaseKind.MAIN, str(phase.get("name") or f"phase {place}"), tuple(_spec(step) for step in phase["steps"]),
             *_advance(phase), OnlyIf.of(phase["only_if"]) if phase.get("only_if") is not None else None)
            for place, phase in enumerate(document["phases"], 1)
        ]
        ending = (PhaseKind.ENDING, "ending", tuple(_spec(step) for step in document.get("ending") or ()), StepsDone(), None,
                  None)
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise UnreadableDocument(f"definition document unreadable: {type(error).__name__}: {error}") from error
    if not authored or not all(specs for _, _, specs, *_ in authored):
        raise UnreadableDocument("definition document unreadable: every phase needs at least one step")
    cleanup_on = document.get("cleanup_on") or []
    if not isinstance(cleanup_on, list) or not set(cleanup_on) <= {when.value for when in CleanupOn}:
        raise UnreadableDocument(f"definition document unreadable: cleanup_on {cleanup_on!r}")
    cleanup = (PhaseKind.CLEANUP, "cleanup", (), StepsDone(), None, None)
    *walked, last = (PhasePlan(number, *plan) for number, plan in enumerate([*authored, ending, cleanup], 1))
    if (overlap := (document.get("schedule") or {}).get("overlap") or Overlap.ALLOW.value) not in {o.value for o in Overlap}:
        raise UnreadableDocument(f"definition document unreadable: overlap {overlap!r}")
    return Programme(tuple(walked), last, frozenset(CleanupOn(when) for when in cleanup_on), Overlap(overlap))


def _advance(phase: dict[str, Any]) -> tuple[Condition, PhaseLimit | None]:
    """The condition a phase ends on (steps_done when it names none) and its time limit."""
    advance = phase.get("advance") or None
    condition = condition_of(advance)
    if isinstance(condition, After):
        return condition, PhaseLimit(condition.seconds, OnDeadline.CLOSE)
    limit = None
    if advance is not None and advance.get("timeout_seconds") is not None:
        pauses = advance.get("on_timeout") == OnTimeout.PAUSE
        limit = PhaseLimit(int(advance["timeout_seconds"]), (OnTimeout.PAUSE if pauses else OnTimeout.ADVANCE).on_deadline)
    return condition, limit


def _spec(step: dict[str, Any]) -> StepSpec:
    params = step.get("params") or {}
    if not isinstance(params, dict):
        raise ValueError("params must be an object")
    return StepSpec(
        action_id=step["action"],
        params=params,
        action_version=int(step.get("version") or 1),
        on_failure=OnFailure(step.get("on_failure") or OnFailure.PAUSE.value),
        revert=ledger.revert_of(step["revert"]) if step.get("revert") is not None else None,
        on_doubt=OnDoubt(step.get("on_doubt") or OnDoubt.RESEND.value),
        name=step.get("name"),
        only_if=OnlyIf.of(step["only_if"]) if step.get("only_if") is not None else None,
    )
