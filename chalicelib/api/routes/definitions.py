"""Definitions: their pages and versions (read through `events/views/definitions.py`), saving a document as a
definition's first or next version, and scheduling a run of the current version by hand."""

from __future__ import annotations

from ... import runtime
from ...events import authoring, occurrences
from ...events.views.definitions import definition_detail, definition_version, definitions_page
from .. import auth, schemas
from ..operations import Answer, Body, Call, Router, ok
from ..wake import made_work

router = Router(__name__)


@router.operation("GET", "/definitions", "Definitions (current version), oldest first, a page at a time.", auth.STAFF,
                  ok("a page of definitions; pass next_cursor as cursor for the next", schemas.DEFINITIONS_PAGE),
                  query=schemas.DEFINITIONS_QUERY)
def list_definitions(call: Call) -> Body:
    return definitions_page(runtime.database(), call.query)


@router.operation("GET", "/definitions/{definition_id}", "A definition and its versions (without their documents).",
                  auth.STAFF, ok("the definition", schemas.DEFINITION_DETAIL))
def get_definition(call: Call) -> Body:
    return definition_detail(runtime.database(), call.ids["definition_id"])


@router.operation("GET", "/definitions/{definition_id}/versions/{version}", "One version of a definition, with its document.",
                  auth.STAFF, ok("the version", schemas.VERSION_DOCUMENT))
def get_definition_version(call: Call) -> Body:
    return definition_version(runtime.database(), call.ids["definition_id"], call.ids["version"])


def _saved(saved: authoring.Saved) -> Body:
    return {"definition": {"id": saved.definition.id, "version": saved.definition.current_version},
            "warnings": saved.warnings}


@router.operation("POST", "/definitions", "Create a definition (version 1); its name must be no other definition's, whatever"
                  " its case (409 names the other).", auth.ADMINS,
                  {201: ("created; warnings says what could not be checked", schemas.DEFINITION_SAVED)},
                  body=schemas.DEFINITION_BODY, body_required=True)
def create_definition(call: Call) -> Answer:
    saved = authoring.create(runtime.database(), call.body, actor=call.actor, now=call.now,
                             module_actions=runtime.settings().module_actions)
    made_work(call)  # a schedule is work to plan
    return 201, _saved(saved)


@router.operation("PUT", "/definitions/{definition_id}", "Save a new version of a definition (a name another definition"
                  " holds is 409, naming it).", auth.ADMINS,
                  ok("the new version; warnings says what could not be checked", schemas.DEFINITION_SAVED),
                  body=schemas.DEFINITION_BODY, body_required=True)
def update_definition(call: Call) -> Body:
    saved = authoring.add_version(runtime.database(), call.ids["definition_id"], call.body, actor=call.actor,
                                  now=call.now, module_actions=runtime.settings().module_actions)
    made_work(call)
    return _saved(saved)


@router.operation("POST", "/definitions/{definition_id}/runs",
                  "Schedule a run of the current version; the same occurrence twice is the same run.", auth.ADMINS,
                  {201: ("a new run", schemas.SCHEDULED), 200: ("the run already scheduled for that occurrence", schemas.SCHEDULED)},
                  body=schemas.SCHEDULE_BODY, body_required=True)
def schedule_run(call: Call) -> Answer:
    scheduled_for = schemas.parse_time(call.body["scheduled_for"], "body.scheduled_for")
    run, created = occurrences.schedule_run(
        runtime.database(), call.ids["definition_id"], scheduled_for, actor=call.actor, now=call.now
    )
    made_work(call)
    return (201 if created else 200), {"run": run.public()}
