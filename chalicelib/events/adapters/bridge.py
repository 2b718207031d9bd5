"""The game bridge: a signed POST per dispatch, and the classification of its answer.

    POST {GAME_BRIDGE_URL}/actions/{action_id}
    {"run_id", "step_id", "phase", "action", "version", "params", "idempotency_key", "attempt", "rehearsal"?}
    Idempotency-Key, X-Event-Timestamp, X-Event-Signature: sha256=HMAC("{timestamp}.{body}")

The answer is a JSON object; `{"outcome": "refused", "reason": ...}` declines
explicitly, anything else in a 2xx is done. A retry is *in doubt* when nobody
knows whether the game acted: no complete answer after the request's first
byte left, or a 5xx a proxy gave in the game's place (a 502, a 504, or any 5xx
whose body is not a JSON object). A 429, or a 5xx with a JSON object (the game
itself answering), is an answer: the game did not act. The key is kept current through a
rotation of its secret, and a 401 to a signature (a dispatch's or a probe's) re-reads it (`signing`). One overall deadline (the bridge
timeout) covers the whole exchange and the answer is read up to a cap (see
`outbound`): past the deadline the outcome is a retry, past the cap `failed`. A
key that has never been read and cannot be (the sandbox's: `runner/compose.py`)
sends nothing: `failed`, naming its setting.

With `asks_status` (GAME_BRIDGE_STATUS=on), a step in doubt is asked about
before it is sent again (`probe`):

    GET {GAME_BRIDGE_URL}/actions/{action_id}/status/{idempotency_key}?attempt={the new attempt}
    X-Event-Timestamp, X-Event-Signature: sha256=HMAC("{timestamp}.GET.{path and query}.")

`{"status": "applied", "resources"?: [...]}`, `{"status": "not_applied"}` or
`{"status": "in_progress"}`; anything else (a 404, an error, no answer in time)
leaves the step in doubt (`UNKNOWN`). Having answered for attempt n, the game
refuses any delivery of that key with a lower attempt (the attempt fence), so a
late first delivery never lands after a `not_applied`.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import replace
from typing import Any

from ... import outbound, storable
from ..actions.context import ActionContext
from ..actions.outcome import Outcome, Probe, Status
from ..errors import ConnectionFailed, DeadlineExceeded, OutboundError, SecretUnreadable
from ..model import Step
from .signing import SigningKey, get_signed, post_signed

logger = logging.getLogger(__name__)

MAX_REASON = 300


def request_body(step: Step, attempt: int, *, rehearsal: bool = False) -> bytes:
    """What one dispatch signs and sends; a dry run's sandbox bridge is told `"rehearsal": true`."""
    return delivery_body(step.run_id, step.id, step.phase, step.action_id, step.action_version, step.params,
                         step.idempotency_key, attempt, rehearsal=rehearsal)


def delivery_body(run_id: int, step_id: int, phase: int, action: str, version: int, params: dict[str, Any], key: str,
                  attempt: int, *, rehearsal: bool = False) -> bytes:
    """A delivery's body as the bridge contract gives it (a dispatch's, and `bridge-check`'s)."""
    return json.dumps(
        {
            "run_id": run_id,
            "step_id": step_id,
            "phase": phase,
            "action": action,
            "version": version,
            "params": params,
            "idempotency_key": key,
            "attempt": attempt,
            # guard: the-sandbox-is-not-told-it-is-a-rehearsal
            **({"rehearsal": True} if rehearsal else {}),
        },
        separators=(",", ":"),
    ).encode()


PROXY_STATUSES = (502, 504)  # a gateway's own answers: the game behind it may have acted or not


def classify(answer: outbound.Answer) -> Outcome:
    """Retry on 429/5xx (in doubt when a proxy answered: `PROXY_STATUSES`, or a 5xx without a JSON object);
    refused on 409/422 or an explicit refusal; failed otherwise unless a readable 2xx."""
    status = answer.status
    read = _read(answer)
    if status == 429:  # the game's "later", with its reason when it gave one (as a game's 5xx keeps its own)
        return Outcome.retry(_status_and_reason(status, read), http_status=status)
    if status >= 500:
        # guard: a-gateways-502-with-a-json-body-is-an-answer
        from_the_game = isinstance(read, dict) and status not in PROXY_STATUSES
        return Outcome.retry(_status_and_reason(status, read), http_status=status, in_doubt=not from_the_game)
    result = read if isinstance(read, dict) else None  # the answer body, for whoever reads the outcome next
    if status in (409, 422):
        return Outcome.refused(f"HTTP {status}: {_reason(answer, read)}", http_status=status, result=result)
    if not 200 <= status < 300:
        return Outcome.failed(f"HTTP {status}: {_reason(answer, read)}", http_status=status, result=result)
    if isinstance(read, str):
        return Outcome.failed(f"malformed answer: {read}", http_status=status)
    verdict = read.get("outcome", "done")
    if verdict == "done":
        return Outcome.done(http_status=status, result=read)
    if verdict == "refused":
        return Outcome.refused(f"refused: {_reason(answer, read)}", http_status=status, result=read)
    shown = repr(verdict[:40]) if isinstance(verdict, str) else f"of type {type(verdict).__name__}"
    return Outcome.failed(f"malformed answer: unknown outcome {shown}", http_status=status)


def _read(answer: outbound.Answer) -> dict[str, Any] | str:
    """The answer as a JSON object, or what keeps it from being one."""
    if answer.truncated:
        return f"larger than the {outbound.MAX_ANSWER_BYTES:,}-byte answer cap"
    try:
        value = json.loads(answer.body)
    except RecursionError:  # a C-level parse of nesting past the recursion limit: refused, never retried
        return "JSON nested too deeply"
    except ValueError:
        value = None
    return value if isinstance(value, dict) else "not a JSON object"


