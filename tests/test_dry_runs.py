"""Dry runs (POST /definitions/{id}/dry-runs): a rehearsal of the demo definition driven by the tick, while the
real bridge and the real channels receive nothing; a person's control during one; the list's filter; bad input."""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from datetime import timedelta

import pymysql
import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.errors import ConfigError
from chalicelib.events.actions.perform import Actions
from chalicelib.events.adapters.bridge import BridgeClient
from chalicelib.events.adapters.rehearsal import rehearsal_actions
from chalicelib.events.runner import Runner
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.store import resources, runs, steps
from devtools.dev import DEMO_DOCUMENT
from devtools.kit.game_bridge import SECRET, Answer, GameBridge
from tests.support.api import ADMIN, GM, MODERATOR, Api, hs_settings
from tests.support.runner_kit import RULES, RecordingChannel, tick


@pytest.fixture
def live_bridge():
    """The real bridge, a loopback server counting every request it gets: a dry run must send it none."""
    with GameBridge() as bridge:
        yield bridge


@pytest.fixture
def world(db, clock, live_bridge):
    """A runner wired as a deployment is: the live bridge and channels, and the rehearsal channel."""
    live = Actions(bridge=BridgeClient(live_bridge.url, SECRET, timeout=5.0), cue_channel=RecordingChannel("cue"),
                   announce_channel=RecordingChannel("announce"), escalation_channel=RecordingChannel("escalation"))
    rehearsing = RecordingChannel("rehearsal")
    runner = Runner(db, clock, live, RULES, concurrency=2, rehearsals=rehearsal_actions(live, rehearsing, None))
    yield runner, live, rehearsing
    runner.close()


def _live_posts(live: Actions) -> list[str]:
    return [*live.cue_channel.posts, *live.announce_channel.posts, *live.escalations.posts]  # type: ignore[attr-defined]


def _demo(api, name="Harvest festival (dry run)") -> int:
    saved = api.post("/definitions", {**copy.deepcopy(DEMO_DOCUMENT), "name": name}, auth=ADMIN)
    assert saved.status == 201, saved.body
    return saved.body["definition"]["id"]


def _dry_run(api, definition_id: int, **body) -> dict:
    answer = api.post(f"/definitions/{definition_id}/dry-runs", {"speed": 60, "bridge": "simulate", **body}, auth=ADMIN)
    assert answer.status == 201, answer.body
    return answer.body


def _run(api, run_id: int) -> dict:
    return api.get(f"/runs/{run_id}", auth=GM).body


def test_a_dry_run_is_the_run_as_get_gives_it_scheduled_now_in_its_own_namespace(api, clock):
    definition_id = _demo(api)
    body = _dry_run(api, definition_id, auto_confirm_seconds=5)
    run = body["run"]
    assert set(body) == set(_run(api, run["id"]))
    assert (run["mode"], run["status"], run["scheduled_for"][:19]) == ("rehearsal", "scheduled", clock.now().isoformat()[:19])
    assert run["rehearsal"] == {"speed": 60, "bridge": "simulate", "auto_confirm_seconds": 5, "auto_signal_seconds": None}
    assert run["occurrence_key"].startswith(f"rehearsal:{definition_id}:")
    again = _dry_run(api, definition_id)["run"]
    assert again["id"] != run["id"] and again["rehearsal"]["auto_confirm_seconds"] == 10  # the default
    assert api.get(f"/definitions/{definition_id}/occurrences", auth=GM).body["occurrences"] == []  # no occurrence


