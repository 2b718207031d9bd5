"""A phase's lifecycle: its kinds and states, the condition that ends it, what its time limit does, who
closed it, and what a signal's first receipt did to it.

The invariant: each of these words is named here and nowhere else, with the
words the console shows for it. A phase's condition is typed once, from the
document's `advance` or the phase row's `condition` (`condition_of`), and is
written back only as its row (`row()`): the same JSON the document authored and
the API shows.

    "advance": {"when": "steps_done"}            StepsDone()     (the default, as if absent)
    "advance": {"when": "manual"}                Manual()        a person advances it
    "advance": {"when": "after", "seconds": 90}  After(90)       it lasts 90 s
    "advance": {"when": "signal", "name": "x"}   Signalled("x")  the game (or staff) sends x
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any, ClassVar, TypeAlias

from .waits import WaitingFor


class PhaseKind(str, Enum):
    MAIN = "main"  # an authored phase, walked in order
    ENDING = "ending"  # the ending steps, after the last main phase; never pauses
    CLEANUP = "cleanup"  # reverting what the run left in the world: one revert step per resource, newest first


class PhaseState(str, Enum):
    NOT_STARTED = "not_started"  # its steps are not materialised yet
    OPEN = "open"  # its steps are being worked
    DRAINED = "drained"  # no open step left, and left
    HELD = "held"  # no open step left, and its condition not met: not left yet


# ── the condition that ends a phase ────────────────────────────────────────
class ConditionKind(str, Enum):
    """What must be met before a drained phase is left (the document's `advance.when`)."""

    STEPS_DONE = "steps_done"  # its steps are done: nothing more to meet
    MANUAL = "manual"  # a person advances it (the advance control)
    AFTER = "after"  # `seconds` after it opened (its steps are closed then)
    SIGNAL = "signal"  # the game (or staff) sends the signal `name`


class ClosedBy(str, Enum):
    """What closed a phase early (its open steps cancelled): `event_run_phases.closed_by`."""

    SIGNAL = "signal"  # its signal came
    ADVANCE = "advance"  # a person advanced it
    AFTER = "after"  # an `after` phase lasted its time
    TIMEOUT = "timeout"  # its time limit passed, with `on_timeout: advance`


@dataclass(frozen=True)
class _Condition:
    kind: ClassVar[ConditionKind]

    @property
    def must_be_met(self) -> bool:
        """A drained phase is held (not left) until it is met: every condition but its steps being done."""
        return self.kind is not ConditionKind.STEPS_DONE

    @property
    def waits_for(self) -> WaitingFor | None:
        """What a run held by it waits for: a person's advance, the signal, or nobody (after: the engine's timer)."""
        return CONDITION_WORDS[self.kind].waits_for

    @property
    def closed_at_its_deadline_by(self) -> ClosedBy:
        """Who closed the phase when its deadline closes it: its `after`, or its time limit."""
        return ClosedBy.AFTER if self.kind is ConditionKind.AFTER else ClosedBy.TIMEOUT

    def row(self) -> dict[str, Any] | None:
        """The condition as the phase row keeps it and the API shows it (None: nothing to meet)."""
        return {"when": self.kind.value, **asdict(self)} if self.must_be_met else None


@dataclass(frozen=True)
class StepsDone(_Condition):
    kind: ClassVar[ConditionKind] = ConditionKind.STEPS_DONE


@dataclass(frozen=True)
class Manual(_Condition):
    kind: ClassVar[ConditionKind] = ConditionKind.MANUAL


@dataclass(frozen=True)
class After(_Condition):
    seconds: int
    kind: ClassVar[ConditionKind] = ConditionKind.AFTER


@dataclass(frozen=True)
class Signalled(_Condition):
    name: str
    kind: ClassVar[ConditionKind] = ConditionKind.SIGNAL


Condition: TypeAlias = StepsDone | Manual | After | Signalled


def condition_of(written: Mapping[str, Any] | None) -> Condition:
    """The condition a document's `advance` or a phase row's `condition` writes (None: steps_done); ValueError
    for a `when` no condition has, KeyError for a field it lacks."""
    if written is None:
        return StepsDone()
    kind = ConditionKind(written["when"])
    if kind is ConditionKind.AFTER:
        return After(int(written["seconds"]))
    if kind is ConditionKind.SIGNAL:
        return Signalled(str(written["name"]))
    return Manual() if kind is ConditionKind.MANUAL else StepsDone()


@dataclass(frozen=True)
class ConditionWords:
    """How the console says when a phase of this condition ends (`{seconds}`, `{signal}` filled in)."""

    label: str
    waits_for: WaitingFor | None = None  # what a run held by it waits for (nobody: None)
    default: bool = False  # the condition of a phase that names none
    ends_at_its_limit: bool = False  # its time limit is its end, not a limit besides


CONDITION_WORDS: dict[ConditionKind, ConditionWords] = {
    ConditionKind.STEPS_DONE: ConditionWords("ends when its steps are done", default=True),
    ConditionKind.MANUAL: ConditionWords("waits for a person", WaitingFor.ADVANCE),
    ConditionKind.AFTER: ConditionWords("ends after {seconds}", ends_at_its_limit=True),
    ConditionKind.SIGNAL: ConditionWords("ends on the signal {signal}", WaitingFor.SIGNAL),
}


@dataclass(frozen=True)
class ClosedWords:
    """How a closed phase is told: `label` in a refusal ("closed at its time limit"), `cause` on each step its
    close cancelled, `closed` on its row once closed, `ended` on the next phase's log row (`{number}`, `{name}`,
    `{by}`, `{limit}`, `{seconds}`, `{signal}` filled in); whether its deadline closed it, and whether a person did."""

    label: str
    cause: str
    closed: str
    ended: str
    by_deadline: bool = False
    by_person: bool = False


CLOSED_WORDS: dict[ClosedBy, ClosedWords] = {
    ClosedBy.SIGNAL: ClosedWords("by the signal {signal}", "phase {number} ({name}) ended on the signal {signal}",
                                 "closed (signal) at", "a signal from {by} ended the one before"),
    ClosedBy.ADVANCE: ClosedWords("by a person's advance", "phase {number} ({name}) was advanced", "advanced by {by} at",
                                  "{by} ended the one before", by_person=True),
    ClosedBy.AFTER: ClosedWords("at the end of its time", "phase {number} ({name}) lasted its {seconds} s",
                                "lasted its {limit}", "the one before lasted its time", by_deadline=True),
    ClosedBy.TIMEOUT: ClosedWords("at its time limit", "phase {number} ({name}) timed out after {seconds} s",
                                  "timed out after {limit}", "the one before timed out", by_deadline=True),
}


# ── a phase's time limit ───────────────────────────────────────────────────
class OnDeadline(str, Enum):
    """What a phase's deadline does when it passes (`event_run_phases.on_deadline`)."""

    CLOSE = "close"  # its open steps are cancelled and it is left (an `after`, or `on_timeout: advance`)
    PAUSE = "pause"  # the run pauses, once; the phase waits on without a deadline


class OnTimeout(str, Enum):
    """What a phase's time limit does, as the document authors it (`advance.on_timeout`)."""

    ADVANCE = "advance"  # close the phase (the default)
    PAUSE = "pause"  # pause the run once

    @property
    def on_deadline(self) -> OnDeadline:
        return TIMEOUT_WORDS[self].on_deadline


@dataclass(frozen=True)
class TimeoutWords:
    """How the console says what a phase's limit does (`label`, the word as authored) and, before its
    deadline, what happens then (`at_deadline`)."""

    label: str
    on_deadline: OnDeadline
    at_deadline: str
    default: bool = False  # what a limit authored without an on_timeout does


TIMEOUT_WORDS: dict[OnTimeout, TimeoutWords] = {
    OnTimeout.ADVANCE: TimeoutWords("advance", OnDeadline.CLOSE, "ends at", default=True),
    OnTimeout.PAUSE: TimeoutWords("pause", OnDeadline.PAUSE, "pauses the run at"),
}


# ── a signal's first receipt ───────────────────────────────────────────────
class SignalEffect(str, Enum):
    """What a signal's first receipt did to its run (`store.signals`)."""

    ENDS_PHASE = "ends_phase"  # the run works that phase: its condition is met, and the run wakes now
    KEPT_FOR_PHASE = "kept_for_phase"  # a later phase, or a run not started: met when it opens
    PHASE_OVER = "phase_over"  # that phase ended already: recorded, nothing changes
    ACTS_ON_RESUME = "acts_on_resume"  # the run is paused at that phase: its condition is met, it closes at resume


# How the console says what a receipt did (`{phase}`: the phase, named).
EFFECT_WORDS: dict[SignalEffect, str] = {
    SignalEffect.ENDS_PHASE: "ends {phase}",
    SignalEffect.KEPT_FOR_PHASE: "kept: {phase} ends as soon as it opens",
    SignalEffect.PHASE_OVER: "{phase} had ended already, so nothing changed",
    SignalEffect.ACTS_ON_RESUME: "ends {phase} once the run is resumed",
}
