"""What each route does, declared once with `@operation`: the declaration is the route
(the `routes` Blueprint the app registers) and the OpenAPI entry, so neither can
drift from the handler. How every request is checked before a handler runs is in
`operations`.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from .. import runtime
from ..db import Tx, must_exist
from ..events import authoring, calendar, controls, dry_runs, lifecycle, nudge, occurrences, rehearsal
from ..events.actions import registry
from ..events.document import validate
from ..events.errors import AnsweredBefore, Invalid, NotFound
from ..events.model import LogEntry, Rehearsal, RehearsalBridge, ResourceStatus, Run, SignalEffect, Step
from ..events.store import definitions, log, phases, resources, runs, signals, steps
from ..events.waiting import waiting
from . import auth, schemas
from .openapi import document
from .operations import OPERATIONS, Answer, Body, Call, Responses, blueprint_of, operation


def _ok(description: str, schema: Body) -> Responses:
    return {200: (description, schema)}


# ── reads ─────────────────────────────────────────────────────────────────
@operation("GET", "/health", "Liveness, and whether every secret this function uses can be read (no database query,"
           " so it never wakes a paused database; answered within a second, a failure remembered for ten).", None,
           {**_ok("alive, and every secret readable", schemas.HEALTH),
            503: ("a secret cannot be read: each such one named by its setting", schemas.ERRORS)})
def health(call: Call) -> Body:
    runtime.secrets_health().check()
    return {"ok": True}


@operation("GET", "/runs", "Runs, newest first, a page at a time, each with what it is waiting for (waiting; filter on it"
           " with ?waiting=), and the counts of runs waiting for a person or the game apart from those working (summary).",
           auth.STAFF,
           _ok("a page of runs; pass next_cursor as cursor for the next", schemas.RUNS_PAGE), query=schemas.RUNS_QUERY)
def list_runs(call: Call) -> Body:
    q = call.query

    def read(tx: Tx) -> Body:
        page, next_cursor = runs.list_page(
            tx, status=q.get("status"), definition_id=q.get("definition_id"), waiting_for=q.get("waiting"),
            rehearsal=q.get("rehearsal"), limit=q.get("limit", 50), before_id=q.get("cursor"),
        )
        # What each waits for, derived as GET /runs/{id} derives it: its parked head, its phase's row.
        working = [r for r in page if r.status in lifecycle.WORKING and r.current_phase is not None]
        parked = steps.parked_of(tx, [r.id for r in working])
        at = phases.current_of(tx, [(r.id, must_exist(r.current_phase)) for r in working])
        return {
            "runs": [{**r.public(), "waiting": waiting(r, parked.get(r.id), at.get(r.id))} for r in page],
            "next_cursor": next_cursor,
            "summary": runs.waiting_counts(tx),
        }

    # Autocommitted reads, as a page always was (a lost connection is retried, never a 500): each run's
    # waiting is derived from its rows as read just after the page, the counts from the rows as they stand.
    return runtime.database().autocommit(read)


@operation("GET", "/runs/{run_id}", "A run, its phases, a page of its steps (phase and seq order; pass steps_next_cursor as"
           f" steps_cursor for the next: at most {schemas.STEPS_PAGE} steps and about"
           f" {schemas.STEPS_PAGE_BYTES // 1024} KiB of them a page), their counts and the controls legal now;"
           " its ETag names the run's control state (each step carries its own etag).",
           auth.STAFF, _ok("the run", schemas.RUN_DETAIL), query=schemas.RUN_QUERY, response_headers=schemas.RUN_HEADERS)
def get_run(call: Call) -> Answer:
    # One transaction: run, steps and controls from one snapshot; the tag is the run's as read there.
    body = runtime.database().transaction(lambda tx: _run_detail(tx, call.ids["run_id"], call.query, call.now))
    return 200, body, {"ETag": body["run"]["etag"], "Cache-Control": "no-store"}


def _run_detail(tx: Tx, run_id: int, query: dict[str, Any], now: datetime) -> Body:
    """GET /runs/{id}'s answer: the run, what it waits for, its phases, a page of its steps, the controls legal now."""
    run = runs.get(tx, run_id)
    if run is None:
        raise NotFound(f"no run {run_id}")
    after = None
    if "steps_cursor" in query:
        after = steps.get_on_run(tx, run.id, query["steps_cursor"])
        if after is None:
            raise Invalid(f"query.steps_cursor: run {run.id} has no step {query['steps_cursor']}")
    limit = query.get("steps_limit", schemas.STEPS_PAGE)
    run_steps, more = _steps_page(steps.page_for_run(tx, run.id, after, limit + 1), limit)
    furthest = steps.last_started_seq(tx, run.id, run.current_phase)
    head = steps.open_steps(tx, run.id, run.current_phase, limit=1) if run.current_phase is not None else []
    run_phases = phases.list_for_run(tx, run.id)
    working = next((p for p in run_phases if p.number == run.current_phase), None)
    flying = steps.holding_phase(tx, run.id, run.current_phase, now) if run.current_phase is not None else None
    return {
        "run": run.public(),
        "waiting": waiting(run, head[0] if head else None, working),
        "phases": [p.public() for p in run_phases],
        "steps": [s.public() for s in run_steps],
        "steps_next_cursor": run_steps[-1].id if more else None,
        "counts": steps.status_counts(tx, run.id),
        "controls": controls.offered(run, run_steps, furthest, working, flying),
    }


