"""A definition's calendar as a person reads it: the current version's occurrences in a window, each with its
run (and its new time, postponed), whether a person skipped it or its schedule's pause keeps it from being
planned, the schedule in words (who paused it and why), and the live runs of the window no occurrence names
(scheduled by hand, or by an earlier schedule). Reads only; the occurrences are the
planner's own (`calendar.schedule_of`, `cron.Schedule`).

A page never drops anything silently: both lists are whole before `next_from`, where the first of them that
outgrew MAX_LISTED was cut, so reading on from it misses nothing (`runs_capped` names the one way runs can still
be left out: more than MAX_LISTED live runs of one definition at one instant)."""

from __future__ import annotations

from collections.abc import Container
from datetime import datetime, timedelta
from typing import Any

from ...db import Database, Tx, must_exist
from .. import cron
from ..calendar import LATEST, MAX_WINDOW, TICK, current_version, in_range, occurrence_body, schedule_of
from ..errors import Invalid
from ..model import Run, SchedulePause, iso
from ..store import definitions, runs, skips
from . import Body

MAX_LISTED = 500
DEFAULT_WINDOW = timedelta(days=42)  # a month view and the days either side of it
# How far a schedule's next occurrence is looked for: every cron that passes validation fires within it (a 29
# February's waits up to eight years, over a century year that is no leap year); the occurrences are read lazily.
NEXT_WITHIN = timedelta(days=8 * 366 + 1)


def described(schedule: cron.Schedule, now: datetime, pause: SchedulePause | None,
              skipped: Container[datetime] = ()) -> dict[str, Any]:
    """The schedule as the console shows it: its cron in words, its zone and its next occurrence that will run,
    in that zone (none while it is paused; never one a person skipped), and who paused it, when and why (None:
    it is not paused)."""
    upcoming = None if pause else next((t for t in schedule.between(now, now + NEXT_WITHIN) if t not in skipped), None)
    words = f"{cron.in_words(schedule.cron)}, {schedule.timezone}"
    if pause:
        words += "; paused: no occurrence runs until it is resumed"
    elif upcoming is not None:
        from zoneinfo import ZoneInfo  # where a schedule is described, not with the app

        local = upcoming.replace(tzinfo=ZoneInfo("UTC")).astimezone(ZoneInfo(schedule.timezone))
        words += f"; next: {local:%a} {local.day} {local:%b}, {local:%H:%M}"
    return {"cron": schedule.cron, "timezone": schedule.timezone, "in_words": words,
            "next": iso(upcoming) if upcoming is not None else None, "paused": pause.public() if pause else None}


def _runs_cut(happened: list[Run]) -> tuple[list[Run], datetime | None, bool]:
    """Of a window's live runs read earliest first (at most MAX_LISTED + 1), those a page lists, where the page
    ends because of them (None: every one fits) and whether runs are left out of every page. The page ends at
    the first run it cannot hold, leaving out its peers at that instant, so the next page, from there, lists them
    all; only when more than MAX_LISTED share the first instant does the page hold MAX_LISTED of them and end
    just after it."""
    if len(happened) <= MAX_LISTED:
        return happened, None, False
    cut = happened[MAX_LISTED].scheduled_for
    if happened[0].scheduled_for < cut:
        return [r for r in happened if r.scheduled_for < cut], cut, False
    return happened[:MAX_LISTED], cut + TICK, True


def occurrences(db: Database, definition_id: int, start: datetime | None, end: datetime | None,
                now: datetime) -> Body:
    """The occurrences in [start, end) (default: from now, six weeks) and the window's live runs, at most
    MAX_LISTED of each: `next_from` is where the rest of either begin (None when none are left), and both lists
    are whole before it. A window longer than MAX_WINDOW is Invalid."""
    start = now if start is None else in_range(start, "query.from")
    # An edge not given is never refused: the default window ends where the calendar does, at the latest.
    end = min(start + DEFAULT_WINDOW, LATEST) if end is None else in_range(end, "query.to")
    if end <= start:
        raise Invalid("query.to must be after query.from")
    if end - start > MAX_WINDOW:
        raise Invalid(f"the window from query.from to query.to is longer than {MAX_WINDOW.days} days; ask for less")

    def read(tx: Tx) -> Body:
        version = current_version(tx, definition_id)
        schedule = schedule_of(version)
        happened, cut, capped = _runs_cut(runs.live_between(tx, definition_id, start, end, MAX_LISTED + 1))
        if schedule is None:
            return {"schedule": None, "occurrences": [], "runs": [r.public() for r in happened],
                    "next_from": iso(cut), "runs_capped": capped}
        times = []
        # the planner's own first occurrence: none before the version that carries the schedule
        first = max(start, version.created_at)
        for instant in schedule.between(first - TICK, (end if cut is None else min(end, cut)) - TICK):
            times.append(instant)
            if len(times) > MAX_LISTED:
                break
        listed, rest = times[:MAX_LISTED], times[MAX_LISTED:]
        # guard: a-page-lists-runs-past-its-next-from
        if rest:  # the occurrences ran out first: the page ends where they do, for its runs too
            happened = [r for r in happened if r.scheduled_for < rest[0]]
        found = runs.of_occurrences(tx, definition_id, listed)
        occurring = {r.occurrence_key for r in found.values()}
        skipped = skips.between(tx, definition_id, start, end)
        pause = must_exist(definitions.get(tx, definition_id)).schedule_paused
        ahead = skips.between(tx, definition_id, now, now + MAX_WINDOW) if pause is None else {}
        return {"schedule": described(schedule, now, pause, ahead),
                "occurrences": [occurrence_body(t, found.get(t), skipped.get(t), pause) for t in listed],
                "runs": [r.public() for r in happened if r.occurrence_key not in occurring],
                "next_from": iso(rest[0]) if rest else iso(cut), "runs_capped": capped}

    return db.transaction(read)
