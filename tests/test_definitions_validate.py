"""A definition document is checked against the action registry and reported whole, each problem once and in words
a person can act on (blank text, the params' measured size, a field a core step has no use for)."""

import pytest

from chalicelib.events.document import validate
from chalicelib.events.errors import Invalid

SPEC_EXAMPLE = {
    "name": "Harvest festival", "grace_seconds": 300,
    "phases": [{"name": "opening", "steps": [
        {"action": "core.announce", "params": {"message": "The harvest begins"}},
        {"action": "core.wait", "params": {"seconds": 60}},
        {"action": "world.spawn", "params": {"npc": "scarecrow"}, "version": 1, "on_failure": "pause"},
        {"action": "core.cue", "params": {"instruction": "Light the bonfire"}}]}],
    "ending": [{"action": "core.announce", "params": {"message": "Thanks for coming"}}],
    "schedule": {"cron": "0 20 * * 5"},
}


STEPS_OF_A_WAIT = [{"action": "core.wait", "params": {"seconds": 1}}]


def _problems(document) -> list[str]:
    with pytest.raises(Invalid) as invalid:
        validate(document)
    return invalid.value.messages


def test_the_spec_example_is_valid_and_kept_as_authored():
    assert validate(SPEC_EXAMPLE) == {
        **SPEC_EXAMPLE,
        "phases": [{"name": "opening", "steps": [
            {"action": "core.announce", "params": {"message": "The harvest begins"}, "version": 1, "on_failure": "pause"},
            {"action": "core.wait", "params": {"seconds": 60}, "version": 1, "on_failure": "pause"},
            {"action": "world.spawn", "params": {"npc": "scarecrow"}, "version": 1, "on_failure": "pause"},
            {"action": "core.cue", "params": {"instruction": "Light the bonfire"}, "version": 1, "on_failure": "pause"}]}],
        "ending": [{"action": "core.announce", "params": {"message": "Thanks for coming"}, "version": 1, "on_failure": "pause"}],
    }


def test_defaults_are_filled_in():
    valid = validate({"name": " Quiz ", "phases": [{"steps": [{"action": "quiz.ask"}]}]})
    assert valid == {
        "name": "Quiz", "grace_seconds": 300, "ending": [], "schedule": None,
        "phases": [{"name": "phase 1", "steps": [{"action": "quiz.ask", "params": {}, "version": 1, "on_failure": "pause"}]}],
    }


def test_every_problem_is_listed_at_once():
    problems = _problems({
        "name": "Broken", "grace_seconds": -1, "status": "running",
        "phases": [
            {"name": "one", "steps": [
                {"action": "core.wait", "params": {"seconds": "soon"}},
                {"action": "core.teleport"},
                {"action": "world.spawn", "on_failure": "explode"},
                {"action": "core.cue", "params": {"instruction": "x"}, "version": 7},
                {"action": "Not An Action!"}]},
            {"name": "two", "steps": []}],
        "ending": [{"action": "core.announce", "params": {"message": "bye", "attempts": 3}}],
        "schedule": {"cron": "every friday"},
    })
    expected = [
        "`status` is not a field of document (it has `name`, `grace_seconds`, `phases`, `ending`, `cleanup_on`, `schedule`)",
        "document.grace_seconds must be bigger than or equal to 60",
        "document.phases[0].steps[2].on_failure must be one of",
        "document.phases[1].steps must contain at least 1 items",
        "document.phases[0].steps[0].params.seconds must be integer",
        "document.phases[0].steps[1].action: no action 'core.teleport'",
        "document.phases[0].steps[3].version: core.cue has no version 7",
        "document.phases[0].steps[4].action: no action 'Not An Action!'",
        "`attempts` is not a field of document.ending[0].params (core.announce) (it has `message`)",
        (
            "document.schedule.cron: 'every friday' has 2 field(s);"
            " a schedule is standard five-field cron (minute hour day-of-month month day-of-week)"
        ),
    ]
    assert len(problems) == len(expected)
    for problem, start in zip(problems, expected, strict=True):
        assert problem.startswith(start), (problem, start)


