"""R3: a worker frozen (SIGSTOP) mid-dispatch past its lease, another finishing its steps, then thawed (SIGCONT).

The runner's own zombie test does this with threads in one process; here the
zombie is a real process, frozen by the kernel with eight dispatches in flight,
and its answers (400: it would write `failed`) wait in its sockets while a second
worker takes the runs over and completes them. Thawed, the zombie reads those
answers and applies them: every write must match nothing.
"""

import json
import os
import signal

from chalicelib.db import DatabaseClock
from devtools.kit.game_bridge import Answer
from tests.support.scenes import everything
from tests.support.torture import (
    TickFleet,
    audit,
    document_of,
    module_steps,
    schedule_runs,
    unfinished_runs,
    wait_until,
)

RUNS = 8
LEASE_SECONDS = 2


def _fenced_out(db) -> list[dict]:
    rows = db.autocommit(lambda tx: tx.all("SELECT detail FROM event_run_log WHERE kind = 'step.dispatch' ORDER BY id"))
    return [d for d in (json.loads(r["detail"]) for r in rows) if d.get("fenced_out")]


def test_a_thawed_zombie_overwrites_nothing(db, db_params, game_bridge, tmp_path):
    run_ids = schedule_runs(db, document_of([module_steps(2)]), RUNS)
    game_bridge.script("world.step0", *[Answer(400, {"reason": "too late"}, delay=0.3)] * RUNS)
    with TickFleet(tmp_path, db_params.url(), game_bridge, EVENT_STEP_LEASE_SECONDS=str(LEASE_SECONDS),
                   EVENT_TICK_CONCURRENCY=str(RUNS)) as fleet:
        fleet.start(1)
        zombie = fleet.pids()["w0"]
        game_bridge.wait_for(RUNS, timeout=60)
        os.kill(zombie, signal.SIGSTOP)
        try:
            leases = db.autocommit(lambda tx: tx.one(
                "SELECT COUNT(*) AS n, MAX(claim_expires_at) AS last FROM event_run_steps WHERE status = 'running'"))
            assert leases["n"] == RUNS  # frozen with every first step claimed and in flight
            wait_until(lambda: DatabaseClock(db).now() > leases["last"], timeout=30, what="the zombie's leases ran out")
            fleet.start(1)
            wait_until(lambda: unfinished_runs(db) == 0, timeout=60, what="the second worker completed every run")
            settled = everything(db)
        finally:
            os.kill(zombie, signal.SIGCONT)
        wait_until(lambda: len(_fenced_out(db)) == RUNS, timeout=30, what="the zombie applied its eight answers")
        fleet.stop()

    after = everything(db)
    for table in ("event_definitions", "event_definition_versions", "event_runs", "event_run_steps"):
        assert after[table] == settled[table], f"the zombie changed {table}"
    assert after["event_run_log"][: len(settled["event_run_log"])] == settled["event_run_log"]
    added = after["event_run_log"][len(settled["event_run_log"]):]
    assert [(row["kind"], json.loads(row["detail"])["attempt"]) for row in added] == [("step.dispatch", 1)] * RUNS
    assert all(d["outcome"] == "failed" and d["http_status"] == 400 for d in _fenced_out(db))
    steps = db.autocommit(lambda tx: tx.all("SELECT seq, status, attempts FROM event_run_steps ORDER BY run_id, seq"))
    assert steps == [{"seq": 0, "status": "done", "attempts": 2}, {"seq": 1, "status": "done", "attempts": 1}] * RUNS
    assert {r["status"] for r in after["event_runs"] if r["id"] in run_ids} == {"completed"}
    assert {r["health"] for r in after["event_runs"]} == {"ok"}
    assert audit(db) == []
