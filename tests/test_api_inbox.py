"""GET /inbox: the live runs that need the caller, an escalated wait first, then the longest wait; each with one
line of its story (who has a cue, who paused and why, the failed step's error and that Retry is what it needs,
the signal awaited) and the one or two controls most likely needed that the caller may press now; a gm's inbox
and count hold the cues alone. On the real database, the game side a loopback bridge, escalations recorded."""

import pytest

from chalicelib.events import commands, journal
from chalicelib.events.actions.perform import Actions
from chalicelib.events.adapters.bridge import BridgeClient
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.runner import Runner
from chalicelib.events.store import log, steps
from devtools.kit.game_bridge import SECRET, Answer
from tests.support.api import ADMIN, GM, MODERATOR, token
from tests.support.factory import document, run_row
from tests.support.runner_kit import RULES, RecordingChannel, schedule, step, tick
from tests.support.scenes import put_step_in, run_with_steps, set_run, set_step


@pytest.fixture
def inbox_runner(db, clock, game_bridge):
    """A runner on the loopback bridge whose escalation channel (#staff) records what it is given."""
    actions = Actions(bridge=BridgeClient(game_bridge.url, SECRET, timeout=5.0), cue_channel=RecordingChannel("cue"),
                      announce_channel=RecordingChannel("announce"), escalation_channel=RecordingChannel("#staff"),
                      escalate_after_seconds=0)
    runner = Runner(db, clock, actions, RULES, concurrency=1)
    yield runner
    runner.close()

def _phase(steps, advance=None, name="opening"):
    phase = {"name": name, "steps": steps}
    return phase if advance is None else {**phase, "advance": advance}

def _later(clock, seconds=60):
    clock.advance(seconds)

