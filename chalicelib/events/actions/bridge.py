"""The game bridge: a signed POST per dispatch, and the classification of its answer (SPEC §6).

    POST {GAME_BRIDGE_URL}/actions/{action_id}
    {"run_id", "step_id", "phase", "action", "version", "params", "idempotency_key", "attempt"}
    Idempotency-Key, X-Event-Timestamp, X-Event-Signature: sha256=HMAC("{timestamp}.{body}")

The answer is a JSON object; `{"outcome": "refused", "reason": ...}` declines
explicitly, anything else in a 2xx is done. http.client rather than urllib: a
redirect or a proxy from the environment must never re-route a signed command.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import socket
import time
from dataclasses import replace
from datetime import datetime, timezone
from urllib.parse import urlsplit

from ..model import Step
from .outcome import Outcome

MAX_REASON = 300


def signature(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def request_body(step: Step, attempt: int) -> bytes:
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
        },
        separators=(",", ":"),
    ).encode()


def classify(status: int, raw: bytes) -> Outcome:
    """SPEC §6: retry on 429/5xx; refused on 409/422 or an explicit refusal; failed otherwise unless 2xx."""
    if status == 429 or status >= 500:
        return Outcome.retry(f"HTTP {status}", http_status=status)
    if status in (409, 422):
        return Outcome.refused(f"HTTP {status}: {_reason(raw)}", http_status=status)
    if not 200 <= status < 300:
        return Outcome.failed(f"HTTP {status}: {_reason(raw)}", http_status=status)
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return Outcome.failed("malformed answer: not a JSON object", http_status=status)
    verdict = answer.get("outcome", "done")
    if verdict == "done":
        return Outcome.done(http_status=status)
    if verdict == "refused":
        return Outcome.refused(f"refused: {_reason(raw)}", http_status=status)
    return Outcome.failed(f"malformed answer: unknown outcome {str(verdict)[:40]!r}", http_status=status)


def _reason(raw: bytes) -> str:
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if isinstance(answer, dict) and answer.get("reason"):
        return str(answer["reason"])[:MAX_REASON]
    return raw.decode("utf-8", "replace").strip()[:MAX_REASON] or "no reason given"


class GameBridge:
    def __init__(self, base_url: str, secret: str, *, timeout: float):
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"GAME_BRIDGE_URL must be an http(s) URL, got {base_url!r}")
        if timeout <= 0:
            raise ValueError(f"the bridge timeout must be positive, got {timeout!r}")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._path = parts.path
        self._secret = secret
        self.timeout = timeout

    def dispatch(self, step: Step, attempt: int, now: datetime) -> Outcome:
        body = request_body(step, attempt)
        timestamp = str(int(now.replace(tzinfo=timezone.utc).timestamp()))
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": step.idempotency_key,
            "X-Event-Timestamp": timestamp,
            "X-Event-Signature": signature(self._secret, timestamp, body),
        }
        connection_class = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        connection = connection_class(self._host, self._port, timeout=self.timeout)
        started = time.monotonic()
        try:
            connection.request("POST", f"{self._path}/actions/{step.action_id}", body=body, headers=headers)
            response = connection.getresponse()
            raw = response.read()
        except (socket.timeout, TimeoutError):
            return Outcome.retry(f"timed out after {self.timeout:g}s", latency_ms=_ms_since(started))
        except (OSError, http.client.HTTPException) as error:
            return Outcome.retry(f"connection error: {type(error).__name__}: {error}"[:MAX_REASON], latency_ms=_ms_since(started))
        finally:
            connection.close()
        return replace(classify(response.status, raw), latency_ms=_ms_since(started))


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
