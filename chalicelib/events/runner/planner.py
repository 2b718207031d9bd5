"""Occurrences of recurring definitions become runs: never before the version, nearest now first, inside a budget.

A definition's `planned_through` says every occurrence of its current version up
to then has been dealt with, so a tick looks only at what is new: the occurrences
in (planned_through, now + horizon], and none before the current version was
created (a new version clears the mark). Of those:

- occurrences already past their grace window can only be missed: they are
  skipped, counted in the tick's report and logged here, since there is no run
  to log them on;
- the others become runs of the current version, nearest now first, at most
  `MAX_OCCURRENCES_PER_TICK` per definition; older ones beyond that are skipped
  the same way, later ones wait for the next tick;
- one a person skipped (`calendar.skip`) gets no run: the run's INSERT is guarded
  on its skip (`runs.insert_occurrence`), and the mark moves past it all the same.

One transaction per definition moves the mark (compare-and-set on the value
read) and creates the runs, so overlapping ticks plan each occurrence once.
Definitions are taken most-behind first and only while `keep_going()` says so: a
definition left out is first in line next tick. One whose schedule cannot be
read is logged, counted and skipped; the others are planned all the same.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice

from ...db import Database, Tx, must_exist
from .. import journal
from ..cron import DEFAULT_TIMEZONE, Schedule
from ..document import grace_seconds_of
from ..model import Recurrence
from ..occurrences import schedule_occurrence
from ..store import definitions

logger = logging.getLogger(__name__)

MAX_OCCURRENCES_PER_TICK = 100  # runs one definition may gain in one tick
MAX_SKIPPED_COUNTED = 10_000  # past that, "at least" (counting costs a cron step each)
_TICK = timedelta(microseconds=1)  # datetimes are exact to the microsecond: (a - tick, b] is [a, b]


@dataclass
class PlanReport:
    planned: int = 0  # runs created
    skipped: int = 0  # occurrences past their grace window (or beyond the catch-up limit): no run
    failed: int = 0  # definitions whose schedule could not be planned
    deferred: int = 0  # definitions left for the next tick for want of time


@dataclass(frozen=True)
class _Plan:
    occurrences: list[datetime]  # nearest now first
    skipped: int
    through: datetime


def plan_occurrences(
    db: Database, now: datetime, horizon: timedelta, keep_going: Callable[[], bool] = lambda: True
) -> PlanReport:
    """Plan what is new for each recurring definition while `keep_going()` allows."""
    report = PlanReport()
    pending = db.autocommit(lambda tx: definitions.recurrences(tx, now + horizon))
    for done, recurrence in enumerate(pending):
        # guard: planner-ignores-its-share-of-the-tick
        if not keep_going():
            report.deferred = len(pending) - done
            logger.info("planning stopped for want of time: %d definition(s) wait for the next tick", report.deferred)
            break
        try:
            planned, skipped = _plan_definition(db, recurrence, now, horizon)
        # guard: planner-stops-at-one-unreadable-schedule
        except Exception:  # one definition's schedule must not stop the others' planning
            report.failed += 1
            logger.exception("definition %s: its schedule could not be planned", recurrence.definition_id)
            continue
        report.planned += planned
        report.skipped += skipped
    return report


def _plan_definition(db: Database, recurrence: Recurrence, now: datetime, horizon: timedelta) -> tuple[int, int]:
    # guard: planner-reads-every-schedule-in-utc
    schedule = Schedule(recurrence.cron, recurrence.timezone or DEFAULT_TIMEZONE)
    # guard: planner-plans-before-the-version
    after = recurrence.version_created_at - _TICK
    if recurrence.planned_through is not None:
        after = max(after, recurrence.planned_through)
    until = now + horizon
    if next(schedule.between(after, until), None) is None:
        return 0, 0  # nothing new: the mark stays, and costs no write
    version = must_exist(db.autocommit(lambda tx: definitions.get_version(tx, recurrence.definition_id, recurrence.version)))
    plan = _choose(schedule, after, now - timedelta(seconds=grace_seconds_of(version.document)), now, until)
    cause = f"planned from schedule {recurrence.cron!r}" + (f" in {schedule.timezone}" if recurrence.timezone else "")

    def work(tx: Tx) -> int | None:
        if not definitions.mark_planned(tx, recurrence, plan.through):
            return None  # another tick planned it, or a new version came: next tick looks again
        return sum(schedule_occurrence(tx, version, t, actor=journal.RUNNER, cause=cause, now=now)[1] for t in plan.occurrences)

    planned = db.transaction(work)
    if planned is None:
        return 0, 0
    if plan.skipped:
        at_least = "at least " if plan.skipped >= MAX_SKIPPED_COUNTED else ""
        logger.warning(
            "definition %s: %s%d occurrence(s) of %r up to %s were skipped: past their grace window, no run",
            recurrence.definition_id, at_least, plan.skipped, recurrence.cron, plan.through.isoformat(),
        )
    return planned, plan.skipped


def _choose(schedule: Schedule, after: datetime, grace_start: datetime, now: datetime, until: datetime) -> _Plan:
    """Which occurrences in (after, until] become runs, how many are skipped, and how far that plans."""
    # guard: planner-plans-past-the-grace-window
    startable_after = max(after, grace_start - _TICK)
    skipped = sum(1 for _ in islice(schedule.between(after, startable_after), MAX_SKIPPED_COUNTED))
    # guard: planner-plans-oldest-first
    nearest = sorted(schedule.between(startable_after, until), key=lambda t: abs(t - now))
    # guard: planner-cap-per-definition-ignored
    chosen, left = nearest[:MAX_OCCURRENCES_PER_TICK], nearest[MAX_OCCURRENCES_PER_TICK:]
    # Nearest first leaves out the oldest (skipped) and the latest (planned by a later tick).
    later = [t for t in left if t > max(chosen)] if left else []
    # guard: planner-marks-the-later-occurrences-planned
    through = min(later) - _TICK if later else until
    return _Plan(chosen, skipped + len(left) - len(later), through)
