"""Rehearsal's projected timeline (POST /definitions/{id}/rehearse): every action and every advance condition
projected, earliest and latest, each warning, a saved version or an unsaved document, and nothing written."""

from datetime import datetime

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from tests.support.api import ADMIN, GM, Api, hs_settings
from tests.support.scenes import table_counts


@pytest.fixture
def unescalated(db, clock, db_params):
    """The API of a deployment that escalates nothing by default (EVENT_ESCALATE_AFTER_SECONDS=0)."""
    with runtime.override(database=db, clock=clock, settings=hs_settings(db_params, escalate_after_seconds=0)), \
            Client(app) as client:
        yield Api(client)


def _announce(message="hi"):
    return {"action": "core.announce", "params": {"message": message}}


def _wait(seconds):
    return {"action": "core.wait", "params": {"seconds": seconds}}


def _cue(instruction="Light the bonfire", **attention):
    return {"action": "core.cue", "params": {"instruction": instruction, **attention}}


def _spawn():
    return {"action": "world.spawn", "params": {"npc": "dragon"}}


def _save(api, document):
    answer = api.post("/definitions", document, auth=ADMIN)
    assert answer.status == 201, answer.body
    return answer.body["definition"]["id"]


def _rehearse(api, document, **body):
    definition_id = _save(api, document)
    answer = api.post(f"/definitions/{definition_id}/rehearse", body, auth=GM)
    assert answer.status == 200, answer.body
    return answer.body


def _codes(projection):
    return [w["code"] for w in projection["warnings"]]


def _phases(projection):
    return [(p["number"], p["kind"], p["advance"], p["waits_for"], p["timeout_seconds"], p["earliest_start_seconds"],
             p["earliest_end_seconds"], p["latest_end_seconds"]) for p in projection["phases"]]


def test_every_action_is_projected_at_its_earliest_offset(unescalated):
    api = unescalated
    projection = _rehearse(api, {"name": "Harvest", "phases": [
        {"name": "opening", "steps": [_announce("The harvest begins"), _wait(30), _spawn(), _cue(), _wait(5)]}],
        "ending": [_announce("Thanks for coming")]})
    assert projection["steps"] == [
        {"phase": 1, "seq": 1, "action": "core.announce", "says": "The harvest begins", "earliest_offset_seconds": 0,
         "waits_for": None, "timeout_seconds": None},
        {"phase": 1, "seq": 2, "action": "core.wait", "says": None, "earliest_offset_seconds": 0,
         "waits_for": "time", "timeout_seconds": 30},
        {"phase": 1, "seq": 3, "action": "world.spawn", "says": None, "earliest_offset_seconds": 30,
         "waits_for": "game", "timeout_seconds": None},
        {"phase": 1, "seq": 4, "action": "core.cue", "says": "Light the bonfire", "earliest_offset_seconds": 30,
         "waits_for": "person", "timeout_seconds": None},
        # A wait that ends its phase holds no next step: the phase is over at once.
        {"phase": 1, "seq": 5, "action": "core.wait", "says": None, "earliest_offset_seconds": 30,
         "waits_for": "time", "timeout_seconds": 5},
        {"phase": 2, "seq": 1, "action": "core.announce", "says": "Thanks for coming", "earliest_offset_seconds": 30,
         "waits_for": None, "timeout_seconds": None},
    ]
    assert _phases(projection) == [(1, "main", "steps_done", None, None, 0, 30, None),
                                   (2, "ending", "steps_done", None, None, 30, 30, None)]
    assert (projection["shortest_seconds"], projection["longest_seconds"]) == (30, None)  # the cue may wait for ever
    assert projection["warnings"] == [
        {"code": "wait_ends_phase", "message": "phase 1 (opening), step 5: the core.wait of 5 s ends its phase, so it"
                                               " holds nothing and the run goes on at once; put it before the step it"
                                               " should hold back"},
        {"code": "unbounded_wait", "message": "phase 1 (opening), step 4: the cue waits for a person with neither"
                                              " timeout_seconds nor an escalation (escalate_after_seconds,"
                                              " EVENT_ESCALATE_AFTER_SECONDS)"}]


