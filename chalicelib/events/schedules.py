"""A recurring definition's schedule paused and resumed by a person, with a reason.

Invariant: each is one guarded UPDATE of the definition's row (`definitions.pause_schedule`,
`definitions.resume_schedule`) and its schedule log row (`schedule_log`), in one transaction. While paused the
planner reads the definition no more (its planning order is NULL, migration 0061; the planner's mark is
guarded on it too, so a planning already under way when the pause commits plans nothing), and the sleep's
look-ahead waits for none of its occurrences. Runs planned before the pause (at most the planner's horizon
ahead) are kept: a person cancels or postpones them. A resume plans the schedule through now, so none of the
occurrences missed while it was paused is created, unless it asks for the latest (`catch_up: latest`), which
the resume creates itself if it lies within the definition's grace window.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from ..db import Database, Tx, must_exist
from . import journal
from .calendar import SAVE_CORRECTED, TICK, current_version, schedule_of
from .document import grace_seconds_of
from .errors import Clash, Invalid, NotFound
from .model import Definition, Run, clean_note, iso
from .occurrences import schedule_occurrence
from .store import definitions, schedule_log, skips


class CatchUp(str, Enum):
    """What a resume does with the occurrences missed while the schedule was paused."""

    NONE = "none"  # none of them is created
    LATEST = "latest"  # the latest, if it lies within the definition's grace window


def pause(db: Database, definition_id: int, *, reason: str | None, actor: str, now: datetime) -> Definition:
    """Pause the definition's schedule: its planner creates no occurrence until it is resumed."""
    note = clean_note(reason)

    def work(tx: Tx) -> Definition:
        if not definitions.pause_schedule(tx, definition_id, actor, note, now):
            raise _refusal(tx, definition_id, "paused")
        # guard: a-schedule-pause-commits-before-its-log-row
        schedule_log.append(tx, journal.schedule_paused(definition_id, actor, note), now)
        return must_exist(definitions.get(tx, definition_id))

    return db.transaction(work)


@dataclass(frozen=True)
class Resumed:
    definition: Definition
    caught_up: Run | None  # the run the resume created for the latest occurrence missed (catch_up: latest)


def resume(db: Database, definition_id: int, *, reason: str | None, catch_up: CatchUp, actor: str,
           now: datetime) -> Resumed:
    """Resume the definition's schedule: planned from now on, and with `catch_up` latest the latest occurrence
    missed while it was paused, if it lies within its grace window."""
    note = clean_note(reason)

    def work(tx: Tx) -> Resumed:
        planned = definitions.lock_planning(tx, definition_id)  # the row locked, as the planner's mark locks it
        seen = definitions.get(tx, definition_id)
        paused = None if seen is None else seen.schedule_paused
        if planned is None or not definitions.resume_schedule(tx, definition_id, None if paused is None else paused.at, now):
            raise _refusal(tx, definition_id, "resumed")
        paused = must_exist(paused)
        caught_up = _latest_missed(tx, definition_id, planned.through, actor, now) if catch_up is CatchUp.LATEST else None
        # guard: a-schedule-resume-commits-before-its-log-row
        schedule_log.append(tx, journal.schedule_resumed(definition_id, actor, note, (paused.by, paused.at),
                                                         catch_up.value, None if caught_up is None else caught_up.scheduled_for),
                            now)
        return Resumed(must_exist(definitions.get(tx, definition_id)), caught_up)

    return db.transaction(work)


def _latest_missed(tx: Tx, definition_id: int, planned_through: datetime | None, actor: str, now: datetime) -> Run | None:
    """The run of the latest occurrence up to now that the planner has not planned and nobody skipped, if it
    lies within the definition's grace window (created now, as the planner would have); None if there is none."""
    version = current_version(tx, definition_id)
    schedule = schedule_of(version, "resume it without catching up (catch_up none), or " + SAVE_CORRECTED)
    if schedule is None:  # a version without a schedule was saved while it was paused
        return None
    grace = timedelta(seconds=grace_seconds_of(version.document))
    # guard: a-catch-up-past-the-grace-window
    after = max(now - grace - TICK, version.created_at - TICK, planned_through or datetime.min)
    # a skipped occurrence was not missed: a person chose it away, so the latest one before it is caught up
    skipped = skips.between(tx, definition_id, after, now + TICK)
    missed = [t for t in schedule.between(after, now) if t not in skipped]
    if not missed:
        return None
    run, _ = schedule_occurrence(tx, version, missed[-1], actor=actor, now=now,
                                 cause=f"the latest occurrence missed while its schedule was paused, caught up by {actor}")
    return run


def _refusal(tx: Tx, definition_id: int, done: str) -> Exception:
    """Why a pause or a resume did not take, from the definition's row as it stands."""
    definition = definitions.get(tx, definition_id)
    if definition is None:
        return NotFound(f"no definition {definition_id}")
    if definition.schedule_cron is None:
        return Invalid(f"definition {definition_id} has no schedule: only a recurring definition's schedule can be {done}")
    if definition.schedule_paused is not None:
        paused = definition.schedule_paused
        why = f" because {paused.reason}" if paused.reason else ""
        return Clash(f"this schedule is already paused, by {paused.by} at {iso(paused.at)}{why}",
                     detail={"schedule_paused": paused.public()})
    return Clash("this schedule is not paused", detail={"schedule_paused": None})

