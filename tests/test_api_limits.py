"""The API's documented limits: what a client may send, and how much it gets back."""

from __future__ import annotations

import pytest

from chalicelib.events.model import RunStatus
from tests.support.api import ADMIN, api  # noqa: F401 — the fixture
from tests.support.scenes import log_rows, put_step_in, run_with_steps

STACK_TRACE = "Traceback (most recent call last):\n" + "  File \"boss.py\", line 1, in fight\n" * 300


@pytest.mark.parametrize("control, field", [("pause", "reason"), ("cancel", "reason")])
def test_a_run_control_takes_a_reason_of_any_length_and_keeps_its_first_500_characters(api, db, clock, control, field):
    run, _ = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    answer = api.post(f"/runs/{run.id}/{control}", {field: "  " + STACK_TRACE}, auth=ADMIN)
    assert answer.status == 200, answer.body
    [entry] = [e for e in log_rows(db, run.id) if e["detail"].get("control") == control]
    assert entry["detail"][field] == STACK_TRACE.strip()[:500]


@pytest.mark.parametrize("control, field, state", [("confirm", "note", "parked"), ("skip", "reason", "pending")])
def test_a_step_control_takes_a_note_of_any_length_and_keeps_its_first_500_characters(api, db, clock, control, field, state):
    run, (first, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, first, state, clock.now())
    answer = api.post(f"/runs/{run.id}/steps/{first.id}/{control}", {field: STACK_TRACE * 3}, auth=ADMIN)
    assert answer.status == 200, answer.body
    [entry] = [e for e in log_rows(db, run.id) if e["detail"].get("control") == control]
    assert entry["detail"][field] == STACK_TRACE.strip()[:500]


def test_a_document_with_80000_problems_answers_the_first_50_and_how_many_more(api, db):
    unknown = {f"k{i:05}": 0 for i in range(80_000)}
    answer = api.post("/definitions", {"name": "x", "phases": [{"steps": [{"action": "a.b"}]}], **unknown}, auth=ADMIN)
    assert answer.status == 400
    *problems, more = answer.body["errors"]
    assert problems == [f"document.k{i:05} is not a known field" for i in range(50)]
    assert more == "… and 79950 more problems"
