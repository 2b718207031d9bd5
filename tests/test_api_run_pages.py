"""GET /runs/{id} at the definition limits: the steps come a page at a time, every answer far below
Lambda's 6 MB response limit, and paging through gives every step once, in phase and seq order."""

from __future__ import annotations

import json

import pytest

from chalicelib.api.schemas import PAGE_BYTES, STEPS_PAGE
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.model import StepSpec
from chalicelib.events.store import steps
from devtools.kit.explain import ExplainTx, plan_problems
from tests.support.api import GM
from tests.support.factory import make_run, materialise
from tests.support.scenes import run_with_steps

# The answer's bound: a page's steps (≤ PAGE_BYTES, plus the one step that reaches it), the run,
# the counts and one control list a step.
MAX_ANSWER_BYTES = PAGE_BYTES + 256 * 1024
LAMBDA_RESPONSE_LIMIT = 6 * 1024 * 1024
# The definition limits (chalicelib/events/document.py): 50 phases of 200 steps and an ending of 200.
PHASES, PHASE_STEPS, ENDING_STEPS = 50, 200, 200


def _page(api, run_id: int, query: str = "") -> tuple[int, dict]:
    response = api.client.http.request("GET", f"/runs/{run_id}{query}", headers={"Authorization": f"Bearer {GM}"})
    assert response.status_code == 200, response.body[:500]
    return len(response.body), json.loads(response.body)


def _every_step(api, run_id: int) -> tuple[list[dict], list[int]]:
    """All the run's steps, paging through as the console does; and each answer's size."""
    size, body = _page(api, run_id)
    seen, sizes = list(body["steps"]), [size]
    while body["steps_next_cursor"] is not None:
        size, body = _page(api, run_id, f"?steps_cursor={body['steps_next_cursor']}")
        seen += body["steps"]
        sizes.append(size)
    return seen, sizes


def test_a_run_of_the_most_steps_a_definition_allows_comes_in_bounded_pages_each_step_once_in_order(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.ENDING, current_phase=PHASES + 1)
    for phase in range(1, PHASES + 2):
        count = ENDING_STEPS if phase == PHASES + 1 else PHASE_STEPS
        materialise(db, run, phase, [StepSpec("core.announce", {"message": f"phase {phase} step {n} " + "x" * 60})
                                     for n in range(count)])
    seen, sizes = _every_step(api, run.id)
    assert len(seen) == PHASES * PHASE_STEPS + ENDING_STEPS == 10_200
    assert [(s["phase"], s["seq"]) for s in seen] == sorted((s["phase"], s["seq"]) for s in seen)
    assert len({s["id"] for s in seen}) == len(seen)
    assert max(sizes) <= MAX_ANSWER_BYTES < LAMBDA_RESPONSE_LIMIT, sizes
    assert len(sizes) == -(-len(seen) // STEPS_PAGE), "small steps fill each page to its count"


def test_steps_at_their_largest_params_and_error_are_cut_by_size_and_still_all_served(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    # 16 KB of params as the definition measures them, and the longest error the column holds, in
    # characters that JSON writes as twelve bytes each.
    params = {"blob": "x" * (16 * 1024 - 20)}
    made = materialise(db, run, 1, [StepSpec("world.spawn", params) for _ in range(PHASE_STEPS)])
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET last_error = %s WHERE run_id = %s", ("🎃" * 1000, run.id)))
    seen, sizes = _every_step(api, run.id)
    assert [s["id"] for s in seen] == [s.id for s in made]
    assert len(sizes) > 1 and max(sizes) <= MAX_ANSWER_BYTES, sizes
    assert seen[0]["params"] == params and seen[-1]["last_error"] == "🎃" * 1000


def test_a_page_names_its_steps_controls_and_the_whole_runs_counts(api, db, clock):
    run, made = run_with_steps(db, clock.now(), RunStatus.RUNNING, n=5)
    _, first = _page(api, run.id, "?steps_limit=2")
    assert [s["id"] for s in first["steps"]] == [made[0].id, made[1].id]
    assert first["steps_next_cursor"] == made[1].id
    assert set(first["controls"]["steps"]) == {str(made[0].id), str(made[1].id)}
    assert first["counts"] == {"pending": 5}
    _, last = _page(api, run.id, f"?steps_limit=2&steps_cursor={made[3].id}")
    assert [s["id"] for s in last["steps"]] == [made[4].id] and last["steps_next_cursor"] is None


def test_a_cursor_from_another_run_or_out_of_range_is_400(api, db, clock):
    mine, _ = run_with_steps(db, clock.now(), RunStatus.RUNNING, n=1)
    _, (theirs, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING, n=1)
    answer = api.get(f"/runs/{mine.id}?steps_cursor={theirs.id}", auth=GM)
    assert answer.status == 400 and answer.body == {"errors": [f"query.steps_cursor: run {mine.id} has no step {theirs.id}"]}
    for query in ("steps_limit=0", f"steps_limit={STEPS_PAGE + 1}", "steps_cursor=x", "steps_cursor=0"):
        assert api.get(f"/runs/{mine.id}?{query}", auth=GM).status == 400, query


@pytest.mark.parametrize("first", [True, False], ids=["first-page", "next-page"])
def test_a_page_is_one_range_of_the_position_index_without_a_sort(db, clock, first):
    run, made = run_with_steps(db, clock.now(), RunStatus.RUNNING, n=3)
    assert [s.id for s in db.autocommit(lambda tx: steps.page_for_run(tx, run.id, made[0], 10))] == [made[1].id, made[2].id]
    # Other runs' steps, so the optimiser has a real choice to make (a table of three rows is cheaper to scan).
    db.autocommit(lambda tx: tx.execute(
        """INSERT INTO event_run_steps (run_id, phase, seq, action_id, params, status, idempotency_key)
           SELECT %s + seq DIV 5, 1, seq MOD 5, 'world.spawn', '{}', 'done', 'k' FROM seq_0_to_9999""", (run.id + 1,)))
    db.autocommit(lambda tx: tx.execute("ANALYZE TABLE event_run_steps"))
    conn = db.connect()
    try:
        tx = ExplainTx(conn)
        steps.page_for_run(tx, run.id, None if first else made[0], 10)
    finally:
        conn.close()
    [(sql, plan)] = tx.plans
    assert not plan_problems(plan) and plan[0]["key"] == "event_run_steps_position", (sql, plan)
