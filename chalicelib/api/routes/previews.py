"""A version tried before players see it: its projected timeline (written from its document alone, nothing
stored) and a dry run (a real run, mode rehearsal, that never reaches the live game or channels)."""

from __future__ import annotations

from ... import runtime
from ...events import calendar, dry_runs
from ...events.errors import InvalidCron
from ...events.lifecycle import RehearsalBridge
from ...events.model import Rehearsal
from ...events.views.runs import run_detail
from ...events.views.timeline import timeline
from .. import auth, schemas
from ..operations import Answer, Body, Call, Router, ok
from ..wake import made_work
from .runs import caller_of, run_headers

router = Router(__name__)


@router.operation("POST", "/definitions/{definition_id}/rehearse",
                  "The projected timeline of a version (default: the current one) or of an unsaved document: every step's"
                  " earliest offset, what it says and waits for, each phase's earliest and latest end, the shortest and"
                  " longest run, and warnings. Writes nothing.", auth.STAFF,
                  ok("the projection", schemas.TIMELINE), body=schemas.TIMELINE_BODY)
def rehearse_definition(call: Call) -> Body:
    config = runtime.settings()
    try:
        return timeline(runtime.database(), call.ids["definition_id"], call.body, call.now,
                        module_actions=config.module_actions, escalate_after_seconds=config.escalate_after_seconds)
    except InvalidCron as error:  # a stored version's schedule saved before today's rules (a document sent is validated)
        raise calendar.unreadable_schedule(call.ids["definition_id"], f"is not understood: {error}",
                                           "rehearse a document with a corrected schedule, or " + calendar.SAVE_CORRECTED
                                           ) from error


@router.operation("POST", "/definitions/{definition_id}/dry-runs",
                  "Start a dry run of a version (default: the current one) now: mode rehearsal, driven by the tick like any"
                  " run, at `speed`, its module actions simulated or sent to the sandbox bridge, everything it posts sent to"
                  " REHEARSAL_CHANNEL prefixed [REHEARSAL]; a cue nobody confirms is confirmed after auto_confirm_seconds.",
                  auth.ADMINS,
                  {201: ("the dry run, as GET /runs/{id} gives it", schemas.RUN_DETAIL),
                   409: ("bridge sandbox, and no sandbox bridge is configured", schemas.ERRORS)},
                  body=schemas.DRY_RUN_BODY, body_required=True)
def start_dry_run(call: Call) -> Answer:
    body, config = call.body, runtime.settings()
    rehearsal = Rehearsal(body["speed"], RehearsalBridge(body["bridge"]),
                          body.get("auto_confirm_seconds", dry_runs.AUTO_CONFIRM_SECONDS), body.get("auto_signal_seconds"))
    run = dry_runs.start(runtime.database(), call.ids["definition_id"], rehearsal, version=body.get("version"),
                         sandbox_configured=config.sandbox_configured, actor=call.actor, now=call.now)
    made_work(call)
    detail = run_detail(runtime.database(), run.id, {}, call.now, caller_of(call))
    return 201, detail, run_headers(detail)
