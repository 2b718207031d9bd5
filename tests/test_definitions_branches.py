"""Cues with choices, step names and `only_if` are checked when a definition is saved (issue 39, item 3): a
reference that names no earlier cue with choices or signal, or values it never answers, is refused naming why."""

from __future__ import annotations

import pytest

from chalicelib.events.document import validate
from chalicelib.events.errors import Invalid
from chalicelib.events.model import OnlyIf
from chalicelib.events.nearest import MAX_SUGGESTED
from chalicelib.events.programme import programme_of
from tests.support.api import ADMIN
from tests.support.scenes import everything

CHOICES = [{"value": "north", "label": "North arena"}, {"value": "south", "label": "South arena"}]


def _cue(name="arena", **params):
    return {"action": "core.cue", "name": name, "params": {"instruction": "Which arena?", "choices": CHOICES, **params}}


def _say(only_if=None, name=None):
    return {"action": "core.announce", "params": {"message": "hi"}, **({"only_if": only_if} if only_if else {}),
            **({"name": name} if name else {})}


def _boss(*later, first=None):
    return {"name": "Boss", "phases": [
        {"name": "fight", "advance": {"when": "signal", "name": "boss_defeated"}, "steps": first or [_cue()]},
        *later]}


def _problems(document) -> list[str]:
    with pytest.raises(Invalid) as invalid:
        validate(document)
    return invalid.value.messages


def test_a_branching_document_is_kept_as_authored_and_walked_with_its_gates():
    gate = {"choice": "arena", "in": ["north"]}
    signal = {"signal": "boss_defeated", "field": "outcome", "in": ["won", 2, True]}
    stored = validate(_boss({"name": "north", "only_if": gate, "steps": [_say(signal)]}))
    assert stored["phases"][0]["steps"][0]["name"] == "arena"
    assert stored["phases"][1]["only_if"] == gate and stored["phases"][1]["steps"][0]["only_if"] == signal
    programme = programme_of(stored)
    assert programme.phase(2).only_if == OnlyIf(("north",), choice="arena")
    assert programme.spec(2, 0).only_if == OnlyIf(("won", 2, True), signal="boss_defeated", field="outcome")
    assert programme.named("arena") == (1, 0) and programme.named("nobody") is None


def test_an_answer_is_compared_as_json_values_are():
    gate = OnlyIf(("1", 2, True))
    assert [gate.admits(v) for v in ("1", 1, 2, 2.0, True, None)] == [True, False, True, False, True, False]