def test_the_demo_rehearsed_in_simulate_mode_completes_and_the_real_bridge_and_channels_receive_nothing(
        api, clock, world, live_bridge):
    runner, live, rehearsing = world
    run_id = _dry_run(api, _demo(api))["run"]["id"]
    for _ in range(40):
        tick(runner)
        run = _run(api, run_id)
        parked = [s for s in run["steps"] if s["action_id"] == "core.cue" and s["status"] == "running"]
        if parked:  # a person confirms the cue during the dry run, as in a live one
            confirmed = api.post(f"/runs/{run_id}/steps/{parked[0]['id']}/confirm", {"note": "lit"}, auth=MODERATOR)
            assert confirmed.status == 200, confirmed.body
        if run["run"]["status"] == "completed":
            break
        clock.advance(1)
    assert run["run"]["status"] == "completed", run["run"]
    assert all(s["status"] == "done" for s in run["steps"])
    assert live_bridge.received() == [] and _live_posts(live) == []
    read = [n.message() for n in rehearsing.notices]
    assert read and all(text.startswith("[REHEARSAL] ") for text in read)
    assert all(n.subject.startswith("[REHEARSAL] ") for n in rehearsing.notices)  # an SNS subject too
    assert "[REHEARSAL] Thanks for coming!" in read


def test_the_list_keeps_the_dry_runs_apart_on_request(api, clock):
    definition_id = _demo(api)
    live = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": clock.now().isoformat() + "Z"}, auth=ADMIN)
    assert live.status == 201, live.body
    dry = _dry_run(api, definition_id)["run"]["id"]

    def ids(query: str) -> list[int]:
        answer = api.get(f"/runs{query}", auth=GM)
        assert answer.status == 200, answer.body
        return [r["id"] for r in answer.body["runs"]]

    assert ids("?rehearsal=only") == [dry]
    assert ids("?rehearsal=exclude") == [live.body["run"]["id"]]
    assert ids("") == ids("?rehearsal=include") == [dry, live.body["run"]["id"]]
    assert api.get("/runs?rehearsal=maybe", auth=GM).status == 400


def test_a_dry_run_waiting_for_a_person_is_not_counted_in_the_summary_unless_asked(api, clock, world):
    """Issue 39: one dry run parked at its cue made the header say "1 run needs you" over a list that, leaving
    rehearsals out, showed nothing waiting. The summary counts the live runs unless ?rehearsal=include (or only)."""
    runner, _, _ = world
    definition_id = _save(api, {"phases": [{"steps": [{"action": "core.cue", "params": {"instruction": "hold"}}]}]})
    dry = _dry_run(api, definition_id, auto_confirm_seconds=3600)["run"]["id"]
    tick(runner)
    assert _run(api, dry)["waiting"]["for"] == "cue"

    def summary(query: str) -> dict:
        answer = api.get(f"/runs{query}", auth=GM)
        assert answer.status == 200, answer.body
        return answer.body["summary"]["waiting"]

    for query in ("", "?rehearsal=exclude"):
        assert summary(query)["any"] == summary(query)["cue"] == 0, query
    assert summary("?rehearsal=include")["cue"] == summary("?rehearsal=only")["cue"] == 1
    assert [r["id"] for r in api.get("/runs?rehearsal=include&waiting=cue", auth=GM).body["runs"]] == [dry]
    assert api.get("/runs?rehearsal=exclude&waiting=cue", auth=GM).body["runs"] == []  # the console's default list
    live = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": clock.now().isoformat() + "Z"}, auth=ADMIN)
    tick(runner)
    assert _run(api, live.body["run"]["id"])["waiting"]["for"] == "cue"
    assert (summary("")["cue"], summary("?rehearsal=include")["cue"], summary("?rehearsal=only")["cue"]) == (1, 2, 1)


@pytest.mark.parametrize(("body", "field"), [
    ({"bridge": "simulate"}, "speed"),
    ({"speed": 0, "bridge": "simulate"}, "speed"),
    ({"speed": 601, "bridge": "simulate"}, "speed"),
    ({"speed": 60, "bridge": "live"}, "bridge"),
    ({"speed": 60}, "bridge"),
    ({"speed": 60, "bridge": "simulate", "auto_confirm_seconds": -1}, "auto_confirm_seconds"),
    ({"speed": 60, "bridge": "simulate", "auto_signal_seconds": "soon"}, "auto_signal_seconds"),
    ({"speed": 60, "bridge": "simulate", "sped": 2}, "sped"),
])
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(api, body, field):
    definition_id = _demo(api)
    answer = api.post(f"/definitions/{definition_id}/dry-runs", body, auth=ADMIN)
    assert answer.status == 400 and field in " ".join(answer.body["errors"]), answer.body
    assert api.get("/runs", auth=GM).body["runs"] == []


