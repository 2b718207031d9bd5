"""The inbox's one line of a wait (`events/stories.py`), as a person reads it on a phone at 2 a.m."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from chalicelib.events.lifecycle import OnFailure, StepStatus
from chalicelib.events.model import LogEntry, Step
from chalicelib.events.stories import is_chat, name_holders, person, story

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


def test_a_chat_holder_is_named_by_their_name_and_platform_else_by_platform():
    pressed = LogEntry(id=1, run_id=1, step_id=25, kind="chat.pressed", phase=1, actor="discord:4242",
                       detail={"control": "acknowledge", "platform": "discord", "name": "Mira"},
                       created_at=datetime(2026, 12, 7, tzinfo=UTC))
    assert person("discord:4242", pressed) == "Mira (Discord)"
    assert person("slack:U1", pressed) == "Slack user U1"  # the newest press is someone else's
    assert person("gm-gus", pressed) == "gm-gus"
    wait = {"for": "cue", "step_id": 25, "since": None, "acknowledged_by": "discord:4242"}
    name_holders(wait, pressed)
    assert _line(_cue("Open the gate"), **wait).endswith("; Mira (Discord) has it")


def test_a_chat_identity_is_a_known_platform_and_a_user():
    assert [is_chat(a) for a in ("discord:4242", "slack:U1", "gm-gus", "discord:", "teams:7")] == [True, True, False, False, False]
