"""event_run_phases: a started run's phases as rows, written by the statements that already move the run.

A phase's row costs no statement of its own on the way through the run: the
start inserts every row of the run in one INSERT (phase 1 opened, in the start's
transaction), and the guarded UPDATE that leaves a phase (`runs.leave_phase`)
marks that phase drained and opens the next, in the same statement, so a row
never disagrees with its run. `INSERT IGNORE` on (run_id, number): a start that
is retried writes nothing twice. A phase with a condition not yet met is never
left: `runs.leave_phase` guards on it, and the run's wake time waits for it
(`wake`); meeting it is a person's or a signal's move, which wakes the run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...db import Tx, placeholders
from ..model import Phase, PhaseKind, iso

COLUMNS = "run_id, number, kind, name, opened_at, drained_at, `condition`, condition_met, met_at, met_by"
NAME_LIMIT = 200  # the column's width


def insert_plan(
    tx: Tx, run_id: int, plans: Sequence[tuple[int, PhaseKind, str, dict[str, Any] | None]], opened: int, now: datetime
) -> None:
    """Every phase of a starting run (number, kind, name, condition), the one numbered `opened` opened now."""
    rows = [
        (run_id, number, PhaseKind(kind).value, name[:NAME_LIMIT], now if number == opened else None,
         None if condition is None else json.dumps(condition))
        for number, kind, name, condition in plans
    ]
    values = placeholders(len(rows), "(%s, %s, %s, %s, %s, %s)")
    tx.execute(
        f"INSERT IGNORE INTO event_run_phases (run_id, number, kind, name, opened_at, `condition`) VALUES {values}",  # noqa: S608 — VALUES is placeholders only; every value is a parameter
        [value for row in rows for value in row],
    )


@dataclass(frozen=True)
class Standing:
    """A drained phase with a condition, as its locked row stands: held (not met), or who met it and when."""

    held: bool
    met: dict[str, Any] | None = None  # {"by", "at"}: whoever met its condition
    began: bool = False  # held, and this read marked it drained: the hold begins now


def hold(tx: Tx, run_id: int, number: int, now: datetime) -> Standing:
    """Whether a drained phase is held (its condition not met); if so its row is marked drained now.

    Read with a lock, so the answer stands until the caller's commit: a control that
    meets the condition waits for it, and then wakes the run. A phase with no row (a
    run started before phase rows existed) has no condition. When it is met, who met it
    and when come with the same read (the next phase's `run.phase` row says so).
    """
    row = tx.one(
        "SELECT condition_met, met_by, met_at, drained_at FROM event_run_phases"
        " WHERE run_id = %s AND number = %s AND `condition` IS NOT NULL FOR UPDATE",
        (run_id, number),
    )
    if row is None:
        return Standing(held=False)
    if row["condition_met"]:
        return Standing(held=False, met={"by": row["met_by"], "at": iso(row["met_at"])})
    tx.execute(
        "UPDATE event_run_phases SET drained_at = COALESCE(drained_at, %s) WHERE run_id = %s AND number = %s",
        (now, run_id, number),
    )
    return Standing(held=True, began=row["drained_at"] is None)


def get(tx: Tx, run_id: int, number: int) -> Phase | None:
    row = tx.one(f"SELECT {COLUMNS} FROM event_run_phases WHERE run_id = %s AND number = %s", (run_id, number))  # noqa: S608 — COLUMNS is a constant; values are parameters
    return None if row is None else Phase.from_row(row)


def list_for_run(tx: Tx, run_id: int) -> list[Phase]:
    rows = tx.all(f"SELECT {COLUMNS} FROM event_run_phases WHERE run_id = %s ORDER BY number", (run_id,))  # noqa: S608 — COLUMNS is a constant; the id is a parameter
    return [Phase.from_row(r) for r in rows]