def test_an_unknown_definition_or_version_is_404_and_only_an_admin_starts_one(api):
    definition_id = _demo(api)
    assert api.post("/definitions/999999/dry-runs", {"speed": 1, "bridge": "simulate"}, auth=ADMIN).status == 404
    missing = api.post(f"/definitions/{definition_id}/dry-runs", {"speed": 1, "bridge": "simulate", "version": 7},
                       auth=ADMIN)
    assert missing.status == 404 and "no version 7" in missing.body["errors"][0]
    for who in (MODERATOR, GM):
        assert api.post(f"/definitions/{definition_id}/dry-runs", {"speed": 1, "bridge": "simulate"},
                        auth=who).status == 403
    assert api.get("/runs", auth=GM).body["runs"] == []


# ── the rehearsal's clock: speed, the engine's confirm and signal ──────────
def _tick_until(api, runner, clock, run_id: int, status: str, *, most: int = 60, step: float = 1.0) -> dict:
    for _ in range(most):
        tick(runner)
        run = _run(api, run_id)
        if run["run"]["status"] == status:
            return run
        clock.advance(step)
    raise AssertionError(f"run {run_id} is {run['run']['status']}, not {status}")


def _log(api, run_id: int) -> list[dict]:
    return api.get(f"/runs/{run_id}/log", auth=GM).body["entries"]


def _save(api, document: dict) -> int:
    saved = api.post("/definitions", {"name": "Rehearsed", **document}, auth=ADMIN)
    assert saved.status == 201, saved.body
    return saved.body["definition"]["id"]


def test_the_demo_at_speed_60_completes_by_itself_its_cue_confirmed_by_the_rehearsal(api, clock, world, live_bridge):
    runner, live, rehearsing = world
    started = clock.now()
    run_id = _dry_run(api, _demo(api))["run"]["id"]
    run = _tick_until(api, runner, clock, run_id, "completed")
    # The 10 s wait held the spawn 10/60 s; the cue waited its 10 rehearsal seconds (not divided).
    assert 10 <= (clock.now() - started).total_seconds() <= 13
    assert run["run"]["health"] == "ok"  # the engine's confirm stands in for a person: nothing went wrong
    confirmed = [e for e in _log(api, run_id) if e["kind"] == "step.status" and e["actor"] == "rehearsal"]
    assert [e["detail"]["cause"] for e in confirmed] == ["confirmed by the rehearsal after 10 s"]
    assert live_bridge.received() == [] and _live_posts(live) == []
    assert any(n.message().startswith("[REHEARSAL] Cue: Light the bonfire") for n in rehearsing.notices)


def test_authored_durations_are_divided_by_the_speed(api, clock, world, db):
    runner, _, rehearsing = world
    definition_id = _save(api, {"phases": [
        {"name": "waits", "advance": {"when": "steps_done", "timeout_seconds": 6000},
         "steps": [{"action": "core.wait", "params": {"seconds": 600}},
                   {"action": "core.announce", "params": {"message": "after the wait"}}]},
        {"name": "lasts", "advance": {"when": "after", "seconds": 300},
         "steps": [{"action": "core.cue", "params": {"instruction": "hold", "remind_after_seconds": 60}}]},
    ]})
    run_id = _dry_run(api, definition_id, speed=60, auto_confirm_seconds=3600)["run"]["id"]
    started = clock.now()
    tick(runner)
    run = _run(api, run_id)
    assert run["phases"][0]["deadline"][:19] == (started + timedelta(seconds=100)).isoformat()[:19]  # 6000 s / 60
    waited = next(s for s in run["steps"] if s["action_id"] == "core.announce")
    assert waited["due_at"][:19] == (started + timedelta(seconds=10)).isoformat()[:19]  # 600 s / 60
    clock.advance(10)
    tick(runner)
    run = _run(api, run_id)
    assert run["phases"][1]["deadline"][:19] == (clock.now() + timedelta(seconds=5)).isoformat()[:19]  # 300 s / 60
    cue = next(s for s in run["steps"] if s["action_id"] == "core.cue")
    assert cue["remind_at"][:19] == (clock.now() + timedelta(seconds=1)).isoformat()[:19]  # 60 s / 60
    clock.advance(1)
    tick(runner)
    assert any(n.kind == "reminder" for n in rehearsing.notices)
    cue = next(s for s in _run(api, run_id)["steps"] if s["action_id"] == "core.cue")
    assert cue["remind_at"][:19] == (clock.now() + timedelta(seconds=1)).isoformat()[:19]  # the next one, too
    clock.advance(4)
    assert _tick_until(api, runner, clock, run_id, "completed", most=2)["phases"][1]["closed_by"] == "after"


