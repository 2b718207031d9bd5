"""event_schedule_log: a recurring definition's schedule log, each pause and resume a person made.

Rows are appended through the same `Tx` as the change they record, so the two commit together or not at all.
What a row says is built in `events.journal` (`schedule_paused`, `schedule_resumed`).
"""

from __future__ import annotations

import json
from datetime import datetime

from ...db import Tx
from ..journal import ScheduleEntry
from ..model import ScheduleLogEntry

COLUMNS = "id, definition_id, kind, actor, detail, created_at"
RECENT = 20  # the rows a definition's page shows


def append(tx: Tx, entry: ScheduleEntry, now: datetime) -> None:
    tx.execute(
        "INSERT INTO event_schedule_log (definition_id, kind, actor, detail, created_at) VALUES (%s, %s, %s, %s, %s)",
        (entry.definition_id, entry.kind, entry.actor, json.dumps(entry.detail), now),
    )


def recent(tx: Tx, definition_id: int) -> list[ScheduleLogEntry]:
    """The definition's latest `RECENT` rows, newest first (one range of its index)."""
    rows = tx.all(
        f"SELECT {COLUMNS} FROM event_schedule_log WHERE definition_id = %s ORDER BY id DESC LIMIT %s",  # noqa: S608 — COLUMNS is a constant; values are parameters
        (definition_id, RECENT),
    )
    return [ScheduleLogEntry.from_row(r) for r in rows]
