"""event_run_log: the shared record of every change of state.

Rows are appended through the same `Tx` as the change they record, so the two
commit together or not at all. What a row says is built in `events.journal`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ...db import Tx, placeholders
from ..journal import Entry
from ..model import LogEntry

COLUMNS = "id, run_id, step_id, kind, phase, detail, actor, created_at"
# One encoder for every row: json.dumps(default=...) would build a new one per call.
_DETAIL = json.JSONEncoder(default=str)


def _values(entry: Entry, now: datetime) -> tuple[Any, ...]:
    if not entry.kind:
        raise ValueError("a log row needs a kind")
    detail = None if entry.detail is None else _DETAIL.encode(entry.detail)
    return (entry.run_id, entry.step_id, entry.kind, entry.phase, detail, entry.actor, now)


def append(tx: Tx, entry: Entry, now: datetime) -> int:
    tx.execute(
        """INSERT INTO event_run_log (run_id, step_id, kind, phase, detail, actor, created_at)
           VALUES (%s, %s, %s, %s, %s, %s, %s)""",
        _values(entry, now),
    )
    return tx.last_insert_id


def append_many(tx: Tx, entries: Iterable[Entry], now: datetime) -> int:
    """Many rows in one multi-row INSERT (built here: executemany's rewriting costs more than the rows)."""
    rows = [_values(e, now) for e in entries]
    if not rows:
        return 0
    values = placeholders(len(rows), "(%s, %s, %s, %s, %s, %s, %s)")
    return tx.execute(
        f"INSERT INTO event_run_log (run_id, step_id, kind, phase, detail, actor, created_at) VALUES {values}",  # noqa: S608 — only %s placeholders, counted from len(rows); every value is a parameter
        [value for row in rows for value in row],
    )


def after(tx: Tx, run_id: int, after_id: int = 0, limit: int = 200) -> list[LogEntry]:
    """The run's rows with id > after_id, oldest first: what a console tails."""
    if not 1 <= limit <= 1000:
        raise ValueError(f"limit must be between 1 and 1000, got {limit}")
    rows = tx.all(
        f"SELECT {COLUMNS} FROM event_run_log WHERE run_id = %s AND id > %s ORDER BY id LIMIT %s",  # noqa: S608 — COLUMNS is a constant; ids and limit are parameters
        (run_id, after_id, limit),
    )
    return [LogEntry.from_row(r) for r in rows]
