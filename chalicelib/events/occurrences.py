"""Creating runs: one occurrence of a definition becomes one run, with the log row that records it.

The planner (recurring definitions) and scheduling through the API both create
runs here, so they agree: INSERT IGNORE on the occurrence key, and — only for
the caller whose insert took — a `run.status` row naming who scheduled it and why.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ..db import Database, Tx, must_exist
from . import journal
from .document import grace_seconds_of
from .errors import Clash, Conflict, Invalid, NotFound
from .lifecycle import RunStatus
from .model import DefinitionVersion, Run
from .store import definitions as store
from .store import log, runs

# How far ahead a person may schedule a run: a year, leap years included. Far
# enough for any event calendar, and far from where date arithmetic overflows.
MAX_SCHEDULE_AHEAD = timedelta(days=366)


def schedule_occurrence(
    tx: Tx, version: DefinitionVersion, scheduled_for: datetime, *, actor: str, cause: str, now: datetime
) -> tuple[Run | None, bool]:
    """The run of this version at `scheduled_for`: (run, created); (None, False) for an occurrence a person
    skipped (the INSERT is guarded on it: the planner never creates one)."""
    run, created = runs.insert_occurrence(
        tx,
        definition_id=version.definition_id,
        definition_version=version.version,
        scheduled_for=scheduled_for,
        grace_seconds=grace_seconds_of(version.document),
        now=now,
    )
    if created:
        # guard: scheduling-commits-before-its-log-row
        log.append(tx, journal.run_status(must_exist(run).id, None, None, RunStatus.SCHEDULED, actor=actor, cause=cause), now)
    return run, created


def schedule_run(
    db: Database, definition_id: int, scheduled_for: datetime, *, actor: str, now: datetime
) -> tuple[Run, bool]:
    """The run of one occurrence of the definition's current version: (run, created).

    The same occurrence twice is the same run (its key is unique) while that run
    is live; once it has finished it can never run again, so asking again is a
    Conflict that says so. A time in the past but inside the grace window is
    accepted — the next tick starts it — and one beyond it is refused, since the
    tick would only mark it missed. One further ahead than MAX_SCHEDULE_AHEAD is
    refused before the database is asked.
    """
    if scheduled_for - now > MAX_SCHEDULE_AHEAD:
        raise Invalid(
            f"scheduled_for is more than {MAX_SCHEDULE_AHEAD.days} days ahead; a run may be scheduled at most that far"
        )

    def work(tx: Tx) -> tuple[Run, bool]:
        # guard: a-run-scheduled-during-a-save-plays-the-version-before-it
        version = store.current_locked(tx, definition_id)  # no save commits until the run is in: it warns of it
        if version is None:
            raise NotFound(f"no definition {definition_id}")
        grace = grace_seconds_of(version.document)
        if scheduled_for + timedelta(seconds=grace) < now:
            raise Invalid(
                f"scheduled_for is more than the definition's grace window ({grace} s) in the past;"
                " the run could only be missed"
            )
        run, created = schedule_occurrence(tx, version, scheduled_for, actor=actor, cause=f"scheduled by {actor}", now=now)
        if run is None:
            raise Clash(f"the occurrence at {scheduled_for:%Y-%m-%dT%H:%M:%SZ} is skipped; unskip it to schedule its run",
                        detail={"skipped": True})
        # guard: reschedule-a-finished-occurrence
        if run.status.terminal:
            raise Conflict(
                f"the run of this occurrence (run {run.id}) is {run.status.value} and will not run again;"
                " a run at another time is a new occurrence",
                run_status=run.status.value,
            )
        return run, created

    return db.transaction(work)
