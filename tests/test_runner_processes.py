"""Four tick processes at once over 200 runs of 5 steps: every (step, attempt) dispatched exactly once."""

import json
from collections import Counter

import pytest

from chalicelib.db import DatabaseClock
from chalicelib.events.lifecycle import RunStatus
from tests.support.factory import document, make_definition
from tests.support.runner_kit import tick_process

RUNS, STEPS, PROCESSES = 200, 5, 4


def _schedule_many(db, now):
    definition = make_definition(db, now, document([[{"action": f"world.step{i}", "params": {"i": i}} for i in range(STEPS)]]))
    rows = [
        (definition.id, 1, f"{definition.id}@bulk-{i}", "scheduled", now, 300, "ok", now, now, now) for i in range(RUNS)
    ]
    db.transaction(lambda tx: tx.executemany(
        """INSERT INTO event_runs (definition_id, definition_version, occurrence_key, status, scheduled_for,
                                   grace_seconds, health, created_at, updated_at, wake_at)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""", rows))


@pytest.mark.realtime
def test_four_tick_processes_dispatch_every_step_attempt_exactly_once(db, game_bridge):
    _schedule_many(db, DatabaseClock(db).now())
    # A generous budget and lease (a tick dispatches nothing its leases would outlive): on a busy
    # two-core machine the tick must still drain everything in one go.
    processes = [
        tick_process(game_bridge.url, budget_seconds=120, EVENT_TICK_CONCURRENCY="8", EVENT_STEP_LEASE_SECONDS="120")
        for _ in range(PROCESSES)
    ]
    outputs = [p.communicate(timeout=240) for p in processes]
    assert [p.returncode for p in processes] == [0] * PROCESSES, [err[-2000:] for _, err in outputs]
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]

    requests = game_bridge.received()
    assert len(requests) == RUNS * STEPS
    by_attempt = Counter((r.json["step_id"], r.json["attempt"]) for r in requests)
    assert set(by_attempt.values()) == {1} and {attempt for _, attempt in by_attempt} == {1}
    assert all(r.signature_valid() for r in requests)
    assert sum(r["dispatched"] for r in reports) == RUNS * STEPS
    assert sum(r["runs_advanced"] for r in reports) == RUNS  # each run advanced by exactly one process

    statuses = db.autocommit(lambda tx: tx.all("SELECT status, claimed_by, COUNT(*) AS n FROM event_runs GROUP BY status, claimed_by"))
    assert statuses == [{"status": RunStatus.COMPLETED.value, "claimed_by": None, "n": RUNS}]
    steps_left = db.autocommit(lambda tx: tx.all("SELECT status, attempts, COUNT(*) AS n FROM event_run_steps GROUP BY status, attempts"))
    assert steps_left == [{"status": "done", "attempts": 1, "n": RUNS * STEPS}]

    log_rows = db.autocommit(lambda tx: tx.all(
        """SELECT run_id, kind, JSON_UNQUOTE(JSON_EXTRACT(detail, '$.to')) AS `to`, COUNT(*) AS n
             FROM event_run_log GROUP BY run_id, kind, `to`"""))
    per_run = Counter()
    for row in log_rows:
        per_run[(row["kind"], row["to"], row["n"])] += 1
    # Every run's log: its four status changes once each, two phases, five dispatches and five step changes.
    assert per_run == {
        ("run.status", "starting", 1): RUNS,
        ("run.status", "running", 1): RUNS,
        ("run.status", "ending", 1): RUNS,
        ("run.status", "completed", 1): RUNS,
        ("run.phase", None, 2): RUNS,
        ("step.dispatch", None, STEPS): RUNS,
        ("step.status", "done", STEPS): RUNS,
    }
