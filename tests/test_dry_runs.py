"""Dry runs (POST /definitions/{id}/dry-runs): a rehearsal of the demo definition driven by the tick, while the
real bridge and the real channels receive nothing; a person's control during one; the list's filter; bad input."""

from __future__ import annotations

import copy

import pytest

from chalicelib.events.actions.bridge import BridgeClient
from chalicelib.events.actions.perform import Actions
from chalicelib.events.actions.rehearsal import rehearsal_actions
from chalicelib.events.runner import Runner
from devtools.dev import DEMO_DOCUMENT
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.game_bridge import SECRET, GameBridge
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
    assert rehearsing.posts and all(p.startswith("[REHEARSAL] ") for p in rehearsing.posts)
    assert "[REHEARSAL] Thanks for coming!" in rehearsing.posts


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
    assert ids("") == [dry, live.body["run"]["id"]]
    assert api.get("/runs?rehearsal=maybe", auth=GM).status == 400


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
