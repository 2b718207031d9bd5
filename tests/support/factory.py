"""Build definitions, runs and phases directly through the store, for tests."""

from __future__ import annotations

import itertools
from datetime import datetime

from chalicelib.db import Database, Tx, must_exist
from chalicelib.events.errors import Clash
from chalicelib.events.lifecycle import DUE, OnFailure, RunStatus
from chalicelib.events.model import Definition, Run, Step, StepSpec
from chalicelib.events.store import definitions, runs, steps

_SERIAL = itertools.count(1)
ANNOUNCE = {"action": "core.announce", "params": {"message": "hello"}}


def document(phases: list[list[dict]] | None = None, ending: list[dict] | None = None, **extra) -> dict:
    phases = phases if phases is not None else [[ANNOUNCE]]
    return {
        "name": extra.pop("name", "Test event"),
        "grace_seconds": extra.pop("grace_seconds", 300),
        "phases": [{"name": f"phase {i + 1}", "steps": p} for i, p in enumerate(phases)],
        "ending": ending or [],
        **extra,
    }


def make_definition(db: Database, now: datetime, doc: dict | None = None, actor: str = "tester"):
    """A new definition of `doc`; a name another holds gets a serial number (tests reuse their documents)."""
    doc = doc or document()
    try:
        return db.transaction(lambda tx: definitions.create(tx, doc, actor=actor, now=now))
    except Clash:
        return make_definition(db, now, {**doc, "name": f"{doc['name']} #{next(_SERIAL)}"}, actor)


def make_run(
    db: Database,
    now: datetime,
    *,
    doc: dict | None = None,
    status: RunStatus = RunStatus.SCHEDULED,
    scheduled_for: datetime | None = None,
    current_phase: int | None = None,
) -> Run:
    """A run of a fresh definition, forced into `status` (for store-level tests)."""
    definition = make_definition(db, now, doc)
    return db.transaction(lambda tx: insert_run(tx, definition, now, status=status, scheduled_for=scheduled_for,
                                                current_phase=current_phase))


def insert_run(
    tx: Tx,
    definition: Definition,
    now: datetime,
    *,
    status: RunStatus = RunStatus.SCHEDULED,
    scheduled_for: datetime | None = None,
    current_phase: int | None = None,
) -> Run:
    """`make_run`'s run, in `tx`: a test that needs many builds them in one transaction (one commit)."""
    inserted, _ = runs.insert_occurrence(
        tx,
        definition_id=definition.id,
        definition_version=definition.current_version,
        scheduled_for=scheduled_for or now,
        grace_seconds=300,
        now=now,
    )
    run = must_exist(inserted)
    tx.execute(
        # A run no timer moves has no wake time, as the store's own moves leave it.
        # A terminal run has its finished_at (a CHECK holds it).
        "UPDATE event_runs SET status = %s, current_phase = %s, wake_at = IF(%s, wake_at, NULL),"
        " finished_at = IF(%s, %s, NULL) WHERE id = %s",
        (RunStatus(status).value, current_phase, RunStatus(status) in DUE, RunStatus(status).terminal, now, run.id),
    )
    return must_exist(runs.get(tx, run.id))


def specs(*action_ids: str, on_failure: str = "pause") -> list[StepSpec]:
    return [StepSpec(action_id=a, params={"n": i}, on_failure=OnFailure(on_failure)) for i, a in enumerate(action_ids)]


def materialise(db: Database, run: Run, phase: int, step_specs: list[StepSpec]) -> list[Step]:
    return db.transaction(lambda tx: steps.materialise_phase(tx, run.id, phase, step_specs))


def step_row(db: Database, step_id: int) -> Step:
    return must_exist(db.autocommit(lambda tx: steps.get(tx, step_id)))


def run_row(db: Database, run_id: int) -> Run:
    return must_exist(db.autocommit(lambda tx: runs.get(tx, run_id)))