def test_every_advance_condition_is_projected_earliest_and_latest(api):
    projection = _rehearse(api, {"name": "Boss night", "phases": [
        {"name": "warm-up", "advance": {"when": "steps_done", "timeout_seconds": 100}, "steps": [_wait(200), _announce()]},
        {"name": "gather", "advance": {"when": "manual", "timeout_seconds": 300}, "steps": [_announce()]},
        {"name": "market", "advance": {"when": "after", "seconds": 1200}, "steps": [_announce()]},
        {"name": "boss", "advance": {"when": "signal", "name": "boss_defeated", "timeout_seconds": 1800},
         "steps": [_spawn()]}],
        "ending": [_announce("Well fought")]})
    assert _phases(projection) == [
        (1, "main", "steps_done", None, 100, 0, 100, 100),  # its time limit closes it before its steps are done
        (2, "main", "manual", "person", 300, 100, 100, 400),
        (3, "main", "after", "time", None, 100, 1300, 1600),
        (4, "main", "signal", "game", 1800, 1300, 1300, 3400),
        (5, "ending", "steps_done", None, None, 1300, 1300, 3400),
    ]
    assert [s["earliest_offset_seconds"] for s in projection["steps"]] == [0, 200, 100, 100, 1300, 1300]
    assert (projection["shortest_seconds"], projection["longest_seconds"]) == (1300, 3400)
    assert projection["warnings"] == []


WAITING_PHASES = {"name": "Waits", "phases": [
    {"name": "go", "advance": {"when": "manual"}, "steps": [_announce()]},
    {"name": "boss", "advance": {"when": "signal", "name": "boss_defeated"}, "steps": [_spawn()]}]}


def test_a_phase_that_waits_with_no_timeout_nor_escalation_is_unbounded_and_says_so(unescalated):
    projection = _rehearse(unescalated, WAITING_PHASES)
    assert projection["longest_seconds"] is None and projection["phases"][0]["latest_end_seconds"] is None
    assert [w["message"] for w in projection["warnings"]] == [
        ("phase 1 (go) waits for a person to advance it with no timeout_seconds and no escalation"
        " (EVENT_ESCALATE_AFTER_SECONDS is 0): the run may wait there for ever"),
        "phase 2 (boss) waits for the signal boss_defeated with no timeout_seconds: the run may wait there for ever"]


def test_a_manual_phase_the_deployment_escalates_is_no_unbounded_wait_but_a_signal_phase_is(api):
    projection = _rehearse(api, WAITING_PHASES)
    assert [w["message"].split(" waits")[0] for w in projection["warnings"]] == ["phase 2 (boss)"]
    assert projection["longest_seconds"] is None


def test_a_time_limit_that_pauses_leaves_the_phase_unbounded_without_a_warning(api):
    projection = _rehearse(api, {"name": "Pauses", "phases": [
        {"name": "go", "advance": {"when": "manual", "timeout_seconds": 60, "on_timeout": "pause"}, "steps": [_announce()]},
        {"name": "quick", "advance": {"when": "steps_done", "timeout_seconds": 60, "on_timeout": "pause"},
         "steps": [_wait(10), _announce()]}]})
    assert [p["latest_end_seconds"] for p in projection["phases"]] == [None, None]
    assert projection["warnings"] == []


def test_occurrences_closer_than_the_shortest_run_overlap(api):
    projection = _rehearse(api, {"name": "Busy", "schedule": {"cron": "*/10 * * * *"},
                                 "phases": [{"steps": [_wait(900), _announce()]}]})
    assert projection["shortest_seconds"] == 900
    assert projection["warnings"] == [{"code": "overlap", "message": "occurrences come as little as 600 s apart, and a"
                                       " run takes at least 900 s: runs will overlap (overlap: allow: both run)"}]