@pytest.mark.parametrize("document, start", [
    (None, "document must be object"),
    ([], "document must be object"),
    ({"phases": [{"steps": [{"action": "a.b"}]}]}, "document.name is required"),
    ({"name": "   ", "phases": [{"steps": [{"action": "a.b"}]}]}, "document.name must hold something besides whitespace"),
    ({"name": "x", "phases": []}, "document.phases must contain at least 1 items"),
    ({"name": "x", "phases": "all of them"}, "document.phases must be array"),
    ({"name": "x", "phases": [{"steps": [{"action": "a.b", "params": [1]}]}]}, "document.phases[0].steps[0].params must be object"),
    ({"name": "x", "grace_seconds": 1.5, "phases": [{"steps": [{"action": "a.b"}]}]}, "document.grace_seconds must be integer"),
    ({"name": "x", "grace_seconds": 10**9, "phases": [{"steps": [{"action": "a.b"}]}]}, "document.grace_seconds must be smaller"),
    ({"name": "x" * 201, "phases": [{"steps": [{"action": "a.b"}]}]}, "document.name must be shorter"),
    (
        {"name": "x", "phases": [{"steps": [{"action": "a.b"}]}], "schedule": {"cron": "0 0 31 2 *"}},
        "document.schedule.cron: '0 0 31 2 *' never fires",
    ),
    (
        {"name": "x", "phases": [{"steps": [{"action": "a.b"}]}], "schedule": {"cron": "0 0 * * * *"}},
        "document.schedule.cron: '0 0 * * * *' has 6 field(s); a schedule is standard five-field cron",
    ),
    (
        {"name": "x", "phases": [{"steps": [{"action": "a.b", "params": {"blob": "x" * 20000}}]}]},
        "document.phases[0].steps[0].params: larger than",
    ),
])
def test_each_kind_of_problem_is_named(document, start):
    [problem] = _problems(document)
    assert problem.startswith(start), problem


@pytest.mark.parametrize("blank, path", [
    ({"name": "", "phases": [{"steps": STEPS_OF_A_WAIT}]}, "document.name"),
    ({"name": "x", "phases": [{"name": "  ", "steps": STEPS_OF_A_WAIT}]}, "document.phases[0].name"),
    ({"name": "x", "phases": [{"steps": [{"action": "core.cue", "params": {"instruction": " \n"}}]}]},
     "document.phases[0].steps[0].params.instruction"),
    ({"name": "x", "phases": [{"steps": [{"action": "core.announce", "params": {"message": ""}}]}]},
     "document.phases[0].steps[0].params.message"),
    ({"name": "x", "phases": [{"steps": [{"action": "core.cue", "params": {"instruction": "Which?", "choices": [
        {"value": "a", "label": " "}, {"value": "b", "label": "B"}]}}]}]},
     "document.phases[0].steps[0].params.choices[0].label"),
])
def test_text_of_only_whitespace_is_refused_in_words(blank, path):
    assert _problems(blank) == [f"{path} must hold something besides whitespace"]


def test_params_too_large_say_how_they_are_measured():
    """3,000 CJK characters are 9 KB as UTF-8, but the game is sent them escaped: 6 bytes each."""
    problems = _problems({"name": "x", "phases": [{"steps": [{"action": "world.say", "params": {"text": "竜" * 3000}}]}]})
    assert problems == [("document.phases[0].steps[0].params: larger than 16384 bytes as JSON sent to the game (18,012"
                         " bytes; a character beyond ASCII counts 6 bytes, 12 beyond U+FFFF)")]


