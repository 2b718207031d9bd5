"""The ledger's answers at 8 MB of resources (issue 38): five answers of 100 resources, each with 16 KiB of revert
params. Every page of GET /runs/{id}/resources, GET /resources?status=live and GET /runs/{id}/cleanup-plan stays
under the byte budget, far below Lambda's 6 MB (the unpaged plan answered 9.1 MB), and paging reaches every
resource once, newest first; the run's detail says how the ledger stands in a few bytes."""

from __future__ import annotations

import json

from chalicelib.api.schemas import PAGE_BYTES
from devtools.kit.game_bridge import Answer
from tests.support.api import GM
from tests.support.factory import document
from tests.support.runner_kit import schedule, step, tick

LAMBDA_RESPONSE_LIMIT = 6 * 1024 * 1024
# A page's items stay under PAGE_BYTES; around them only the array's commas and the answer's few other fields.
MAX_ANSWER_BYTES = PAGE_BYTES + 1024
ANSWERS, LISTED, BY_HAND = 5, 100, 2  # BY_HAND of each answer's resources are reverted by a person (core.cue)
# 16,380 bytes of params as JSON writes them (each é as \u00e9), the most a revert may carry; 5.5 KB of UTF-8 on the
# wire, so an answer stays under the bridge's 1 MB.
BLOB = "é" * 2728


def _listed(answer: int) -> list[dict]:
    def revert(i: int, name: str) -> dict:
        if i < BY_HAND:
            return {"action": "core.cue", "params": {"instruction": f"Sweep {name} away by hand"}}
        return {"action": "world.despawn", "params": {"blob": BLOB}}

    return [{"kind": "npc", "id": (name := f"a{answer}-{i}"), "revert": revert(i, name)} for i in range(LISTED)]


def _answer(resources: list[dict]) -> Answer:
    return Answer(200, json.dumps({"resources": resources}, ensure_ascii=False))  # UTF-8 on the wire, as a game sends it


def _pages(api, path: str, key: str) -> tuple[list[dict], list[int], dict]:
    """Every page of a keyset list, as a client pages it (next_cursor as cursor): the items, each answer's
    size in bytes, and the last answer."""
    items: list[dict] = []
    sizes: list[int] = []
    cursor = None
    while True:
        sep = "&" if "?" in path else "?"
        response = api.client.http.request("GET", path + ("" if cursor is None else f"{sep}cursor={cursor}"),
                                           headers={"Authorization": f"Bearer {GM}"})
        assert response.status_code == 200, response.body[:300]
        body = json.loads(response.body)
        items += body[key]
        sizes.append(len(response.body))
        cursor = body["next_cursor"]
        if cursor is None:
            return items, sizes, body


def test_8_mb_of_resources_come_in_pages_under_the_budget_and_paging_reaches_each_once(api, db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", *(_answer(_listed(n)) for n in range(ANSWERS)))
    run = schedule(db, clock.now(), document([[*(step("world.spawn") for _ in range(ANSWERS)),
                                               step("core.cue", instruction="hold the square")]]))
    tick(runner)  # the five answers recorded; the run waits at its cue, cleanable
    everything = {f"a{n}-{i}" for n in range(ANSWERS) for i in range(LISTED)}

    listed, sizes, _ = _pages(api, f"/runs/{run.id}/resources?limit=500", "resources")
    assert sum(sizes) > 8_000_000, "the hostile scale: 8 MB of resources"
    assert max(sizes) <= MAX_ANSWER_BYTES < LAMBDA_RESPONSE_LIMIT, sizes
    assert {r["id"] for r in listed} == everything and len(listed) == len(everything)
    assert [r["ledger_id"] for r in listed] == sorted((r["ledger_id"] for r in listed), reverse=True)  # newest first
    assert all(r["revert"]["params"] == {"blob": BLOB} for r in listed if r["revert"]["action"] == "world.despawn")

    left, sizes, _ = _pages(api, "/resources?status=live&limit=500", "resources")  # other tests' runs share it
    assert max(sizes) <= MAX_ANSWER_BYTES, sizes
    assert sorted(r["id"] for r in left if r["run_id"] == run.id) == sorted(everything)

    plan, sizes, last = _pages(api, f"/runs/{run.id}/cleanup-plan?limit=500", "reverts")
    assert max(sizes) <= MAX_ANSWER_BYTES and len(sizes) > 1, sizes
    assert [r["ledger_id"] for r in plan] == [r["ledger_id"] for r in listed]  # what it reverts, in its order
    assert last["counts"] == {"reverts": ANSWERS * LISTED, "by_hand": ANSWERS * BY_HAND}
    assert last["cleans_up"] is True

    detail = api.get(f"/runs/{run.id}", auth=GM).body
    assert detail["ledger"]["counts"] == {"live": ANSWERS * LISTED} and detail["ledger"]["changed_at"] is not None


def test_a_page_of_the_plan_is_counted_whole_and_its_cursor_goes_on(api, db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", _answer(_listed(0)[:5]))
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("core.cue", instruction="hold")]]))
    tick(runner)
    first = api.get(f"/runs/{run.id}/cleanup-plan?limit=2", auth=GM).body
    assert [r["id"] for r in first["reverts"]] == ["a0-4", "a0-3"]
    assert first["counts"] == {"reverts": 5, "by_hand": BY_HAND} and first["next_cursor"] == first["reverts"][-1]["ledger_id"]
    rest = api.get(f"/runs/{run.id}/cleanup-plan?cursor={first['next_cursor']}", auth=GM).body
    assert [r["id"] for r in rest["reverts"]] == ["a0-2", "a0-1", "a0-0"] and rest["next_cursor"] is None
    assert rest["counts"] == first["counts"]
    for query in ("limit=0", "limit=501", "cursor=x", "cursor=0"):
        assert api.get(f"/runs/{run.id}/cleanup-plan?{query}", auth=GM).status == 400, query
