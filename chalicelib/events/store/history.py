"""A finished run's history: deleting every row of runs that ended long ago (`purge.py` drives it in batches).

Invariant: a run's rows go only all together, in one transaction that first locks
the run with its guard in the WHERE (`_PURGEABLE`): a run this version understands,
finished before the cut, whose cleanup is not under way and which has left nothing
in the world a cleanup could still revert (a resource live or failed with a revert
the bridge may be sent, or one being reverted). Each table's rows of the locked
runs are deleted, then the runs themselves, held to the guard again; a run that no
longer meets it (none can while it is locked) rolls the whole batch back. So a
purge never leaves half a run, never removes what the ledger still has to clean
up, and never touches a newer version's rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ...db import Tx
from ..lifecycle import ResourceSQL, RunSQL
from . import understood

# The tables that hold a run's rows by its `run_id`, deleted before the run itself (no foreign key orders them).
RUN_TABLES = (
    "event_run_log",
    "event_run_steps",
    "event_run_phases",
    "event_run_signals",
    "event_run_escalations",
    "event_run_resources",
    "event_chat_messages",
)
# A resource the engine may still act on: one being reverted, or one left in the world with a revert that may be
# sent (a person's late Clean up, or a retry of a failed revert).
# guard: a-purge-keeps-what-a-cleanup-may-still-revert
_REVERTIBLE = f"""EXISTS (SELECT 1 FROM event_run_resources x WHERE x.run_id = r.id
                     AND (x.status = {ResourceSQL.REVERTING}
                          OR (x.status IN ({ResourceSQL.LIVE}, {ResourceSQL.REVERT_FAILED})
                              AND x.`revert` IS NOT NULL AND x.revert_refused IS NULL)))"""  # noqa: S608 — constants
# A run has a finished_at exactly when its status is terminal (the CHECK of migration 0031).
# guard: a-purge-takes-only-runs-finished-before-the-cut
# guard: a-purge-leaves-a-cleanup-under-way
_FINISHED_BEFORE = f"""r.finished_at < %(before)s
                       AND (r.late_cleanup IS NULL OR r.late_cleanup <> {RunSQL.LATE_CLEANUP_STARTED})
                       AND {understood.run_row("r")}"""
_PURGEABLE = f"{_FINISHED_BEFORE} AND NOT {_REVERTIBLE}"


@dataclass
class Purged:
    """What one batch (or a whole purge, summed) deleted: runs, and rows by table."""

    runs: int = 0
    rows: dict[str, int] = field(default_factory=dict)

    def add(self, other: Purged) -> None:
        self.runs += other.runs
        for table, count in other.rows.items():
            self.rows[table] = self.rows.get(table, 0) + count


def purgeable(tx: Tx, before: datetime) -> Purged:
    """What a purge up to `before` would delete now: the runs, and their rows by table (a plain read)."""
    ids = f"SELECT r.id FROM event_runs r WHERE {_PURGEABLE}"  # noqa: S608 — constants
    runs = int(tx.scalar(f"SELECT COUNT(*) FROM ({ids}) AS p", {"before": before}) or 0)  # noqa: S608 — constants
    rows = {table: int(tx.scalar(f"SELECT COUNT(*) FROM {table} WHERE run_id IN ({ids})", {"before": before}) or 0)  # noqa: S608 — constants
            for table in RUN_TABLES}
    return Purged(runs, rows)


def purge_batch(tx: Tx, before: datetime, most_runs: int, most_steps: int) -> Purged:
    """Delete the oldest purgeable runs, at most `most_runs`, and as many of them as hold `most_steps` steps
    together (always at least one), with every row they have; in `tx`, a transaction."""
    # guard: a-purge-locks-the-runs-it-deletes
    found = tx.all(
        f"""SELECT r.id, (SELECT COUNT(*) FROM event_run_steps s WHERE s.run_id = r.id) AS steps
              FROM event_runs r WHERE {_PURGEABLE}
             ORDER BY r.finished_at, r.id LIMIT %(most)s FOR UPDATE""",  # noqa: S608 — constants
        {"before": before, "most": most_runs},
    )
    ids: list[int] = []
    steps = 0
    for row in found:
        if ids and steps + int(row["steps"]) > most_steps:
            break
        ids.append(int(row["id"]))
        steps += int(row["steps"])
    if not ids:
        return Purged()
    rows = {table: tx.execute(f"DELETE FROM {table} WHERE run_id IN %(ids)s", {"ids": ids})  # noqa: S608 — constants
            for table in RUN_TABLES}
    deleted = tx.execute(f"DELETE r FROM event_runs r WHERE r.id IN %(ids)s AND {_FINISHED_BEFORE}",
                         {"ids": ids, "before": before})
    if deleted != len(ids):
        raise RuntimeError(f"a purge locked {len(ids)} runs and could delete {deleted}: rolled back")
    return Purged(deleted, rows)
