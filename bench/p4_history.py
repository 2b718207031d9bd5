"""P4 history independence: a tick over due runs with a large history in the tables vs the same tick on empty ones.

The history (terminal runs with their steps, and log rows) is bulk-loaded with
INSERT … SELECT from MariaDB's seq_1_to_N tables. Then every statement the
history tick sent is EXPLAINed on that database and printed: the guarded ones
must each use an index and none may sort a file.
"""

from __future__ import annotations

import sys
import time
import uuid

import pymysql.cursors

from chalicelib.db import Database, DatabaseClock
from chalicelib.events.store import definitions
from devtools.kit.explain import plan_problems

from .harness import Figure, Statement, StatementRecorder, at_most, scratch_database
from .workload import drain, instant_document, make_runner, schedule_backlog

TARGET = 1.2
STEPS_PER_DUE_RUN = 2
STEPS_PER_TERMINAL_RUN = 3
TICK_CONCURRENCY = 8  # the deployed default


def load_history(db: Database, terminal_runs: int, log_rows: int) -> None:
    now = DatabaseClock(db).now()
    definition = db.transaction(lambda tx: definitions.create(tx, instant_document(1), actor="bench", now=now))

    def load(tx):
        tx.execute(
            f"""INSERT INTO event_runs (definition_id, definition_version, occurrence_key, status, scheduled_for,
                                        grace_seconds, health, current_phase, started_at, finished_at, created_at, updated_at)
                SELECT %s, 1, CONCAT('history-', seq), ELT(1 + MOD(seq, 4), 'completed', 'cancelled', 'failed', 'missed'),
                       %s - INTERVAL seq MINUTE, 300, 'ok', 1, %s, %s, %s, %s
                  FROM seq_1_to_{int(terminal_runs)}""",
            (definition.id, now, now, now, now, now),
        )
        tx.execute(
            f"""INSERT INTO event_run_steps (run_id, phase, seq, action_id, params, idempotency_key, status,
                                             attempts, started_at, finished_at)
                SELECT r.id, 1, s.seq, 'core.announce', '{{"message": "history"}}',
                       LEFT(SHA2(CONCAT(r.id, '|', s.seq), 256), 40), 'done', 1, %s, %s
                  FROM event_runs r JOIN seq_0_to_{STEPS_PER_TERMINAL_RUN - 1} s WHERE r.definition_id = %s""",
            (now, now, definition.id),
        )
        first = tx.one("SELECT MIN(id) AS id FROM event_runs WHERE definition_id = %s", (definition.id,))["id"]
        tx.execute(
            f"""INSERT INTO event_run_log (run_id, step_id, kind, phase, detail, actor, created_at)
                SELECT %s + MOD(seq, %s), NULL, 'step.status', 1, '{{"from": "running", "to": "done"}}', 'runner', %s
                  FROM seq_1_to_{int(log_rows)}""",
            (first, terminal_runs, now),
        )

    db.transaction(load)
    db.autocommit(lambda tx: tx.all("ANALYZE TABLE event_runs, event_run_steps, event_run_log"))


def timed_tick(db: Database, due_runs: int, recorder: StatementRecorder | None = None) -> float:
    """Seconds for one tick over `due_runs` fresh due runs; their rows are deleted after, so the tables stay as they were."""
    run_ids = schedule_backlog(db, due_runs, STEPS_PER_DUE_RUN, label=f"p4-{uuid.uuid4().hex[:6]}")
    runner = make_runner(db, concurrency=TICK_CONCURRENCY)
    try:
        if recorder is None:
            started = time.perf_counter()
            drain(runner)
        else:
            with recorder.installed():
                started = time.perf_counter()
                drain(runner)
        elapsed = time.perf_counter() - started
    finally:
        runner.close()
    marks = ", ".join(["%s"] * len(run_ids))

    def forget(tx):
        for table in ("event_run_log", "event_run_steps", "event_runs"):
            column = "id" if table == "event_runs" else "run_id"
            tx.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", run_ids)

    db.transaction(forget)
    return elapsed


def explain_all(db: Database, statements: list[Statement]) -> list[str]:
    """EXPLAIN each distinct statement shape the tick sent (INSERTs have no plan worth reading); print; return the bad ones."""
    seen: dict[str, Statement] = {}
    bad: list[str] = []
    for statement in statements:
        if not statement.many and statement.shape.split()[0].upper() in ("SELECT", "UPDATE", "DELETE"):
            seen.setdefault(statement.shape, statement)
    conn = db.connect()
    print(f"\nP4: EXPLAIN of the {len(seen)} statement shapes the tick sent (with history loaded)", file=sys.stderr)
    try:
        with conn.cursor(pymysql.cursors.DictCursor) as cursor:
            for shape, statement in seen.items():
                if "FROM" not in shape.upper() and not shape.upper().startswith("UPDATE"):
                    continue  # SELECT UTC_TIMESTAMP(6): reads no table
                cursor.execute("EXPLAIN " + statement.sql, statement.args)
                plan = list(cursor.fetchall())
                problems = plan_problems(plan)
                print(f"\n  {shape[:160]}{'…' if len(shape) > 160 else ''}", file=sys.stderr)
                for row in plan:
                    print(f"    {row.get('table')}: type={row.get('type')} key={row.get('key')} rows={row.get('rows')}"
                          f" extra={row.get('Extra') or ''}", file=sys.stderr)
                if problems:
                    print(f"    !! {', '.join(problems)}", file=sys.stderr)
                    bad.append(f"{shape[:80]}: {', '.join(problems)}")
    finally:
        conn.close()
    return bad


def run(sizes) -> list[Figure]:
    empty_times, history_times = [], []
    recorder = StatementRecorder()
    with scratch_database("p4_empty") as empty, scratch_database("p4_history") as history:
        load_history(history, sizes.history_terminal_runs, sizes.history_log_rows)
        for round_number in range(sizes.rounds):
            empty_times.append(timed_tick(empty, sizes.history_due_runs))
            history_times.append(timed_tick(history, sizes.history_due_runs, recorder if round_number == 0 else None))
        bad = explain_all(history, [s for unit in recorder.units for s in unit.statements])
    label = (
        f"tick over {sizes.history_due_runs:,} due runs,"
        f" history {sizes.history_terminal_runs:,} runs/{sizes.history_log_rows:,} log rows"
    )
    return [
        Figure("P4", label, min(history_times), "s", baseline=min(empty_times), baseline_what="(empty tables)",
               target=at_most(TARGET, ratio=True)),
        Figure("P4", "tick statements with a full scan or filesort", len(bad), "", target=at_most(0)),
    ]