def test_a_cues_own_timeout_divided_by_the_speed_acts_when_it_comes_before_the_engines_confirm(api, clock, world):
    runner, _, _ = world
    definition_id = _save(api, {"phases": [{"steps": [
        {"action": "core.cue", "params": {"instruction": "quick", "timeout_seconds": 120, "on_timeout": "continue"}}]}]})
    run_id = _dry_run(api, definition_id, speed=60, auto_confirm_seconds=10)["run"]["id"]
    run = _tick_until(api, runner, clock, run_id, "completed", most=4)  # 120 s / 60: 2 s, before the 10 s
    assert [s["status"] for s in run["steps"]] == ["cancelled"] and run["run"]["health"] == "degraded"


def test_a_cues_own_timeout_falling_with_the_engines_confirm_yields_to_it(api, clock, world):
    """600 s at speed 60 is 10 s, the engine's confirm's moment too: the engine confirms (the cue's own timeout
    acts only when it comes first), so an own `on_timeout: pause` does not pause the dry run for a person."""
    runner, _, _ = world
    definition_id = _save(api, {"phases": [{"steps": [
        {"action": "core.cue", "params": {"instruction": "tie", "timeout_seconds": 600, "on_timeout": "pause"}}]}]})
    run_id = _dry_run(api, definition_id, speed=60, auto_confirm_seconds=10)["run"]["id"]
    run = _tick_until(api, runner, clock, run_id, "completed", most=15)  # the 10 s, a second a tick
    assert [s["status"] for s in run["steps"]] == ["done"] and run["run"]["health"] == "ok"


def test_a_signal_phase_gets_its_signal_from_the_rehearsal_after_auto_signal_seconds(api, clock, world):
    runner, _, _ = world
    definition_id = _save(api, {"phases": [
        {"name": "waits for the game", "advance": {"when": "signal", "name": "boss_down"},
         "steps": [{"action": "core.announce", "params": {"message": "fight"}}]},
        {"name": "after", "steps": [{"action": "core.announce", "params": {"message": "won"}}]},
    ]})
    run_id = _dry_run(api, definition_id, auto_signal_seconds=5)["run"]["id"]
    tick(runner)
    held = _run(api, run_id)
    assert held["waiting"]["for"] == "signal"
    assert held["run"]["status"] == "running" and held["run"]["current_phase"] == 1
    clock.advance(4)
    tick(runner)
    assert _run(api, run_id)["run"]["current_phase"] == 1  # not before its 5 s
    clock.advance(1)
    tick(runner)
    run = _run(api, run_id)
    assert run["run"]["status"] == "completed", run["run"]
    assert (run["phases"][0]["closed_by"], run["phases"][0]["met_by"]) == ("signal", "rehearsal")
    signals = [e for e in _log(api, run_id) if e["kind"] == "run.signal"]
    assert [e["actor"] for e in signals] == ["rehearsal"]