@pytest.mark.parametrize("document, problem", [
    (_boss({"only_if": {"choice": "arnea", "in": ["north"]}, "steps": [_say()]}),
     "document.phases[1].only_if.choice: no step is named 'arnea' (did you mean `arena`?)"),
    (_boss({"only_if": {"choice": "zzz", "in": ["north"]}, "steps": [_say()]}),
     "document.phases[1].only_if.choice: no step is named 'zzz' (the named steps: arena)"),
    (_boss({"only_if": {"choice": "hello", "in": ["north"]}, "steps": [_say()]}, first=[_say(name="hello")]),
     "document.phases[1].only_if.choice: 'hello' is document.phases[0].steps[0] (core.announce), not a cue with choices"),
    (_boss({"only_if": {"choice": "arena", "in": ["north", "west", "South"]}, "steps": [_say()]}),
     "document.phases[1].only_if.in: 'west' is not one of the choices of the cue 'arena' (north, south)"),
    (_boss(first=[_say({"choice": "arena", "in": ["north"]}), _cue()]),
     ("document.phases[0].steps[0].only_if.choice: the cue 'arena' (document.phases[0].steps[1]) comes after this, so it"
     " cannot have been answered yet")),
    ({"name": "x", "phases": [{"only_if": {"choice": "arena", "in": ["north"]}, "steps": [_cue()]}]},
     ("document.phases[0].only_if.choice: the cue 'arena' (document.phases[0].steps[0]) comes after this, so it cannot"
     " have been answered yet")),
    (_boss(first=[{**_cue(), "only_if": {"choice": "arena", "in": ["north"]}}]),
     ("document.phases[0].steps[0].only_if.choice: the cue 'arena' (document.phases[0].steps[0]) is this step itself, so"
     " it cannot have been answered yet")),
    (_boss({"steps": [_cue()]}),
     ("document.phases[1].steps[0].name: the name 'arena' is taken by document.phases[0].steps[0] (a step's name is"
     " unique in its definition)")),
    (_boss({"only_if": {"signal": "boss_beaten", "field": "outcome", "in": ["won"]}, "steps": [_say()]}),
     "document.phases[1].only_if.signal: no phase ends on the signal 'boss_beaten' (did you mean `boss_defeated`?)"),
    (_boss(first=[_say({"signal": "boss_defeated", "field": "outcome", "in": ["won"]})]),
     ("document.phases[0].steps[0].only_if.signal: the signal 'boss_defeated' ends document.phases[0], which does not"
     " come before this, so its value cannot be read yet")),
    (_boss({"only_if": {"choice": "arena", "signal": "boss_defeated", "in": ["north"]}, "steps": [_say()]}),
     "document.phases[1].only_if: it reads a cue's answer (choice) or a signal's value (signal and field): one of the two"),
    (_boss({"only_if": {"in": ["north"]}, "steps": [_say()]}),
     "document.phases[1].only_if: it reads a cue's answer (choice) or a signal's value (signal and field): one of the two"),
    (_boss({"only_if": {"choice": "arena", "field": "x", "in": ["north"]}, "steps": [_say()]}),
     "document.phases[1].only_if.field: a cue's answer has no field (field goes with signal)"),
    (_boss({"only_if": {"signal": "boss_defeated", "in": ["won"]}, "steps": [_say()]}),
     "document.phases[1].only_if.field is required with signal: which field of its payload to read"),
    (_boss({"only_if": {"choice": "arena", "in": []}, "steps": [_say()]}), "document.phases[1].only_if.in must"),
    (_boss({"only_if": {"choice": "arena", "in": ["north"], "when": 1}, "steps": [_say()]}),
     "`when` is not a field of document.phases[1].only_if"),
    (_boss(first=[_cue(name="Arena")]), "document.phases[0].steps[0].name must match"),
], ids=["unknown-cue-nearest", "unknown-cue-listed", "not-a-cue-with-choices", "value-not-offered", "later-step",
        "same-phase-for-a-phase", "itself", "name-twice", "unknown-signal", "signal-of-its-own-phase", "both", "neither",
        "field-with-choice", "signal-without-field", "no-values", "unknown-field", "bad-name"])
def test_a_branch_that_cannot_be_read_is_refused_naming_why(document, problem):
    found = _problems(document)
    assert any(p.startswith(problem) for p in found), found


@pytest.mark.parametrize("params, problem", [
    ({"choices": [{"value": "a", "label": "A"}, {"value": "a", "label": "Also A"}]},
     "document.phases[0].steps[0].params.choices: the value 'a' is offered twice"),
    ({"choices": [{"value": "a", "label": "A"}]}, "document.phases[0].steps[0].params.choices must"),
    ({"choices": [{"value": "a", "label": "Go " + "far " * 20 + "north"}, {"value": "b", "label": "Go " + "far " * 20 + "south"}]},
     (f"document.phases[0].steps[0].params.choices: the labels 'Go {'far ' * 20}north' and 'Go {'far ' * 20}south' read"
      " the same on a chat button, which shows a label's first 75 characters: make them differ sooner")),
    ({"choices": [{"value": " ", "label": "A"}, {"value": "b", "label": "B"}]},
     "document.phases[0].steps[0].params.choices[0].value must hold something besides whitespace"),
    ({"choices": CHOICES, "timeout_seconds": 60, "on_timeout": "confirm"},
     "document.phases[0].steps[0].params: on_timeout confirm of a cue with choices needs timeout_choice"),
    ({"choices": CHOICES, "timeout_seconds": 60, "on_timeout": "confirm", "timeout_choice": "west"},
     "document.phases[0].steps[0].params.timeout_choice: 'west' is not one of the choices (north, south)"),
    ({"choices": CHOICES, "timeout_seconds": 60, "on_timeout": "continue", "timeout_choice": "north"},
     "document.phases[0].steps[0].params.timeout_choice: it is chosen only by on_timeout confirm"),
    ({"timeout_seconds": 60, "on_timeout": "confirm", "timeout_choice": "north"},
     "document.phases[0].steps[0].params.timeout_choice: the cue offers no choices"),
])
def test_a_cues_choices_that_cannot_be_answered_are_refused(params, problem):
    found = _problems({"name": "x", "phases": [{"steps": [{"action": "core.cue", "params": {"instruction": "?", **params}}]}]})
    assert any(p.startswith(problem) for p in found), found


