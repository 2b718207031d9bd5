"""Operations declared once: each `@router.operation` is a route, a handler and an OpenAPI entry.

Every request goes through the same steps in the same order: check the token
and the role, or for an operation the game server may call (`signed`) its
signature when it carries one (401/403 before anything about the input), parse
the path ids and names, the query and the body against their schemas (400), then
call the handler with the request's headers beside them (a control reads If-Match
and Idempotency-Key there); a handler may answer headers of its own (GET /runs/{id}
its ETag). Every answer of an operation that needs a token (`roles`), its refusals too, is sent `PRIVATE`
(never stored, never sniffed) unless the handler says otherwise. The time
comes from `runtime.clock()`, read at most once per request. An operation that moves
a live event (`waits_for_database`: a signal, a control) waits for a database resuming
from a pause, up to EVENT_API_DATABASE_WAIT_SECONDS from its start, inside API Gateway's
29 s; any other tries once. Any failure leaves
through `errors.from_exception`, the one place a failure becomes an HTTP answer.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from chalice import Blueprint, CORSConfig, Response
from chalice.app import Request

from .. import runtime, schema_version
from ..events.commands import PHASE_CONTROLS, RUN_CONTROLS, STEP_CONTROLS
from ..events.errors import Invalid
from . import auth, schemas, signature
from .errors import PRIVATE, from_exception, json_body

# Read at import: Chalice bakes the origin into the API's preflight answers at package time.
# A control's If-Match and Idempotency-Key come from the console's origin; the run's ETag is read back by it.
CORS = CORSConfig(allow_origin=runtime.settings().cors_origin,
                  allow_headers=["Authorization", "Content-Type", "If-Match", "Idempotency-Key"],
                  expose_headers=["ETag", "Idempotent-Replayed"], max_age=600)


PATH_ID = re.compile(r"{(\w+)}")

Body = dict[str, Any]  # a JSON object, as a request carries it and an answer returns it
Responses = dict[int, tuple[str, Body]]  # status: (description, schema)
Headers = dict[str, str]
# What a handler returns: the body (200), its status and body, or its status, body and headers.
Answer = Body | tuple[int, Body] | tuple[int, Body, Headers]
HeaderDocs = dict[str, tuple[str, dict[str, Any]]]  # a header's name: (description, schema), for the OpenAPI document

# An answer behind a token is one person's (names, chat ids, notes, a game's payloads): no browser keeps it on disk
# for the next person at a shared machine (no-cache still stores it), nor reads it as anything but JSON.


@dataclass
class Call:
    """One request, checked: who, the ids, the query and the body."""

    actor: str  # the token's subject, "game" for a signed request; "anonymous" for operations open to anyone (they write nothing)
    ids: dict[str, int]
    query: dict[str, Any]
    body: Any
    names: dict[str, str] = field(default_factory=dict)  # the string path parameters
    roles: frozenset[str] = frozenset()  # the token's roles (none for a signed request or an open operation)
    headers: Mapping[str, str] = field(default_factory=dict)  # the request's headers (names in lower case)
    raw: bytes = b""  # the body as it came (an operation signed by a platform checks the signature over it)
    signed: bool = False  # the game server signed it with its signal key (the actor is then "game")

    @cached_property
    def now(self) -> datetime:
        return runtime.clock().now()


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    roles: frozenset[str] | None  # None: anyone, no token
    responses: Responses
    handler: Callable[[Call], Answer] = field(compare=False)
    body: dict[str, Any] | None = None
    body_required: bool = False
    query: dict[str, Any] | None = None
    names: dict[str, dict[str, Any]] | None = None  # the schema of each string path parameter (the others are ids)
    signed: bool = False  # the game server may call it, signing the request (`signature`) instead of a token
    max_body_bytes: int | None = None  # a body limit below the API's own (errors.MAX_BODY_BYTES)
    request_headers: HeaderDocs | None = None  # the headers it reads (If-Match, Idempotency-Key), for the document
    response_headers: HeaderDocs | None = None  # the headers its success answers (ETag), for the document
    # It moves a live event (a signal, a control): the game's signal or a person's press met by a paused
    # database waits for its resume rather than answering 503 at the first connection attempt.
    waits_for_database: bool = False
    platform_signed: bool = False  # Discord or Slack signed it (its handler checks the signature first: a 401)
    content_types: tuple[str, ...] = ("application/json",)  # what its body may be sent as (Chalice's 415 else)

    @property
    def path_params(self) -> list[str]:
        return PATH_ID.findall(self.path)

    @property
    def path_ids(self) -> list[str]:
        return [name for name in self.path_params if name not in (self.names or {})]

    @property
    def operation_id(self) -> str:
        return self.handler.__name__

    @property
    def name(self) -> str:
        """What a message calls this operation: a control by its name (pause, confirm), any other by its route."""
        last = self.path.rsplit("/", 1)[-1]
        return last if last in (*RUN_CONTROLS, *PHASE_CONTROLS, *STEP_CONTROLS) else f"{self.method} {self.path}"

    def __call__(self, request: Request, **path: str) -> Response:
        answer = self._attempt(request, path)
        if self.roles is not None:
            answer.headers = {**PRIVATE, **answer.headers}  # a handler's own (GET /runs/{id}'s) win
        return answer

    def _attempt(self, request: Request, path: dict[str, str]) -> Response:
        started = time.monotonic()
        try:
            # guard: a-read-waits-out-a-resume
            if not self.waits_for_database:
                # Any other tries once: above all a console's poll of a paused database must not hold a Lambda
                # (one of ApiReservedConcurrency's) 20 s each time; it answers 503 and the console asks again.
                return self._answer(request, path)
            until = started + runtime.settings().api_database_wait_seconds
            with runtime.database().waiting_until(until):
                return self._answer(request, path)
        except Exception as error:  # every failure leaves through errors.py
            return from_exception(error)

    def _answer(self, request: Request, path: dict[str, str]) -> Response:
        actor, now, held = "anonymous", None, frozenset[str]()
        if self.signed and signature.offered(request.headers):
            now = runtime.clock().now()
            # guard: signal-signature-covers-the-route-template
            actor = signature.verify(request.headers, self.path.format(**path), _raw(request), now, runtime.settings())
        elif self.roles is not None:
            principal = auth.authenticate(request.headers, runtime.settings()).require(self.roles)
            actor, held = principal.sub, principal.roles
        ids = {name: schemas.parse_id(path[name], name) for name in self.path_ids}
        names = {name: schemas.parse_name(path[name], name, schema) for name, schema in (self.names or {}).items()}
        query = schemas.parse_query(self.query or schemas.NO_FIELDS, request.query_params, self.name)
        body = self._body(request)
        if self.roles is not None:  # the operations open to anyone never read the database
            schema_version.require(runtime.database())
        sent = {name.lower(): value for name, value in (request.headers or {}).items()}
        call = Call(actor=actor, ids=ids, query=query, body=body, names=names, roles=held, headers=sent, raw=_raw(request),
                    signed=now is not None)
        if now is not None:
            call.now = now  # the clock read that checked the signature's time: one read per request
        result = self.handler(call)
        if not isinstance(result, tuple):
            return Response(body=result, status_code=200)
        if len(result) == 3:
            return Response(body=result[1], status_code=result[0], headers=dict(result[2]))
        return Response(body=result[1], status_code=result[0])

    def _body(self, request: Request) -> Any:
        if self.body is None:
            return None
        raw = _raw(request)
        if not raw:
            if self.body_required:
                raise Invalid("this request needs a JSON body")
            return {}
        if self.max_body_bytes is not None and len(raw) > self.max_body_bytes:
            raise Invalid(f"the body is larger than {self.max_body_bytes} bytes ({len(raw)})")
        parsed = json_body(raw)
        if self.body is schemas.DEFINITION_BODY:
            return parsed  # the engine validates a document whole, reporting every problem
        return schemas.check(self.body, parsed, "body", self.name)


def _raw(request: Request) -> bytes:
    raw = request.raw_body
    return raw if isinstance(raw, bytes) else (raw or "").encode()


class Router:
    """One resource's routes, a Chalice Blueprint the app registers: each `@router.operation` declaration is a
    route of its blueprint and one of its `operations` (the OpenAPI document lists them)."""

    def __init__(self, name: str) -> None:
        self.blueprint = Blueprint(name)
        self.operations: list[Operation] = []

    def operation(
        self, method: str, path: str, summary: str, roles: frozenset[str] | None, responses: Responses, **inputs: Any
    ) -> Callable[[Callable[[Call], Answer]], Operation]:
        def register(handler: Callable[[Call], Answer]) -> Operation:
            op = Operation(method, path, summary, roles, responses, handler=handler, **inputs)
            self.operations.append(op)
            self.blueprint.route(op.path, methods=[op.method], cors=CORS,
                                 content_types=list(op.content_types))(_view(self.blueprint, op))
            return op

        return register


def ok(description: str, schema: Body) -> Responses:
    """The one answer of an operation that succeeds with 200."""
    return {200: (description, schema)}


def _view(routes: Blueprint, op: Operation) -> Callable[..., Response]:
    def view(**path: str) -> Response:
        return op(routes.current_request, **path)

    view.__name__ = op.operation_id  # Chalice names a route after its function
    return view
