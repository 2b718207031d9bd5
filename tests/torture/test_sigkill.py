"""R2: tick workers SIGKILLed mid-dispatch, again and again, and restarted: nothing lost, nothing sent twice.

Four worker processes with a 2 s lease drain a backlog of runs whose game-side
answers take 0.3 s, so a worker almost always has a dispatch in flight; the test
SIGKILLs one that holds an open connection to the game bridge, restarts it at
once, and does that at least 50 times (new runs are added if the backlog runs
low). The attempt ceiling is raised so that the killings alone never exhaust it
(a step killed three times would fail, which is R7's subject, not this one's),
and each kill waits for a step to finish since the last one: a kill takes out
every claim of its worker (up to four), so on a loaded machine, where the
workers barely move between kills paced in seconds, the same oldest steps were
killed twenty times over and gave up, as the engine should, which is not
what this test is about.
"""

import random
import time
from datetime import datetime

from chalicelib.events.store.steps import GAVE_UP
from devtools.kit.game_bridge import Answer
from tests.support.torture import (
    TickFleet,
    attempts_delivered,
    audit,
    dispatching,
    document_of,
    duplicate_deliveries,
    module_steps,
    schedule_runs,
    sized,
    unfinished_report,
    unfinished_runs,
    wait_until,
)

WORKERS = 4
LEASE_SECONDS = 2
KILLS = sized(50, 300)
BATCH_RUNS = 24
DOCUMENT = document_of([module_steps(4)])


def _leases(db) -> dict[tuple[int, int], datetime]:
    rows = db.autocommit(lambda tx: tx.all(
        "SELECT id, attempts, claim_expires_at FROM event_run_steps WHERE status = 'running' AND claim_expires_at IS NOT NULL"))
    return {(r["id"], r["attempts"]): r["claim_expires_at"] for r in rows}


def _steps_done(db) -> int:
    return db.autocommit(lambda tx: tx.one("SELECT COUNT(*) AS n FROM event_run_steps WHERE status = 'done'"))["n"]


def _two_ticks_after(ticks_by_worker: list[list[datetime]], moment: datetime) -> datetime | None:
    """When every worker that went on ticking had started its second tick after `moment` (None: none did).

    A worker's first tick after the moment sweeps, then works its due runs,
    oldest first, for its budget; by its second, the step is in hand.
    """
    seconds = [later[1] for later in ([t for t in ticks if t > moment] for ticks in ticks_by_worker) if len(later) > 1]
    return max(seconds, default=None)


def test_workers_killed_mid_dispatch_lose_nothing_and_send_nothing_twice(db, db_params, game_bridge, tmp_path):
    game_bridge.default = Answer(delay=0.3)
    port = int(game_bridge.url.rsplit(":", 1)[1])
    rng = random.Random(2)
    expiry_of_killed_claims: dict[tuple[int, int], datetime] = {}
    schedule_runs(db, DOCUMENT, BATCH_RUNS * 2)
    with TickFleet(tmp_path, db_params.url(), game_bridge, EVENT_STEP_LEASE_SECONDS=str(LEASE_SECONDS),
                   EVENT_STEP_MAX_ATTEMPTS="20", EVENT_STEP_RETRY_SECONDS="1", EVENT_TICK_CONCURRENCY="4") as fleet:
        fleet.start(WORKERS)
        deadline = time.monotonic() + sized(150, 1200)
        done_at_last_kill = -1
        while fleet.killed < KILLS:
            assert time.monotonic() < deadline, f"only {fleet.killed} kills in time"
            if unfinished_runs(db) < BATCH_RUNS:
                schedule_runs(db, DOCUMENT, BATCH_RUNS)
            done = _steps_done(db)
            in_flight = [slot for slot, pid in fleet.pids().items() if dispatching(pid, port)] if done > done_at_last_kill else []
            if not in_flight:
                time.sleep(0.02)
                continue
            fleet.kill_and_restart(rng.choice(in_flight))
            done_at_last_kill = done
            # The dead worker's leases stand until they expire: note when, to hold the sweep to its bound.
            expiry_of_killed_claims.update(_leases(db))
            time.sleep(rng.uniform(0.05, 0.3))
        wait_until(lambda: unfinished_runs(db) == 0, timeout=sized(120, 600), what="every run completed after the killing",
                   explain=lambda: unfinished_report(db))
        fleet.stop()

    steps = db.autocommit(lambda tx: tx.all("SELECT id, idempotency_key, status, attempts FROM event_run_steps"))
    assert {s["status"] for s in steps} == {"done"}
    assert db.autocommit(lambda tx: tx.all("SELECT DISTINCT status FROM event_runs")) == [{"status": "completed"}]

    assert duplicate_deliveries(game_bridge) == []
    delivered = attempts_delivered(game_bridge)
    for s in steps:
        attempts = delivered[s["idempotency_key"]]
        assert len(attempts) <= s["attempts"], f"step {s['id']}: {len(attempts)} deliveries for {s['attempts']} attempts"
        assert attempts == sorted(set(attempts)), f"step {s['id']}: attempts went {attempts} (a sweep reset them?)"
    assert audit(db) == []  # every sweep row kept the attempt count of the claim it took back

    entries = db.autocommit(lambda tx: tx.all(
        """SELECT step_id, kind, created_at, JSON_VALUE(detail, '$.cause') AS cause,
                  JSON_VALUE(detail, '$.attempts') AS attempts, JSON_VALUE(detail, '$.attempt') AS attempt,
                  JSON_VALUE(detail, '$.fenced_out') AS fenced_out
             FROM event_run_log WHERE step_id IS NOT NULL ORDER BY id"""))
    taken_back = [e for e in entries if e["kind"] == "step.status" and e["cause"] in ("lease expired", GAVE_UP)]
    assert len(taken_back) >= fleet.killed, "every kill left at least one claim in flight"

    ticks = fleet.tick_times()
    late, bounded = [], 0
    for sweep in taken_back:
        attempt = int(sweep["attempts"])
        expired = expiry_of_killed_claims.get((sweep["step_id"], attempt))
        if expired is None:
            continue
        bound = _two_ticks_after(ticks, expired)
        bounded += bound is not None
        if bound is not None and sweep["created_at"] > bound:
            late.append(f"step {sweep['step_id']} attempt {attempt}: lease ran out {expired}, taken back {sweep['created_at']}")
        redispatch = next((e for e in entries if e["step_id"] == sweep["step_id"] and e["kind"] == "step.dispatch"
                           and e["attempt"] == str(attempt + 1) and not e["fenced_out"]), None)
        bound = _two_ticks_after(ticks, sweep["created_at"])
        if redispatch is not None and bound is not None and redispatch["created_at"] > bound:
            late.append(f"step {sweep['step_id']}: taken back {sweep['created_at']}, dispatched again {redispatch['created_at']}")
    assert late == []
    print(
        f"\nR2: {fleet.killed} SIGKILLs, {len(taken_back)} claims taken back ({bounded} held to the two-tick bound),"
        f" {len(steps)} steps, {sum(map(len, ticks))} ticks"
    )
