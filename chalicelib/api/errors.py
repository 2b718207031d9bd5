"""The one place a failure becomes an HTTP answer: `{"errors": ["..."]}` with its status.

A refusal that carries fields a client acts on answers them beside the
messages, `{"errors": [...], "detail": {...}}`: a 403 the roles that would do
(`roles_needed`) and the token's (`roles_held`), a 409 the status the run is in
(`run_status`, and for a step's control `step_status` and `step_parked`), so a
client never parses a message. Every refusal arrives here as an `EngineError`
(the trees are drawn in `chalicelib.errors` and `chalicelib.events.errors`), and
HTTP_STATUS below is the only place that
gives one a status; Chalice's own refusals (415 for
a content type the route does not take, 405) are rewritten by `chalice_errors_rewritten` into the
same shape. A database that cannot be reached (or whose connection drops, or
that refuses the engine's credentials even after the secret is read again) is 503;
any other database error, like anything else, is a bug: logged, answered 500 in
the same shape. A 503 for a connection that could not be made at all (a resume
from a pause met by a read, or one a signal or control could not wait out) is
counted apart (`DatabaseUnavailableAnswers`), so the 5xx alarm counts the rest.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from chalice import Response

from .. import observability, storable
from ..db import credentials_refused, lost_connection, never_connected
from ..events.errors import (
    AuthUnavailable,
    Clash,
    Conflict,
    EngineError,
    Forbidden,
    Invalid,
    KeyReused,
    NewerRow,
    NotFound,
    SchemaBehind,
    SecretUnreadable,
    Stale,
    Unauthorized,
)

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024
# A document can break in 80,000 places; the author needs the first few, and
# the answer must stay small.
MAX_ERRORS_LISTED = 50
RETRY_AFTER_SECONDS = 5  # a 503 (database waking or unreachable, keys unreachable) is worth retrying soon


def error_response(status: int, messages: list[str], detail: dict[str, Any] | None = None,
                   headers: dict[str, str | list[str]] | None = None) -> Response:
    """The error shape; beyond MAX_ERRORS_LISTED problems, one last entry counts the rest; `detail` only when there is one."""
    listed = messages[:MAX_ERRORS_LISTED]
    if len(messages) > MAX_ERRORS_LISTED:
        listed.append(f"… and {len(messages) - MAX_ERRORS_LISTED} more problems")
    headers = dict(headers or {})
    if status == 503:
        headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    body: dict[str, Any] = {"errors": listed}
    if detail:
        body["detail"] = detail
    return Response(body=body, status_code=status, headers=headers)


HTTP_STATUS: dict[type[EngineError], int] = {
    Invalid: 400,
    Unauthorized: 401,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    Stale: 412,  # the If-Match (or `expected`) names a state the run or step has left; ETag names the one now
    KeyReused: 422,  # an Idempotency-Key already used for another control, or too long ago
    Clash: 409,
    NewerRow: 409,  # a newer version's run (a rollback past its migration): this version leaves it alone
    AuthUnavailable: 503,  # the server's trouble, not the caller's: worth trying again
    SecretUnreadable: 503,  # likewise: a permission or an outage an operator fixes, or one that passes
    SchemaBehind: 503,  # an upgrade whose migration has not run yet: it passes once it has
}


def http_status(error: EngineError) -> int:
    """The status of the nearest class in HTTP_STATUS; a bare EngineError is a bug, so 500."""
    return next((HTTP_STATUS[cls] for cls in type(error).__mro__ if cls in HTTP_STATUS), 500)


def from_exception(error: BaseException) -> Response:
    if isinstance(error, EngineError):
        # A 412 names the state now by its tag too, as GET /runs/{id} would (never cached: operations.PRIVATE).
        headers: dict[str, str | list[str]] = {"ETag": error.etag} if isinstance(error, Stale) else {}
        status, messages = http_status(error), error.messages or [str(error)]
        if status == 503 and not isinstance(error, SchemaBehind):  # schema_version logs its own line
            # The server's trouble (the key set, a secret): what Api5xxAlarm's runbook reads; the cause stays here.
            cause = f" ({error.__cause__})" if error.__cause__ else ""
            logger.error("answered 503: %s%s", "; ".join(messages), cause)
        return error_response(status, messages, error.detail, headers)
    if lost_connection(error):
        # The database is unreachable or restarting (retries already spent): the
        # server's trouble, and worth trying again, so not a bare 500.
        logger.warning("database unavailable while answering a request: %s", error)
        # guard: a-resume-alarms-as-a-server-error
        if never_connected(error):
            observability.record_database_unavailable_answer()
        return error_response(503, ["the database is unavailable; try again shortly"])
    if credentials_refused(error):
        # Refused even with the secret read again: a rotation half done, or a broken one.
        logger.error("the database refused the engine's credentials after reading them again: %s", error)
        return error_response(503, ["the database is unavailable; try again shortly"])
    logger.exception("unexpected error while answering a request")
    return error_response(500, ["internal error"])


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_body(raw: bytes) -> Any:
    """The parsed body; Invalid when it is too large, too deep, not JSON, or not storable.

    NaN, Infinity and overflowing numbers are refused (they would be written back
    out as invalid JSON), and so are lone surrogates (not encodable as UTF-8).
    """
    if len(raw) > MAX_BODY_BYTES:
        raise Invalid(f"the body is larger than {MAX_BODY_BYTES} bytes")
    too_deep = Invalid(f"the body nests deeper than {storable.MAX_JSON_DEPTH} levels of objects and arrays")
    try:
        parsed = json.loads(raw, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError:  # the parser gives up around a thousand levels, far past the limit
        raise too_deep from None
    except ValueError:  # UnicodeDecodeError is a ValueError
        raise Invalid("the body is not valid JSON") from None
    # The rules every stored value meets (`chalicelib.storable`), here refused rather than cleaned.
    if storable.too_deep(parsed):
        raise too_deep
    if not storable.encodable(parsed):
        raise Invalid("the body is not valid JSON")
    return parsed


# One person's answer: never kept on a shared machine's disk, never sniffed as another type.
PRIVATE = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


def chalice_errors_rewritten(routes: Mapping[str, Mapping[str, Any]]) -> Callable[[Any, Callable[[Any], Response]], Response]:
    """HTTP middleware: Chalice's own `{"Code", "Message"}` answers in our shape, PRIVATE as every refusal of a
    route behind a token is (Chalice answers a 415 before the route's own code runs); a 415 names what the
    route takes (`routes`: the app's, path -> method -> its entry)."""

    def rewrite(event: Any, get_response: Callable[[Any], Response]) -> Response:
        response = get_response(event)
        body = response.body
        if isinstance(body, dict) and set(body) == {"Code", "Message"}:
            message = str(body["Message"])
            if response.status_code == 415:  # e.g. curl -d without a Content-Type sends a form
                route = routes.get(event.path, {}).get(event.method)
                message = _unsupported(list(getattr(route, "content_types", None) or [JSON]),
                                       (event.headers.get("content-type") or "no Content-Type").split(";")[0].strip())
            response.body = {"errors": [message]}
            response.headers = {**response.headers, **PRIVATE}
        return response

    return rewrite


JSON = "application/json"


def _unsupported(taken: list[str], sent: str) -> str:
    """A 415's words: what the route takes, what was sent, and for JSON how curl sends it."""
    hint = f" (with curl: -H 'Content-Type: {JSON}')" if taken == [JSON] else ""
    return f"send the body as {' or '.join(taken)}, not {sent[:100]}{hint}"
