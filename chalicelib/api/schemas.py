"""One JSON schema per request body, query and response; the handlers validate with
these and the OpenAPI document publishes the very same dicts.

Unknown fields are rejected everywhere: no client ever sets `status` or `attempts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..events.commands import MOST_SECONDS, HeldBy
from ..events.commands.bulk import BULK_CONTROLS
from ..events.commands.bulk import MAX_RUNS as BULK_MAX_RUNS
from ..events.commands.bulk import PREVIEW_RUNS as BULK_PREVIEW_RUNS
from ..events.document import DOCUMENT_SCHEMA
from ..events.document import SIGNAL_NAME as SIGNAL_NAME_PATTERN
from ..events.dry_runs import AUTO_CONFIRM_SECONDS
from ..events.errors import Invalid
from ..events.lifecycle import (
    CLEANUP_TARGETS,
    VOCABULARY_WORDS,
    ClosedBy,
    LateCleanup,
    OnDeadline,
    OnDoubt,
    OnFailure,
    ParkReason,
    PhaseKind,
    PhaseState,
    RehearsalBridge,
    ResourceStatus,
    RunMode,
    RunStatus,
    SignalEffect,
    StepStatus,
    WaitingFor,
)
from ..events.model import Health
from ..events.occurrences import MAX_SCHEDULE_AHEAD
from ..events.schedules import CatchUp
from ..events.views import PAGE_BYTES as PAGE_BYTES
from ..events.views.runs import REHEARSAL_FILTERS
from ..events.views.runs import STEPS_PAGE as STEPS_PAGE
from ..events.waiting import ANY as WAITING_FOR_ANYTHING
from ..events.waiting import FILTERS as WAITING_FILTERS
from ..roles import ROLES
from ..schema_check import first_error, unknown_fields

MAX_ID = 2**63 - 1


def _body(**properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "properties": properties}


# Any length: the engine keeps the first 500 characters (an operator pasting a
# stack trace at 2 a.m. gets the pause); the body limit bounds what arrives.
_NOTE = {"type": "string"}
_ID = {"type": "integer", "minimum": 1, "maximum": MAX_ID}

# ── request bodies ────────────────────────────────────────────────────────
REASON_BODY = _body(reason=_NOTE)
NOTE_BODY = _body(note=_NOTE)
REQUIRED_NOTE_BODY = {**_body(note={**_NOTE, "minLength": 1, "description": "why: kept on the log row (required)"}),
                      "required": ["note"]}
_HELD_BY = {"type": "string", "minLength": 1, "maxLength": 191,
            "description": "who has the cue, as the presser saw it: it acts on that hold only (409 when someone else"
                           " has the cue now); absent: on whoever has it"}
HELD_NOTE_BODY = _body(note=_NOTE, held_by=_HELD_BY)  # release's
REQUIRED_HELD_NOTE_BODY = {**_body(note=REQUIRED_NOTE_BODY["properties"]["note"], held_by=_HELD_BY),
                           "required": ["note"]}  # take-over's
NO_FIELDS = _body()
CONFIRM_BODY = _body(note=_NOTE, choice={
    "type": "string", "minLength": 1, "maxLength": 100,
    "description": "a cue with choices: the value of the one chosen (required there; refused on any other step)"})
CANCEL_BODY = _body(reason=_NOTE, cleanup={
    "type": "boolean", "default": False,
    "description": "revert what the run left in the world first (GET /runs/{id}/cleanup-plan says what), then cancel it"})
ADVANCE_BODY = {**_body(phase={"type": "integer", "minimum": 1, "maximum": 1000,
                               "description": "the phase the caller sees the run at (GET /runs/{id}'s run.current_phase)"},
                        reason=_NOTE), "required": ["phase"]}
POSTPONE_BODY = {**_body(reason=_NOTE, to={"type": "string", "format": "date-time", "maxLength": 40,
                                          "description": f"the run's new time, with a zone: later than now, at most"
                                                         f" {MAX_SCHEDULE_AHEAD.days} days ahead"}), "required": ["to"]}
UPGRADE_BODY = _body(reason=_NOTE, to={"type": "integer", "minimum": 1, "maximum": 2**31 - 1,
                                      "description": "the version the caller saw current (GET /runs/{id}'s"
                                                     " current_version): a version saved since is refused, never"
                                                     " played unseen; absent, whichever is current at the press"})
EXTEND_BODY = {**_body(seconds={"type": "integer", "minimum": -MOST_SECONDS, "maximum": MOST_SECONDS, "not": {"enum": [0]},
                                "description": "how far the deadline moves: later if positive, earlier if negative"
                                               " (never to now or before)"},
                       reason=_NOTE), "required": ["seconds"]}
# A control's body may name the tag the caller saw, for a client that cannot set If-Match.
EXPECTED = {"type": "string", "minLength": 1, "maxLength": 200,
            "description": "the tag the caller saw, as If-Match would name it (a run control: the run's ETag, a step"
                           " control: the step's etag; * is any); given with a different If-Match, 400"}


def control_body(body: dict[str, Any]) -> dict[str, Any]:
    """A control's body: its own fields and `expected`."""
    return {**body, "properties": {**body["properties"], "expected": EXPECTED}}


