"""Occurrences of recurring definitions: a run per cron occurrence inside the planning window.

The window is [now - grace, now + horizon]: a tick that comes a little late
still plans the occurrence it is late for (the grace window decides whether it
starts), and runs appear in the console a while before they are due. Each run
snapshots the definition's current version. runs.schedule is INSERT IGNORE on
the occurrence key, so overlapping ticks plan each occurrence once, and only
the tick whose insert took writes the log row.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from croniter import croniter

from ...db import Database, Tx
from ..model import Definition
from ..occurrences import grace_seconds_of, schedule_occurrence
from ..store import definitions
from .outcomes import ACTOR

logger = logging.getLogger(__name__)
MAX_OCCURRENCES_PER_TICK = 100  # per definition: a cron of every minute over a day's horizon is still bounded


def plan_occurrences(db: Database, now: datetime, horizon: timedelta) -> int:
    """Create the missing runs; returns how many this tick created."""
    created = 0
    for definition in db.autocommit(definitions.scheduled):
        created += db.transaction(lambda tx, d=definition: _plan(tx, d, now, horizon))
    return created


def _plan(tx: Tx, definition: Definition, now: datetime, horizon: timedelta) -> int:
    if not croniter.is_valid(definition.schedule_cron):
        logger.error("definition %s has an invalid schedule %r: not planned", definition.id, definition.schedule_cron)
        return 0
    version = definitions.get_version(tx, definition.id, definition.current_version)
    grace = grace_seconds_of(version.document)
    # croniter yields occurrences strictly after its start, so start a microsecond early.
    occurrences = croniter(definition.schedule_cron, now - timedelta(seconds=grace, microseconds=1))
    created = 0
    for _ in range(MAX_OCCURRENCES_PER_TICK):
        scheduled_for = occurrences.get_next(datetime)
        if scheduled_for > now + horizon:
            break
        cause = f"planned from schedule {definition.schedule_cron!r}"
        _, inserted = schedule_occurrence(tx, version, scheduled_for, actor=ACTOR, cause=cause, now=now)
        created += inserted
    return created
