"""The inbox's one line of a wait (`events/stories.py`), as a person reads it on a phone at 2 a.m."""

from __future__ import annotations

from typing import Any

from chalicelib.events.lifecycle import OnFailure, StepStatus
from chalicelib.events.model import Step
from chalicelib.events.stories import story

LONG = "Light the bonfire, then confirm this step"


def _cue(instruction: str, name: str | None = None, **more: Any) -> Step:
    return Step(id=25, run_id=1, phase=1, seq=3, action_id="core.cue", params={"instruction": instruction},
                action_version=1, on_failure=OnFailure.PAUSE, idempotency_key="k", status=StepStatus.RUNNING,
                attempts=1, claimed_by=None, claim_expires_at=None, due_at=None, started_at=None, finished_at=None,
                last_error=None, name=name, **more)


def _line(step: Step, **wait: Any) -> str:
    return story({"for": "cue", "step_id": step.id, "since": None, **wait}, step, None, None)


def test_a_cue_named_by_its_instruction_says_it_once_even_cut():
    assert _line(_cue(LONG)) == \
        "Waiting for a game master at Run 1 · Phase 1 · step 4 (Light the bonfire, then confirm this…); nobody has it yet"
    assert _line(_cue("Open the gate")) == "Waiting for a game master at Run 1 · Phase 1 · step 4 (Open the gate); nobody has it yet"


def test_a_cue_with_an_authored_name_adds_its_instruction():
    assert _line(_cue(LONG, name="bonfire"), acknowledged_by="gm-gus") == \
        f"Waiting for a game master at Run 1 · Phase 1 · step 4 (bonfire): {LONG}; gm-gus has it"