# ── request headers ───────────────────────────────────────────────────────
IF_MATCH = "if-match"
IDEMPOTENCY_KEY = "idempotency-key"
MAX_IDEMPOTENCY_KEY = 64
CONTROL_HEADERS = {
    "If-Match": (("the tag the caller saw (GET /runs/{id}'s ETag for a run control, the step's etag for a step"
                 " control; * is any; several, comma-separated, match any of them): a state that has moved on since"
                 " is a 412 naming it, and nothing changes. Without it the control acts on the state it finds."),
                 {"type": "string"}),
    "Idempotency-Key": ((f"at most {MAX_IDEMPOTENCY_KEY} visible ASCII characters, unique per run: a repeat within 24 h"
                        " answers the first press's answer (Idempotent-Replayed: true) and changes nothing"),
                        {"type": "string", "minLength": 1, "maxLength": MAX_IDEMPOTENCY_KEY, "pattern": "^[!-~]+$"}),
}
BULK_HEADERS = {"Idempotency-Key": (
    (f"at most {MAX_IDEMPOTENCY_KEY} visible ASCII characters: each run is pressed with it, so a repeat within 24 h"
     " answers, for each run the first press changed, its first answer (replayed: true) and changes nothing again"),
    CONTROL_HEADERS["Idempotency-Key"][1])}
RUN_HEADERS = {
    "ETag": ('the run\'s control state, "r{id}.{version}": what a run control\'s If-Match names', {"type": "string"}),
    "Cache-Control": ("no-store: the tag describes a control state, never a cached copy (no 304 is ever answered)",
                      {"type": "string", "const": "no-store"}),
}
CONTROL_ANSWER_HEADERS = {
    "ETag": ("the tag of what the control acted on, as it now stands (the run, or the step)", {"type": "string"}),
    "Idempotent-Replayed": ("true when this answers an earlier press with the same Idempotency-Key", {"type": "string"}),
}


def _tag(raw: str) -> str:
    """One entity tag as sent: a bare tag is read as the quoted one (a weak W/ tag is kept, and never matches)."""
    text = raw.strip()
    return text if text == "*" or text.startswith(('"', 'W/"')) else f'"{text}"'


def parse_if_match(raw: str | None, expected: str | None) -> tuple[str, ...] | None:
    """The tags a control's caller saw (None: they named none), from If-Match and the body's `expected`."""
    header = None if raw is None else tuple(tag for tag in (_tag(part) for part in raw.split(",")) if tag.strip('"'))
    if header is not None and not header:
        raise Invalid("If-Match names no tag")
    if expected is None:
        return header
    field = (_tag(expected),)
    if header is not None and set(header) != set(field):
        raise Invalid(f"If-Match ({raw}) and body.expected ({expected}) name different tags; send one")
    return field


def parse_idempotency_key(raw: str | None) -> str | None:
    if raw is None:
        return None
    if not 1 <= len(raw) <= MAX_IDEMPOTENCY_KEY:
        raise Invalid(f"Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} characters, got {len(raw)}")
    if not all("!" <= c <= "~" for c in raw):
        raise Invalid("Idempotency-Key must be visible ASCII characters (no spaces)")
    return raw
SCHEDULE_BODY = {
    **_body(scheduled_for={
        "type": "string", "format": "date-time", "maxLength": 40,
        "description": f"with a zone; at most {MAX_SCHEDULE_AHEAD.days} days ahead, and no further in the past"
                       " than the definition's grace window",
    }),
    "required": ["scheduled_for"],
}
DEFINITION_BODY = DOCUMENT_SCHEMA
SKIP_BODY = REASON_BODY
TIMELINE_BODY = _body(  # what POST /definitions/{id}/rehearse projects
    version={"type": "integer", "minimum": 1, "maximum": 2**31 - 1,
             "description": "the version to rehearse (default: the current one)"},
    document={"type": "object", "description": "an unsaved document to rehearse instead (an editor's draft): validated"
                                               " as a save would, and stored nowhere"},
)
DRY_RUN_BODY = {
    **_body(
        version={"type": "integer", "minimum": 1, "maximum": 2**31 - 1,
                 "description": "the version to rehearse (default: the current one)"},
        speed={"type": "integer", "minimum": 1, "maximum": 600,
               "description": "authored waits, `after` phases, timeouts, reminder and escalation intervals are"
                              " divided by it (leases, retry backoff, grace and outbound deadlines are not)"},
        auto_confirm_seconds={"type": "integer", "minimum": 0, "maximum": 86400, "default": AUTO_CONFIRM_SECONDS,
                              "description": "a cue nobody confirmed is confirmed by the engine after this many"
                                             " rehearsal seconds (not divided by speed)"},
        auto_signal_seconds={"type": "integer", "minimum": 0, "maximum": 86400,
                             "description": "a signal phase gets its signal from `rehearsal` this many rehearsal"
                                            " seconds after it opened (default: never; a person or the sandbox"
                                            " sends it)"},
        bridge={"type": "string", "enum": [b.value for b in RehearsalBridge],
                "description": "simulate: module actions answered done inside the engine; sandbox: sent to"
                               " GAME_BRIDGE_SANDBOX_URL, signed with its own key, with rehearsal: true"},
    ),
    "required": ["speed", "bridge"],
}
SIGNAL_PAYLOAD_BYTES = 16 * 1024
SIGNAL_BODY = {"type": "object", "description": f"the signal's payload, kept with its receipt (at most {SIGNAL_PAYLOAD_BYTES}"
               " bytes; optional)"}

