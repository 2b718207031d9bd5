"""A step's one name (issue 40, item 3; docs/contract.md "A step's one name"): the rule for its brackets, kept on
the step's row from its definition, answered by the API beside the step; and a resume's note, kept on its row."""

from __future__ import annotations

import pytest

from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.model import StepSpec, step_label
from tests.support.api import ADMIN, MODERATOR
from tests.support.factory import make_run
from tests.support.scenes import log_rows, materialise


@pytest.mark.parametrize("name, action, params, label", [
    ("light_the_bonfire", "core.cue", {"instruction": "Light it"}, "light the bonfire"),  # its name, in words
    (None, "core.cue", {"instruction": "Light the bonfire"}, "Light the bonfire"),
    (None, "core.cue", {"instruction": "Light the bonfire, then confirm this step"}, "Light the bonfire, then confirm this…"),
    (None, "core.cue", {"instruction": "Light  the\nbonfire"}, "Light the bonfire"),  # as it shows: spaces collapsed
    (None, "core.cue", {"instruction": "x" * 60}, "x" * 39 + "…"),  # one long word: cut all the same
    (None, "core.cue", {"instruction": "   "}, "core.cue"),
    (None, "world.spawn", {"instruction": "not a cue's"}, "world.spawn"),
    ("arena", "world.spawn", {}, "arena"),
])
def test_the_brackets_say_its_name_else_a_cues_instruction_else_its_action(name, action, params, label):
    assert step_label(name, action, params) == label


def test_the_api_answers_each_steps_one_name_beside_its_authored_name(api, db, clock):
    run = make_run(db, clock.now())
    made = materialise(db, run, 1, [StepSpec("world.spawn"), StepSpec("core.cue", {"instruction": "Light it"},
                                                                       name="light_the_bonfire")])
    steps = api.get(f"/runs/{run.id}", auth=ADMIN).body["steps"]
    assert [(s["id"], s["name"], s["named"]) for s in steps] == [
        (made[0].id, None, f"Run {run.id} · Phase 1 · step 1 (world.spawn)"),
        (made[1].id, "light_the_bonfire", f"Run {run.id} · Phase 1 · step 2 (light the bonfire)")]


def test_a_resume_keeps_its_note_on_its_row(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    assert api.post(f"/runs/{run.id}/pause", {"reason": "boss bugged"}, auth=ADMIN).status == 200
    assert api.post(f"/runs/{run.id}/resume", {"note": "  boss fixed  "}, auth=MODERATOR).status == 200
    resumed = log_rows(db, run.id)[-1]
    assert (resumed["actor"], resumed["detail"]["control"], resumed["detail"]["note"]) == ("mod-mia", "resume", "boss fixed")