def _world(api, db, clock, runner, game_bridge):
    """A run waiting of every kind, each wait begun a minute after the one before (the escalated cue last)."""
    made = {}
    made["cue"] = schedule(db, clock.now(), {"name": "Cue", "grace_seconds": 300, "phases": [
        _phase([step("core.cue", instruction="Light the bonfire")])], "ending": []})
    tick(runner)
    _later(clock)
    made["paused"], _ = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    assert api.post(f"/runs/{made['paused'].id}/pause", {"reason": "boss bugged"}, auth=MODERATOR).status == 200
    _later(clock)
    game_bridge.script("world.spawn", Answer(400, {"reason": "the square is full"}))
    made["failed"] = schedule(db, clock.now(), document([[step("world.spawn", npc="scarecrow")]]))
    tick(runner)
    _later(clock)
    made["advance"] = schedule(db, clock.now(), {"name": "Held", "grace_seconds": 300, "phases": [
        _phase([step("core.announce", message="x")], {"when": "manual"}, name="contest")], "ending": []})
    tick(runner)
    _later(clock)
    made["signal"] = schedule(db, clock.now(), {"name": "Signal", "grace_seconds": 300, "phases": [
        _phase([step("core.announce", message="x")], {"when": "signal", "name": "boss_down"}, name="boss")],
        "ending": []})
    tick(runner)
    _later(clock)
    decided, (first, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    set_step(db, put_step_in(db, first, "parked_in_doubt", clock.now()), started_at=clock.now())
    set_run(db, decided.id, waiting_for="decision")
    made["decision"] = decided
    _later(clock)
    game_bridge.script("world.spawn", Answer(200, {"outcome": "done", "resources": [
        {"kind": "npc", "id": "crow-1", "revert": {"action": "core.cue", "params": {"instruction": "Shoo it"}}}]}))
    made["cleanup"] = schedule(db, clock.now(), document([[step("world.spawn"), step("core.cue", instruction="wait")]]))
    tick(runner)
    commands.cancel(db, made["cleanup"].id, actor="mod-mia", now=clock.now(), reason="storm", cleanup=True)
    tick(runner)
    _later(clock)
    made["escalated"] = schedule(db, clock.now(), {"name": "Escalated", "grace_seconds": 300, "phases": [
        _phase([step("core.cue", instruction="Open the gate", escalate_after_seconds=60)])], "ending": []})
    tick(runner)
    _later(clock, 61)
    tick(runner)
    return made

def test_the_inbox_holds_every_wait_most_urgent_first_each_with_its_story_and_controls(api, db, clock, inbox_runner, game_bridge):
    made = _world(api, db, clock, inbox_runner, game_bridge)
    answer = api.get("/inbox", auth=ADMIN)
    assert answer.status == 200, answer.body
    rows = {row["id"]: row for row in answer.body["runs"]}
    order = [row["id"] for row in answer.body["runs"]]
    # An escalated wait first, then the longest wait first.
    assert order == [made[k].id for k in ("escalated", "cue", "paused", "failed", "advance", "signal", "decision", "cleanup")]
    assert answer.body["needs_you"] == 8

    def told(kind):
        return rows[made[kind].id]["story"]

    def controls(kind):
        return [c["name"] for c in rows[made[kind].id]["controls"]]

    assert told("cue") == (
        f"Waiting for a game master at Run {made['cue'].id} · Phase 1 · step 1 (Light the bonfire); nobody has it yet")
    assert controls("cue") == ["confirm", "acknowledge"]
    assert told("paused") == "Paused by mod-mia: “boss bugged”" and controls("paused") == ["resume"]
    assert told("failed") == (f"Run {made['failed'].id} · Phase 1 · step 1 (world.spawn) failed: HTTP 400: the square is full;"
                              " Retry is what it needs")
    assert controls("failed") == ["retry", "resume"]
    assert told("advance") == "Phase 1 (contest) is done; it ends when someone advances it" and controls("advance") == ["advance"]
    assert told("signal") == "Phase 1 (boss) waits for the game's signal boss_down" and controls("signal") == []
    assert told("decision") == (f"Run {made['decision'].id} · Phase 1 · step 1 (world.spawn) waits for a decision:"
                                " the game may or may not have applied it")
    assert controls("decision") == ["confirm", "resend"]
    assert told("cleanup") == "Waiting for a game master to revert npc crow-1 by hand: Shoo it; nobody has it yet"
    escalated = rows[made["escalated"].id]["waiting"]["escalated"]
    assert (escalated["channel"], escalated["attempt"], escalated["of"]) == ("#staff", 1, RULES.max_attempts)
    # The run's own page tells the same escalation while the wait lasts.
    assert api.get(f"/runs/{made['escalated'].id}", auth=GM).body["waiting"]["escalated"] == escalated
    # A row's step controls name the step they press.
    cue_step = rows[made["cue"].id]["waiting"]["step_id"]
    assert rows[made["cue"].id]["controls"][0] == {"name": "confirm", "step_id": cue_step}

def test_a_short_inbox_is_the_most_urgent_of_all_not_of_the_oldest_runs(api, db, clock, inbox_runner, game_bridge):
    """`limit` trims the ordered inbox: the escalated wait (the newest run) comes first however many wait."""
    made = _world(api, db, clock, inbox_runner, game_bridge)
    answer = api.get("/inbox?limit=2", auth=ADMIN).body
    assert [row["id"] for row in answer["runs"]] == [made["escalated"].id, made["cue"].id]
    assert answer["needs_you"] == 8


def test_a_gms_inbox_and_count_hold_only_what_a_gm_can_act_on(api, db, clock, inbox_runner, game_bridge):
    made = _world(api, db, clock, inbox_runner, game_bridge)
    answer = api.get("/inbox", auth=GM).body
    assert [row["id"] for row in answer["runs"]] == [made[k].id for k in ("escalated", "cue", "cleanup")]
    assert answer["needs_you"] == 3
    assert {c["name"] for row in answer["runs"] for c in row["controls"]} <= {"confirm", "acknowledge"}
    assert api.get("/inbox?limit=0", auth=GM).body == {"needs_you": 3, "runs": []}
    # Once the gm has a cue, "I have it" is no longer theirs to press there: confirm is.
    cue = next(row for row in answer["runs"] if row["id"] == made["cue"].id)
    assert api.post(f"/runs/{cue['id']}/steps/{cue['waiting']['step_id']}/acknowledge", {}, auth=GM).status == 200
    again = next(row for row in api.get("/inbox", auth=GM).body["runs"] if row["id"] == made["cue"].id)
    assert [c["name"] for c in again["controls"]] == ["confirm"] and again["story"].endswith("; gm-gus has it")

def test_an_answered_wait_leaves_the_inbox_and_the_count(api, db, clock, inbox_runner, game_bridge):
    made = _world(api, db, clock, inbox_runner, game_bridge)
    assert api.post(f"/runs/{made['paused'].id}/resume", None, auth=MODERATOR).status == 200
    answer = api.get("/inbox", auth=MODERATOR).body
    assert made["paused"].id not in [row["id"] for row in answer["runs"]] and answer["needs_you"] == 7
    assert run_row(db, made["paused"].id).waiting_for is None

@pytest.mark.parametrize("query", ["limit=-1", "limit=101", "limit=two", "order=urgency"])
def test_a_bad_inbox_query_is_400(api, query):
    assert api.get(f"/inbox?{query}", auth=ADMIN).status == 400

def test_a_rows_controls_are_those_its_runs_page_offers_the_caller(api, db, clock, inbox_runner, game_bridge):
    """The inbox offers a caller nothing GET /runs/{id} would not (the same rule on the same rows): a gm and a
    moderator see different row controls, each of them what their own run page offers."""
    made = _world(api, db, clock, inbox_runner, game_bridge)
    cue = next(row for row in api.get("/inbox", auth=GM).body["runs"] if row["id"] == made["cue"].id)
    assert api.post(f"/runs/{cue['id']}/steps/{cue['waiting']['step_id']}/acknowledge", {}, auth=GM).status == 200
    seen = {}
    for role, auth in (("moderator", MODERATOR), ("gm", GM)):
        rows = api.get("/inbox", auth=auth).body["runs"]
        for row in rows:
            page = api.get(f"/runs/{row['id']}", auth=auth).body["controls"]
            for control in row["controls"]:
                offer = page["run"] if control["step_id"] is None else page["steps"][str(control["step_id"])]
                assert control["name"] in offer, (role, row["id"], control, page)
        seen[role] = {kind: [c["name"] for row in rows if row["id"] == made[kind].id for c in row["controls"]]
                      for kind in made if any(row["id"] == made[kind].id for row in rows)}
    assert seen["moderator"] == {
        "escalated": ["confirm", "acknowledge"], "cue": ["confirm"], "paused": ["resume"], "failed": ["retry", "resume"],
        "advance": ["advance"], "signal": [], "decision": ["confirm", "resend"], "cleanup": ["confirm", "acknowledge"]}
    assert seen["gm"] == {"escalated": ["confirm", "acknowledge"], "cue": ["confirm"], "cleanup": ["confirm", "acknowledge"]}

def test_a_cue_held_from_chat_names_the_person_and_platform_in_the_inbox_the_run_and_the_runs_list(
        api, db, clock, inbox_runner, game_bridge):
    """Review 1, item 3: a cue held from Discord said "discord:4242 has it"; the answers name who has it as a
    person reads them, from the run's chat.pressed row ("Mira (Discord)"), beside the id the controls compare."""
    made = _world(api, db, clock, inbox_runner, game_bridge)
    cue = next(row for row in api.get("/inbox", auth=GM).body["runs"] if row["id"] == made["cue"].id)
    run_id, step_id = cue["id"], cue["waiting"]["step_id"]
    chat_gm = token("gm", sub="discord:4242")
    assert api.post(f"/runs/{run_id}/steps/{step_id}/acknowledge", {}, auth=chat_gm).status == 200
    pressed = steps.get_on_run
    db.transaction(lambda tx: log.append(tx, journal.chat_pressed(pressed(tx, run_id, step_id), "discord:4242", "acknowledge",
                                                                   platform="discord", user_id="4242", name="Mira"), clock.now()))
    row = next(row for row in api.get("/inbox", auth=GM).body["runs"] if row["id"] == run_id)
    assert row["story"].endswith("; Mira (Discord) has it"), row["story"]
    waits = [row["waiting"], api.get(f"/runs/{run_id}", auth=GM).body["waiting"],
             next(r for r in api.get("/runs", auth=GM).body["runs"] if r["id"] == run_id)["waiting"]]
    assert [(w["acknowledged_by"], w["acknowledged_by_named"]) for w in waits] == [("discord:4242", "Mira (Discord)")] * 3
    # A console sign-in is named as the log names it.
    other = next(row for row in api.get("/inbox", auth=GM).body["runs"] if row["id"] == made["cleanup"].id)
    assert api.post(f"/runs/{other['id']}/steps/{other['waiting']['step_id']}/acknowledge", {}, auth=GM).status == 200
    assert api.get(f"/runs/{other['id']}", auth=GM).body["waiting"]["acknowledged_by_named"] == "gm-gus"
