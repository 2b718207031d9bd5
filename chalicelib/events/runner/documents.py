"""A stored (already validated) definition document, as the runner walks it.

Phases are numbered from 1 in authored order; the `ending` steps are phase N+1.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UnreadableDocument
from ..model import OnFailure, StepSpec


@dataclass(frozen=True)
class Plan:
    phases: tuple[tuple[StepSpec, ...], ...]
    ending: tuple[StepSpec, ...]
    names: tuple[str, ...]  # of the phases, for the log

    @property
    def last_phase(self) -> int:
        return len(self.phases)

    @property
    def ending_phase(self) -> int:
        return len(self.phases) + 1

    def name(self, phase: int) -> str:
        return "ending" if phase == self.ending_phase else self.names[phase - 1]

    def specs(self, phase: int) -> tuple[StepSpec, ...]:
        return self.ending if phase == self.ending_phase else self.phases[phase - 1]


def plan_of(document: dict) -> Plan:
    try:
        phases = tuple(tuple(_spec(step) for step in phase["steps"]) for phase in document["phases"])
        ending = tuple(_spec(step) for step in document.get("ending") or ())
        names = tuple(str(phase.get("name") or f"phase {number}") for number, phase in enumerate(document["phases"], 1))
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise UnreadableDocument(f"definition document unreadable: {type(error).__name__}: {error}") from error
    if not phases or not all(phases):
        raise UnreadableDocument("definition document unreadable: every phase needs at least one step")
    return Plan(phases, ending, names)


def _spec(step: dict) -> StepSpec:
    params = step.get("params") or {}
    if not isinstance(params, dict):
        raise ValueError("params must be an object")
    return StepSpec(
        action_id=step["action"],
        params=params,
        action_version=int(step.get("version") or 1),
        on_failure=OnFailure(step.get("on_failure") or OnFailure.PAUSE.value),
    )
