"""R1: eight tick-worker processes drain one backlog: no step claimed twice, no delivery repeated, an honest log."""

from collections import Counter

from tests.support.torture import (
    TickFleet,
    audit,
    document_of,
    duplicate_deliveries,
    module_steps,
    schedule_runs,
    sized,
    unfinished_runs,
    wait_until,
)

WORKERS = 8
STEPS_PER_RUN = 5
RUNS = sized(400, 4_000)  # × 5 steps: 2,000 in CI, the 20,000 under TORTURE_SCALE=full


def test_eight_workers_claim_each_step_once_and_log_every_transition_once(db, db_params, game_bridge, tmp_path):
    run_ids = schedule_runs(db, document_of([module_steps(STEPS_PER_RUN)]), RUNS)
    with TickFleet(tmp_path, db_params.url(), game_bridge, EVENT_TICK_CONCURRENCY="4") as fleet:
        fleet.start(WORKERS)
        wait_until(lambda: unfinished_runs(db) == 0, timeout=sized(240, 1800), what="every run completed")
        fleet.stop()

    steps_total = RUNS * STEPS_PER_RUN
    assert duplicate_deliveries(game_bridge) == []
    assert len(game_bridge.received()) == steps_total
    assert fleet.tick_errors() == 0 and fleet.failed_ticks() == []
    rows = db.autocommit(lambda tx: tx.all(
        "SELECT status, attempts, claimed_by, COUNT(*) AS n FROM event_run_steps GROUP BY status, attempts, claimed_by"))
    assert rows == [{"status": "done", "attempts": 1, "claimed_by": None, "n": steps_total}]  # one claim each
    runs = db.autocommit(lambda tx: tx.all("SELECT status, COUNT(*) AS n FROM event_runs GROUP BY status"))
    assert runs == [{"status": "completed", "n": len(run_ids)}]
    kinds = Counter(r["kind"] for r in db.autocommit(lambda tx: tx.all("SELECT kind FROM event_run_log")))
    # Transitions: per step one claim-and-dispatch and one finish; per run four status changes and two phases.
    assert kinds == {"step.dispatch": steps_total, "step.status": steps_total, "run.status": 4 * RUNS, "run.phase": 2 * RUNS}
    assert audit(db) == []
    print(f"\nR1: {WORKERS} workers, {steps_total} steps, {sum(map(len, fleet.tick_times()))} ticks")
