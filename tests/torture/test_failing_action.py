"""R7: a game side that answers 503 for ever: every step gives up at the ceiling, and its on_failure applies."""

from collections import Counter

from devtools.kit.game_bridge import Answer
from tests.support.torture import (
    TickFleet,
    attempts_delivered,
    audit,
    document_of,
    module_steps,
    schedule_runs,
    sized,
    wait_until,
)

MAX_ATTEMPTS = 3
RUNS_EACH = sized(6, 60)
SKIP = document_of([module_steps(3, "skip")], ending=module_steps(1, "pause"))  # an ending never pauses
PAUSE = document_of([module_steps(2, "pause")])
ABORT = document_of([module_steps(2, "abort_run")])


def _in_flight(db) -> int:
    return db.autocommit(lambda tx: tx.one(
        "SELECT COUNT(*) AS n FROM event_runs WHERE status IN ('scheduled', 'starting', 'running', 'ending')"))["n"]


def _runs(db, run_ids) -> list[tuple]:
    rows = db.autocommit(lambda tx: tx.all(
        f"SELECT status, health, last_error IS NOT NULL AS has_error FROM event_runs WHERE id IN ({','.join(map(str, run_ids))})"))
    return sorted({(r["status"], r["health"], bool(r["has_error"])) for r in rows})


def _steps(db, run_ids) -> list[tuple]:
    rows = db.autocommit(lambda tx: tx.all(
        f"""SELECT phase, seq, status, attempts, COUNT(*) AS n FROM event_run_steps
             WHERE run_id IN ({','.join(map(str, run_ids))}) GROUP BY phase, seq, status, attempts ORDER BY phase, seq"""))
    return [(r["phase"], r["seq"], r["status"], r["attempts"], r["n"]) for r in rows]


def test_an_always_failing_action_is_dispatched_at_most_the_ceiling_and_each_failure_is_disposed(
    db, db_params, game_bridge, tmp_path
):
    game_bridge.default = Answer(503, {"error": "maintenance"})
    skipping, pausing, aborting = (schedule_runs(db, doc, RUNS_EACH) for doc in (SKIP, PAUSE, ABORT))
    with TickFleet(tmp_path, db_params.url(), game_bridge, EVENT_STEP_MAX_ATTEMPTS=str(MAX_ATTEMPTS),
                   EVENT_STEP_RETRY_SECONDS="1", EVENT_TICK_CONCURRENCY="8") as fleet:
        fleet.start(4)
        wait_until(lambda: _in_flight(db) == 0, timeout=sized(90, 600), what="every run settled")
        fleet.stop()

    steps_total = db.autocommit(lambda tx: tx.one("SELECT COUNT(*) AS n FROM event_run_steps"))["n"]
    delivered = attempts_delivered(game_bridge)
    assert len(game_bridge.received()) <= steps_total * MAX_ATTEMPTS
    assert Counter(tuple(a) for a in delivered.values()) == {(1, 2, 3): RUNS_EACH * (4 + 1 + 1)}
    # skip: every step fails in turn, the failing ending is recorded, the run completes degraded.
    assert _steps(db, skipping) == [(1, seq, "failed", 3, RUNS_EACH) for seq in range(3)] + [(2, 0, "failed", 3, RUNS_EACH)]
    assert _runs(db, skipping) == [("completed", "degraded", True)]
    # pause (the default): the run stops at its first failure, degraded, with the error shown.
    assert _steps(db, pausing) == [(1, 0, "failed", 3, RUNS_EACH), (1, 1, "pending", 0, RUNS_EACH)]
    assert _runs(db, pausing) == [("paused", "degraded", True)]
    # abort_run: the run fails and its pending steps are cancelled.
    assert _steps(db, aborting) == [(1, 0, "failed", 3, RUNS_EACH), (1, 1, "cancelled", 0, RUNS_EACH)]
    assert _runs(db, aborting) == [("failed", "degraded", True)]
    assert audit(db) == []
    print(f"\nR7: {len(game_bridge.received())} dispatches for {steps_total} steps (ceiling {steps_total * MAX_ATTEMPTS})")