def test_a_held_dry_run_wakes_when_its_signal_is_due(api, clock, world, db):
    runner, _, _ = world
    definition_id = _save(api, {"phases": [
        {"advance": {"when": "signal", "name": "go"}, "steps": [{"action": "core.announce", "params": {"message": "x"}}]},
    ]})
    run_id = _dry_run(api, definition_id, auto_signal_seconds=30)["run"]["id"]
    opened = clock.now()
    tick(runner)
    wake_at = db.autocommit(lambda tx: tx.scalar("SELECT wake_at FROM event_runs WHERE id = %s", (run_id,)))
    assert wake_at == opened + timedelta(seconds=30)


def test_no_production_figure_counts_a_dry_run(api, clock, world, db):
    runner, _, rehearsing = world
    runner.actions = replace(runner.actions, escalate_after_seconds=600)  # a paused run escalated after 600 s
    definition_id = _save(api, {"phases": [
        {"steps": [{"action": "core.cue", "params": {"instruction": "wait for me"}}]}]})
    run_id = _dry_run(api, definition_id, auto_confirm_seconds=3600)["run"]["id"]
    reports = [tick(runner)]
    assert db.autocommit(steps.oldest_parked_since) is None  # its cue is parked: the alarm's figure ignores it
    paused = api.post(f"/runs/{run_id}/pause", {"reason": "a look"}, auth=MODERATOR)
    assert paused.status == 200, paused.body
    assert db.autocommit(runs.oldest_paused_since) is None
    # What a sandbox left unreverted is the sandbox's: the ResourcesLeft figure never counts it.
    db.autocommit(lambda tx: tx.execute(
        "INSERT INTO event_run_resources (run_id, step_id, kind, resource_id, status, recorded_at, changed_at)"
        " VALUES (%s, 1, 'npc', 'dragon', 'revert_failed', %s, %s)", (run_id, clock.now(), clock.now())))
    assert db.autocommit(resources.count_left) == 0
    clock.advance(10)  # 600 s at speed 60: the stall is escalated, to the rehearsal channel
    reports.append(tick(runner))
    assert any(n.kind == "stall" and n.message().startswith("[REHEARSAL] Escalation") for n in rehearsing.notices)
    for report in reports:
        figures = report.summary()
        assert figures["rehearsals"] >= (1 if report is reports[0] else 0)
        assert (figures["runs_seen"], figures["dispatched"], figures["started"], figures["outcomes"],
                figures["statuses"], figures["escalations"], figures["errors"], figures["due_lag_seconds"]) == (
            0, 0, 0, {}, {}, 0, 0, None)


# ── the sandbox bridge ─────────────────────────────────────────────────────
SANDBOX_SECRET = "sandbox-only-secret-0123456789abcdef"


@pytest.fixture
def sandbox():
    """The sandbox game server: a loopback bridge with its own key, counting what it gets."""
    with GameBridge(secret=SANDBOX_SECRET) as bridge:
        yield bridge


@pytest.fixture
def live_hooks():
    """The real channels: a loopback webhook receiver counting every post (cues, announcements, escalations)."""
    with GameBridge() as hooks:
        yield hooks


@pytest.fixture
def rehearsal_hooks():
    """REHEARSAL_CHANNEL's webhook receiver."""
    with GameBridge() as hooks:
        yield hooks


@pytest.fixture
def deployed(db, clock, db_params, live_bridge, sandbox, live_hooks, rehearsal_hooks):
    """The API and the runner as a deployment builds them (`build_runner`) from settings naming both bridges,
    the live channels and the rehearsal channel, each a loopback server."""
    settings = hs_settings(db_params, game_bridge_url=live_bridge.url, game_bridge_secret=SECRET,
                           game_bridge_sandbox_url=sandbox.url, game_bridge_sandbox_secret=SANDBOX_SECRET,
                           cue_channel=f"webhook:{live_hooks.url}/hooks/cue",
                           announce_channel=f"webhook:{live_hooks.url}/hooks/news",
                           escalation_channel=f"webhook:{live_hooks.url}/hooks/escalation",
                           rehearsal_channel=f"webhook:{rehearsal_hooks.url}/hooks/rehearsal",
                           webhook_secret="webhook-secret-0123456789", escalate_after_seconds=600)
    runner = build_runner(settings, db, clock)
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        yield Api(client), runner
    runner.close()


