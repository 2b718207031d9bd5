"""Reverts are actions like any other: a revert the game lists naming a module action the bridge does not
declare (EVENT_MODULE_ACTIONS) is recorded — the world has the thing — but never sent; the cleanup plan, the
ledger and the cleanup's end say why it is left. A by-hand revert's instruction meets an authored cue's rules.
(A static revert is refused at save: tests/test_api_authoring.py.)"""

from dataclasses import replace

import pytest

from chalicelib.events import commands, ledger
from chalicelib.events.document import validate
from chalicelib.events.errors import Invalid
from chalicelib.events.lifecycle import ResourceStatus, RunStatus
from chalicelib.events.model import Health
from chalicelib.events.store import resources
from devtools.kit.game_bridge import Answer
from tests.support.api import GM
from tests.support.factory import document, run_row
from tests.support.runner_kit import RULES, log_of, make_runner, schedule, step, tick

DECLARED = frozenset({"world.spawn", "world.despawn", "world.reward"})  # what the game bridge serves
BANNED = "cannot revert: undeclared action admin.ban_player"


def crow(name: str) -> dict:
    return {"kind": "npc", "id": name, "revert": {"action": "world.despawn", "params": {"npc": name}}}


def ban(player: str) -> dict:
    return {"kind": "ban", "id": player, "revert": {"action": "admin.ban_player", "params": {"player": player}}}


@pytest.fixture
def declaring(db, clock, game_bridge):
    """The runner of a deployment whose game bridge declares world.spawn, world.despawn and world.reward."""
    built = make_runner(db, clock, game_bridge, rules=replace(RULES, module_actions=DECLARED))
    yield built
    built.close()


def _made(db, clock, runner, game_bridge, *things, **extra):
    """A run whose world.spawn answer lists `things`, waiting at a cue."""
    game_bridge.script("world.spawn", Answer(200, {"resources": list(things)}))
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("core.cue", instruction="wait")]], **extra))
    tick(runner)
    return run


def _cancel_with_cleanup(db, clock, run):
    return commands.cancel(db, run.id, actor="alice", now=clock.now(), reason="storm", cleanup=True)


def _causes(db, run_id):
    return [e.detail.get("cause") for e in log_of(db, run_id) if e.kind == "run.status"]


def test_an_undeclared_revert_is_recorded_never_sent_and_left_saying_why(api, db, clock, declaring, game_bridge):
    run = _made(db, clock, declaring, game_bridge, crow("crow-1"), ban("ann"), ban("bob"))
    ledger_page = api.get(f"/runs/{run.id}/resources", auth=GM).body["resources"]
    assert [(r["id"], r["status"], r["revert_refused"]) for r in ledger_page] == [
        ("bob", "live", BANNED), ("ann", "live", BANNED), ("crow-1", "live", None)]
    assert ledger_page[0]["revert"] == {"action": "admin.ban_player", "params": {"player": "bob"}}  # as the game gave it
    waiting = run_row(db, run.id)
    assert waiting.status is RunStatus.RUNNING and waiting.health is Health.DEGRADED  # it went on, degraded
    assert waiting.last_error == (f"Run {run.id} · Phase 1 · step 1 (world.spawn) listed 2 of 3 resources with a revert that is never"
                                  f" sent ({BANNED})")
    [dispatch] = [e.detail for e in log_of(db, run.id) if e.kind == "step.dispatch" and e.detail["action"] == "world.spawn"]
    assert dispatch["resources"] == 3 and dispatch["resources_cannot_revert"].startswith("2 of 3")

    plan = api.get(f"/runs/{run.id}/cleanup-plan", auth=GM).body
    assert [r["id"] for r in plan["reverts"]] == ["crow-1"] and plan["cleans_up"] is True
    assert plan["left"] == [{"why": BANNED, "resources": 2}]

    assert _cancel_with_cleanup(db, clock, run).status is RunStatus.CLEANING_UP
    tick(declaring)
    assert [r.json["params"] for r in game_bridge.received("world.despawn")] == [{"npc": "crow-1"}]
    assert game_bridge.received("admin.ban_player") == []  # never signed, never sent
    assert run_row(db, run.id).status is RunStatus.CANCELLED
    assert _causes(db, run.id)[-1] == f"every revert was done; left: 2 ({BANNED})"
    statuses = {r["id"]: r["status"] for r in api.get(f"/runs/{run.id}/resources", auth=GM).body["resources"]}
    assert statuses == {"crow-1": "reverted", "ann": "live", "bob": "live"}  # still in the world, and said so