def _given_reason(read: dict[str, Any] | str) -> str | None:
    """The `reason` a JSON answer gave, storable; None when it gave none."""
    reason = read.get("reason") if isinstance(read, dict) else None
    # guard: an-unstorable-reason-is-written
    return storable.cleaned(reason[:MAX_REASON]) if isinstance(reason, str) and reason.strip() else None


def _reason(answer: outbound.Answer, read: dict[str, Any] | str) -> str:
    text = answer.body[: MAX_REASON * 4].decode("utf-8", "replace").strip()[:MAX_REASON]
    return _given_reason(read) or text or "no reason given"


def _status_and_reason(status: int, read: dict[str, Any] | str) -> str:
    """`HTTP 503`, with the reason a JSON answer gave (`HTTP 503: the world is saving`): the person reading why
    a step is retried, gave up or is in doubt sees what the game said."""
    reason = _given_reason(read)
    return f"HTTP {status}: {reason}" if reason else f"HTTP {status}"


def read_status(answer: outbound.Answer) -> Probe:
    """A status endpoint's answer: a 200 with a JSON object naming one of the three statuses, else unknown."""
    read = _read(answer)
    # guard: a-status-that-is-not-200-is-believed
    said = read.get("status") if isinstance(read, dict) and answer.status == 200 else None
    known = {s.value: s for s in Status if s is not Status.UNKNOWN}
    if isinstance(read, dict) and isinstance(said, str) and said in known:
        applied = known[said] is Status.APPLIED
        # an applied key whose answer was a refusal stays a refusal: the game declined it, whichever answer arrived
        refused = f"refused: {_reason(answer, read)}" if applied and read.get("outcome") == "refused" else None
        return Probe(known[said], said, read if applied else None, answer.status, refused=refused)
    why = _status_and_reason(answer.status, read) if answer.status != 200 else (
        read if isinstance(read, str) else "no known status")
    return Probe(Status.UNKNOWN, f"{Status.UNKNOWN.value}: {why}"[:MAX_REASON], http_status=answer.status)


def status_target(endpoint: outbound.Endpoint, step: Step, attempt: int) -> str:
    """The status endpoint's path and query for `step` asked before `attempt` (what its signature covers)."""
    target = endpoint.target(f"/actions/{step.action_id}/status/{step.idempotency_key}")
    return f"{target}{'&' if '?' in target else '?'}attempt={attempt}"


class BridgeClient:
    def __init__(self, base_url: str, secret: str | SigningKey, *, timeout: float, rehearsal: bool = False,
                 asks_status: bool = False):
        try:
            self._endpoint = outbound.Endpoint.parse(base_url)
        except ValueError:
            raise ValueError(f"GAME_BRIDGE_URL must be an http(s) URL, got {base_url!r}") from None
        if timeout <= 0:
            raise ValueError(f"the bridge timeout must be positive, got {timeout!r}")
        self._key = secret if isinstance(secret, SigningKey) else SigningKey.fixed(secret)
        self.timeout = timeout
        self.rehearsal = rehearsal  # the sandbox of dry runs: every body says so
        self.asks_status = asks_status  # GAME_BRIDGE_STATUS: a step in doubt is asked about before it is re-sent

    def probe(self, context: ActionContext) -> Probe:
        """Ask the game whether it applied the step in doubt, before `context.attempt` is sent: one signed GET
        under the bridge's own deadline and answer cap. Never raises: no answer is UNKNOWN."""
        target = status_target(self._endpoint, context.step, context.attempt)
        started = time.monotonic()
        try:
            # A 401 re-reads a rotated key and asks once more, as a dispatch does: else a step would wait in doubt
            # (or park) until the secrets cache aged.
            # guard: the-probe-keeps-a-refused-key
            answer = get_signed(self._endpoint, target, self._key, context.now, timeout=self.timeout)
        except OutboundError as error:
            return Probe(Status.UNKNOWN, f"{Status.UNKNOWN.value}: {error}"[:MAX_REASON], latency_ms=_ms_since(started))
        return replace(read_status(answer), latency_ms=_ms_since(started))

    def dispatch(self, context: ActionContext) -> Outcome:
        step, now = context.step, context.now
        body = request_body(step, context.attempt, rehearsal=self.rehearsal)
        headers = {"Content-Type": "application/json", "Idempotency-Key": step.idempotency_key}
        started = time.monotonic()
        try:
            answer = post_signed(
                self._endpoint, self._endpoint.target(f"/actions/{step.action_id}"), body, headers, self._key, now,
                timeout=self.timeout,
            )
        except DeadlineExceeded as error:
            return Outcome.retry(f"timed out: {error}", latency_ms=_ms_since(started), in_doubt=error.sent)
        except ConnectionFailed as error:
            # guard: a-reset-after-sending-is-not-in-doubt
            return Outcome.retry(f"connection error: {error}"[:MAX_REASON], latency_ms=_ms_since(started),
                                 in_doubt=error.sent)
        # guard: a-dispatch-without-its-key-is-an-internal-error
        except SecretUnreadable as error:  # a key never read (the sandbox's): nothing was sent
            logger.error("step %s of run %s not sent: %s", step.id, step.run_id, error.messages[0])
            return Outcome.failed(f"not sent: {error.messages[0]}", latency_ms=_ms_since(started))
        return replace(classify(answer), latency_ms=_ms_since(started))


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