@pytest.mark.parametrize("bridge", ["simulate", "sandbox"])
def test_the_demo_at_speed_60_completes_and_the_real_bridge_and_channels_receive_nothing(
        deployed, clock, live_bridge, sandbox, live_hooks, rehearsal_hooks, bridge):
    api, runner = deployed
    run_id = _dry_run(api, _demo(api), bridge=bridge)["run"]["id"]
    run = _tick_until(api, runner, clock, run_id, "completed")
    assert all(s["status"] == "done" for s in run["steps"])
    got = sandbox.received()
    if bridge == "sandbox":
        assert [r.action_id for r in got] == ["world.spawn", "world.give_item", "world.fireworks"]
        assert all(r.json["rehearsal"] is True and r.signature_valid(SANDBOX_SECRET) for r in got)
        assert not any(r.signature_valid(SECRET) for r in got)  # never the real bridge's key
    else:
        assert got == []
    assert live_bridge.received() == [] and live_hooks.received() == []
    posted = [r.json["content"] for r in rehearsal_hooks.received()]
    assert len(posted) == 4 and all(text.startswith("[REHEARSAL] ") for text in posted), posted  # 3 announcements, 1 cue


def test_a_live_run_never_reaches_the_sandbox(deployed, clock, live_bridge, sandbox):
    api, runner = deployed
    definition_id = _demo(api)
    live = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": clock.now().isoformat() + "Z"}, auth=ADMIN)
    tick(runner)
    clock.advance(10)  # the demo's wait, undivided
    tick(runner)
    assert sandbox.received() == []
    (spawn,) = live_bridge.received()
    assert "rehearsal" not in spawn.json and live.status == 201


# ── the deployment's escalation delay, on a dry run's clock ───────────────
ON_A_DRY_RUNS_CLOCK = timedelta(seconds=600 / 60)  # `deployed`'s EVENT_ESCALATE_AFTER_SECONDS at speed 60


def _escalations(hooks) -> list[str]:
    return [r.json["content"] for r in hooks.received() if "Escalation" in r.json["content"]]


def _spawn_in_doubt(api) -> int:
    return _save(api, {"phases": [{"steps": [
        {"action": "world.spawn", "params": {"npc": "scarecrow"}, "on_doubt": "park"}]}]})


def _steps_of(db, run_id: int):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))


def test_a_dry_runs_cue_is_escalated_after_the_deployments_delay_divided_by_its_speed(
        deployed, clock, db, live_hooks, rehearsal_hooks):
    api, runner = deployed
    definition_id = _save(api, {"phases": [{"steps": [{"action": "core.cue", "params": {"instruction": "wait for me"}}]}]})
    run_id = _dry_run(api, definition_id, speed=60, auto_confirm_seconds=3600)["run"]["id"]
    tick(runner)
    [cue] = _steps_of(db, run_id)
    assert cue.parked and cue.escalate_at == clock.now() + ON_A_DRY_RUNS_CLOCK
    clock.advance(ON_A_DRY_RUNS_CLOCK.total_seconds())
    tick(runner)
    [posted] = _escalations(rehearsal_hooks)
    assert posted.startswith("[REHEARSAL] Escalation") and live_hooks.received() == []


