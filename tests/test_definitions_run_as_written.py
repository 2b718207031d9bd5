"""A definition that validates runs as written: validation and the action handlers check one schema."""

from __future__ import annotations

import json

import pytest

from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.store import steps
from tests.support.api import ADMIN
from tests.support.factory import document, run_row
from tests.support.runner_kit import schedule, step, tick
from tests.support.scenes import everything

BLANK = "must hold something besides whitespace"
REFUSED = [  # (the step as raw JSON, the start of the problem validation names)
    ('{"action": "core.wait", "params": {"seconds": 5.0}}', "document.phases[0].steps[0].params.seconds must be integer"),
    ('{"action": "core.wait", "params": {"seconds": 1e1}}', "document.phases[0].steps[0].params.seconds must be integer"),
    ('{"action": "core.announce", "params": {"message": "  "}}', f"document.phases[0].steps[0].params.message {BLANK}"),
    ('{"action": "core.cue", "params": {"instruction": "\\t \\n"}}', f"document.phases[0].steps[0].params.instruction {BLANK}"),
    ('{"action": "world.spawn\\n"}', "document.phases[0].steps[0].action: no action 'world.spawn\\n'"),
]


@pytest.mark.parametrize("raw_step, problem", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_step_its_action_could_not_run_is_refused_when_the_definition_is_saved(api, db, raw_step, problem):
    before = everything(db)
    answer = api.post("/definitions", raw=f'{{"name": "x", "phases": [{{"steps": [{raw_step}]}}]}}', auth=ADMIN)
    assert answer.status == 400
    [message] = answer.body["errors"]
    assert message.startswith(problem), message
    assert everything(db) == before


def test_a_definition_that_validates_runs_as_written(api, db, clock, runner, game_bridge):
    authored = {"name": "as written", "phases": [{"steps": [
        {"action": "core.wait", "params": {"seconds": 0}},
        {"action": "core.announce", "params": {"message": " doors open "}},
        {"action": "world.spawn", "params": {"npc": "scarecrow", "hp": 1.5}},
        {"action": "core.cue", "params": {"instruction": "x"}},
    ]}]}
    created = api.post("/definitions", authored, auth=ADMIN)
    assert created.status == 201, created.body
    scheduled = api.post(f"/definitions/{created.body['definition']['id']}/runs",
                         {"scheduled_for": clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")}, auth=ADMIN)
    tick(runner)
    ran = db.autocommit(lambda tx: steps.list_for_run(tx, scheduled.body["run"]["id"]))
    assert [(s.status, s.parked) for s in ran] == [(StepStatus.DONE, False)] * 3 + [(StepStatus.RUNNING, True)]


def test_stored_params_its_action_cannot_take_fail_with_the_problem_validation_names(db, clock, runner):
    run = schedule(db, clock.now(), document([[step("core.wait", seconds=5.0)]]))
    tick(runner)
    [wait] = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))
    assert wait.status is StepStatus.FAILED and wait.last_error == "core.wait params.seconds must be integer"
    assert run_row(db, run.id).status is RunStatus.PAUSED
    assert json.loads(json.dumps(wait.params)) == {"seconds": 5.0}
