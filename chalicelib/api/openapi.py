"""The OpenAPI 3.1 document, built from the declared operations and their schemas.

Every status an operation can answer is listed on it, and none it cannot: a generated client
meets no undeclared refusal. 3.1 because its schemas are plain JSON Schema: the dicts the
handlers validate with are published unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import signature
from .operations import Operation
from .schemas import CONTROL_HEADERS, ERRORS, MAX_ID

_ERROR_MEANINGS = {
    400: "malformed body, query or id",
    401: "no token, or a token that does not verify (or, signed by the game server, a signature that does not)",
    403: "the token's roles may not do this",
    404: "no such run, step or definition (or signal: the message lists those the run's version declares)",
    409: "a control lost (the run or step is not in a state it may act from), or the occurrence asked for"
    " already has a finished run; the message names the run or step and its status. Also a run a newer version of"
    " the engine wrote (a status, mode or park reason this version does not know): it is neither shown nor moved."
    " Also a control's Idempotency-Key another caller pressed on this run (the message names who and for what)."
    " On a definition's routes: a name another definition holds, an occurrence whose run started or whose time is"
    " due, a schedule paused already or not paused (detail.schedule_paused), a stored schedule that no longer reads"
    " (detail.schedule_unreadable). On bulk: a count that moved (detail.count). Nothing changed",
    412: "the If-Match (or body.expected) names a state the run or step has left: nothing changed and nothing was"
    " logged; the message names the state now, and ETag (and detail.etag) its tag",
    422: "the Idempotency-Key was used on this run by this caller for another control or step, or more than 24 h ago",
    415: "the request's Content-Type is not application/json (Chalice checks it on every route)",
    503: "tokens cannot be checked, a secret cannot be read, or the database is unavailable right now (see Retry-After)",
}


def _error_codes(op: Operation) -> list[int]:
    codes = [400, 415]
    if op.roles is not None:
        codes += [401, 403, 503]
    elif op.platform_signed:
        codes.append(401)
    if op.path_ids:
        codes.append(404)
    if _answers_conflict(op):
        codes.append(409)
    if op.request_headers and "If-Match" in op.request_headers:
        codes.append(412)
    # A control's key is judged on its one run. Bulk's is judged run by run: a reused one is that run's `refused`
    # entry, never a 422.
    if op.request_headers is CONTROL_HEADERS:
        codes.append(422)
    return sorted(codes)


# The reads that meet a state which refuses them: a run a newer engine wrote, a stored schedule that no longer reads.
_READS_THAT_CONFLICT = ("/runs/{run_id}", "/definitions/{definition_id}/occurrences")


def _answers_conflict(op: Operation) -> bool:
    """Whether it may answer 409: every POST and PUT behind a token meets some state that refuses it (a run's or a
    step's, a name another definition holds, an occurrence's run, a schedule's pause or its stored text, a bulk
    count that moved, a sandbox not configured)."""
    if op.method == "GET":
        return op.path.startswith(_READS_THAT_CONFLICT)
    return op.roles is not None


_PATH_ID = {"type": "integer", "minimum": 1, "maximum": MAX_ID}
# The game server's signature: both headers, together (docs/api.md has the recipe).
_SIGNED: dict[str, list[str]] = {"signal_signature": [], "signal_timestamp": []}
SECURITY_SCHEMES = {
    "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
    "signal_signature": {
        "type": "apiKey", "in": "header", "name": signature.SIGNATURE,
        "description": "the game server's signature: sha256=<hex HMAC-SHA256 of \"{timestamp}.POST.{path}.{body}\">"
                       " with its signal key, {path} being the route with its ids filled in (no stage prefix)",
    },
    "signal_timestamp": {
        "type": "apiKey", "in": "header", "name": signature.TIMESTAMP,
        "description": f"Unix seconds when it was signed, within {signature.MAX_SKEW_SECONDS} s of the engine's clock",
    },
}


def _parameters(op: Operation) -> list[dict[str, Any]]:
    named = op.names or {}
    params = [
        {"name": name, "in": "path", "required": True, "schema": named.get(name, _PATH_ID)}
        for name in op.path_params
    ]
    if op.query:
        params += [{"name": name, "in": "query", "required": False, "schema": schema} for name, schema in op.query["properties"].items()]
    params += [{"name": name, "in": "header", "required": False, "description": description, "schema": schema}
               for name, (description, schema) in (op.request_headers or {}).items()]
    return params


def _operation(op: Operation) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "parameters": _parameters(op),
        "responses": {
            str(code): {"description": description, "content": {"application/json": {"schema": schema}}}
            for code, (description, schema) in op.responses.items()
        },
    }
    for code, answer in entry["responses"].items():
        if 200 <= int(code) < 300 and op.response_headers:
            answer["headers"] = {name: {"description": description, "schema": schema}
                                 for name, (description, schema) in op.response_headers.items()}
    for code in _error_codes(op):
        entry["responses"].setdefault(str(code), {  # an operation's own words for a refusal win
            "description": _ERROR_MEANINGS[code],
            "content": {"application/json": {"schema": ERRORS}},
        })
    if op.body is not None:
        entry["requestBody"] = {"required": op.body_required, "content": {"application/json": {"schema": op.body}}}
    if op.roles is None:
        entry["security"] = []
    else:
        entry["description"] = "Roles: " + ", ".join(sorted(op.roles)) + "."
    if op.signed:
        entry["security"] = [{"bearer": []}, _SIGNED]
        entry["description"] += " Or the game server, signing the request with its signal key."
    return entry


def document(operations: Iterable[Operation]) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Event run engine",
            "version": "1",
            "description": "Live event runs: console reads, live controls, definitions and scheduling. "
            'Errors are {"errors": ["..."]}, with "detail" beside them when the refusal has fields'
            " (a 403's roles_needed, a 409's run_status).",
        },
        "components": {"securitySchemes": SECURITY_SCHEMES},
        "security": [{"bearer": []}],
        "paths": paths,
    }