def _steps_page(read: list[Step], limit: int) -> tuple[list[Step], bool]:
    """The first of `read` up to `limit` steps and STEPS_PAGE_BYTES of their JSON (always at least one),
    and whether any step is left for a next page."""
    page: list[Step] = []
    size = 0
    for step in read[:limit]:
        size += len(json.dumps(step.public(), separators=(",", ":")))
        if page and size > schemas.STEPS_PAGE_BYTES:
            return page, True
        page.append(step)
    return page, len(read) > limit


@operation("GET", "/runs/{run_id}/log", "The run's log rows after an id, oldest first (the console tails it).",
           auth.STAFF, _ok("log rows", schemas.LOG_PAGE), query=schemas.LOG_QUERY)
def run_log(call: Call) -> Body:
    run_id = call.ids["run_id"]

    def read(tx: Tx) -> list[LogEntry]:
        if runs.get(tx, run_id) is None:
            raise NotFound(f"no run {run_id}")
        return log.after(tx, run_id, call.query.get("after_id", 0), call.query.get("limit", 200))

    return {"entries": [e.public() for e in runtime.database().transaction(read)]}


# ── the resource ledger ───────────────────────────────────────────────────
def _known_run(tx: Tx, run_id: int) -> Run:
    run = runs.get(tx, run_id)
    if run is None:
        raise NotFound(f"no run {run_id}")
    return run


@operation("GET", "/runs/{run_id}/resources", "What the run left in the game world, newest first, a page at a time:"
           " each resource's kind and id (as the answer listed them), its revert and its status.", auth.STAFF,
           _ok("a page of resources; pass next_cursor as cursor for the next", schemas.RESOURCES_PAGE),
           query=schemas.RESOURCES_QUERY)
def run_resources(call: Call) -> Body:
    def read(tx: Tx) -> Body:
        _known_run(tx, call.ids["run_id"])
        page, next_cursor = resources.page_for_run(tx, call.ids["run_id"], call.query.get("cursor"),
                                                   call.query.get("limit", 100))
        return {"resources": [r.public() for r in page], "next_cursor": next_cursor}

    return runtime.database().transaction(read)


@operation("GET", "/resources", "Every run's resources in one status, newest first (?status=live: what the runs have"
           " left in the world; revert_failed: what their cleanups could not undo).", auth.STAFF,
           _ok("a page of resources; pass next_cursor as cursor for the next", schemas.RESOURCES_PAGE),
           query=schemas.LEFT_QUERY)
def resources_left(call: Call) -> Body:
    page, next_cursor = runtime.database().autocommit(lambda tx: resources.page_by_status(
        tx, ResourceStatus(call.query["status"]), call.query.get("cursor"), call.query.get("limit", 100)))
    return {"resources": [r.public() for r in page], "next_cursor": next_cursor}


@operation("GET", "/runs/{run_id}/cleanup-plan", "What a cancel with cleanup would revert now, in the order it would"
           " (newest first), and how many steps are in flight (their answers may add to it).", auth.STAFF,
           _ok("the cleanup plan", schemas.CLEANUP_PLAN))
def cleanup_plan(call: Call) -> Body:
    def read(tx: Tx) -> Body:
        run = _known_run(tx, call.ids["run_id"])
        plan = resources.cleanup_plan(tx, run.id)
        flying = resources.in_flight_count(tx, run.id, call.now)
        undecided = steps.parked_in_doubt_of(tx, run.id)  # a cleanup waits for the decision on it
        cleans = (run.status in controls.CLEANABLE and run.cleanup_target is None and (bool(plan) or flying > 0)
                  and undecided is None)
        return {"reverts": [r.public() for r in plan], "in_flight": flying, "cleans_up": cleans,
                "undecided": None if undecided is None else undecided.named}

    return runtime.database().transaction(read)


