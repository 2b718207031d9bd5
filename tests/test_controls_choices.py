"""A cue with choices is confirmed with one of them (issue 39, item 3): `POST …/confirm {"choice"}`.

A confirm that does not fit the cue is 400 naming its choices, and changes nothing; one that fits keeps the
answer on the step and in the confirm's log row. A step that offers no choices is confirmed without one.
"""

from __future__ import annotations

import pytest

from chalicelib.events.lifecycle import StepStatus
from chalicelib.events.store import steps
from tests.support.api import ADMIN, GM
from tests.support.runner_kit import log_of, tick
from tests.support.scenes import everything

ASK = {"action": "core.cue", "name": "arena", "params": {
    "instruction": "Which arena is free?",
    "choices": [{"value": "north", "label": "North arena"}, {"value": "south", "label": "South arena"}]}}
PLAIN = {"action": "core.cue", "params": {"instruction": "Light the bonfire"}}


def _parked(api, db, clock, runner, cue):
    created = api.post("/definitions", {"name": f"Choices {cue is ASK}", "phases": [{"steps": [cue]}]}, auth=ADMIN)
    assert created.status == 201, created.body
    run = api.post(f"/definitions/{created.body['definition']['id']}/runs",
                   {"scheduled_for": clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")}, auth=ADMIN).body["run"]
    tick(runner)
    [step] = db.autocommit(lambda tx: steps.list_for_run(tx, run["id"]))
    assert step.parked
    return run["id"], step


@pytest.mark.parametrize("cue, body, problem", [
    (ASK, {}, ("{run} · Phase 1 · step 1 (arena) asks which: confirm it with a choice, one of north (North arena),"
              " south (South arena)")),
    (ASK, {"note": "done", "choice": "west"},
     "'west' is not one of the choices of {run} · Phase 1 · step 1 (arena): north (North arena), south (South arena)"),
    (ASK, {"choice": "North"},
     "'North' is not one of the choices of {run} · Phase 1 · step 1 (arena): north (North arena), south (South arena)"),
    (PLAIN, {"choice": "north"}, "{run} · Phase 1 · step 1 (Light the bonfire) offers no choices: confirm it without one"),
], ids=["no-choice", "not-offered", "not-exactly", "no-choices-offered"])
def test_a_confirm_that_does_not_fit_the_cue_is_400_naming_its_choices_and_changes_nothing(api, db, clock, runner, cue,
                                                                                           body, problem):
    run_id, step = _parked(api, db, clock, runner, cue)
    before = everything(db)
    answer = api.post(f"/runs/{run_id}/steps/{step.id}/confirm", body, auth=GM)
    assert answer.status == 400, answer.body
    assert answer.body["errors"] == [problem.replace("{run}", f"Run {run_id}")]
    assert everything(db) == before


def test_a_choice_that_is_not_text_is_refused_by_the_confirms_body(api, db, clock, runner):
    run_id, step = _parked(api, db, clock, runner, ASK)
    answer = api.post(f"/runs/{run_id}/steps/{step.id}/confirm", {"choice": 1}, auth=GM)
    assert answer.status == 400 and "choice" in answer.body["errors"][0]


def test_a_confirm_with_one_of_the_choices_keeps_it_on_the_step_and_in_its_log_row(api, db, clock, runner):
    run_id, step = _parked(api, db, clock, runner, ASK)
    answer = api.post(f"/runs/{run_id}/steps/{step.id}/confirm", {"choice": "south"}, auth=GM)
    assert answer.status == 200, answer.body
    assert (answer.body["step"]["status"], answer.body["step"]["choice"]) == ("done", "south")
    confirmed = db.autocommit(lambda tx: steps.get(tx, step.id))
    assert (confirmed.status, confirmed.choice) == (StepStatus.DONE, "south")
    [row] = [e for e in log_of(db, run_id) if e.kind == "step.status" and e.detail.get("control") == "confirm"]
    assert row.detail == {"control": "confirm", "action": "core.cue", "from": "running", "to": "done", "note": None,
                          "choice": "south"}


def test_a_cue_without_choices_is_confirmed_as_ever_and_keeps_no_answer(api, db, clock, runner):
    run_id, step = _parked(api, db, clock, runner, PLAIN)
    answer = api.post(f"/runs/{run_id}/steps/{step.id}/confirm", {"note": "lit"}, auth=GM)
    assert answer.status == 200 and answer.body["step"]["choice"] is None
    [row] = [e for e in log_of(db, run_id) if e.kind == "step.status" and e.detail.get("control") == "confirm"]
    assert "choice" not in row.detail


def test_the_vocabulary_says_which_body_field_carries_the_answer(api):
    controls = {c["name"]: c for c in api.get("/vocabulary", auth=GM).body["controls"]}
    assert controls["confirm"]["choice_field"] == "choice"
    assert {name for name, c in controls.items() if c["choice_field"]} == {"confirm"}


@pytest.mark.parametrize("body", [{}, {"choice": "west"}])
def test_a_confirm_of_a_cue_already_answered_is_409_saying_so_whatever_choice_it_carries(api, db, clock, runner, body):
    """It was 400 "confirm it with a choice": the person was asked to pick an answer for a cue no longer waiting."""
    run_id, step = _parked(api, db, clock, runner, ASK)
    assert api.post(f"/runs/{run_id}/steps/{step.id}/confirm", {"choice": "north"}, auth=GM).status == 200
    before = everything(db)
    answer = api.post(f"/runs/{run_id}/steps/{step.id}/confirm", body, auth=GM)
    assert answer.status == 409, answer.body
    assert "is not waiting on anyone" in answer.body["errors"][0], answer.body
    assert everything(db) == before
