"""The live controls, a route each, generated from their declarations (`events/commands/declared.py`): a
run's (`/runs/{run_id}/<name>`), a phase's (`/runs/{run_id}/phases/{phase}/<name>`) and a step's
(`/runs/{run_id}/steps/{step_id}/<name>`), each pressing its command
and answering the ETag of what it acted on; a repeated Idempotency-Key answers its first answer and changes nothing."""

from __future__ import annotations

from ... import runtime
from ...events import commands
from ...events.errors import AnsweredBefore
from .. import schemas
from ..operations import Answer, Body, Call, Responses, Router, ok
from ..wake import made_work

router = Router(__name__)

_CONTROL_ANSWERS: dict[commands.Shape, Responses] = {
    commands.Shape.RUN: ok("the control took; the run as it now stands", schemas.RUN_CONTROL_RESPONSE),
    commands.Shape.STEP: ok("the control took; the step as it now stands", schemas.STEP_CONTROL_RESPONSE),
    commands.Shape.RETRIED: ok("the step re-queued; resumed says whether the run is running again", schemas.RETRY_RESPONSE),
    commands.Shape.ADVANCED: ok("the phase advanced; how many of its steps were skipped, and whether the run resumed",
                                schemas.ADVANCE_RESPONSE),
    commands.Shape.CANCELLED: ok("the run cancelled (or cleaning up first); how many of its pending and parked steps"
                                 " were cancelled", schemas.CANCEL_RESPONSE),
}
_NOTE_BODIES = {None: schemas.NO_FIELDS, "reason": schemas.REASON_BODY, "note": schemas.NOTE_BODY}


def _body_of(control: commands.Control) -> Body:
    """The body a control takes: its new time, how far it moves a time, the version it means, its phase, its
    option, its choice, whose hold it acts on, or its note (which a take-over must give)."""
    if control.time_field:
        return schemas.POSTPONE_BODY
    if control.seconds_field:
        return schemas.EXTEND_BODY
    if control.version_field:
        return schemas.UPGRADE_BODY
    if control.phase_field:
        return schemas.ADVANCE_BODY
    if control.option_field:
        return schemas.CANCEL_BODY
    if control.choice_field:
        return schemas.CONFIRM_BODY
    if control.holder_field:
        return schemas.REQUIRED_HELD_NOTE_BODY if control.note_required else schemas.HELD_NOTE_BODY
    return schemas.REQUIRED_NOTE_BODY if control.note_required else _NOTE_BODIES[control.note_field]


def _control_operation(control: commands.Control) -> None:
    """The route, handler and OpenAPI entry of one declared control."""

    def press(call: Call) -> Answer:
        body = call.body if not control.time_field else {
            **call.body, control.time_field: schemas.parse_time(call.body[control.time_field], control.time_field)}
        command = control.pressed(call.ids, body)
        how = commands.Press(seen=schemas.parse_if_match(call.headers.get(schemas.IF_MATCH), call.body.get("expected")),
                             key=schemas.parse_idempotency_key(call.headers.get(schemas.IDEMPOTENCY_KEY)))
        cue = call.roles if control.cue_only(call.roles) else None
        try:
            answer = command.answer(commands.execute(runtime.database(), command, commands.Context(call.actor, call.now, how, cue)))
        except AnsweredBefore as before:  # the same key within 24 h: the first answer, nothing changed
            return 200, before.body, {**_tag_of(control, before.body), "Idempotent-Replayed": "true"}
        if control.wakes:
            made_work(call)
        return 200, answer, _tag_of(control, answer)

    press.__name__ = f"{control.name}_{control.target.value}"
    body = _body_of(control)
    router.operation("POST", control.path, control.summary, control.gate, _CONTROL_ANSWERS[control.answer],
                     body=schemas.control_body(body), body_required=bool(body.get("required")),
                     request_headers=schemas.CONTROL_HEADERS, response_headers=schemas.CONTROL_ANSWER_HEADERS,
                     waits_for_database=True)(press)


def _tag_of(control: commands.Control, answer: Body) -> dict[str, str]:
    """The ETag of what the control acted on, as its answer has it (the run, or the step)."""
    target = answer.get("step" if control.target is commands.Target.STEP else "run") or {}
    return {"ETag": target["etag"]} if "etag" in target else {}


for _control in commands.CONTROLS.values():
    _control_operation(_control)