# ── path parameters that are names, not ids ─────────────────────────────────
SIGNAL_NAME = {"type": "string", "pattern": SIGNAL_NAME_PATTERN,
               "description": "a signal a phase of the run's version waits for"}

OCCURRENCE_TIME = {"type": "string", "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z$",
                   "description": "the occurrence's time in UTC, as GET /definitions/{id}/occurrences gives it"}

# ── queries (values arrive as strings; integers are parsed before checking) ──
_WINDOW_EDGE = {"type": "string", "format": "date-time", "maxLength": 40}
RUNS_QUERY = _body(
    status={"type": "string", "enum": [s.value for s in RunStatus]},
    definition_id=_ID,
    waiting={"type": "string", "enum": list(WAITING_FILTERS),
             "description": "only the runs waiting for this (any: for anything), through an index"},
    rehearsal={"type": "string", "enum": list(REHEARSAL_FILTERS),
               "description": "only: the dry runs alone; exclude: the live runs alone; include: both. Absent, the page"
                              " lists both and the summary counts the live runs alone (include counts both)"},
    limit={"type": "integer", "minimum": 1, "maximum": 200},
    cursor=_ID,
    **{"from": {**_WINDOW_EDGE, "description": "only the runs scheduled for this time or later, with a zone"},
       "to": {**_WINDOW_EDGE, "description": "only the runs scheduled for before this time, with a zone; after from"}},
)
OCCURRENCES_QUERY = _body(
    **{"from": {**_WINDOW_EDGE, "description": "the window's start, with a zone (default: now)"},
       "to": {**_WINDOW_EDGE, "description": "the window's end, excluded (default: six weeks after from); at most 366 days"
                                             " after from"}})
DEFINITIONS_QUERY = _body(limit={"type": "integer", "minimum": 1, "maximum": 200}, cursor=_ID)
RUN_QUERY = _body(
    steps_cursor=_ID,
    steps_limit={"type": "integer", "minimum": 1, "maximum": STEPS_PAGE},
)
_RESOURCES_LIMIT = {"type": "integer", "minimum": 1, "maximum": 500,
                    "description": f"at most this many (default 100); a page also ends before {PAGE_BYTES // 1024} KiB"}
RESOURCES_QUERY = _body(limit=_RESOURCES_LIMIT, cursor=_ID)
LEFT_QUERY = {**_body(status={"type": "string", "enum": [s.value for s in ResourceStatus]},
                      limit=_RESOURCES_LIMIT, cursor=_ID), "required": ["status"]}
LOG_QUERY = _body(
    after_id={"type": "integer", "minimum": 0, "maximum": MAX_ID},
    limit={"type": "integer", "minimum": 1, "maximum": 1000},
)

# ── responses ─────────────────────────────────────────────────────────────
_TIME = {"type": "string", "format": "date-time"}
_MAYBE_TIME = {"type": ["string", "null"], "format": "date-time"}
_MAYBE_TEXT = {"type": ["string", "null"]}
_INT = {"type": "integer"}
_MAYBE_INT = {"type": ["integer", "null"]}