def test_a_misspelt_field_is_named_with_the_nearest_known_one():
    problems = _problems({"name": "x", "phases": [{"stpes": [{"action": "core.wait"}]}]})
    assert "`stpes` is not a field of document.phases[0]; did you mean `steps`?" in problems
    problems = _problems({"name": "x", "phases": [{"steps": [{"action": "core.announce", "params": {"mesage": "hi"}}]}]})
    assert problems == ["`mesage` is not a field of document.phases[0].steps[0].params (core.announce); did you mean `message`?"]


def test_a_phase_takes_an_advance_condition_and_keeps_it_and_the_ending_takes_none():
    steps = [{"action": "core.announce", "params": {"message": "Go"}}]
    kept = validate({"name": "Race", "phases": [{"steps": steps, "advance": {"when": "manual"}}, {"steps": steps}]})
    assert kept["phases"][0]["advance"] == {"when": "manual"} and "advance" not in kept["phases"][1]
    assert _problems({"name": "Race", "phases": [{"steps": steps, "advance": {"when": "boss_dies"}}]}) == [
        "document.phases[0].advance.when must be one of ['steps_done', 'manual', 'after', 'signal']"]
    assert _problems({"name": "Race", "phases": [{"steps": steps, "advance": {}}]}) == [
        "document.phases[0].advance.when is required"]
    ending = _problems({"name": "Race", "phases": [{"steps": steps}], "ending": {"advance": {"when": "manual"}, "steps": steps}})
    assert "document.ending: the ending takes no advance condition (it is a list of steps, run to the end)" in ending


STEPS = [{"action": "core.announce", "params": {"message": "Go"}}]


def test_a_phase_name_is_kept_trimmed():
    kept = validate({"name": "Boss", "phases": [{"name": "  boss fight ", "steps": STEPS}, {"steps": STEPS}]})
    assert [phase["name"] for phase in kept["phases"]] == ["boss fight", "phase 2"]


# ── fields a core step has no use for ────────────────────────────────────────────
DESPAWN = {"action": "world.despawn", "params": {"npc": "scarecrow"}}
BY_HAND = {"action": "core.cue", "params": {"instruction": "Put the bonfire out"}}


@pytest.mark.parametrize("step, problem", [
    ({"action": "core.wait", "params": {"seconds": 5}, "revert": DESPAWN},
     "revert: core.wait leaves nothing in the game world, so a cleanup has nothing to revert: leave revert out"),
    ({"action": "core.announce", "params": {"message": "Go"}, "revert": BY_HAND},
     "revert: core.announce leaves nothing in the game world, so a cleanup has nothing to revert: leave revert out"),
    ({"action": "core.cue", "params": {"instruction": "Light the bonfire"}, "revert": BY_HAND},
     ("revert: a cue is done by a person's confirm, which records nothing to revert, so a cleanup would never send it:"
      " leave revert out, and give it to the module action that makes the thing (a core.cue revert there asks a person"
      " to undo it by hand)")),
    ({"action": "core.wait", "params": {"seconds": 5}, "on_doubt": "park"},
     ("on_doubt: core.wait sends nothing anywhere: run again it holds the same moment, so it has nothing to be in doubt"
      " about: leave on_doubt out")),
    ({"action": "core.cue", "params": {"instruction": "Light the bonfire"}, "on_doubt": "resend"},
     ("on_doubt: a cue in doubt is posted again and waits for a person as before; park would hold it as a decision"
      " about the game instead, without its reminders and timeout: leave on_doubt out")),
])
def test_a_revert_or_on_doubt_a_core_step_has_no_use_for_is_refused_saying_why(step, problem):
    assert _problems({"name": "x", "phases": [{"steps": [step]}]}) == [f"document.phases[0].steps[0].{problem}"]
    assert _problems({"name": "x", "phases": [{"steps": STEPS}], "ending": [step]}) == [f"document.ending[0].{problem}"]


