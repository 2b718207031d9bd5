"""event_run_phases: a started run's phases as rows, written by the statements that already move the run.

A phase's row costs no statement of its own on the way through the run: the
start inserts every row of the run in one INSERT (phase 1 opened, in the start's
transaction), and the guarded UPDATE that leaves a phase (`runs.leave_phase`)
marks that phase drained and opens the next, in the same statement, so a row
never disagrees with its run. `INSERT IGNORE` on (run_id, number): a start that
is retried writes nothing twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ...db import Tx, placeholders
from ..model import Phase, PhaseKind

COLUMNS = "run_id, number, kind, name, opened_at, drained_at, `condition`, condition_met, met_at, met_by"
NAME_LIMIT = 200  # the column's width


def insert_plan(tx: Tx, run_id: int, plans: Sequence[tuple[int, PhaseKind, str]], opened: int, now: datetime) -> None:
    """Every phase of a starting run (number, kind, name), the one numbered `opened` opened now."""
    rows = [(run_id, number, PhaseKind(kind).value, name[:NAME_LIMIT], now if number == opened else None)
            for number, kind, name in plans]
    values = placeholders(len(rows), "(%s, %s, %s, %s, %s)")
    tx.execute(
        f"INSERT IGNORE INTO event_run_phases (run_id, number, kind, name, opened_at) VALUES {values}",  # noqa: S608 — VALUES is placeholders only; every value is a parameter
        [value for row in rows for value in row],
    )


def list_for_run(tx: Tx, run_id: int) -> list[Phase]:
    rows = tx.all(f"SELECT {COLUMNS} FROM event_run_phases WHERE run_id = %s ORDER BY number", (run_id,))  # noqa: S608 — COLUMNS is a constant; the id is a parameter
    return [Phase.from_row(r) for r in rows]