# ── controls: one operation per declared control ──────────────────────────
_CONTROL_ANSWERS: dict[str, Responses] = {
    "run": _ok("the control took; the run as it now stands", schemas.RUN_CONTROL_RESPONSE),
    "step": _ok("the control took; the step as it now stands", schemas.STEP_CONTROL_RESPONSE),
    "step and run": _ok("the step re-queued; resumed says whether the run is running again", schemas.RETRY_RESPONSE),
    "advance": _ok("the phase advanced; how many of its steps were skipped, and whether the run resumed",
                   schemas.ADVANCE_RESPONSE),
}
_NOTE_BODIES = {None: schemas.NO_FIELDS, "reason": schemas.REASON_BODY, "note": schemas.NOTE_BODY}


def _control_operation(control: controls.Control) -> None:
    """The route, handler and OpenAPI entry of one declared control."""
    path = "/runs/{run_id}/" + ("" if control.target is controls.Target.RUN else "steps/{step_id}/") + control.name

    def press(call: Call) -> Answer:
        note = call.body.get(control.note_field) if control.note_field else None
        phase = call.body.get(control.phase_field) if control.phase_field else None
        cue = call.roles if control.cue_only(call.roles) else None
        how = controls.Press(seen=schemas.parse_if_match(call.headers.get(schemas.IF_MATCH), call.body.get("expected")),
                             key=schemas.parse_idempotency_key(call.headers.get(schemas.IDEMPOTENCY_KEY)))
        option = {control.option_field: bool(call.body.get(control.option_field))} if control.option_field else {}
        try:
            answer = control.perform(runtime.database(), call.ids["run_id"], call.ids.get("step_id"), call.actor,
                                     call.now, note, phase, cue, how, **option)
        except AnsweredBefore as before:  # the same key within 24 h: the first answer, nothing changed
            return 200, before.body, {**_tag_of(control, before.body), "Idempotent-Replayed": "true"}
        if control.wakes:
            _made_work(call)
        return 200, answer, _tag_of(control, answer)

    press.__name__ = f"{control.name}_{control.target.value}"
    operation("POST", path, control.summary, control.gate, _CONTROL_ANSWERS[control.answer or control.target.value],
              body=schemas.control_body(schemas.ADVANCE_BODY if control.phase_field else schemas.CANCEL_BODY
                                  if control.option_field else _NOTE_BODIES[control.note_field]),
              request_headers=schemas.CONTROL_HEADERS, response_headers=schemas.CONTROL_ANSWER_HEADERS)(press)


def _tag_of(control: controls.Control, answer: Body) -> dict[str, str]:
    """The ETag of what the control acted on, as its answer has it (the run, or the step)."""
    target = answer.get("step" if control.target is controls.Target.STEP else "run") or {}
    return {"ETag": target["etag"]} if "etag" in target else {}


for _control in controls.CONTROLS.values():
    _control_operation(_control)


@operation("POST", "/runs/{run_id}/signals/{name}",
           "Signal the run: the phase that waits for this signal ends (or, for a later phase, will end as it opens)."
           " The first receipt of each (run, name) wins; a repeat answers it and changes nothing.",
           # guard: a-gm-may-signal
           auth.CONTROLLERS,
           {202: ("the first receipt: what it did to the run (effect)", schemas.SIGNAL_RESPONSE),
            200: ("a repeat: the first receipt, unchanged", schemas.SIGNAL_RESPONSE)},
           body=schemas.SIGNAL_BODY, names={"name": schemas.SIGNAL_NAME}, signed=True,
           max_body_bytes=schemas.SIGNAL_PAYLOAD_BYTES)
def signal_run(call: Call) -> Answer:
    run_id, name = call.ids["run_id"], call.names["name"]
    receipt = runtime.database().transaction(
        lambda tx: signals.receive(tx, run_id, name, call.actor, call.body or None, call.now))
    if receipt.repeat:
        return receipt.signal.public()
    # guard: signal-does-not-nudge-a-sleeping-deployment
    if receipt.signal.effect is SignalEffect.ENDS_PHASE:
        _made_work(call)  # the run wakes now: a sleeping deployment is woken for it
    return 202, receipt.signal.public()


@operation("GET", "/vocabulary", "The statuses (label, mark, terminal) and the declared controls, as the console shows them.",
           auth.STAFF, _ok("the vocabulary", schemas.VOCABULARY))
