"""Sending the engine a signal from the game server, signed, and retried until the engine has it.

Invariant: a signal is sent until the engine answers it: 2xx is done (a repeat
of a signal the engine already has answers 200 with the first receipt, so a
re-send is safe); 429, a 5xx, a connection that fails and an answer not whole
in time are retried with backoff for up to RETRY_SECONDS (a sleeping
deployment's database takes up to 30 s to resume), never sooner than the
answer's Retry-After says (one that asks past the retry time gives up at
once); any other 4xx is final and raised with the engine's own error text
(its `errors`). Nothing outlasts the retry time: no
attempt starts once it is spent, and each attempt has an overall deadline
(REQUEST_SECONDS, or what is left of the retry time if less) that bounds every
read of its answer, so one dripped byte by byte fails the attempt as a
TimeoutError. An answer is read up to MAX_ANSWER_BYTES.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import io
import json
import socket
import time
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import quote, urlsplit

RETRY_SECONDS = 90.0
REQUEST_SECONDS = 10.0
MAX_ANSWER_BYTES = 64 * 1024
MAX_BACKOFF_SECONDS = 15.0


class SignalRefused(Exception):
    """The engine refused the signal (a 4xx other than 429): `status` and the engine's `error` text."""

    def __init__(self, status: int, error: str):
        super().__init__(f"the engine refused the signal: HTTP {status}: {error}")
        self.status, self.error = status, error


class SignalNotDelivered(Exception):
    """The engine did not take the signal within the retry time: what it last answered."""


def signal_headers(key: str, path: str, body: bytes, now: float | None = None) -> dict[str, str]:
    """The engine's signal signature: HMAC-SHA256 of "{timestamp}.POST.{path}.{body}" (docs/api.md)."""
    timestamp = str(int(time.time() if now is None else now))
    digest = hmac.new(key.encode(), f"{timestamp}.POST.{path}.".encode() + body, hashlib.sha256).hexdigest()
    return {"X-Signal-Timestamp": timestamp, "X-Signal-Signature": f"sha256={digest}"}


def send_signal(api_url: str, key: str, run_id: int, name: str, body: dict[str, Any] | None = None, *,
                retry_seconds: float = RETRY_SECONDS, sleep: Callable[[float], None] = time.sleep,
                monotonic: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """POST {api_url}/runs/{run_id}/signals/{name} signed with the signal key; the engine's answer."""
    path = f"/runs/{int(run_id)}/signals/{quote(name, safe='')}"
    payload = json.dumps(body if body is not None else {}).encode()
    started, backoff, last = monotonic(), 1.0, "nothing"

    def given_up() -> SignalNotDelivered:
        return SignalNotDelivered(f"signal {name!r} to run {run_id} not taken in {retry_seconds:g} s; last: {last}")

    while True:
        left = retry_seconds - (monotonic() - started)
        if left <= 0:
            raise given_up()
        try:
            status, answer, retry_after = _post(api_url, path, payload, signal_headers(key, path, payload),
                                                min(REQUEST_SECONDS, left))
        except (OSError, http.client.HTTPException) as error:
            status, answer, retry_after, last = 0, {}, None, f"{type(error).__name__}: {error}"
        if 200 <= status < 300:
            return answer
        if status and status != 429 and status < 500:
            raise SignalRefused(status, _said(answer))
        if status:
            last = f"HTTP {status}: {_said(answer)}" + (f" (Retry-After: {retry_after:g} s)" if retry_after is not None else "")
        wait = retry_after if retry_after is not None else backoff
        if monotonic() - started + wait > retry_seconds:
            raise given_up()
        sleep(wait)
        backoff = min(MAX_BACKOFF_SECONDS, backoff * 2)


def _said(answer: dict[str, Any]) -> str:
    """The engine's own error text: its `errors` (docs/api.md, "Errors"), else an `error` or `message`."""
    errors = answer.get("errors")
    if isinstance(errors, list) and errors:
        return "; ".join(str(error) for error in errors)
    return str(answer.get("error") or answer.get("message") or answer)


def _post(api_url: str, path: str, payload: bytes, headers: dict[str, str],
          seconds: float) -> tuple[int, dict[str, Any], float | None]:
    """One attempt, whole within `seconds`: TimeoutError when it is not."""
    url = urlsplit(api_url.rstrip("/"))
    kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    deadline = time.monotonic() + seconds  # real time, whatever clock the retry loop was given
    conn = kind(url.hostname or "", url.port, timeout=seconds)
    try:
        conn.connect()
        conn.sock.settimeout(_left(deadline))  # sendall's timeout bounds the whole send
        conn.request("POST", url.path + path, payload, {**headers, "Content-Type": "application/json"})
        # http.client's timeout is per socket operation: every read here waits at most until the deadline
        response = http.client.HTTPResponse(cast(socket.socket, _Reads(conn.sock, deadline)), method="POST")
        response.begin()
        raw = b""
        while len(raw) < MAX_ANSWER_BYTES:
            chunk = response.read1(MAX_ANSWER_BYTES - len(raw))
            if not chunk:
                break
            raw += chunk
        retry_after = response.getheader("Retry-After")
    except TimeoutError:
        raise TimeoutError(f"no whole answer within {seconds:g} s") from None
    finally:
        conn.close()
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = {"error": raw[:200].decode(errors="replace")}
    delay = float(retry_after) if retry_after and retry_after.isdigit() else None
    return response.status, answer if isinstance(answer, dict) else {"error": str(answer)[:200]}, delay


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline passed")
    return left


class _Reads(io.RawIOBase):
    """A socket's bytes, each read's timeout the time left before `deadline`; `makefile` is all HTTPResponse uses."""

    def __init__(self, sock: socket.socket, deadline: float):
        super().__init__()
        self._sock, self._deadline = sock, deadline

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(self)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(_left(self._deadline))
        return self._sock.recv_into(buffer)
