"""Cues that ask and phases that follow the answer (issue 39, item 3), on the real database and the real tick.

Two runs of one definition take different phases by a cue's answer, and by a value of a signal's payload:
each test presses the confirm or sends the signal as a person or the game would (the API), ticks, and reads
what a person sees: the steps' statuses, the phases opened and passed over, the log's words.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chalicelib.events import commands
from chalicelib.events.actions.perform import Actions
from chalicelib.events.adapters.rehearsal import rehearsal_actions
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.runner import Runner
from chalicelib.events.store import steps
from chalicelib.events.timeline import MAX_BRANCH_PLACES
from devtools.kit.game_bridge import Answer
from tests.support.api import ADMIN, GM
from tests.support.factory import run_row
from tests.support.runner_kit import RULES, RecordingChannel, log_of, tick

ARENAS = [{"value": "north", "label": "North arena"}, {"value": "south", "label": "South arena"}]


def _cue(name="arena", **params):
    return {"action": "core.cue", "name": name,
            "params": {"instruction": "Which arena is free?", "choices": ARENAS, **params}}


def _say(message, only_if=None):
    return {"action": "core.announce", "params": {"message": message}, **({"only_if": only_if} if only_if else {})}


def _arena_night(**cue_params):
    return {"name": "Arena night", "phases": [
        {"name": "ask", "steps": [_cue(**cue_params), _say("North only", {"choice": "arena", "in": ["north"]}),
                                  _say("Either way")]},
        {"name": "north", "only_if": {"choice": "arena", "in": ["north"]}, "steps": [_say("To the north arena")]},
        {"name": "south", "only_if": {"choice": "arena", "in": ["south"]}, "steps": [_say("To the south arena")]},
        {"name": "prizes", "steps": [_say("Prizes")]},
    ], "ending": [_say("South was played", {"choice": "arena", "in": ["south"]})]}


def _saved(api, document):
    created = api.post("/definitions", document, auth=ADMIN)
    assert created.status == 201, created.body
    return created.body["definition"]["id"]


def _scheduled(api, clock, definition_id):
    answer = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")},
                      auth=ADMIN)
    assert answer.status == 201, answer.body
    return answer.body["run"]["id"]


def _steps(db, run_id):
    return {(s.phase, s.seq): s for s in db.autocommit(lambda tx: steps.list_for_run(tx, run_id))}


def _said(db, run_id):
    return [s.params["message"] for s in sorted(_steps(db, run_id).values(), key=lambda s: (s.phase, s.seq))
            if s.action_id == "core.announce" and s.status is StepStatus.DONE]


def _skipped_phases(db, run_id):
    return [(e.detail["name"], e.detail["cause"]) for e in log_of(db, run_id) if e.kind == "run.phase_skipped"]


def _confirmed(api, db, run_id, choice):
    cue = _steps(db, run_id)[(1, 0)]
    answer = api.post(f"/runs/{run_id}/steps/{cue.id}/confirm", {"choice": choice, "note": "checked"}, auth=GM)
    assert answer.status == 200, answer.body
    return answer.body["step"]


@pytest.mark.parametrize("choice, said, passed_over", [
    ("north", ["North only", "Either way", "To the north arena", "Prizes"],
     [("south", "skipped: cue arena answered north, not one of [south]")]),
    ("south", ["Either way", "To the south arena", "Prizes", "South was played"],
     [("north", "skipped: cue arena answered south, not one of [north]")]),
])
def test_two_runs_of_one_definition_take_the_phases_their_cues_answer_chose(api, db, clock, runner, choice, said,
                                                                             passed_over):
    run_id = _scheduled(api, clock, _saved(api, _arena_night()))
    tick(runner)
    assert _steps(db, run_id)[(1, 0)].parked
    confirmed = _confirmed(api, db, run_id, choice)
    assert confirmed["choice"] == choice and confirmed["status"] == "done"
    tick(runner)
    assert run_row(db, run_id).status is RunStatus.COMPLETED
    assert _said(db, run_id) == said
    assert _skipped_phases(db, run_id) == passed_over
    shown = api.get(f"/runs/{run_id}", auth=GM).body
    assert [s["choice"] for s in shown["steps"] if s["action_id"] == "core.cue"] == [choice]
    [row] = [e for e in log_of(db, run_id) if e.kind == "step.status" and e.detail.get("control") == "confirm"]
    assert (row.detail["choice"], row.detail["note"], row.actor) == (choice, "checked", "gm-gus")
    never_opened = next(p for p in shown["phases"] if p["name"] == passed_over[0][0])
    assert never_opened["state"] == "not_started" and never_opened["opened_at"] is None


def test_a_step_whose_cue_chose_otherwise_is_skipped_at_its_turn_saying_why(api, db, clock, runner):
    run_id = _scheduled(api, clock, _saved(api, _arena_night()))
    tick(runner)
    _confirmed(api, db, run_id, "south")
    tick(runner)
    gated = _steps(db, run_id)[(1, 1)]
    assert (gated.status, gated.last_error, gated.attempts) == (
        StepStatus.SKIPPED, "skipped: cue arena answered south, not one of [north]", 0)
    [row] = [e for e in log_of(db, run_id) if e.kind == "step.status" and e.step_id == gated.id]
    assert row.detail == {"action": "core.announce", "from": "pending", "to": "skipped",
                          "cause": "skipped: cue arena answered south, not one of [north]"}
    assert row.actor == "runner"
    assert run_row(db, run_id).health.value == "ok", "a branch not taken is no trouble"


def test_a_cue_skipped_answers_nothing_and_every_branch_on_it_is_skipped_saying_so(api, db, clock, runner):
    run_id = _scheduled(api, clock, _saved(api, _arena_night()))
    tick(runner)
    cue = _steps(db, run_id)[(1, 0)]
    assert api.post(f"/runs/{run_id}/steps/{cue.id}/skip", {"reason": "nobody there"}, auth=GM).status == 200
    tick(runner)
    assert _said(db, run_id) == ["Either way", "Prizes"]
    assert _skipped_phases(db, run_id) == [
        ("north", "skipped: cue arena was skipped without an answer, not one of [north]"),
        ("south", "skipped: cue arena was skipped without an answer, not one of [south]")]
    assert run_row(db, run_id).status is RunStatus.COMPLETED


def test_a_timeout_that_confirms_chooses_its_timeout_choice_and_the_branch_follows(api, db, clock, runner):
    run_id = _scheduled(api, clock, _saved(api, _arena_night(timeout_seconds=60, on_timeout="confirm",
                                                             timeout_choice="south")))
    tick(runner)
    clock.advance(61)
    tick(runner)
    cue = _steps(db, run_id)[(1, 0)]
    assert (cue.status, cue.choice, cue.last_error) == (StepStatus.DONE, "south", "assumed done after 60 s, choosing south")
    assert _said(db, run_id) == ["Either way", "To the south arena", "Prizes", "South was played"]
    [row] = [e for e in log_of(db, run_id) if e.kind == "step.status" and e.step_id == cue.id]
    assert row.detail["choice"] == "south"


BOSS_NIGHT = {"name": "Boss night", "phases": [
    {"name": "boss fight", "advance": {"when": "signal", "name": "boss_defeated"},
     "steps": [{"action": "world.spawn", "params": {"npc": "dragon"}}]},
    {"name": "victory", "only_if": {"signal": "boss_defeated", "field": "outcome", "in": ["won"]},
     "steps": [_say("The dragon is slain!")]},
    {"name": "retreat", "only_if": {"signal": "boss_defeated", "field": "outcome", "in": ["fled", "wiped"]},
     "steps": [_say("Regroup at the gate")]},
    {"name": "loot", "steps": [_say("Loot for all", {"signal": "boss_defeated", "field": "chests", "in": [1, 2, 3]}),
                               _say("Goodnight")]},
]}


@pytest.mark.parametrize("payload, said, passed_over", [
    ({"outcome": "won", "chests": 2}, ["The dragon is slain!", "Loot for all", "Goodnight"],
     [("retreat", "skipped: signal boss_defeated has outcome won, not one of [fled, wiped]")]),
    ({"outcome": "fled"}, ["Regroup at the gate", "Goodnight"],
     [("victory", "skipped: signal boss_defeated has outcome fled, not one of [won]")]),
])
def test_two_runs_of_one_definition_take_the_phases_their_signals_value_chose(api, db, clock, runner, payload, said,
                                                                              passed_over):
    run_id = _scheduled(api, clock, _saved(api, BOSS_NIGHT))
    tick(runner)
    signalled = api.post(f"/runs/{run_id}/signals/boss_defeated", payload, auth=ADMIN)
    assert signalled.status == 202, signalled.body
    tick(runner)
    assert run_row(db, run_id).status is RunStatus.COMPLETED
    assert _said(db, run_id) == said
    assert _skipped_phases(db, run_id) == passed_over
    if "chests" not in payload:
        loot = _steps(db, run_id)[(4, 0)]
        assert loot.last_error == "skipped: signal boss_defeated carries no chests, not one of [1, 2, 3]"


def test_a_signal_that_never_came_takes_no_branch_that_reads_it(api, db, clock, runner):
    other = {"name": "Two signals", "phases": [
        {"name": "wait", "advance": {"when": "signal", "name": "gate_open", "timeout_seconds": 60},
         "steps": [_say("Waiting")]},
        {"name": "gated", "only_if": {"signal": "gate_open", "field": "side", "in": ["east"]}, "steps": [_say("East")]},
        {"name": "after", "steps": [_say("Done")]}]}
    run_id = _scheduled(api, clock, _saved(api, other))
    tick(runner)
    clock.advance(61)
    tick(runner)
    assert _said(db, run_id) == ["Waiting", "Done"]
    assert _skipped_phases(db, run_id) == [("gated", "skipped: signal gate_open has not come, not one of [east]")]


# ── the engine's skip is a compare-and-set (`steps.pass_over`) ─────────────────
def test_a_signal_that_came_after_its_phase_ended_takes_no_later_branch_either(api, db, clock, runner):
    """One signal, one answer: a branch read before a late signal came was skipped, so a branch read after it is
    skipped too ("came after its phase had ended"), as the signal's answer says nothing changed. It used to
    run: a victory passed over, then the players congratulated."""
    late = {"name": "Late gate", "phases": [
        {"name": "wait", "advance": {"when": "signal", "name": "gate_open", "timeout_seconds": 60},
         "steps": [_say("Waiting")]},
        {"name": "gated", "only_if": {"signal": "gate_open", "field": "side", "in": ["east"]}, "steps": [_say("East")]},
        {"name": "hold", "advance": {"when": "manual"}, "steps": [_say("Holding")]},
        {"name": "later", "only_if": {"signal": "gate_open", "field": "side", "in": ["east"]},
         "steps": [_say("East again")]},
        {"name": "after", "steps": [_say("Done")]}]}
    run_id = _scheduled(api, clock, _saved(api, late))
    tick(runner)
    clock.advance(61)
    tick(runner)
    assert _said(db, run_id) == ["Waiting", "Holding"]
    signalled = api.post(f"/runs/{run_id}/signals/gate_open", {"side": "east"}, auth=ADMIN)
    assert signalled.status == 202 and signalled.body["effect"] == "phase_over", signalled.body
    assert api.post(f"/runs/{run_id}/advance", {"phase": 3}, auth=ADMIN).status == 200
    tick(runner)
    assert run_row(db, run_id).status is RunStatus.COMPLETED
    assert _said(db, run_id) == ["Waiting", "Holding", "Done"]
    assert _skipped_phases(db, run_id) == [
        ("gated", "skipped: signal gate_open has not come, not one of [east]"),
        ("later", "skipped: signal gate_open came after its phase had ended, not one of [east]")]


def test_the_engine_passes_over_only_a_never_tried_step_of_a_run_it_may_work(api, db, clock, runner, game_bridge):
    document = _arena_night()
    document["phases"][0]["steps"][1] = {"action": "world.spawn", "params": {"npc": "guard"},
                                         "only_if": {"choice": "arena", "in": ["north"]}}
    run_id = _scheduled(api, clock, _saved(api, document))
    tick(runner)
    gated = _steps(db, run_id)[(1, 1)]
    commands.pause(db, run_id, actor="mod-mia", now=clock.now(), reason="break")
    assert not db.transaction(lambda tx: steps.pass_over(tx, gated, clock.now(), "skipped: test"))
    commands.resume(db, run_id, actor="mod-mia", now=clock.now())
    game_bridge.script("world.spawn", Answer(503, {"error": "busy"}))
    _confirmed(api, db, run_id, "north")
    tick(runner)
    tried = _steps(db, run_id)[(1, 1)]
    assert (tried.status, tried.attempts) == (StepStatus.PENDING, 1), "let through, then a retry later"
    assert not db.transaction(lambda tx: steps.pass_over(tx, tried, clock.now(), "skipped: test"))
    assert _steps(db, run_id)[(1, 1)].status is StepStatus.PENDING


def test_a_step_let_through_is_not_read_again_and_a_branch_skipped_while_paused_waits_for_the_resume(
        api, db, clock, runner):
    run_id = _scheduled(api, clock, _saved(api, _arena_night()))
    tick(runner)
    _confirmed(api, db, run_id, "south")
    commands.pause(db, run_id, actor="mod-mia", now=clock.now(), reason="break")
    tick(runner)
    assert _steps(db, run_id)[(1, 1)].status is StepStatus.PENDING, "a paused run's branches wait"
    commands.resume(db, run_id, actor="mod-mia", now=clock.now())
    tick(runner)
    assert _steps(db, run_id)[(1, 1)].status is StepStatus.SKIPPED
    assert run_row(db, run_id).status is RunStatus.COMPLETED


# ── rehearsal: each branch shown, and a dry run's engine answers ───────────────
def test_rehearsal_shows_what_each_answer_runs_and_skips(api, clock):
    definition_id = _saved(api, _arena_night())
    projection = api.post(f"/definitions/{definition_id}/rehearse", {}, auth=GM).body
    assert projection["branches"] == [{"reads": {"cue": "arena"}, "answers": [
        {"value": "north", "label": "North arena",
         "runs": [{"phase": 1, "seq": 2}, {"phase": 2, "seq": None}],
         "skips": [{"phase": 3, "seq": None}, {"phase": 5, "seq": 1}]},
        {"value": "south", "label": "South arena",
         "runs": [{"phase": 3, "seq": None}, {"phase": 5, "seq": 1}],
         "skips": [{"phase": 1, "seq": 2}, {"phase": 2, "seq": None}]},
        {"value": None, "label": "no answer", "runs": [],
         "skips": [{"phase": 1, "seq": 2}, {"phase": 2, "seq": None}, {"phase": 3, "seq": None}, {"phase": 5, "seq": 1}]},
    ]}]
    assert projection["phases"][1]["only_if"] == {"choice": "arena", "in": ["north"]}
    assert "only_if" not in projection["phases"][0] and projection["steps"][1]["only_if"] == {"choice": "arena", "in": ["north"]}
    signals = api.post(f"/definitions/{_saved(api, BOSS_NIGHT)}/rehearse", {}, auth=GM).body["branches"]
    assert [(b["reads"], [a["value"] for a in b["answers"]]) for b in signals] == [
        ({"signal": "boss_defeated", "field": "outcome"}, ["won", "fled", "wiped", None]),
        ({"signal": "boss_defeated", "field": "chests"}, [1, 2, 3, None])]


TRUE_OR_ONE = {"name": "True or one", "phases": [
    {"name": "fight", "advance": {"when": "signal", "name": "boss_defeated", "timeout_seconds": 60},
     "steps": [_say("Fight")]},
    {"name": "won", "only_if": {"signal": "boss_defeated", "field": "won", "in": [True, 1]}, "steps": [_say("Won")]},
    {"name": "after", "steps": [_say("Done")]}]}


def test_true_and_one_are_two_answers_in_the_rehearsal_and_the_log_says_them_as_json(api, db, clock, runner):
    """`in: [true, 1]` are two values (compared as JSON): the rehearsal lists both, labelled as written, and the
    skip's cause says `false`, not Python's `False`."""
    definition_id = _saved(api, TRUE_OR_ONE)
    [branch] = api.post(f"/definitions/{definition_id}/rehearse", {}, auth=GM).body["branches"]
    assert [(a["value"], a["label"]) for a in branch["answers"]] == [
        (True, "true"), (1, "1"), (None, "not sent, or another value")]
    run_id = _scheduled(api, clock, definition_id)
    tick(runner)
    assert api.post(f"/runs/{run_id}/signals/boss_defeated", {"won": False}, auth=ADMIN).status == 202
    tick(runner)
    assert _skipped_phases(db, run_id) == [("won", "skipped: signal boss_defeated has won false, not one of [true, 1]")]


@pytest.fixture
def rehearsing(db, clock):
    """A runner that drives dry runs on its simulated bridge."""
    live = Actions(bridge=None, cue_channel=RecordingChannel("cue"), announce_channel=RecordingChannel("announce"))
    runner = Runner(db, clock, live, RULES, concurrency=1, rehearsals=rehearsal_actions(live, RecordingChannel("r"), None))
    yield runner
    runner.close()


@pytest.mark.parametrize("cue_params, chosen", [({}, "north"), ({"timeout_seconds": 600, "on_timeout": "confirm",
                                                                 "timeout_choice": "south"}, "south")])
def test_a_dry_runs_engine_confirm_chooses_the_timeout_choice_or_else_the_first(api, db, clock, rehearsing, cue_params,
                                                                              chosen):
    definition_id = _saved(api, _arena_night(**cue_params))
    dry = api.post(f"/definitions/{definition_id}/dry-runs", {"speed": 60, "bridge": "simulate", "auto_confirm_seconds": 0},
                   auth=ADMIN)
    assert dry.status == 201, dry.body
    run_id = dry.body["run"]["id"]
    tick(rehearsing)
    tick(rehearsing)
    cue = _steps(db, run_id)[(1, 0)]
    assert (cue.status, cue.choice) == (StepStatus.DONE, chosen)
    assert cue.last_error == f"confirmed by the rehearsal after 0 s, choosing {chosen}"
    assert run_row(db, run_id).status is RunStatus.COMPLETED
    assert ("To the north arena" in _said(db, run_id)) is (chosen == "north")


@pytest.mark.parametrize("choice, outcome, said, spawned_at", [
    ("north", "won", ["Champions, gather at the gate!", "Mind the flooded south road", "The dragon wakes!",
                      "Thanks for playing"], "north_arena"),
    ("south", "fled", ["Champions, gather at the gate!", "The dragon wakes!", "The dragon got away. Next week!",
                       "Thanks for playing"], "south_arena"),
])
def test_the_worked_example_runs_as_written_down_either_branch(api, db, clock, runner, game_bridge, choice, outcome, said,
                                                               spawned_at):
    document = json.loads((Path(__file__).resolve().parents[1] / "examples" / "arena-night.json").read_text())
    run_id = _scheduled(api, clock, _saved(api, {**document, "name": f"Arena night ({choice})"}))
    tick(runner)
    cue = _steps(db, run_id)[(1, 1)]
    assert api.post(f"/runs/{run_id}/steps/{cue.id}/confirm", {"choice": choice}, auth=GM).status == 200
    tick(runner)
    assert api.post(f"/runs/{run_id}/signals/boss_defeated", {"outcome": outcome}, auth=ADMIN).status == 202
    tick(runner)
    assert run_row(db, run_id).status is RunStatus.COMPLETED
    assert _said(db, run_id) == said
    assert [r.json["params"]["at"] for r in game_bridge.received("world.spawn")] == [spawned_at]
    assert len(game_bridge.received("world.give_item")) == (outcome == "won")


def test_a_cue_that_asks_posts_its_answers_with_its_instruction(api, clock, runner):
    _scheduled(api, clock, _saved(api, _arena_night()))
    tick(runner)
    assert runner.actions.cue_channel.posts == ["Which arena is free? (answer: North arena, South arena)"]


def test_rehearsal_lists_at_most_five_thousand_places_under_branches_and_warns_of_the_answers_left_out(api):
    """Each answer listed every place gated on its input: 400 steps each naming 20 values of their own under one
    signal field listed 8,000 answers × 400 places (69 MB, 15 s) for a gm's rehearse of a 63 KB document."""
    gated = [{"action": "core.announce", "params": {"message": "hi"},
              "only_if": {"signal": "s", "field": "f", "in": [f"v{i}-{k}" for k in range(20)]}} for i in range(400)]
    document = {"name": "Many values", "phases": [
        {"name": "wait", "advance": {"when": "signal", "name": "s"}, "steps": [{"action": "core.wait", "params": {"seconds": 1}}]},
        {"name": "gated", "steps": gated[:200]}, {"name": "more", "steps": gated[200:]}]}
    answer = api.post(f"/definitions/{_saved(api, BOSS_NIGHT)}/rehearse", {"document": document}, auth=GM)
    assert answer.status == 200, answer.body
    [branch] = answer.body["branches"]
    places = sum(len(a["runs"]) + len(a["skips"]) for a in branch["answers"])
    assert places <= MAX_BRANCH_PLACES and len(branch["answers"]) == MAX_BRANCH_PLACES // 400
    [warning] = [w for w in answer.body["warnings"] if w["code"] == "branches_not_listed"]
    assert warning["message"].startswith(f"{8001 - MAX_BRANCH_PLACES // 400:,} answers are not listed")
    assert len(json.dumps(answer.body)) < 1_000_000