def vocabulary(call: Call) -> Body:
    return {**lifecycle.vocabulary(), "controls": [c.public() for c in controls.CONTROLS.values()]}


def _made_work(call: Call) -> None:
    """The request's work has committed: wake the deployment if it sleeps (one guarded UPDATE; nothing when it never sleeps)."""
    nudge.after_work_created(runtime.database(), runtime.settings(), call.now)


# ── definitions and scheduling ────────────────────────────────────────────
@operation("GET", "/definitions", "Definitions (current version), oldest first, a page at a time.", auth.STAFF,
           _ok("a page of definitions; pass next_cursor as cursor for the next", schemas.DEFINITIONS_PAGE),
           query=schemas.DEFINITIONS_QUERY)
def list_definitions(call: Call) -> Body:
    page, next_cursor = runtime.database().autocommit(
        lambda tx: definitions.list_page(tx, limit=call.query.get("limit", 50), after_id=call.query.get("cursor"))
    )
    return {"definitions": [d.public() for d in page], "next_cursor": next_cursor}


@operation("GET", "/definitions/{definition_id}", "A definition and its versions (without their documents).",
           auth.STAFF, _ok("the definition", schemas.DEFINITION_DETAIL))
def get_definition(call: Call) -> Body:
    definition_id = call.ids["definition_id"]

    def read(tx: Tx) -> Body:
        definition = definitions.get(tx, definition_id)
        if definition is None:
            raise NotFound(f"no definition {definition_id}")
        return {"definition": definition.public(), "versions": [v.public() for v in definitions.versions(tx, definition_id)]}

    return runtime.database().transaction(read)


@operation("GET", "/definitions/{definition_id}/versions/{version}", "One version of a definition, with its document.",
           auth.STAFF, _ok("the version", schemas.VERSION_DOCUMENT))
def get_definition_version(call: Call) -> Body:
    definition_id, number = call.ids["definition_id"], call.ids["version"]

    def read(tx: Tx) -> Body:
        if definitions.get(tx, definition_id) is None:
            raise NotFound(f"no definition {definition_id}")
        version = definitions.get_version(tx, definition_id, number)
        if version is None:
            raise NotFound(f"definition {definition_id} has no version {number}")
        return {"version": version.public()}

    return runtime.database().transaction(read)


def _saved(saved: authoring.Saved) -> Body:
    return {"definition": {"id": saved.definition.id, "version": saved.definition.current_version},
            "warnings": saved.warnings}


@operation("POST", "/definitions", "Create a definition (version 1); its name must be no other definition's, whatever"
           " its case (409 names the other).", auth.ADMINS,
           {201: ("created; warnings says what could not be checked", schemas.DEFINITION_SAVED)},
           body=schemas.DEFINITION_BODY, body_required=True)
def create_definition(call: Call) -> Answer:
    saved = authoring.create(runtime.database(), call.body, actor=call.actor, now=call.now,
                             module_actions=runtime.settings().module_actions)
    _made_work(call)  # a schedule is work to plan
    return 201, _saved(saved)


@operation("PUT", "/definitions/{definition_id}", "Save a new version of a definition (a name another definition"
           " holds is 409, naming it).", auth.ADMINS,
           _ok("the new version; warnings says what could not be checked", schemas.DEFINITION_SAVED),
           body=schemas.DEFINITION_BODY, body_required=True)
def update_definition(call: Call) -> Body:
    saved = authoring.add_version(runtime.database(), call.ids["definition_id"], call.body, actor=call.actor,
                                  now=call.now, module_actions=runtime.settings().module_actions)
    _made_work(call)
    return _saved(saved)


@operation("POST", "/definitions/{definition_id}/runs",
           "Schedule a run of the current version; the same occurrence twice is the same run.", auth.ADMINS,
           {201: ("a new run", schemas.SCHEDULED), 200: ("the run already scheduled for that occurrence", schemas.SCHEDULED)},
           body=schemas.SCHEDULE_BODY, body_required=True)
def schedule_run(call: Call) -> Answer:
    scheduled_for = schemas.parse_time(call.body["scheduled_for"], "body.scheduled_for")
    run, created = occurrences.schedule_run(
        runtime.database(), call.ids["definition_id"], scheduled_for, actor=call.actor, now=call.now
    )
    _made_work(call)
    return (201 if created else 200), {"run": run.public()}


