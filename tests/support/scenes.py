"""Runs and steps put in a given state, and snapshots to prove a refused control changed nothing."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from chalicelib.db import Database, Tx, must_exist
from chalicelib.events.lifecycle import RunSQL, RunStatus
from chalicelib.events.model import Run, Step
from chalicelib.events.store import definitions, log, runs, steps
from tests.support.factory import document, insert_run, make_run, materialise, specs, step_row

# Every state a step can be in, as the console sees it.
STEP_STATES = ("pending", "parked", "leased", "done", "failed", "refused", "skipped", "cancelled")


def set_step(db: Database, s: Step, **cols) -> Step:
    assignments = ", ".join(f"{k} = %s" for k in cols)
    db.autocommit(lambda tx: tx.execute(f"UPDATE event_run_steps SET {assignments} WHERE id = %s", (*cols.values(), s.id)))
    return step_row(db, s.id)


def set_run(db: Database, run_id: int, **cols) -> None:
    """Force columns of a run; a forced status keeps finished_at as a move into it would (the CHECK holds it)."""
    assignments = ", ".join(f"{k} = %s" for k in cols)
    if "status" in cols and "finished_at" not in cols:
        assignments += f", finished_at = IF(status IN ({RunSQL.TERMINAL}), COALESCE(finished_at, updated_at), NULL)"
    db.autocommit(lambda tx: tx.execute(f"UPDATE event_runs SET {assignments} WHERE id = %s", (*cols.values(), run_id)))


def step_columns(state: str, now) -> dict[str, Any]:
    """The columns that put a step in one of STEP_STATES (leased = running under a live lease)."""
    if state == "pending":
        return {"status": "pending"}
    if state == "parked":
        return {"status": "running", "attempts": 1, "claimed_by": None, "claim_expires_at": None}
    if state == "parked_in_doubt":  # not one of STEP_STATES: parked for a decision on whether the game applied it
        return {"status": "running", "attempts": 1, "claimed_by": None, "claim_expires_at": None,
                "park_reason": "doubt", "in_doubt": True}
    if state == "held":  # not one of STEP_STATES: a parked cue Rowan has (acknowledged)
        return {"status": "running", "attempts": 1, "claimed_by": None, "claim_expires_at": None,
                "acknowledged_by": "Rowan", "acknowledged_at": now}
    if state == "leased":
        return {"status": "running", "attempts": 1, "claimed_by": "tick-token", "claim_expires_at": now + timedelta(seconds=120)}
    return {"status": state, "attempts": 1, "finished_at": now}


def put_step_in(db: Database, s: Step, state: str, now) -> Step:
    """Force a step into one of STEP_STATES (leased = running under a live lease)."""
    return set_step(db, s, **step_columns(state, now))


def runs_each_with_a_step_in(db: Database, now, status: RunStatus, state: str, count: int) -> list[tuple[Run, Step, int | None]]:
    """`count` runs in `status`, each with three steps in phase 1: the first done, the second in `state`
    and the third pending. Built in one transaction; each comes back as (run, that step, the furthest
    step its phase reached), read in the same transaction."""

    def build(tx: Tx) -> list[tuple[Run, Step, int | None]]:
        built = []
        for i in range(count):
            run = insert_run(tx, definitions.create(tx, document(name=f"Scene {i}"), actor="tester", now=now), now,
                             status=status, current_phase=1)
            first, target, _ = steps.materialise_phase(tx, run.id, 1, specs(*["world.spawn"] * 3))
            for s, columns in ((first, step_columns("done", now)), (target, step_columns(state, now))):
                assignments = ", ".join(f"{k} = %s" for k in columns)
                tx.execute(f"UPDATE event_run_steps SET {assignments} WHERE id = %s", (*columns.values(), s.id))
            built.append((must_exist(runs.get(tx, run.id)), must_exist(steps.get(tx, target.id)),
                          steps.last_started_seq(tx, run.id, 1)))
        return built

    return db.transaction(build)


def run_with_steps(db: Database, now, status: RunStatus, n: int = 3, current_phase: int | None = 1, on_failure: str = "pause"):
    """A run in `status` whose phase 1 holds `n` steps, all pending."""
    run = make_run(db, now, status=status, current_phase=current_phase)
    return run, materialise(db, run, 1, specs(*["world.spawn"] * n, on_failure=on_failure))


def finished_with_a_live_crow(db: Database, now, status: RunStatus = RunStatus.COMPLETED) -> Run:
    """A finished run whose first step left a crow live in the game world, with a revert: one a Clean up takes."""
    from chalicelib.events.ledger import Listed
    from chalicelib.events.model import Revert
    from chalicelib.events.store import resources

    run, (spawned,) = run_with_steps(db, now, status, n=1)
    put_step_in(db, spawned, "done", now)
    crow = Listed("npc", "crow", Revert("world.undo", {"what": "crow"}))
    db.transaction(lambda tx: resources.record(tx, run.id, spawned.id, [crow], now))
    return run


def snapshot(db: Database, run_id: int) -> dict:
    """Everything a control could touch: the run row, its steps and its log."""

    def read(tx):
        return {
            "run": tx.one("SELECT * FROM event_runs WHERE id = %s", (run_id,)),
            "steps": tx.all("SELECT * FROM event_run_steps WHERE run_id = %s ORDER BY id", (run_id,)),
            "log": tx.all("SELECT * FROM event_run_log WHERE run_id = %s ORDER BY id", (run_id,)),
        }

    return db.autocommit(read)


def log_rows(db: Database, run_id: int) -> list[dict]:
    return [e.public() for e in db.autocommit(lambda tx: log.after(tx, run_id))]


def furthest(db: Database, run_id: int, phase: int | None) -> int | None:
    return db.autocommit(lambda tx: steps.last_started_seq(tx, run_id, phase))


TABLES = ("event_definitions", "event_definition_versions", "event_runs", "event_run_phases",
          "event_run_signals", "event_run_steps", "event_run_log")


def table_counts(db: Database) -> dict[str, int]:
    return {t: db.autocommit(lambda tx: must_exist(tx.one(f"SELECT COUNT(*) AS n FROM {t}"))["n"]) for t in TABLES}


def everything(db: Database) -> dict[str, list[dict]]:
    """Every row of every table: what "nothing was written" is checked against."""
    return {t: db.autocommit(lambda tx: tx.all(f"SELECT * FROM {t} ORDER BY 1, 2")) for t in TABLES}