def test_what_a_step_in_doubt_or_a_cleanup_uses_is_kept():
    """An announcement in doubt may have been posted: park lets a person decide rather than post it twice. A
    module action's static revert may be done by hand (core.cue)."""
    kept = validate({"name": "x", "phases": [{"steps": [
        {"action": "core.announce", "params": {"message": "Go"}, "on_doubt": "park"},
        {"action": "world.spawn", "params": {"npc": "scarecrow"}, "on_doubt": "park", "revert": BY_HAND}]}]})
    assert [(step.get("on_doubt"), step.get("revert")) for step in kept["phases"][0]["steps"]] == [
        ("park", None), ("park", BY_HAND)]


@pytest.mark.parametrize("advance", [
    {"when": "after", "seconds": 1200},
    {"when": "signal", "name": "boss_defeated"},
    {"when": "signal", "name": "boss_defeated", "timeout_seconds": 600, "on_timeout": "pause"},
    {"when": "manual", "timeout_seconds": 3600},
    {"when": "steps_done", "timeout_seconds": 604800, "on_timeout": "advance"},
])
def test_each_advance_condition_is_kept_as_written(advance):
    kept = validate({"name": "Boss", "phases": [{"steps": STEPS, "advance": advance}]})
    assert kept["phases"][0]["advance"] == advance


@pytest.mark.parametrize("advance, problem", [
    ({"when": "after", "seconds": 60, "timeout_seconds": 30},
     ("document.phases[0].advance.timeout_seconds: a phase that advances 'after' takes no timeout_seconds"
      " (after is a duration already)")),
    ({"when": "after"}, "document.phases[0].advance.seconds is required when it advances 'after'"),
    ({"when": "after", "seconds": 0}, "document.phases[0].advance.seconds must be bigger than or equal to 1"),
    ({"when": "after", "seconds": 604801}, "document.phases[0].advance.seconds must be smaller than or equal to 604800"),
    ({"when": "signal"}, "document.phases[0].advance.name is required when it advances 'signal'"),
    ({"when": "signal", "name": "Boss Defeated"}, "document.phases[0].advance.name must match"),
    ({"when": "manual", "name": "go"}, "document.phases[0].advance.name: a phase that advances 'manual' takes no name"),
    ({"when": "manual", "on_timeout": "pause"}, "document.phases[0].advance.on_timeout: it needs a timeout_seconds"),
    # Only what is wrong: a timeout_seconds would be refused too, so it is not asked for.
    ({"when": "after", "seconds": 5, "on_timeout": "pause"},
     "document.phases[0].advance.on_timeout: a phase that advances 'after' takes no on_timeout"),
    ({"when": "signal", "name": "go", "timeout_seconds": 9, "on_timeout": "wait"},
     "document.phases[0].advance.on_timeout must be one of ['advance', 'pause']"),
    ({"when": {}, "name": "a", "seconds": 1}, "document.phases[0].advance.when"),  # schemathesis found a 500 here
    ({"when": ["after"], "seconds": 1}, "document.phases[0].advance.when"),
])
def test_an_advance_condition_that_cannot_work_is_refused_naming_why(advance, problem):
    [found] = _problems({"name": "Boss", "phases": [{"steps": STEPS, "advance": advance}]})
    assert found.startswith(problem), found


def test_a_signal_name_ends_one_phase_only():
    signal = {"when": "signal", "name": "boss_defeated"}
    assert _problems({"name": "Boss", "phases": [{"steps": STEPS, "advance": signal}, {"steps": STEPS, "advance": signal}]}) == [
        "document.phases[1].advance.name: the signal 'boss_defeated' already ends document.phases[0]"]


def test_every_example_document_is_valid_and_the_readmes_phases_example_is_its_file():
    """A reader copies these: each file in examples/ validates, and the README's block is boss-night.json."""
    import json
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for path in sorted((root / "examples").glob("*.json")):
        validate(json.loads(path.read_text()))
    [block] = re.findall(r"```json\n(\{\"name\": \"Boss night\".*?)```", (root / "README.md").read_text(), re.S)
    assert json.loads(block) == json.loads((root / "examples" / "boss-night.json").read_text())
