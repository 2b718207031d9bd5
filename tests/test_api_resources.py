"""The ledger over HTTP: a run's resources, what every run has left, the cleanup plan, and cancel with cleanup."""

from chalicelib.events.lifecycle import RunStatus
from devtools.kit.game_bridge import Answer
from tests.support.api import ADMIN, GM
from tests.support.factory import document, run_row
from tests.support.runner_kit import schedule, step, tick


def _made(*names: str) -> Answer:
    return Answer(200, {"resources": [{"kind": "npc", "id": n, "revert": {"action": "world.despawn", "params": {"npc": n}}}
                                      for n in names] + [{"kind": "mark", "id": "chalk"}]})


def _a_run_that_made_things(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", _made("crow-1", "crow-2"))
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("core.cue", instruction="wait")]]))
    tick(runner)
    return run


def test_a_runs_resources_newest_first_a_page_at_a_time(api, db, clock, runner, game_bridge):
    run = _a_run_that_made_things(db, clock, runner, game_bridge)
    first = api.get(f"/runs/{run.id}/resources?limit=2", auth=GM)
    assert first.status == 200
    assert [(r["kind"], r["id"], r["status"]) for r in first.body["resources"]] == [("mark", "chalk", "live"),
                                                                                    ("npc", "crow-2", "live")]
    assert first.body["resources"][0]["revert"] is None
    assert first.body["resources"][1]["revert"] == {"action": "world.despawn", "params": {"npc": "crow-2"}}
    rest = api.get(f"/runs/{run.id}/resources?cursor={first.body['next_cursor']}", auth=GM)
    assert [r["id"] for r in rest.body["resources"]] == ["crow-1"] and rest.body["next_cursor"] is None
    assert api.get("/runs/424242/resources", auth=GM).status == 404
    assert api.get(f"/runs/{run.id}/resources?limit=0", auth=GM).status == 400


def test_what_every_run_has_left_by_status(api, db, clock, runner, game_bridge):
    run = _a_run_that_made_things(db, clock, runner, game_bridge)
    live = api.get("/resources?status=live&limit=500", auth=GM)  # other tests' runs share the database
    assert live.status == 200 and live.body["resources"][0]["run_id"] == run.id  # newest first
    assert [r["id"] for r in live.body["resources"] if r["run_id"] == run.id] == ["chalk", "crow-2", "crow-1"]
    reverted = api.get("/resources?status=reverted&limit=500", auth=GM).body["resources"]
    assert all(r["status"] == "reverted" for r in reverted) and run.id not in {r["run_id"] for r in reverted}
    assert api.get("/resources", auth=GM).status == 400  # the status is required: never a scan of the whole ledger
    assert api.get("/resources?status=gone", auth=GM).status == 400


def test_the_cleanup_plan_then_a_cancel_with_cleanup(api, db, clock, runner, game_bridge):
    run = _a_run_that_made_things(db, clock, runner, game_bridge)
    plan = api.get(f"/runs/{run.id}/cleanup-plan", auth=GM)
    assert plan.status == 200 and plan.body["cleans_up"] is True and plan.body["in_flight"] == 0
    assert [r["id"] for r in plan.body["reverts"]] == ["crow-2", "crow-1"]  # the chalk mark has no revert
    assert plan.body["counts"] == {"reverts": 2, "by_hand": 0} and plan.body["next_cursor"] is None
    before = api.get(f"/runs/{run.id}", auth=GM).body["ledger"]
    assert before["counts"] == {"live": 3}
    answer = api.post(f"/runs/{run.id}/cancel", {"reason": "rain", "cleanup": True}, auth=ADMIN)
    assert answer.status == 200
    assert answer.body["run"]["status"] == "cleaning_up" and answer.body["run"]["cleanup_target"] == "cancelled"
    assert api.post(f"/runs/{run.id}/cancel", {"cleanup": True}, auth=ADMIN).status == 409
    assert api.get(f"/runs/{run.id}/cleanup-plan", auth=GM).body["cleans_up"] is False
    assert api.post(f"/runs/{run.id}/cancel", {"cleanup": "yes"}, auth=ADMIN).status == 400
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.CANCELLED
    statuses = {r["id"]: r["status"] for r in api.get(f"/runs/{run.id}/resources", auth=GM).body["resources"]}
    assert statuses == {"crow-1": "reverted", "crow-2": "reverted", "chalk": "live"}
    after = api.get(f"/runs/{run.id}", auth=GM).body["ledger"]  # what tells a client to read the ledger again
    assert after["counts"] == {"live": 1, "reverted": 2} and after != before
    assert api.get(f"/runs/{run.id}/cleanup-plan", auth=GM).body == {
        "reverts": [], "next_cursor": None, "counts": {"reverts": 0, "by_hand": 0}, "left": [], "in_flight": 0, "cleans_up": False,
        "undecided": None}


def test_a_cancel_without_the_field_is_todays_cancel(api, db, clock, runner, game_bridge):
    run = _a_run_that_made_things(db, clock, runner, game_bridge)
    answer = api.post(f"/runs/{run.id}/cancel", {}, auth=ADMIN)
    assert answer.body["run"]["status"] == "cancelled" and answer.body["run"]["cleanup_target"] is None
