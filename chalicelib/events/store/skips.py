"""event_occurrence_skips: the occurrences of a recurring definition a person marked not to be run.

The planner never creates a run for one: `runs.insert_occurrence`'s INSERT is guarded
on there being no row here. A skip is undone only before its occurrence is due (the
DELETE's WHERE carries the time).
"""

from __future__ import annotations

from datetime import datetime

from ...db import Tx
from ..model import OccurrenceSkip

COLUMNS = "definition_id, scheduled_for, reason, skipped_by, skipped_at"


def insert(tx: Tx, definition_id: int, scheduled_for: datetime, *, reason: str | None, actor: str, now: datetime) -> bool:
    """Mark the occurrence skipped; False if it was already (the first skip stands)."""
    return tx.execute(
        f"INSERT IGNORE INTO event_occurrence_skips ({COLUMNS}) VALUES (%s, %s, %s, %s, %s)",  # noqa: S608 — COLUMNS is a constant; values are parameters
        (definition_id, scheduled_for, reason, actor, now),
    ) == 1


def remove_before_due(tx: Tx, definition_id: int, scheduled_for: datetime, now: datetime) -> bool:
    """Undo the skip while its occurrence is still ahead; False if there is none, or it is due already."""
    return tx.execute(
        # guard: unskip-after-the-occurrence-is-due
        "DELETE FROM event_occurrence_skips WHERE definition_id = %s AND scheduled_for = %s AND scheduled_for > %s",
        (definition_id, scheduled_for, now),
    ) == 1


def get(tx: Tx, definition_id: int, scheduled_for: datetime) -> OccurrenceSkip | None:
    row = tx.one(f"SELECT {COLUMNS} FROM event_occurrence_skips WHERE definition_id = %s AND scheduled_for = %s",  # noqa: S608 — COLUMNS is a constant; values are parameters
                 (definition_id, scheduled_for))
    return OccurrenceSkip.from_row(row) if row else None


def between(tx: Tx, definition_id: int, start: datetime, end: datetime) -> dict[datetime, OccurrenceSkip]:
    """The skips of a definition in [start, end), by their occurrence's time (one range of the primary key)."""
    rows = tx.all(
        f"SELECT {COLUMNS} FROM event_occurrence_skips WHERE definition_id = %s AND scheduled_for >= %s"  # noqa: S608 — COLUMNS is a constant; values are parameters
        " AND scheduled_for < %s",
        (definition_id, start, end),
    )
    return {skip.scheduled_for: skip for skip in map(OccurrenceSkip.from_row, rows)}
