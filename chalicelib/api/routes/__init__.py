"""The HTTP API: a router per resource (each a Blueprint the app registers), in the order the OpenAPI document
lists them, and that document, built from their declarations: no route without its entry, no entry without its
route."""

from __future__ import annotations

from ..openapi import document
from ..operations import Body, Call, Operation, Router, ok
from . import actions, calendar, chat, controls, definitions, health, inbox, previews, resources, runs, signals, vocabulary

described = Router(__name__)  # the API's own description


@described.operation("GET", "/openapi.json", "This document.", None, ok("the OpenAPI document", {"type": "object"}))
def openapi_document(call: Call) -> Body:
    return document(OPERATIONS)


ROUTERS = (health.router, inbox.router, runs.router, resources.router, controls.router, signals.router, vocabulary.router,
           definitions.router, calendar.router, previews.router, actions.router, chat.router, described)
OPERATIONS: list[Operation] = [op for router in ROUTERS for op in router.operations]
