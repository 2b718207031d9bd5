"""P3: statements to materialise a phase of 1, 50 and 500 steps (target ≤ 3 for every size)."""

from __future__ import annotations

from chalicelib.db import Database
from chalicelib.events.model import StepSpec
from chalicelib.events.store import steps
from devtools.kit.counters import StatementMeter

from .harness import Figure, at_most, scratch_database
from .workload import schedule_backlog

PHASE_SIZES = (1, 50, 500)
TARGET = 3


def statements_to_materialise(db: Database, run_id: int, size: int) -> int:
    specs = [StepSpec("core.announce", {"message": f"step {i}"}) for i in range(size)]
    with StatementMeter(db) as meter:
        db.transaction(lambda tx: steps.materialise_phase(tx, run_id, 1, specs))
    return meter.statements


def run(sizes) -> list[Figure]:
    figures = []
    with scratch_database("p3") as db:
        run_ids = schedule_backlog(db, len(PHASE_SIZES), 1, label="p3")
        for run_id, size in zip(run_ids, PHASE_SIZES, strict=True):
            count = statements_to_materialise(db, run_id, size)
            figures.append(Figure("P3", f"statements to materialise {size} step(s)", count, "stmts",
                                  target=at_most(TARGET)))
    return figures