def test_a_run_whose_only_reverts_are_never_sent_cancels_without_a_cleanup(db, clock, declaring, game_bridge):
    run = _made(db, clock, declaring, game_bridge, ban("ann"))
    cancelled = _cancel_with_cleanup(db, clock, run)
    assert (cancelled.status, cancelled.cleanup_target) == (RunStatus.CANCELLED, None)
    tick(declaring)
    assert game_bridge.received("admin.ban_player") == []


def test_a_run_that_cleans_up_on_complete_completes_leaving_what_it_cannot_revert(db, clock, declaring, game_bridge):
    game_bridge.script("world.spawn", Answer(200, {"resources": [crow("crow-1"), ban("ann")]}))
    run = schedule(db, clock.now(), document([[step("world.spawn")]], cleanup_on=["complete"]))
    tick(declaring)
    tick(declaring)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert [r.json["params"] for r in game_bridge.received("world.despawn")] == [{"npc": "crow-1"}]
    assert game_bridge.received("admin.ban_player") == []
    assert _causes(db, run.id)[-1] == f"every revert was done; left: 1 ({BANNED})"


def test_a_static_revert_saved_before_the_declaration_is_not_sent_either(db, clock, declaring, game_bridge):
    """Saved while EVENT_MODULE_ACTIONS was unset, then run by a deployment that declares its actions."""
    revert = {"action": "wrold.despawn", "params": {"npc": "scarecrow"}}
    run = schedule(db, clock.now(), document([[{**step("world.spawn"), "revert": revert},
                                               step("core.cue", instruction="wait")]]))
    tick(declaring)
    assert _cancel_with_cleanup(db, clock, run).status is RunStatus.CANCELLED  # nothing it could revert
    tick(declaring)
    assert game_bridge.received("wrold.despawn") == []
    [kept] = db.autocommit(lambda tx: resources.page_for_run(tx, run.id, None, 10))[0]
    assert (kept.status, kept.revert_refused) == (ResourceStatus.LIVE, "cannot revert: undeclared action wrold.despawn")


def test_with_nothing_declared_a_listed_revert_is_sent_as_written(db, clock, runner, game_bridge):
    run = _made(db, clock, runner, game_bridge, ban("ann"))
    assert run_row(db, run.id).health is Health.OK
    assert _cancel_with_cleanup(db, clock, run).status is RunStatus.CLEANING_UP
    tick(runner)
    assert [r.json["params"] for r in game_bridge.received("admin.ban_player")] == [{"player": "ann"}]
    assert run_row(db, run.id).status is RunStatus.CANCELLED


# ── a by-hand revert's instruction ────────────────────────────────────────────
@pytest.mark.parametrize("params", [
    {"instruction": " \n\t"},
    {"instruction": "x" * 2001},
    {"instruction": "Take the banner down", "colour": "red"},
    {"instruction": "Take the banner down", "remind_after_seconds": 600, "timeout_seconds": 300},
    {},
], ids=["only-whitespace", "too-long", "a-stray-field", "reminded-after-its-timeout", "no-instruction"])
def test_a_by_hand_reverts_instruction_meets_an_authored_cues_rules(params):
    """Listed by the game or authored as a static revert, a core.cue revert is refused as a cue step with
    the same params would be, in the same words."""
    with pytest.raises(Invalid) as authored:
        validate(document([[step("core.cue", **params)]]))
    [as_a_cue] = authored.value.messages
    _, problem = ledger.listed({"resources": [{"kind": "banner", "id": "b-1",
                                               "revert": {"action": "core.cue", "params": params}}]})
    assert problem == as_a_cue.replace("document.phases[0].steps[0]", "resources[0].revert")
    with pytest.raises(Invalid) as static:
        validate(document([[{**step("world.spawn"), "revert": {"action": "core.cue", "params": params}}]]))
    assert static.value.messages == [as_a_cue.replace("document.phases[0].steps[0]", "document.phases[0].steps[0].revert")]


def test_a_by_hand_revert_the_game_lists_is_kept_whatever_is_declared(db, clock, declaring, game_bridge):
    by_hand = {"kind": "banner", "id": "b-1", "revert": {"action": "core.cue", "params": {"instruction": "Take it down"}}}
    run = _made(db, clock, declaring, game_bridge, by_hand)
    assert run_row(db, run.id).health is Health.OK
    assert _cancel_with_cleanup(db, clock, run).status is RunStatus.CLEANING_UP
    tick(declaring)
    assert declaring.actions.cue_channel.posts[-1] == "Take it down"  # the cleanup waits for a person
