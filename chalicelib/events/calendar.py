"""The calendar's rules: which times are a recurring definition's occurrences, skipping one, and undoing that
before it is due (the occurrences in a window are read by `views/calendar.py`).

Occurrences are the current version's schedule as `cron.Schedule` reads it (the planner's one schedule
implementation, in its time zone, daylight-saving changes included); a stored schedule that no longer reads (saved
before today's cron rules) has none: what needs them is a Clash saying what is wrong and what to do, as the
planner passes it over. A skip is a row of
`event_occurrence_skips`: the planner's INSERT of a run is guarded on there being none
(`runs.insert_occurrence`), and a skip cancels a run already scheduled for its occurrence in its own
transaction, with the run's log row. Skip and unskip lock the definition's row first, as the planner's
mark does (`definitions.mark_planned`), so neither interleaves with a planning of the same definition: an
unskip of an occurrence the planner already passed creates its run itself, as the planner would have.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..db import Database, Tx, must_exist
from . import cron, journal
from .commands import SKIP_OCCURRENCE
from .errors import Clash, Conflict, Invalid, InvalidCron, NotFound
from .lifecycle import RunStatus
from .model import DefinitionVersion, OccurrenceSkip, Run, SchedulePause, clean_note, iso
from .occurrences import schedule_occurrence
from .store import definitions, log, runs, skips

MAX_WINDOW = timedelta(days=366)
TICK = timedelta(microseconds=1)  # datetimes are exact to the microsecond: (a - tick, b - tick] is [a, b)
# The times the calendar reads: far enough either way for any event, and far from where date arithmetic overflows.
EARLIEST, LATEST = datetime(1970, 1, 1), datetime(9000, 1, 1)


def in_range(when: datetime, name: str) -> datetime:
    """`when`, if the calendar reads that far (EARLIEST to LATEST); Invalid, naming the field `name`, if not."""
    if not EARLIEST <= when < LATEST:
        raise Invalid(f"{name} must be from {EARLIEST.year} to {LATEST.year - 1}")
    return when


SAVE_CORRECTED = ("save a version with a corrected schedule (standard five-field cron in an IANA time zone); until"
                  " then none of its occurrences is planned")


def unreadable_schedule(definition_id: int, problem: str, to_do: str = SAVE_CORRECTED) -> Clash:
    """The refusal of what needs a stored schedule that no longer reads (a version saved before today's cron rules,
    or a zone tzdata no longer knows): what is wrong with it, and what to do (`to_do`); `schedule_unreadable` beside."""
    return Clash(f"definition {definition_id}'s schedule {problem}: {to_do}",
                 detail={"schedule_unreadable": problem})


def schedule_of(version: DefinitionVersion, to_do: str = SAVE_CORRECTED) -> cron.Schedule | None:
    """The version's schedule, or None when its runs are scheduled by hand; a schedule stored before today's rules
    that no longer reads is a Clash saying so and what to do (`to_do`), as the planner passes it over."""
    authored = version.document.get("schedule")
    if not authored:
        return None
    expression, zone = authored["cron"], authored.get("timezone") or cron.DEFAULT_TIMEZONE
    try:
        return cron.Schedule(expression, zone)
    except InvalidCron as error:
        raise unreadable_schedule(version.definition_id, f"({expression!r} in {zone}) is not understood: {error}",
                                  to_do) from error


def occurrence_body(scheduled_for: datetime, run: Run | None, skip: OccurrenceSkip | None,
                    pause: SchedulePause | None = None) -> dict[str, Any]:
    """An occurrence as the calendar shows it: its time, its run (if any), the run's new time if a person postponed
    it (its occurrence is still this one), its skip (if any), and whether its schedule's pause (`pause`, the
    definition's) keeps it from being planned: one with no run from the pause on."""
    moved = run is not None and run.scheduled_for != scheduled_for
    return {"scheduled_for": iso(scheduled_for), "run": run.public() if run else None,
            "postponed_to": iso(run.scheduled_for) if run is not None and moved else None, "skipped": skip is not None,
            "skip": skip.public() if skip else None,
            "paused": pause is not None and run is None and skip is None and scheduled_for >= pause.at}


def with_postponed_from(body: dict[str, Any]) -> dict[str, Any]:
    """A calendar page (`views.calendar.occurrences`) whose runs listed on their own each say `postponed_from`: the
    time of the occurrence a person postponed it from (in another window, or scheduled by hand), None if never
    moved. The occurrence is its key's (`runs.occurrence_key`, "<definition>@<naive UTC time>"), kept by a postpone."""
    for run in body["runs"]:
        _, _, planned = run["occurrence_key"].partition("@")
        try:
            was = iso(datetime.strptime(planned, "%Y-%m-%dT%H:%M:%S.%f"))
        except ValueError:  # not an occurrence's key (a dry run's): never postponed from an occurrence
            was = None
        run["postponed_from"] = was if was != run["scheduled_for"] else None
    return body


