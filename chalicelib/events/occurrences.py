"""One occurrence of a definition becomes one run, with the log row that records it.

The planner (recurring definitions) and scheduling through the API both create
runs here, so they agree: INSERT IGNORE on the occurrence key, and — only for
the caller whose insert took — a `run.status` row naming who scheduled it and why.
"""

from __future__ import annotations

from datetime import datetime

from ..db import Tx
from . import journal
from .model import DefinitionVersion, Run, RunStatus
from .store import log, runs

DEFAULT_GRACE_SECONDS = 300
# A tick comes every few seconds to a minute; a shorter window would miss the
# run by construction. Fixed here, not a setting, so a document valid in one
# stage is valid in all.
MIN_GRACE_SECONDS = 60


def grace_seconds_of(document: dict) -> int:
    """The grace window a run of this document gets: versions stored before the minimum get the minimum."""
    return max(MIN_GRACE_SECONDS, int(document.get("grace_seconds", DEFAULT_GRACE_SECONDS)))


def schedule_occurrence(
    tx: Tx, version: DefinitionVersion, scheduled_for: datetime, *, actor: str, cause: str, now: datetime
) -> tuple[Run, bool]:
    """The run of this version at `scheduled_for`: (run, created)."""
    run, created = runs.schedule(
        tx,
        definition_id=version.definition_id,
        definition_version=version.version,
        scheduled_for=scheduled_for,
        grace_seconds=grace_seconds_of(version.document),
        now=now,
    )
    if created:
        log.append(tx, journal.run_status(run.id, None, None, RunStatus.SCHEDULED, actor=actor, cause=cause), now)
    return run, created
