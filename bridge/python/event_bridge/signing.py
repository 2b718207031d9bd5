"""The engine's signatures, checked as the bridge contract says (docs/contract.md, "The game bridge").

Invariant: nothing is read from a request before its signature verifies. A
delivery is signed as `sha256=HMAC-SHA256(key, "{timestamp}." + body)`, a
status request as `... "{timestamp}.GET.{path and query}."`, and a timestamp
more than WINDOW_SECONDS from this side's clock is refused, so a captured
request cannot be replayed later. Comparisons are constant-time. During a key
rotation the bridge holds two keys and takes a request signed with either.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Sequence

WINDOW_SECONDS = 300  # either side of this side's clock, as the engine allows the game's signals


class Unsigned(Exception):
    """The request's signature or timestamp does not verify: answer 401 and act on nothing."""


def signature(key: str, timestamp: str, signed: bytes) -> str:
    digest = hmac.new(key.encode(), timestamp.encode() + b"." + signed, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def signed_headers(key: str, signed: bytes, now: float | None = None) -> dict[str, str]:
    """The two headers the engine sends with `signed` (what a test or a conformance check sends)."""
    timestamp = str(int(time.time() if now is None else now))
    return {"X-Event-Timestamp": timestamp, "X-Event-Signature": signature(key, timestamp, signed)}


def verify(key: str | Sequence[str], headers: dict[str, str], signed: bytes, now: float | None = None) -> None:
    """Raises Unsigned unless `headers` sign `signed` with `key` (or any of a list of keys: a rotation) within the
    window. Header names lower-cased."""
    keys = [key] if isinstance(key, str) else list(key)
    timestamp = headers.get("x-event-timestamp", "")
    given = headers.get("x-event-signature", "")
    if not timestamp or not given:
        raise Unsigned("unsigned: X-Event-Timestamp and X-Event-Signature are required")
    if not timestamp.isdigit():
        raise Unsigned("X-Event-Timestamp is not Unix seconds")
    # every key compared, each in constant time: which one matched is not told by the time taken
    matched = [hmac.compare_digest(given.encode(), signature(each, timestamp, signed).encode()) for each in keys if each]
    if not any(matched):
        raise Unsigned("the signature does not verify with this bridge's key" + ("s" if len(keys) > 1 else ""))
    skew = abs((time.time() if now is None else now) - int(timestamp))
    if skew > WINDOW_SECONDS:
        raise Unsigned(f"the timestamp is {skew:.0f} s from this side's clock (at most {WINDOW_SECONDS} s)")


def status_signed(target: str) -> bytes:
    """What a status request's signature covers: its method and its path with the query."""
    return f"GET.{target}.".encode()