def current_version(tx: Tx, definition_id: int) -> DefinitionVersion:
    """The definition's current version; NotFound when there is no such definition."""
    definition = definitions.get(tx, definition_id)
    if definition is None:
        raise NotFound(f"no definition {definition_id}")
    return must_exist(definitions.get_version(tx, definition_id, definition.current_version))


def _occurrence_schedule(tx: Tx, definition_id: int, scheduled_for: datetime) -> tuple[DefinitionVersion, definitions.Planned]:
    """The definition's row locked, its current version, and the check that `scheduled_for` is one of its occurrences."""
    in_range(scheduled_for, "scheduled_for")
    planned = definitions.lock_planning(tx, definition_id)
    if planned is None:
        raise NotFound(f"no definition {definition_id}")
    version = current_version(tx, definition_id)
    schedule = schedule_of(version)
    if schedule is None:
        raise Invalid(f"definition {definition_id} has no schedule: only a recurring definition's occurrences can be"
                      " skipped (cancel a run scheduled by hand instead)")
    if next(schedule.between(scheduled_for - TICK, scheduled_for), None) != scheduled_for:
        after = next(schedule.between(scheduled_for, scheduled_for + MAX_WINDOW), None)
        raise Invalid(f"{iso(scheduled_for)} is not an occurrence of {schedule.cron!r} in {schedule.timezone}"
                      + (f"; the next one after it is {iso(after)}" if after else ""))
    return version, planned


@dataclass(frozen=True)
class Skipped:
    occurrence: dict[str, Any]
    cancelled_run: Run | None  # the run that was scheduled for it, now cancelled
    repeat: bool  # it was skipped already: nothing was written


def skip(db: Database, definition_id: int, scheduled_for: datetime, *, reason: str | None, actor: str,
         now: datetime) -> Skipped:
    """Mark an occurrence not to be run; its run, if one is scheduled, is cancelled in the same transaction."""
    note = clean_note(reason)

    def work(tx: Tx) -> Skipped:
        _occurrence_schedule(tx, definition_id, scheduled_for)
        run = runs.of_occurrences(tx, definition_id, [scheduled_for]).get(scheduled_for)
        if not skips.insert(tx, definition_id, scheduled_for, reason=note, actor=actor, now=now):
            return Skipped(occurrence_body(scheduled_for, run, skips.get(tx, definition_id, scheduled_for)), None, True)
        # guard: an-occurrence-due-now-is-skipped
        if run is None and scheduled_for <= now:
            raise Invalid(f"the occurrence at {iso(scheduled_for)} is past; only one still ahead can be skipped")
        cancelled = None
        # guard: skip-leaves-its-run-scheduled
        if run is not None:
            if not runs.transition(tx, run.id, [RunStatus.SCHEDULED], RunStatus.CANCELLED, now,
                                   last_error=f"its occurrence was skipped by {actor}" + (f": {note}" if note else "")):
                raise Conflict(f"run {run.id} of this occurrence is {run.status.value}, not scheduled: cancel the run"
                               " instead", run_status=run.status.value)
            # guard: skip-commits-before-its-log-row
            log.append(tx, journal.run_control(run, SKIP_OCCURRENCE, RunStatus.CANCELLED, actor, reason=note,
                                               cancelled_steps=0), now)
            cancelled = must_exist(runs.get(tx, run.id))
        return Skipped(occurrence_body(scheduled_for, cancelled, skips.get(tx, definition_id, scheduled_for)), cancelled, False)

    return db.transaction(work)


def unskip(db: Database, definition_id: int, scheduled_for: datetime, *, actor: str, now: datetime) -> dict[str, Any]:
    """Undo a skip before its occurrence is due: the occurrence is planned after all (its run created now when the
    planner has already passed it). A skip that cancelled its run cannot be undone (the run is over)."""

    def work(tx: Tx) -> dict[str, Any]:
        version, planned = _occurrence_schedule(tx, definition_id, scheduled_for)
        run = runs.of_occurrences(tx, definition_id, [scheduled_for]).get(scheduled_for)
        if run is not None and run.status.terminal:
            raise Conflict(f"run {run.id} of this occurrence is {run.status.value}: it will not run again",
                           run_status=run.status.value)
        if not skips.remove_before_due(tx, definition_id, scheduled_for, now):
            if skips.get(tx, definition_id, scheduled_for) is not None:
                raise Clash(f"the occurrence at {iso(scheduled_for)} is due already; a skip is undone only before it is",
                            detail={"skipped": True})
            return occurrence_body(scheduled_for, run, None)  # not skipped: nothing to undo
        # guard: an-unskip-at-the-planners-mark-plans-nothing
        if planned.through is not None and planned.through >= scheduled_for:
            run, _ = schedule_occurrence(tx, version, scheduled_for, actor=actor,
                                         cause=f"its occurrence was unskipped by {actor}", now=now)
        return occurrence_body(scheduled_for, run, None)

    return db.transaction(work)