def _object(**properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": list(properties), "properties": properties}


RUN = _object(
    id=_INT,
    definition_id=_INT,
    definition_version=_INT,
    occurrence_key={"type": "string"},
    status={"type": "string", "enum": [s.value for s in RunStatus]},
    scheduled_for=_TIME,
    grace_seconds=_INT,
    current_phase=_MAYBE_INT,
    health={"type": "string", "enum": [h.value for h in Health]},
    last_error=_MAYBE_TEXT,
    claim_expires_at=_MAYBE_TIME,
    started_at=_MAYBE_TIME,
    finished_at=_MAYBE_TIME,
    created_at=_TIME,
    updated_at=_TIME,
    version={"type": "integer", "minimum": 1},
    etag={"type": "string", "description": 'the run\'s control state, "r{id}.{version}" (the ETag of GET /runs/{id})'},
    cleanup_target={"type": ["string", "null"], "enum": [*(t.value for t in CLEANUP_TARGETS), None],
                    "description": "where its cleanup ends once every revert is over; null: it never cleaned up"},
    late_cleanup={"type": ["string", "null"], "enum": [*(c.value for c in LateCleanup), None],
                  "description": "a finished run's cleanup (Clean up; the run keeps its status): started, done, or"
                                 " failed (what is left stays in its ledger); null: none asked for"},
    late_cleanup_at={**_MAYBE_TIME, "description": "when that cleanup was last asked for"},
    mode={"type": "string", "enum": [m.value for m in RunMode]},
    rehearsal={"type": ["object", "null"], "description": "a dry run's settings; null: a live run",
               "properties": {"speed": _INT, "bridge": {"type": "string", "enum": [b.value for b in RehearsalBridge]},
                              "auto_confirm_seconds": _INT, "auto_signal_seconds": _MAYBE_INT}},
)
STEP = _object(
    id=_INT,
    run_id=_INT,
    phase=_INT,
    seq=_INT,
    action_id={"type": "string"},
    params={"type": "object"},
    action_version=_INT,
    on_failure={"type": "string", "enum": [o.value for o in OnFailure]},
    idempotency_key={"type": "string"},
    status={"type": "string", "enum": [s.value for s in StepStatus]},
    attempts={"type": "integer", "minimum": 0, "description": "the attempts claimed so far: the attempt the game saw"
                                                           " last; only ever rises (a retry does not lower it)"},
    attempts_allowed_from={"type": "integer", "minimum": 0,
                           "description": "the attempts spent before a person's last retry or resend: the attempt"
                                          " ceiling counts only those after it"},
    name={"type": ["string", "null"], "description": "its authored name (what an only_if calls it by); null: none"},
    named={"type": "string", "description": "its one name on every surface: \"Run 6 · Phase 1 · step 2 (light the"
                                            " bonfire)\" (docs/contract.md, \"A step's one name\")"},
    claim_expires_at=_MAYBE_TIME,
    due_at=_MAYBE_TIME,
    started_at=_MAYBE_TIME,
    finished_at=_MAYBE_TIME,
    last_error=_MAYBE_TEXT,
    acknowledged_by=_MAYBE_TEXT,
    acknowledged_at=_MAYBE_TIME,
    remind_at=_MAYBE_TIME,
    reminders_sent=_INT,
    escalate_at=_MAYBE_TIME,
    escalation_tries=_INT,
    times_out_at=_MAYBE_TIME,
    retries={"type": "integer", "minimum": 0},
    resource_id=_MAYBE_INT,
    in_doubt={"type": "boolean", "description": "its last attempt has no known outcome: the game may or may not"
                                               " have applied it"},
    on_doubt={"type": "string", "enum": [o.value for o in OnDoubt], "description": "what it does in doubt"},
    park_reason={"type": ["string", "null"], "enum": [*(r.value for r in ParkReason), None],
                 "description": "why it waits while parked: a cue, or a decision on a step in doubt"},
    hold_seconds={"type": ["number", "null"], "description": "how long an acknowledge holds its parked cue (its"
                                                             " escalation delay on its run's clock); null: no bound"},
    held_until={**_MAYBE_TIME, "description": "when the present hold of its cue (acknowledged_by's) lapses"},
    lapsed_by={**_MAYBE_TEXT, "description": "who had its cue when their hold last lapsed unanswered (null once"
                                             " someone has it again)"},
    lapsed_acknowledged_at={**_MAYBE_TIME, "description": "since when lapsed_by had it"},
    holds_ended={"type": "integer", "minimum": 0, "description": "how many holds of its cue were released or lapsed"},
    choice={"type": ["string", "null"], "description": "a cue with choices: the value its confirm (or its timeout)"
                                                       " chose; null for any other step, and a cue not confirmed"},
    parked={"type": "boolean"},
    etag={"type": "string", "description": "the step's state (retries, attempts, state, finished_at): what a step"
                                           " control's If-Match names"},
)
# A step of GET /runs/{id}: it also says whose its timeout is (absent when it has none).
_RUN_STEP = {**STEP, "properties": {**STEP["properties"], "times_out_by": {
    "type": "string", "enum": ["rehearsal", "timeout"],
    "description": "whose times_out_at is: the dry run's own confirm of the cue (rehearsal) or the cue's own timeout"
                   " (timeout); absent when it has none",
}}}
_REVERT = {"type": ["object", "null"], "required": ["action", "params"],
           "properties": {"action": {"type": "string"}, "params": {"type": "object"}}}
RESOURCE = _object(
    ledger_id=_INT,
    run_id=_INT,
    step_id=_INT,
    kind={"type": "string"},
    id={"type": "string", "description": "the game's id for it, as the answer listed it"},
    revert=_REVERT,
    revert_refused={"type": ["string", "null"],
                    "description": "why its revert is never sent (cannot revert: undeclared action …): a cleanup"
                                   " leaves it in the world; null: a cleanup sends it"},
    status={"type": "string", "enum": [s.value for s in ResourceStatus]},
    recorded_at=_TIME,
    changed_at=_TIME,
)
PHASE = _object(
    number=_INT,
    kind={"type": "string", "enum": [k.value for k in PhaseKind]},
    name={"type": "string"},
    state={"type": "string", "enum": [s.value for s in PhaseState]},
    opened_at=_MAYBE_TIME,
    drained_at=_MAYBE_TIME,
    condition={"type": ["object", "null"]},
    condition_met={"type": "boolean"},
    met_at=_MAYBE_TIME,
    met_by=_MAYBE_TEXT,
    signal=_MAYBE_TEXT,
    limit_seconds=_MAYBE_INT,
    on_deadline={"type": ["string", "null"], "enum": [*(d.value for d in OnDeadline), None]},
    deadline=_MAYBE_TIME,
    closed_at=_MAYBE_TIME,
    closed_by={"type": ["string", "null"], "enum": [*(c.value for c in ClosedBy), None]},
    deadline_moved_by=_MAYBE_TEXT,
    deadline_moved_at=_MAYBE_TIME,
    deadline_moved_reason=_MAYBE_TEXT,
)
LOG_ENTRY = _object(
    id=_INT,
    run_id=_INT,
    step_id=_MAYBE_INT,
    kind={"type": "string"},
    phase=_MAYBE_INT,
    detail={"type": ["object", "null"]},
    actor=_MAYBE_TEXT,
    created_at=_TIME,
)
DEFINITION = _object(
    id=_INT,
    name={"type": "string"},
    current_version=_INT,
    schedule_cron=_MAYBE_TEXT,
    created_by=_MAYBE_TEXT,
    created_at=_TIME,
    updated_at=_TIME,
    schedule_paused={"type": ["object", "null"], "required": ["by", "at", "reason"],
                     "properties": {"by": {"type": "string"}, "at": _TIME, "reason": _MAYBE_TEXT},
                     "description": "who paused its schedule, when and why (null: it is not paused)"},
)
VERSION_SUMMARY = _object(definition_id=_INT, version=_INT, created_by=_MAYBE_TEXT, created_at=_TIME)
DEFINITION_VERSION = _object(**VERSION_SUMMARY["properties"], document={"type": "object"})
ACTION = _object(
    id={"type": "string"},
    description={"type": "string"},
    core={"type": "boolean"},
    versions={"type": "array", "items": _INT},
    params_schema={"type": "object"},
    outcomes={"type": "array", "items": {"type": "string"}},
    step_fields_refused={"type": "array", "items": {"type": "string"}},
)
_CONTROL_NAMES = {"type": "array", "items": {"type": "string"}}
_PRESSERS = {"type": "array", "items": {"type": "string", "enum": list(ROLES)}}
ERRORS = {
    **_object(errors={"type": "array", "items": {"type": "string"}, "minItems": 1}),
    "properties": {
        "errors": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        # What a client acts on, beside the messages: a 403's roles, a 409's statuses and what it collided with.
        "detail": {
            "type": "object",
            "properties": {
                "roles_needed": {"type": "array", "items": {"type": "string"}},
                "roles_held": {"type": "array", "items": {"type": "string"}},
                "run_status": {"type": "string", "enum": [s.value for s in RunStatus]},
                "step_status": {"type": "string", "enum": [s.value for s in StepStatus]},
                "step_parked": {"type": "boolean"},
                "etag": {"type": "string"},
                "definition_id": _INT,
                "definition_name": {"type": "string"},
                "skipped": {"type": "boolean"},
                "count": {"type": "integer", "minimum": 0, "description": "how many runs a bulk filter matches now"},
                "key_used_by": {"type": "string", "description": "who pressed with this Idempotency-Key"},
                "key_used_for": {"type": "string", "description": "the control they pressed with it"},
                "key_used_on_step": {**_MAYBE_INT, "description": "the step they pressed it on (null: the run)"},
                "schedule_unreadable": {"type": "string", "description": "what is wrong with the stored schedule"},
                "schedule_paused": DEFINITION["properties"]["schedule_paused"],
                "bridge": {"type": "string", "enum": [b.value for b in RehearsalBridge],
                           "description": "the dry run's bridge, refused with no sandbox configured"},
            },
        },
    },
}

RUN_CONTROL_RESPONSE = _object(ok={"const": True}, run=RUN)
STEP_CONTROL_RESPONSE = _object(ok={"const": True}, step=STEP)
RETRY_RESPONSE = _object(ok={"const": True}, step=STEP, resumed={"type": "boolean"}, run=RUN)
SIGNAL_RESPONSE = _object(
    signal=_object(name={"type": "string"}, received_at=_TIME, by={"type": "string"}),
    effect={"type": "string", "enum": [e.value for e in SignalEffect]},
)
ADVANCE_RESPONSE = _object(ok={"const": True}, run=RUN, skipped_steps={"type": "integer", "minimum": 0},
                           resumed={"type": "boolean"})
CANCEL_RESPONSE = _object(ok={"const": True}, run=RUN, cancelled_steps={
    "type": "integer", "minimum": 0, "description": "its pending and parked steps the cancel closed (a step in flight"
                                                    " is left to its answer)"})
_STATUS_WORD = _object(status={"type": "string"}, label={"type": "string"}, mark={"type": "string"}, terminal={"type": "boolean"})
# Any other word: its value, its label (a phrase may name `{fields}` the console fills in) and its facts.
_WORD = {"type": "object", "required": ["value", "label"], "properties": {"value": {"type": "string"}, "label": {"type": "string"}}}
VOCABULARY = _object(
    run_statuses={"type": "array", "items": _STATUS_WORD},
    step_statuses={"type": "array", "items": _STATUS_WORD},
    **{words: {"type": "array", "items": _WORD} for words in VOCABULARY_WORDS},
    controls={"type": "array", "items": _object(
        name={"type": "string"}, target={"type": "string", "enum": ["run", "phase", "step"]},
        roles={"type": "array", "items": {"type": "string"}},
        cue_roles={"type": "array", "items": {"type": "string"}}, wakes={"type": "boolean"},
        note_field={"type": ["string", "null"]}, label={"type": "string"}, question=_MAYBE_TEXT, done={"type": "string"},
        tone={"type": ["string", "null"], "enum": ["danger", "primary", None]}, phase_field={"type": ["string", "null"]},
        sends_tag={"type": "boolean"},
        option_field={"type": ["string", "null"]}, choice_field={"type": ["string", "null"]},
        note_required={"type": "boolean"}, time_field={"type": ["string", "null"]}, seconds_field={"type": ["string", "null"]},
        holder_field={"type": ["string", "null"], "description": "the body field naming who has the cue as the presser saw it"},
        version_field={"type": ["string", "null"], "description": "the body field naming the version the presser saw current"},
        holder={"type": ["string", "null"], "enum": [*(h.value for h in HeldBy), None],
                "description": "own: its cue roles press it only on a cue they have; others: not by whoever has it"},
        bulk={"type": "boolean", "description": "whether POST /runs/bulk presses it on every run a filter matches"},
    )},
)
WAITING = {
    "type": ["object", "null"],
    "required": ["for", "since"],
    "properties": {
        "for": {"type": "string", "enum": [w.value for w in WaitingFor]},
        "phase": _INT, "step_id": _INT, "signal": {"type": "string"}, "since": _MAYBE_TIME, "until": _TIME,
        "acknowledged_by": {"type": "string"}, "acknowledged_at": _TIME, "held_until": _TIME,
        "lapsed_by": {"type": "string"}, "lapsed_acknowledged_at": _TIME,
        "acknowledged_by_named": {"type": "string", "description": "who has the cue as a person reads them: a chat"
                                  " identity by its name and platform (\"Mira (Discord)\"), else acknowledged_by"},
        "lapsed_by_named": {"type": "string", "description": "whose hold lapsed, named as acknowledged_by_named"},
        "paused_by": {"type": ["string", "null"], "description": "a paused run's: who paused it (null: the engine)"},
        "reason": {"type": ["string", "null"], "description": "a paused run's: the person's reason or the engine's cause"},
        "escalated": {"type": "object", "description": "the wait's fired escalation (its newest try): where it went, which"
                      " try of how many, and when", "properties": {
                          "channel": {"type": ["string", "null"]}, "attempt": _MAYBE_INT, "of": _MAYBE_INT, "at": _TIME}},
    },
}
_LISTED_RUN = {**RUN, "required": [*RUN["required"], "waiting"], "properties": {**RUN["properties"], "waiting": WAITING}}
_COUNT = {"type": "integer", "minimum": 0}
RUNS_SUMMARY = _object(
    waiting=_object(**{WAITING_FOR_ANYTHING: _COUNT}, **{w.value: _COUNT for w in WaitingFor}),
    working=_COUNT,
)
INBOX_QUERY = _body(limit={"type": "integer", "minimum": 0, "maximum": 100,
                           "description": "how many runs to answer (default 50); 0: the count alone"})
_INBOX_CONTROL = _object(name={"type": "string"}, step_id=_MAYBE_INT)
_INBOX_RUN = {**_LISTED_RUN, "required": [*_LISTED_RUN["required"], "story", "controls"], "properties": {
    **_LISTED_RUN["properties"],
    "story": {"type": "string", "description": "the wait in one line of words (its times are the wait's since, until"
              " and escalated.at)"},
    "controls": {"type": "array", "items": _INBOX_CONTROL,
                 "description": "the one or two controls most likely needed, legal now and the caller's to press"},
}}
INBOX = _object(needs_you=_COUNT, runs={"type": "array", "items": _INBOX_RUN})
RUNS_PAGE = _object(runs={"type": "array", "items": _LISTED_RUN}, next_cursor=_MAYBE_INT, summary=RUNS_SUMMARY)
# ── POST /runs/bulk: a run control on the runs a filter matches ────────────
_BULK_WINDOW = {**_body(**{"from": {**_WINDOW_EDGE, "description": "with a zone; included"},
                           "to": {**_WINDOW_EDGE, "description": "with a zone; excluded"}}), "required": ["from", "to"]}
BULK_FILTER = {**_body(
    definition=_ID, status=RUNS_QUERY["properties"]["status"], waiting=RUNS_QUERY["properties"]["waiting"],
    rehearsal=RUNS_QUERY["properties"]["rehearsal"],
    scheduled_between={**_BULK_WINDOW, "description": "runs scheduled for a time in [from, to)"},
    ids={"type": "array", "items": _ID, "minItems": 1, "maxItems": BULK_MAX_RUNS, "uniqueItems": True,
         "description": "these runs (the ones a person ticked on the list)"},
), "minProperties": 1, "description": "the runs the control is pressed on: all of these at once (at least one)"}
BULK_BODY = {**_body(
    control={"type": "string", "enum": list(BULK_CONTROLS)},
    filter=BULK_FILTER,
    reason={**_NOTE, "description": "pause and cancel: kept on each run's log row"},
    cleanup={**CANCEL_BODY["properties"]["cleanup"], "description": "cancel only: as a single cancel's cleanup"},
    expected_count={"type": "integer", "minimum": 0, "maximum": MAX_ID,
                    "description": "how many runs the person saw the filter match (required unless preview): another"
                                   " count now is a 409 naming it, and nothing changes"},
    preview={"type": "boolean", "default": False,
             "description": f"count the runs and show the first {BULK_PREVIEW_RUNS}; nothing changes"},
), "required": ["control", "filter"]}
_BULK_RUN = {**_object(id=_INT, status={"type": "string"},
                       replayed={"type": "boolean", "const": True,
                                 "description": "an earlier press with this Idempotency-Key changed it (its status then);"
                                                " nothing changed now"}), "required": ["id", "status"]}
BULK_ANSWER = {"oneOf": [
    {**_object(count=_COUNT, runs={"type": "array", "items": RUN, "maxItems": BULK_PREVIEW_RUNS}),
     "description": "a preview"},
    {**_object(control={"type": "string"}, count=_COUNT, changed={"type": "array", "items": _BULK_RUN},
               refused={"type": "array", "items": {
                   **_object(id=_INT, why={"type": "string"}),
                   "description": "a refused run: its id, why (the 409's words a single press gets) and its detail"}}),
     "description": "a press: each run changed (its status now), each refused and why"},
]}
RUN_DETAIL = _object(
    run=RUN,
    waiting=WAITING,
    phases={"type": "array", "items": PHASE},
    steps={"type": "array", "items": _RUN_STEP},
    steps_next_cursor=_MAYBE_INT,
    current_version={**_MAYBE_INT, "description": "a scheduled live run's: its definition's current version (a run"
                                                 " made from an earlier one may be upgraded); null for any other run"},
    counts={"type": "object", "additionalProperties": _INT},
    ledger=_object(
        counts={"type": "object", "additionalProperties": _INT,
                "description": "the run's resources by status (GET /runs/{id}/resources lists them)"},
        changed_at={**_MAYBE_TIME, "description": "when the last of them changed (null: none recorded); with the"
                                                  " counts, what moves whenever the ledger does"},
    ),
    controls=_object(
        run={**_CONTROL_NAMES, "description": "the run's controls the caller may press now"},
        phase={**_CONTROL_NAMES, "description": "the controls of the phase the run is at (current_phase) the caller may"
                                                " press now (extend: while its deadline counts)"},
        steps={"type": "object", "additionalProperties": _CONTROL_NAMES,
               "description": "by step id (each step of the page), the step's controls the caller may press now"},
        roles=_object(
            run={"type": "object", "additionalProperties": _PRESSERS,
                 "description": "for each control in run, the roles that may press it now (held by the caller)"},
            phase={"type": "object", "additionalProperties": _PRESSERS,
                   "description": "for each control in phase, the roles that may press it now"},
            steps={"type": "object", "additionalProperties": {"type": "object", "additionalProperties": _PRESSERS},
                   "description": "by step id, for each control in steps, the roles that may press it now"},
        ),
    ),
)
LOG_PAGE = _object(
    entries={"type": "array", "items": LOG_ENTRY},
    people={"type": "object", "additionalProperties": {"type": "string"},
            "description": "each chat identity the entries name (an entry's actor, or a detail's had_by) as a person"
                           " reads them, from its newest chat.pressed row of the run: {\"discord:4242\": \"Mira"
                           " (Discord)\"}, else \"Discord user 4242\"; {} when they name none"},
)
RESOURCES_PAGE = _object(resources={"type": "array", "items": RESOURCE}, next_cursor=_MAYBE_INT)
CLEANUP_PLAN = _object(
    reverts={"type": "array", "items": RESOURCE,
             "description": "a page of what a cleanup would revert now, in its order (newest first)"},
    next_cursor={**_MAYBE_INT, "description": "passed as cursor, the next page of reverts (null: this is the last)"},
    counts=_object(reverts={**_COUNT, "description": "how many reverts the whole plan holds"},
                   by_hand={**_COUNT, "description": "how many of them a person does (core.cue)"}),
    left={"type": "array", "items": _object(why={"type": "string"}, resources={"type": "integer", "minimum": 1}),
          "description": "what a cleanup would leave in the world, by why (a revert that is never sent), most first"},
    in_flight={"type": "integer", "minimum": 0, "description": "steps in flight, whose answers may add to it"},
    cleans_up={"type": "boolean", "description": "whether a cancel with cleanup would clean up (else it cancels as without)"},
    undecided={"type": ["string", "null"], "description": "a step parked in doubt, named: a cancel with cleanup waits"
                                                          " for the decision on it (409 until then)"},
)
DEFINITIONS_PAGE = _object(definitions={"type": "array", "items": DEFINITION}, next_cursor=_MAYBE_INT)
SCHEDULE_LOG_ENTRY = _object(id=_INT, definition_id=_INT, kind={"type": "string"}, actor={"type": "string"},
                             detail={"type": "object"}, created_at=_TIME)
DEFINITION_DETAIL = _object(definition=DEFINITION, versions={"type": "array", "items": VERSION_SUMMARY},
                            schedule_log={"type": "array", "items": SCHEDULE_LOG_ENTRY})
SCHEDULE_PAUSE_BODY = REASON_BODY
SCHEDULE_RESUME_BODY = _body(reason=_NOTE, catch_up={
    "type": "string", "enum": [c.value for c in CatchUp], "default": CatchUp.NONE.value,
    "description": "none: no occurrence missed while it was paused is created; latest: the latest of them is, if it"
                   " lies within the definition's grace window"})
SCHEDULE_PAUSED = _object(definition=DEFINITION)
SCHEDULE_RESUMED = _object(definition=DEFINITION, caught_up={**RUN, "type": ["object", "null"]})
VERSION_DOCUMENT = _object(version=DEFINITION_VERSION)
WARNING = _object(code={"type": "string"}, message={"type": "string"})
DEFINITION_SAVED = _object(definition=_object(id=_INT, version=_INT), warnings={"type": "array", "items": WARNING})
SCHEDULED = _object(run=RUN)
_SKIP = {"type": ["object", "null"], "required": ["reason", "by", "at"],
         "properties": {"reason": _MAYBE_TEXT, "by": {"type": "string"}, "at": _TIME}}
OCCURRENCE = _object(scheduled_for=_TIME, run={**RUN, "type": ["object", "null"]}, postponed_to=_MAYBE_TIME,
                     skipped={"type": "boolean"}, skip=_SKIP, paused={"type": "boolean"})
SCHEDULE_DESCRIBED = {"type": ["object", "null"], "required": ["cron", "timezone", "in_words", "next", "paused"],
                      "properties": {"cron": {"type": "string"}, "timezone": {"type": "string"},
                                     "in_words": {"type": "string"}, "next": _MAYBE_TIME,
                                     "paused": DEFINITION["properties"]["schedule_paused"]}}
OCCURRENCES = _object(schedule=SCHEDULE_DESCRIBED, occurrences={"type": "array", "items": OCCURRENCE},
                      runs={"type": "array", "items": RUN},
                      next_from={**_MAYBE_TIME, "description": "where the next page begins (pass it as from): the"
                                 " occurrences and the runs are both whole before it; null: nothing is left"},
                      runs_capped={"type": "boolean", "description": "true: more live runs than a page holds are"
                                   " scheduled for the instant just before next_from, and only the first of them"
                                   " (by id) are listed in any page"})
SKIPPED = _object(occurrence=OCCURRENCE, cancelled_run={**RUN, "type": ["object", "null"]})
UNSKIPPED = _object(occurrence=OCCURRENCE)
_SECONDS = {"type": "integer", "minimum": 0}
_MAYBE_SECONDS = {"type": ["integer", "null"], "minimum": 0}
_WAITS_FOR = {"type": ["string", "null"], "enum": ["person", "game", "time", None]}
def _gated(item: dict[str, Any]) -> dict[str, Any]:
    """A projected phase or step, which carries `only_if` when it has one (as authored: it runs only for those answers)."""
    return {**item, "properties": {**item["properties"], "only_if": {"type": "object"}}}


_GATED = {"type": "array", "items": _object(phase=_INT, seq=_MAYBE_INT)}  # a phase (seq null), or a step of it
TIMELINE = _object(  # the projected timeline
    steps={"type": "array", "items": _gated(_object(
        phase=_INT, seq=_INT, action={"type": "string"}, says=_MAYBE_TEXT, earliest_offset_seconds=_SECONDS,
        waits_for=_WAITS_FOR, timeout_seconds=_MAYBE_SECONDS))},
    phases={"type": "array", "items": _gated(_object(
        number=_INT, name={"type": "string"}, kind={"type": "string", "enum": [k.value for k in PhaseKind]},
        advance={"type": "string"}, waits_for=_WAITS_FOR, timeout_seconds=_MAYBE_SECONDS,
        earliest_start_seconds=_SECONDS, earliest_end_seconds=_SECONDS, latest_end_seconds=_MAYBE_SECONDS))},
    shortest_seconds=_SECONDS,
    longest_seconds=_MAYBE_SECONDS,
    warnings={"type": "array", "items": WARNING},
    branches={"type": "array", "description": "per cue or signal field an only_if reads: what each answer runs and skips",
              "items": _object(reads={"type": "object"}, answers={"type": "array", "items": _object(
                  value={"type": ["string", "integer", "boolean", "null"]}, label={"type": "string"},
                  runs=_GATED, skips=_GATED)})},
)
ACTIONS = _object(actions={"type": "array", "items": ACTION},
                  module_actions={"type": ["array", "null"], "items": {"type": "string"}})
HEALTH = _object(ok={"const": True})


# ── checking input ────────────────────────────────────────────────────────
def check(schema: dict[str, Any], value: Any, name: str, where: str | None = None) -> Any:
    """`value` if it satisfies `schema`, else Invalid naming what is wrong: unknown fields first, each named
    with the nearest known one (`where` says whose fields they are: the operation)."""
    unknown = unknown_fields(schema, value, where or name, "query parameter" if name == "query" else "field")
    if unknown:
        raise Invalid(*unknown)
    problem = first_error(schema, value, name)
    if problem:
        raise Invalid(problem)
    return value


def parse_id(raw: str, name: str) -> int:
    """A path id: a positive whole number that fits a BIGINT."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 19 or raw.startswith("0"):
        raise Invalid(f"{name} must be a positive whole number, got {raw[:40]!r}")
    value = int(raw)
    if value > MAX_ID:
        raise Invalid(f"{name} is too large")
    return value


def parse_name(raw: str, name: str, schema: dict[str, Any]) -> str:
    """A path parameter that is a name, checked against its schema's pattern."""
    if first_error(schema, raw, name) is not None:
        raise Invalid(f"{name} must match {schema['pattern'].strip('^$')}, got {raw[:70]!r}")
    return raw


def parse_query(schema: dict[str, Any], params: Mapping[str, str] | None, where: str = "this route") -> dict[str, Any]:
    """Query parameters checked against `schema`, integers parsed first."""
    values: dict[str, Any] = {}
    for key, raw in (params or {}).items():
        declared = schema["properties"].get(key, {})
        if declared.get("type") == "integer":
            if not (raw.isascii() and raw.isdigit()) or len(raw) > 19:
                raise Invalid(f"query.{key} must be a whole number, got {raw[:40]!r}")
            values[key] = int(raw)
        else:
            values[key] = raw
    return check(schema, values, "query", where)


def parse_time(text: str, name: str) -> datetime:
    """An ISO 8601 time with a zone (Z or an offset), as naive UTC."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise Invalid(f"{name} is not an ISO 8601 time such as 2026-12-04T20:00:00Z") from None
    if parsed.tzinfo is None:
        raise Invalid(f"{name} must carry a time zone, e.g. 2026-12-04T20:00:00Z")
    try:
        return parsed.astimezone(UTC).replace(tzinfo=None)
    except OverflowError:
        raise Invalid(f"{name} is out of range") from None
