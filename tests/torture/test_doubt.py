"""Steps in doubt under fire: tick workers SIGKILLed mid-dispatch, again and again, with the status endpoint
on (GAME_BRIDGE_STATUS=on), against a game that applies every delivery it receives and never de-duplicates
on the key — so a step sent twice shows as two applications. Nothing may be applied twice.

Four worker processes with a 2 s lease drain a backlog of runs whose game-side answers take 0.3 s after the
action is applied, so a killed worker has almost always left an applied action unanswered: its step is in
doubt once the sweep takes its lease back, and the next attempt must ask the game (and find it applied)
rather than send it again. Kills also land mid-probe and mid-re-send; the game's attempt fence keeps a
delivery still on its way from landing after a `not_applied`.
"""

import random
import time
from collections import Counter

from devtools.kit.game_bridge import ApplyingGame
from tests.support.torture import (
    TickFleet,
    dispatching,
    document_of,
    duplicate_deliveries,
    module_steps,
    schedule_runs,
    sized,
    unfinished_runs,
    wait_until,
)

WORKERS = 4
LEASE_SECONDS = 2
KILLS = sized(50, 300)
BATCH_RUNS = 24
DOCUMENT = document_of([module_steps(4)])


def test_workers_killed_mid_dispatch_with_the_status_endpoint_on_apply_nothing_twice(db, db_params, game_bridge,
                                                                                      tmp_path):
    game = ApplyingGame(game_bridge, delay=0.3)
    port = int(game_bridge.url.rsplit(":", 1)[1])
    rng = random.Random(26)
    schedule_runs(db, DOCUMENT, BATCH_RUNS * 2)
    with TickFleet(tmp_path, db_params.url(), game_bridge, EVENT_STEP_LEASE_SECONDS=str(LEASE_SECONDS),
                   EVENT_STEP_MAX_ATTEMPTS="20", EVENT_STEP_RETRY_SECONDS="1", EVENT_TICK_CONCURRENCY="4",
                   GAME_BRIDGE_STATUS="on") as fleet:
        fleet.start(WORKERS)
        deadline = time.monotonic() + sized(90, 1200)
        while fleet.killed < KILLS:
            assert time.monotonic() < deadline, f"only {fleet.killed} kills in time"
            if unfinished_runs(db) < BATCH_RUNS:
                schedule_runs(db, DOCUMENT, BATCH_RUNS)
            in_flight = [slot for slot, pid in fleet.pids().items() if dispatching(pid, port)]
            if not in_flight:
                time.sleep(0.02)
                continue
            fleet.kill_and_restart(rng.choice(in_flight))
            time.sleep(rng.uniform(0.05, 0.3))
        wait_until(lambda: unfinished_runs(db) == 0, timeout=sized(90, 600), what="every run completed after the killing")
        fleet.stop()

    steps = db.autocommit(lambda tx: tx.all("SELECT id, idempotency_key, status, in_doubt FROM event_run_steps"))
    assert {s["status"] for s in steps} == {"done"}
    assert db.autocommit(lambda tx: tx.all("SELECT DISTINCT status FROM event_runs")) == [{"status": "completed"}]

    assert game.duplicates() == {}  # 0 duplicate applications at the game side
    assert {s["idempotency_key"]: 1 for s in steps} == dict(game.applied)  # and every step applied once
    assert duplicate_deliveries(game_bridge) == []

    probes = Counter(row["probe"] for row in db.autocommit(lambda tx: tx.all(
        "SELECT JSON_VALUE(detail, '$.probe') AS probe FROM event_run_log"
        " WHERE kind = 'step.dispatch' AND JSON_VALUE(detail, '$.probe') IS NOT NULL")))
    assert probes["applied"] > 0, f"no step in doubt was found applied: {probes}"
    print(f"\nsteps in doubt: {fleet.killed} SIGKILLs, {len(steps)} steps each applied once, probes {dict(probes)},"
          f" {sum(game.fenced.values())} late deliveries refused by the fence")
