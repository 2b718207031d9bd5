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
rotation of its secret, and a 401 to a signature re-reads it (`signing`). One overall deadline (the bridge
timeout) covers the whole exchange and the answer is read up to a cap (see
`outbound`): past the deadline the outcome is a retry, past the cap `failed`.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from ... import outbound
from ..errors import ConnectionFailed, DeadlineExceeded
from ..model import Step
from .context import ActionContext
from .outcome import Outcome
from .signing import SigningKey, post_signed

MAX_REASON = 300


def request_body(step: Step, attempt: int, *, rehearsal: bool = False) -> bytes:
    """What one dispatch signs and sends; a dry run's sandbox bridge is told `"rehearsal": true`."""
    return json.dumps(
        {
            "run_id": step.run_id,
            "step_id": step.id,
            "phase": step.phase,
            "action": step.action_id,
            "version": step.action_version,
            "params": step.params,
            "idempotency_key": step.idempotency_key,
            "attempt": attempt,
            **({"rehearsal": True} if rehearsal else {}),
        },
        separators=(",", ":"),
    ).encode()


PROXY_STATUSES = (502, 504)  # a gateway's own answers: the game behind it may have acted or not


def classify(answer: outbound.Answer) -> Outcome:
    """Retry on 429/5xx (in doubt when a proxy answered: `PROXY_STATUSES`, or a 5xx without a JSON object);
    refused on 409/422 or an explicit refusal; failed otherwise unless a readable 2xx."""
    status = answer.status
    if status == 429:
        return Outcome.retry(f"HTTP {status}", http_status=status)
    read = _read(answer)
    if status >= 500:
        from_the_game = isinstance(read, dict) and status not in PROXY_STATUSES
        return Outcome.retry(f"HTTP {status}", http_status=status, in_doubt=not from_the_game)
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


def _reason(answer: outbound.Answer, read: dict[str, Any] | str) -> str:
    reason = read.get("reason") if isinstance(read, dict) else None
    if isinstance(reason, str) and reason.strip():
        return reason[:MAX_REASON]
    text = answer.body[: MAX_REASON * 4].decode("utf-8", "replace").strip()[:MAX_REASON]
    return text or "no reason given"


class BridgeClient:
    def __init__(self, base_url: str, secret: str | SigningKey, *, timeout: float, rehearsal: bool = False):
        try:
            self._endpoint = outbound.Endpoint.parse(base_url)
        except ValueError:
            raise ValueError(f"GAME_BRIDGE_URL must be an http(s) URL, got {base_url!r}") from None
        if timeout <= 0:
            raise ValueError(f"the bridge timeout must be positive, got {timeout!r}")
        self._key = secret if isinstance(secret, SigningKey) else SigningKey.fixed(secret)
        self.timeout = timeout
        self.rehearsal = rehearsal  # the sandbox of dry runs: every body says so

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
            return Outcome.retry(f"connection error: {error}"[:MAX_REASON], latency_ms=_ms_since(started),
                                 in_doubt=error.sent)
        return replace(classify(answer), latency_ms=_ms_since(started))


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