def test_occurrences_closer_than_the_longest_run_may_overlap(api):
    projection = _rehearse(api, {"name": "Hourly", "schedule": {"cron": "0 * * * *"}, "phases": [
        {"advance": {"when": "manual", "timeout_seconds": 4000}, "steps": [_wait(60), _announce()]}]})
    assert (projection["shortest_seconds"], projection["longest_seconds"]) == (60, 4000)
    assert projection["warnings"] == [{"code": "overlap_possible", "message": "occurrences come as little as 3600 s"
                                       " apart, and a run may take 4000 s: runs may overlap (overlap: allow: both run)"}]


def test_the_overlap_warning_names_the_policy_in_force(api):
    projection = _rehearse(api, {"name": "Busy, skipping", "schedule": {"cron": "*/10 * * * *", "overlap": "queue_one"},
                                 "phases": [{"steps": [_wait(900), _announce()]}]})
    assert projection["warnings"][0]["message"].endswith(
        "runs will overlap (overlap: queue_one: the later occurrence waits for the earlier run to end (one waits; more are"
        " skipped))")


def test_an_unbounded_run_may_overlap_any_schedule(unescalated):
    projection = _rehearse(unescalated, {"name": "Daily", "schedule": {"cron": "0 12 * * *"}, "phases": [{"steps": [_cue()]}]})
    assert _codes(projection) == ["unbounded_wait", "overlap_possible"]


def test_the_overlap_is_judged_in_the_schedule_zone_across_daylight_saving(api, clock):
    """Every Sunday at 02:30 in Berlin: on 28 March 2027 02:30 does not exist and the run fires at the jump (01:00 UTC,
    not 01:30), so that week's gaps are 30 minutes short of seven days. A run of seven days less 20 minutes fits
    every other week, and overlaps only there."""
    clock.set(datetime(2027, 3, 1))
    weekly = {"cron": "30 2 * * 0", "timezone": "Europe/Berlin"}
    fits = _rehearse(api, {"name": "Weekly", "schedule": weekly, "phases": [{"steps": [_wait(6 * 86400), _announce()]}]})
    assert fits["warnings"] == []
    tight = _rehearse(api, {"name": "Weekly, a week long", "schedule": weekly,
                            "phases": [{"steps": [_wait(7 * 86400 - 1200), _announce()]}]})
    assert tight["warnings"] == [{"code": "overlap", "message": "occurrences come as little as 603000 s apart, and a run"
                                  " takes at least 603600 s: runs will overlap (overlap: allow: both run)"}]


NIGHT = {"name": "Late", "schedule": {"cron": "30 23 * * 5", "timezone": "Europe/Berlin"},
         "phases": [{"name": "late", "steps": [_wait(3600), _cue("Open the gates")]}]}


def test_a_cue_in_the_night_with_no_escalation_is_a_night_cue(unescalated):
    projection = _rehearse(unescalated, NIGHT)
    night = [w for w in projection["warnings"] if w["code"] == "night_cue"]
    assert night == [{"code": "night_cue", "message": "phase 1 (late), step 2: the cue comes at 00:30 Europe/Berlin on"
                      " Sat 5 Dec 2026 with no escalation: nobody may be awake to confirm it"}]


def test_a_night_cue_the_deployment_escalates_is_no_night_cue(api):
    assert "night_cue" not in _codes(_rehearse(api, NIGHT))  # EVENT_ESCALATE_AFTER_SECONDS: 900 by default


def test_a_night_cue_that_escalates_itself_is_no_night_cue(unescalated):
    escalating = {**NIGHT, "name": "Late, escalating", "phases": [
        {"name": "late", "steps": [_wait(3600), _cue("Open the gates", escalate_after_seconds=300)]}]}
    assert "night_cue" not in _codes(_rehearse(unescalated, escalating))


def test_a_cue_in_the_evening_is_no_night_cue(unescalated):
    projection = _rehearse(unescalated, {"name": "Evening", "schedule": {"cron": "0 20 * * 5", "timezone": "Europe/Berlin"},
                                         "phases": [{"steps": [_cue()]}]})
    assert "night_cue" not in _codes(projection)