@pytest.mark.parametrize("answers", [
    (Answer(504, ""),),  # in doubt: its next claim parks it for a decision
    (Answer(500, {"error": "busy"}), Answer(500, {"error": "busy"}), Answer(504, "")),  # in doubt at the ceiling
])
def test_a_dry_runs_step_waiting_for_a_decision_is_escalated_after_the_deployments_delay_divided_by_its_speed(
        deployed, clock, db, sandbox, live_hooks, rehearsal_hooks, answers):
    api, runner = deployed
    sandbox.script("world.spawn", *answers)
    run_id = _dry_run(api, _spawn_in_doubt(api), bridge="sandbox", speed=60)["run"]["id"]
    for _ in range(len(answers) + 1):
        tick(runner)
        if _steps_of(db, run_id)[0].parked_in_doubt:
            break
        clock.advance(runner.rules.retry_seconds)  # the backoff is not divided
    [spawn] = _steps_of(db, run_id)
    assert spawn.parked_in_doubt and spawn.escalate_at == clock.now() + ON_A_DRY_RUNS_CLOCK
    clock.advance(ON_A_DRY_RUNS_CLOCK.total_seconds())
    tick(runner)
    [posted] = _escalations(rehearsal_hooks)
    assert posted.startswith("[REHEARSAL] Escalation") and "for a decision" in posted, posted
    assert live_hooks.received() == [] and len(sandbox.received("world.spawn")) == len(answers)


def test_a_dry_runs_step_the_sweep_parks_for_a_decision_is_escalated_on_its_clock(deployed, clock, db, sandbox):
    api, runner = deployed
    sandbox.script("world.spawn", Answer(500, {"error": "busy"}))
    run_id = _dry_run(api, _spawn_in_doubt(api), bridge="sandbox", speed=60)["run"]["id"]
    tick(runner)  # the game's own 500: a retry, not in doubt
    [spawn] = _steps_of(db, run_id)
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET attempts = %s, due_at = NULL WHERE id = %s",
                                        (runner.rules.max_attempts - 1, spawn.id)))
    [spawn] = _steps_of(db, run_id)
    assert db.autocommit(lambda tx: steps.claim(tx, spawn, clock.now(), runner.rules.lease_seconds))  # its claimer dies
    clock.advance(runner.rules.lease_seconds + 1)
    tick(runner)
    [spawn] = _steps_of(db, run_id)
    assert spawn.parked_in_doubt and spawn.escalate_at == clock.now() + ON_A_DRY_RUNS_CLOCK


def test_a_sandbox_dry_run_without_a_sandbox_is_409_and_writes_nothing(api):
    answer = api.post(f"/definitions/{_demo(api)}/dry-runs", {"speed": 60, "bridge": "sandbox"}, auth=ADMIN)
    assert answer.status == 409 and "GAME_BRIDGE_SANDBOX_URL" in answer.body["errors"][0], answer.body
    assert api.get("/runs", auth=GM).body["runs"] == []


@pytest.mark.parametrize(("env", "wrong"), [
    ({"GAME_BRIDGE_SANDBOX_SECRET": SECRET}, "the sandbox's own key"),
    ({"GAME_BRIDGE_SANDBOX_URL": "http://game.example/bridge"}, "must be the sandbox"),
    ({"GAME_BRIDGE_SANDBOX_URL": "game.example"}, "must be an http(s) URL"),
])
def test_the_sandbox_is_never_the_real_bridge_or_its_key(env, wrong):
    with pytest.raises(ConfigError, match=re.escape(wrong)):
        Settings.from_env({"GAME_BRIDGE_URL": "http://game.example/bridge", "GAME_BRIDGE_SECRET": SECRET, **env})


@pytest.mark.parametrize("columns", [
    "mode = 'rehearsal'",  # a dry run without its settings
    "mode = 'rehearsal', rehearsal_bridge = 'live', auto_confirm_seconds = 10",
    "speed = 60",  # a live run is never sped up
    "rehearsal_bridge = 'simulate'",  # nor given a rehearsal's bridge
])
def test_the_run_row_refuses_a_mode_without_its_settings(api, clock, db, columns):
    live = api.post(f"/definitions/{_demo(api)}/runs", {"scheduled_for": clock.now().isoformat() + "Z"}, auth=ADMIN)
    with pytest.raises(pymysql.err.OperationalError, match="CONSTRAINT"):
        db.autocommit(lambda tx: tx.execute(f"UPDATE event_runs SET {columns} WHERE id = %s",
                                            (live.body["run"]["id"],)))
