"""The backlog every throughput benchmark drains: runs of instant steps (core.announce on the log channel)."""

from __future__ import annotations

import logging
import time
import uuid
from datetime import datetime

from chalicelib.config import Settings
from chalicelib.db import Database, DatabaseClock
from chalicelib.events.actions.perform import Actions
from chalicelib.events.adapters.channels import LogChannel
from chalicelib.events.runner import Budget, Rules, Runner, TickReport
from chalicelib.events.store import definitions

RULES = Rules(lease_seconds=120, max_attempts=3, retry_seconds=30)
# Long enough that a benchmark tick never stops for its budget: it drains the backlog.
DRAIN_BUDGET_SECONDS = 3600.0


def quiet_channels() -> None:
    """The log channel's lines are the instant steps' real work; printing them would time the terminal.

    The channel writes at WARNING (so a Lambda's quiet log keeps cues), hence ERROR here.
    """
    logging.getLogger("chalicelib.events.adapters.channels").setLevel(logging.ERROR)


def instant_document(steps_per_run: int) -> dict:
    steps = [{"action": "core.announce", "params": {"message": f"step {i}"}} for i in range(steps_per_run)]
    return {"name": "Benchmark", "grace_seconds": 3600, "phases": [{"name": "main", "steps": steps}], "ending": []}


def schedule_backlog(db: Database, runs: int, steps_per_run: int, *, label: str = "backlog") -> list[int]:
    """`runs` due runs of a new definition of `steps_per_run` instant steps, inserted in one statement."""
    return schedule_runs(db, instant_document(steps_per_run), runs, label=label)


def schedule_runs(db: Database, document: dict, runs: int, *, label: str) -> list[int]:
    """`runs` due runs of a new definition of `document` (its name made unique), inserted in one statement."""
    now = DatabaseClock(db).now()
    name = f"Benchmark {label} {uuid.uuid4().hex[:8]}"  # definition names are unique; a label may come back each round
    definition = db.transaction(
        lambda tx: definitions.create(tx, {**document, "name": name}, actor="bench", now=now))
    return db.transaction(lambda tx: _insert_runs(tx, definition.id, runs, label, now))


def running_runs(db: Database, count: int, label: str) -> tuple[int, list[int]]:
    """`count` running runs of a new definition, at its phase 1 with no wake (only a person moves them): (the
    definition's id, the runs' ids)."""
    ids = schedule_backlog(db, count, 1, label=label)
    db.autocommit(lambda tx: tx.execute(
        "UPDATE event_runs SET status = 'running', current_phase = 1, wake_at = NULL WHERE id IN %s", (ids,)))
    definition = db.autocommit(lambda tx: tx.scalar("SELECT definition_id FROM event_runs WHERE id = %s", (ids[0],)))
    return int(definition), ids


def _insert_runs(tx, definition_id: int, count: int, label: str, now: datetime) -> list[int]:
    tx.execute(
        f"""INSERT INTO event_runs (definition_id, definition_version, occurrence_key, status, scheduled_for,
                                    grace_seconds, health, created_at, updated_at, wake_at)
            SELECT %s, 1, CONCAT(%s, '-', %s, '-', seq), 'scheduled', %s, 3600, 'ok', %s, %s, %s
              FROM seq_1_to_{int(count)}""",
        (definition_id, label, definition_id, now, now, now, now),
    )
    rows = tx.all("SELECT id FROM event_runs WHERE definition_id = %s ORDER BY id", (definition_id,))
    return [r["id"] for r in rows]


def make_runner(db: Database, concurrency: int) -> Runner:
    channel = LogChannel("announce")
    # The deployment's default escalation: the tick's escalate chore reads the stalled waits every tick.
    actions = Actions(bridge=None, cue_channel=LogChannel("cue"), announce_channel=channel,
                      escalate_after_seconds=Settings().escalate_after_seconds)
    return Runner(db, DatabaseClock(db), actions, RULES, concurrency=concurrency)


def drain(runner: Runner) -> TickReport:
    """One tick with a budget it never reaches; a run that raised is a broken benchmark, not a figure."""
    report = runner.tick(Budget.for_seconds(DRAIN_BUDGET_SECONDS))
    if report.errors or report.out_of_budget:
        raise RuntimeError(f"the benchmark tick did not drain cleanly: {report.summary()}")
    return report


def drained_steps_per_second(runner: Runner) -> tuple[TickReport, float]:
    """Drain with `runner`, then close it: the tick's report and the steps it dispatched per second."""
    try:
        started = time.perf_counter()
        report = drain(runner)
        elapsed = time.perf_counter() - started
    finally:
        runner.close()
    return report, report.dispatched / elapsed