def test_the_cue_attention_fields_bound_and_warn(unescalated):
    projection = _rehearse(unescalated, {"name": "Watch", "phases": [{"name": "watch", "steps": [
        _cue("Check the walls", remind_after_seconds=30, escalate_after_seconds=300),
        _cue("Ring the bell", timeout_seconds=600),
        _cue("Open the gate", timeout_seconds=60, on_timeout="confirm")]}]})
    assert [s["timeout_seconds"] for s in projection["steps"]] == [None, 600, 60]
    assert projection["warnings"] == [{"code": "fast_reminder", "message": "phase 1 (watch), step 1: the cue reminds"
                                       " after 30 s (under 60 s): the channel will be flooded"}]
    assert projection["longest_seconds"] is None  # the first cue escalates, but waits without a timeout
    bounded = _rehearse(unescalated, {"name": "Bell", "phases": [{"steps": [_cue("Ring", timeout_seconds=600),
                                                                             _cue("Go", timeout_seconds=60)]}]})
    assert (bounded["shortest_seconds"], bounded["longest_seconds"], bounded["warnings"]) == (0, 660, [])


def test_a_cue_that_pauses_at_its_timeout_is_unbounded(unescalated):
    projection = _rehearse(unescalated, {"name": "Pause", "phases": [{"steps": [
        _cue("Ring", timeout_seconds=600, on_timeout="pause")]}]})
    assert projection["longest_seconds"] is None and projection["warnings"] == []


def test_a_saved_version_is_rehearsed_by_number(api):
    definition_id = _save(api, {"name": "Versions", "phases": [{"steps": [_wait(10), _announce()]}]})
    assert api.put(f"/definitions/{definition_id}", {"name": "Versions", "phases": [{"steps": [_wait(99), _announce()]}]},
                   auth=ADMIN).status == 200
    first = api.post(f"/definitions/{definition_id}/rehearse", {"version": 1}, auth=GM)
    current = api.post(f"/definitions/{definition_id}/rehearse", auth=GM)
    assert (first.body["shortest_seconds"], current.body["shortest_seconds"]) == (10, 99)
    missing = api.post(f"/definitions/{definition_id}/rehearse", {"version": 3}, auth=GM)
    assert missing.status == 404 and missing.body["errors"] == [f"definition {definition_id} has no version 3"]


def test_an_unsaved_document_is_rehearsed_and_stored_nowhere(api, db):
    definition_id = _save(api, {"name": "Draft", "phases": [{"steps": [_announce()]}]})
    before = table_counts(db)
    draft = {"name": "Draft", "phases": [{"steps": [_wait(45), _announce()]}]}
    answer = api.post(f"/definitions/{definition_id}/rehearse", {"document": draft}, auth=GM)
    assert answer.status == 200 and answer.body["shortest_seconds"] == 45
    assert table_counts(db) == before
    assert api.get(f"/definitions/{definition_id}", auth=GM).body["definition"]["current_version"] == 1


@pytest.mark.parametrize(("body", "status", "message"), [
    ({"document": {"name": "Draft", "phases": [{"steps": [{"action": "core.wiat", "params": {"seconds": 5}}]}]}}, 400,
     "document.phases[0].steps[0].action: no action 'core.wiat'; did you mean `core.wait`?"),
    ({"version": 1, "document": {"name": "x", "phases": []}}, 400, "send version or document, not both"),
    ({"verison": 1}, 400, "`verison` is not a field of POST /definitions/{definition_id}/rehearse; did you mean `version`?"),
])
def test_a_bad_rehearsal_is_a_400_naming_it(api, db, body, status, message):
    definition_id = _save(api, {"name": "Draft", "phases": [{"steps": [_announce()]}]})
    before = table_counts(db)
    answer = api.post(f"/definitions/{definition_id}/rehearse", body, auth=GM)
    assert answer.status == status and message in answer.body["errors"], answer.body
    assert table_counts(db) == before


def test_rehearsing_a_missing_definition_is_a_404(api):
    assert api.post("/definitions/999/rehearse", auth=GM).status == 404
