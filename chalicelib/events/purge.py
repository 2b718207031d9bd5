"""Deleting old history: every row of the runs that finished before a cut, a batch at a time (`store/history.py`).

Invariant: nothing a person or the tick may still act on is deleted. The cut is
at least MIN_AGE before the database's clock, past every window in which a
finished run is still touched (a chat message's edit is tried for 6 hours after
its wait ended); a run whose cleanup is under way, or that left something a
cleanup may still revert, is kept whatever its age; and each batch is one
transaction, so a purge stopped at any point (a Lambda's timeout, Ctrl-C, a lost
connection) leaves whole runs, and running it again goes on from where it
stopped. Planning never re-creates a purged run: the planner looks only past a
definition's `planned_through`, and a person may schedule only within a run's
grace window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..db import Database
from .errors import Invalid
from .store import history
from .store.history import Purged

MIN_AGE = timedelta(days=7)  # how long before now the cut must be at least (past chat.settle.EDIT_PATIENCE)
MOST_RUNS = 100  # runs in one batch
MOST_STEPS = 20_000  # steps in one batch (with their log, ~50,000 rows): one transaction of a few seconds


@dataclass(frozen=True)
class PurgeReport:
    """A purge's outcome: what it deleted (or, dry, would delete) and whether runs before the cut may remain."""

    before: datetime
    purged: Purged
    dry_run: bool
    more: bool  # stopped by its time budget: run it again to go on

    def summary(self) -> dict[str, object]:
        return {"ended_before": self.before.isoformat(), "dry_run": self.dry_run, "runs": self.purged.runs,
                "rows": dict(self.purged.rows), "more": self.more}


def cut_of(text: str) -> datetime:
    """A cut as an operator writes it: a date (its midnight) or an ISO date and time, in UTC (an offset is
    converted to UTC); Invalid otherwise."""
    try:
        when = datetime.fromisoformat(str(text).strip())
    except ValueError:
        raise Invalid(f"not a date (YYYY-MM-DD) or an ISO date and time: {text!r}") from None
    return when.astimezone(UTC).replace(tzinfo=None) if when.tzinfo else when


def check_cut(before: datetime, now: datetime) -> None:
    """Refuse a cut closer to now than MIN_AGE (Invalid, naming the latest cut allowed)."""
    latest = now - MIN_AGE
    if before > latest:
        raise Invalid(f"the cut {before.isoformat()} is too recent: a purge takes runs that finished at least"
                      f" {MIN_AGE.days} days ago, so the latest cut allowed now is {latest.replace(microsecond=0).isoformat()}")


def purge(
    db: Database,
    before: datetime,
    now: datetime,
    *,
    dry_run: bool = False,
    keep_going: Callable[[], bool] = lambda: True,
    progress: Callable[[Purged], None] = lambda so_far: None,
) -> PurgeReport:
    """Delete the history of every run that finished before `before`, a batch per transaction, oldest first,
    while `keep_going()`; `progress` hears the running total after each batch. A dry run counts, deleting nothing."""
    check_cut(before, now)
    if dry_run:
        return PurgeReport(before, db.autocommit(lambda tx: history.purgeable(tx, before)), True, False)
    total = Purged()
    while True:
        batch = db.transaction(lambda tx: history.purge_batch(tx, before, MOST_RUNS, MOST_STEPS))
        if not batch.runs:
            return PurgeReport(before, total, False, False)
        total.add(batch)
        progress(total)
        if not keep_going():
            return PurgeReport(before, total, False, True)