def test_long_labels_that_differ_within_what_a_chat_button_shows_are_taken():
    labels = ["Go " + "far " * 17 + "north", "Go " + "far " * 17 + "south and on " * 3]  # apart at character 72
    choices = [{"value": str(i), "label": label} for i, label in enumerate(labels)]
    validate({"name": "x", "phases": [{"steps": [{"action": "core.cue", "params": {"instruction": "?", "choices": choices}}]}]})


def test_a_stored_cue_whose_labels_read_the_same_on_a_chat_button_still_runs():
    """The rule holds definitions saved from now on: a step saved before it is not failed at its dispatch, which
    checks the params again (`perform`)."""
    from chalicelib.events.actions import registry

    alike = [{"value": v, "label": "Go " + "far " * 20 + v} for v in ("north", "south")]
    assert registry.params_problem(registry.CORE_ACTIONS["core.cue"], {"instruction": "?", "choices": alike}, "p") is None


def test_an_ending_step_may_read_any_cue_of_the_phases_and_a_signal_that_ends_one():
    document = _boss(first=[_cue()])
    document["ending"] = [_say({"choice": "arena", "in": ["south"]}),
                          _say({"signal": "boss_defeated", "field": "outcome", "in": ["won"]})]
    assert validate(document)["ending"][0]["only_if"] == {"choice": "arena", "in": ["south"]}


def test_a_save_with_a_broken_branch_is_400_listing_every_problem_and_saves_nothing(api, db):
    before = everything(db)
    document = _boss({"only_if": {"choice": "arnea", "in": ["north"]}, "steps": [_say({"choice": "arena", "in": ["west"]})]})
    answer = api.post("/definitions", document, auth=ADMIN)
    assert answer.status == 400
    assert answer.body["errors"] == [
        "document.phases[1].only_if.choice: no step is named 'arnea' (did you mean `arena`?)",
        "document.phases[1].steps[0].only_if.in: 'west' is not one of the choices of the cue 'arena' (north, south)"]
    assert everything(db) == before


def test_the_definitions_guides_branching_example_is_its_file():
    import json
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    section = (root / "docs" / "definitions.md").read_text().split("## Cues that ask and phases that follow the answer")[1]
    [block] = re.findall(r"```json\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    assert json.loads(block) == json.loads((root / "examples" / "arena-night.json").read_text())


def test_a_document_of_thousands_of_wrong_names_is_refused_with_ten_suggestions_and_twenty_names_listed(monkeypatch):
    """Each wrong name was compared with every name there is: 2,000 steps naming cues that do not exist took 16 s
    to refuse (a 144 KB save), and a document's 10,000 steps would take minutes; each problem listed every name."""
    import difflib

    asked = []
    compare = difflib.get_close_matches
    monkeypatch.setattr(difflib, "get_close_matches", lambda name, *rest, **how: asked.append(name) or compare(name, *rest, **how))
    phases = [{"name": f"p{p}", "steps": [
        {"action": f"world.spawn{p}x{s}", "name": f"s{p}x{s:03d}", "only_if": {"choice": f"t{p}x{s:03d}", "in": ["x"]}}
        for s in range(200)]} for p in range(10)]
    with pytest.raises(Invalid) as invalid:
        validate({"name": "Typos", "phases": phases}, frozenset({"world.spawn", "world.despawn"}))
    problems = invalid.value.messages
    assert len(problems) == 4_000 and len(asked) == MAX_SUGGESTED
    assert all(len(p) < 400 for p in problems) and problems[1999].endswith(", … (2000 in all))")
    assert problems[0].endswith("(did you mean `s0x000`?)")