# ── the calendar and rehearsal ──────────────────────────────────────────────
@operation("GET", "/definitions/{definition_id}/occurrences",
           f"The current version's scheduled occurrences in [from, to) (at most {calendar.MAX_WINDOW.days} days;"
           f" at most {calendar.MAX_LISTED}, next_from says where the rest begin), in its time zone, each with its run"
           " if one exists and whether it is skipped; the schedule in words with its next occurrence.", auth.STAFF,
           _ok("the occurrences", schemas.OCCURRENCES), query=schemas.OCCURRENCES_QUERY)
def list_occurrences(call: Call) -> Body:
    edges = {name: schemas.parse_time(call.query[name], f"query.{name}") if name in call.query else None
             for name in ("from", "to")}
    return calendar.occurrences(runtime.database(), call.ids["definition_id"], edges["from"], edges["to"], call.now)


def _occurrence_time(call: Call) -> datetime:
    return schemas.parse_time(call.names["scheduled_for"], "scheduled_for")


@operation("POST", "/definitions/{definition_id}/occurrences/{scheduled_for}/skip",
           "Mark an occurrence not to be run: the planner never creates its run, and a run already scheduled for it is"
           " cancelled in the same transaction. Skipping it again answers the first skip.", auth.ADMINS,
           _ok("the occurrence, skipped, and the run it cancelled (if any)", schemas.SKIPPED),
           body=schemas.SKIP_BODY, names={"scheduled_for": schemas.OCCURRENCE_TIME})
def skip_occurrence(call: Call) -> Body:
    skipped = calendar.skip(runtime.database(), call.ids["definition_id"], _occurrence_time(call),
                            reason=call.body.get("reason"), actor=call.actor, now=call.now)
    return {"occurrence": skipped.occurrence,
            "cancelled_run": skipped.cancelled_run.public() if skipped.cancelled_run else None}


@operation("POST", "/definitions/{definition_id}/occurrences/{scheduled_for}/unskip",
           "Undo a skip before the occurrence is due: it is planned after all.", auth.ADMINS,
           _ok("the occurrence, with its run if it was created now", schemas.UNSKIPPED),
           body=schemas.NO_FIELDS, names={"scheduled_for": schemas.OCCURRENCE_TIME})
def unskip_occurrence(call: Call) -> Body:
    occurrence = calendar.unskip(runtime.database(), call.ids["definition_id"], _occurrence_time(call),
                                 actor=call.actor, now=call.now)
    _made_work(call)  # a run it created is work for the tick
    return {"occurrence": occurrence}


@operation("POST", "/definitions/{definition_id}/rehearse",
           "The projected timeline of a version (default: the current one) or of an unsaved document: every step's"
           " earliest offset, what it says and waits for, each phase's earliest and latest end, the shortest and"
           " longest run, and warnings. Writes nothing.", auth.STAFF,
           _ok("the projection", schemas.REHEARSAL), body=schemas.REHEARSE_BODY)
def rehearse_definition(call: Call) -> Body:
    definition_id, body = call.ids["definition_id"], call.body
    if "version" in body and "document" in body:
        raise Invalid("send version or document, not both")

    def read(tx: Tx) -> dict[str, Any]:
        definition = definitions.get(tx, definition_id)
        if definition is None:
            raise NotFound(f"no definition {definition_id}")
        if "document" in body:
            return validate(body["document"], runtime.settings().module_actions)
        number = body.get("version", definition.current_version)
        version = definitions.get_version(tx, definition_id, number)
        if version is None:
            raise NotFound(f"definition {definition_id} has no version {number}")
        return version.document

    return rehearsal.project(runtime.database().autocommit(read), call.now,
                             escalate_after_seconds=runtime.settings().escalate_after_seconds)


@operation("POST", "/definitions/{definition_id}/dry-runs",
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
    _made_work(call)
    detail = runtime.database().transaction(lambda tx: _run_detail(tx, run.id, {}, call.now))
    return 201, detail, {"ETag": detail["run"]["etag"], "Cache-Control": "no-store"}


@operation("GET", "/actions", "The action registry and each action's params schema, and the module actions the "
           "game bridge declares (EVENT_MODULE_ACTIONS; null when it declares none).", auth.STAFF,
           _ok("actions", schemas.ACTIONS))
def list_actions(call: Call) -> Body:
    declared = runtime.settings().module_actions
    return {"actions": registry.catalogue(), "module_actions": None if declared is None else sorted(declared)}


@operation("GET", "/openapi.json", "This document.", None, _ok("the OpenAPI document", {"type": "object"}))
def openapi_document(call: Call) -> Body:
    return document(OPERATIONS)


routes = blueprint_of(OPERATIONS)
