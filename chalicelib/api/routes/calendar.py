"""A recurring definition's calendar: its occurrences in a window (read through `events/views/calendar.py`),
skipping one and undoing that before it is due, and pausing and resuming its schedule."""

from __future__ import annotations

from datetime import datetime

from ... import runtime
from ...events import calendar, schedules
from ...events.views.calendar import MAX_LISTED, occurrences
from .. import auth, schemas
from ..operations import Body, Call, Router, ok
from ..wake import made_work

router = Router(__name__)


@router.operation("GET", "/definitions/{definition_id}/occurrences",
                  f"The current version's scheduled occurrences in [from, to) (at most {calendar.MAX_WINDOW.days} days;"
                  f" at most {MAX_LISTED}), in its time zone, each with its run"
                  " if one exists and whether it is skipped; the schedule in words with its next occurrence; the live runs"
                  " in the window no occurrence names (runs; each with postponed_from, the time of the occurrence a"
                  " person postponed it from, else null), a definition without a schedule too; 409 when its stored"
                  " schedule no longer reads (detail.schedule_unreadable). A page holds at most"
                  f" {MAX_LISTED} occurrences and {MAX_LISTED} live runs: next_from says where the rest of either begin,"
                  " and both lists are whole before it.", auth.STAFF,
                  ok("the occurrences", schemas.OCCURRENCES), query=schemas.OCCURRENCES_QUERY)
def list_occurrences(call: Call) -> Body:
    edges = {name: schemas.parse_time(call.query[name], f"query.{name}") if name in call.query else None
             for name in ("from", "to")}
    return calendar.with_postponed_from(
        occurrences(runtime.database(), call.ids["definition_id"], edges["from"], edges["to"], call.now))


def _occurrence_time(call: Call) -> datetime:
    return schemas.parse_time(call.names["scheduled_for"], "scheduled_for")


@router.operation("POST", "/definitions/{definition_id}/occurrences/{scheduled_for}/skip",
                  "Mark an occurrence not to be run: the planner never creates its run, and a run already scheduled for it is"
                  " cancelled in the same transaction. Skipping it again answers the first skip.", auth.ADMINS,
                  ok("the occurrence, skipped, and the run it cancelled (if any)", schemas.SKIPPED),
                  body=schemas.SKIP_BODY, names={"scheduled_for": schemas.OCCURRENCE_TIME})
def skip_occurrence(call: Call) -> Body:
    skipped = calendar.skip(runtime.database(), call.ids["definition_id"], _occurrence_time(call),
                            reason=call.body.get("reason"), actor=call.actor, now=call.now)
    return {"occurrence": skipped.occurrence,
            "cancelled_run": skipped.cancelled_run.public() if skipped.cancelled_run else None}


@router.operation("POST", "/definitions/{definition_id}/occurrences/{scheduled_for}/unskip",
                  "Undo a skip before the occurrence is due: it is planned after all.", auth.ADMINS,
                  ok("the occurrence, with its run if it was created now", schemas.UNSKIPPED),
                  body=schemas.NO_FIELDS, names={"scheduled_for": schemas.OCCURRENCE_TIME})
def unskip_occurrence(call: Call) -> Body:
    occurrence = calendar.unskip(runtime.database(), call.ids["definition_id"], _occurrence_time(call),
                                 actor=call.actor, now=call.now)
    made_work(call)  # a run it created is work for the tick
    return {"occurrence": occurrence}


@router.operation("POST", "/definitions/{definition_id}/schedule/pause",
                  "Pause a recurring definition's schedule, with a reason: while paused the planner creates none of its"
                  " occurrences (the calendar marks them paused by whom and why); runs already planned are kept. Logged"
                  " in the definition's schedule log. 409 if it is paused already.", auth.CONTROLLERS,
                  ok("the definition, its schedule paused", schemas.SCHEDULE_PAUSED), body=schemas.SCHEDULE_PAUSE_BODY)
def pause_schedule(call: Call) -> Body:
    definition = schedules.pause(runtime.database(), call.ids["definition_id"], reason=call.body.get("reason"),
                                 actor=call.actor, now=call.now)
    return {"definition": definition.public()}


@router.operation("POST", "/definitions/{definition_id}/schedule/resume",
                  "Resume a paused schedule: planned from now on, none of the occurrences missed while it was paused"
                  " created, unless catch_up is latest (the latest of them, if it lies within the definition's grace"
                  " window, is created now). Logged in the definition's schedule log. 409 if it is not paused.",
                  auth.CONTROLLERS, ok("the definition, its schedule running, and the run caught up (if any)",
                                       schemas.SCHEDULE_RESUMED), body=schemas.SCHEDULE_RESUME_BODY)
def resume_schedule(call: Call) -> Body:
    resumed = schedules.resume(runtime.database(), call.ids["definition_id"], reason=call.body.get("reason"),
                               catch_up=schedules.CatchUp(call.body.get("catch_up", schedules.CatchUp.NONE.value)),
                               actor=call.actor, now=call.now)
    made_work(call)  # its next occurrence (and a run caught up) is work for the tick: a sleeping deployment wakes
    return {"definition": resumed.definition.public(),
            "caught_up": resumed.caught_up.public() if resumed.caught_up else None}
