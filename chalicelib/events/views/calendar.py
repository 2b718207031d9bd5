"""A definition's calendar as a person reads it: the current version's occurrences in a window, each with its
run (and its new time, postponed), whether a person skipped it or its schedule's pause keeps it from being
planned, the schedule in words (who paused it and why), and the live runs of the window no occurrence names
(scheduled by hand, or by an earlier schedule). Reads only; the occurrences are the
planner's own (`calendar.schedule_of`, `cron.Schedule`)."""

from __future__ import annotations

from collections.abc import Container
from datetime import datetime, timedelta
from typing import Any

from ...db import Database, Tx, must_exist
from .. import cron
from ..calendar import MAX_WINDOW, TICK, current_version, in_range, occurrence_body, schedule_of
from ..errors import Invalid
from ..model import SchedulePause, iso
from ..store import definitions, runs, skips
from . import Body

MAX_LISTED = 500
DEFAULT_WINDOW = timedelta(days=42)  # a month view and the days either side of it


def described(schedule: cron.Schedule, now: datetime, pause: SchedulePause | None,
              skipped: Container[datetime] = ()) -> dict[str, Any]:
    """The schedule as the console shows it: its cron in words, its zone and its next occurrence that will run,
    in that zone (none while it is paused; never one a person skipped), and who paused it, when and why (None:
    it is not paused)."""
    upcoming = None if pause else next((t for t in schedule.between(now, now + MAX_WINDOW) if t not in skipped), None)
    words = f"{cron.in_words(schedule.cron)}, {schedule.timezone}"
    if pause:
        words += "; paused: no occurrence runs until it is resumed"
    elif upcoming is not None:
        from zoneinfo import ZoneInfo  # where a schedule is described, not with the app

        local = upcoming.replace(tzinfo=ZoneInfo("UTC")).astimezone(ZoneInfo(schedule.timezone))
        words += f"; next: {local:%a} {local.day} {local:%b}, {local:%H:%M}"
    return {"cron": schedule.cron, "timezone": schedule.timezone, "in_words": words,
            "next": iso(upcoming) if upcoming is not None else None, "paused": pause.public() if pause else None}


def occurrences(db: Database, definition_id: int, start: datetime | None, end: datetime | None,
                now: datetime) -> Body:
    """The occurrences in [start, end) (default: from now, six weeks), at most MAX_LISTED: `next_from` is where
    the rest begin (None when none are left). A window longer than MAX_WINDOW is Invalid."""
    start = now if start is None else in_range(start, "query.from")
    end = in_range(start + DEFAULT_WINDOW if end is None else end, "query.to")
    if end <= start:
        raise Invalid("query.to must be after query.from")
    if end - start > MAX_WINDOW:
        raise Invalid(f"the window from query.from to query.to is longer than {MAX_WINDOW.days} days; ask for less")

    def read(tx: Tx) -> Body:
        version = current_version(tx, definition_id)
        schedule = schedule_of(version)
        happened = runs.live_between(tx, definition_id, start, end, MAX_LISTED)
        if schedule is None:
            return {"schedule": None, "occurrences": [], "runs": [r.public() for r in happened], "next_from": None}
        times = []
        # the planner's own first occurrence: none before the version that carries the schedule
        first = max(start, version.created_at)
        for instant in schedule.between(first - TICK, end - TICK):
            times.append(instant)
            if len(times) > MAX_LISTED:
                break
        listed, rest = times[:MAX_LISTED], times[MAX_LISTED:]
        found = runs.of_occurrences(tx, definition_id, listed)
        occurring = {r.occurrence_key for r in found.values()}
        skipped = skips.between(tx, definition_id, start, end)
        pause = must_exist(definitions.get(tx, definition_id)).schedule_paused
        ahead = skips.between(tx, definition_id, now, now + MAX_WINDOW) if pause is None else {}
        return {"schedule": described(schedule, now, pause, ahead),
                "occurrences": [occurrence_body(t, found.get(t), skipped.get(t), pause) for t in listed],
                "runs": [r.public() for r in happened if r.occurrence_key not in occurring],
                "next_from": iso(rest[0]) if rest else None}

    return db.transaction(read)
