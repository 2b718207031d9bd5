"""The game server's signature on a signal: `X-Signal-Timestamp` and `X-Signal-Signature`, checked in constant time.

Invariant: a signed request is accepted only when its signature is the
HMAC-SHA256, with the game server's own signal key (`EVENTS_SIGNAL_SECRET`, or
the secret `EVENTS_SIGNAL_SECRET_ARN` names; never the game bridge's key), of
`"{timestamp}.POST.{path}.{body}"`, where `path` is the route with its ids filled
in (`/runs/42/signals/boss_defeated`: no stage prefix), so a signature is good
for one run, one name and one body only; and its timestamp is within
MAX_SKEW_SECONDS of the engine's clock, so it cannot be replayed later. Anything
else is Unauthorized before the request is read any further, and nothing is
written. A key named by a secret is read through the secrets cache; a signature
that does not verify makes it be read again past the cache (at most once per
`signing.REREAD_SECONDS`), so a rotated key is taken at once.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Mapping
from datetime import UTC, datetime

from ..config import Settings
from ..errors import AuthUnavailable, Unauthorized
from ..events.adapters.signing import SigningKey

TIMESTAMP = "X-Signal-Timestamp"
SIGNATURE = "X-Signal-Signature"
MAX_SKEW_SECONDS = 300
GAME = "game"  # the actor of a signed signal, in its receipt and the run log
DOES_NOT_VERIFY = ("the signal's signature does not verify: sign \"{timestamp}.POST.{path}.{body}\" for this run"
                   " and name, with the game server's signal key")

_keys: dict[str, SigningKey] = {}
_keys_lock = threading.Lock()


def offered(headers: Mapping[str, str]) -> bool:
    """Whether the request is signed (it carries either header) rather than sent with a token."""
    return bool(headers.get(TIMESTAMP.lower()) or headers.get(SIGNATURE.lower()))


def message(timestamp: str, path: str, body: bytes) -> bytes:
    """What the signature covers."""
    # guard: signal-signature-leaves-out-the-body
    return f"{timestamp}.POST.{path}.".encode() + body


def sign(key: str, timestamp: str, path: str, body: bytes) -> str:
    """The `X-Signal-Signature` value of a request (the game server's side of the recipe, and the tests')."""
    return "sha256=" + hmac.new(key.encode(), message(timestamp, path, body), hashlib.sha256).hexdigest()


def verify(headers: Mapping[str, str], path: str, body: bytes, now: datetime, settings: Settings) -> str:
    """The actor of a correctly signed request (`game`); Unauthorized otherwise (see the module's invariant)."""
    timestamp = (headers.get(TIMESTAMP.lower()) or "").strip()
    signature = (headers.get(SIGNATURE.lower()) or "").strip()
    if not timestamp or not signature:
        raise Unauthorized(f"a signed signal sends both {TIMESTAMP} and {SIGNATURE}")
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
        raise Unauthorized(f"{TIMESTAMP} must be Unix seconds, got {timestamp[:40]!r}")
    skew = int(timestamp) - int(now.replace(tzinfo=UTC).timestamp())
    # guard: signal-signature-of-any-time-taken
    if abs(skew) > MAX_SKEW_SECONDS:
        raise Unauthorized(f"{TIMESTAMP} is {abs(skew)} s {'ahead of' if skew > 0 else 'behind'} the engine's clock"
                           f" (at most {MAX_SKEW_SECONDS} s): sign each request when it is sent")
    scheme, _, digest = signature.partition("=")
    if scheme != "sha256" or not digest:
        raise Unauthorized(f"{SIGNATURE} must be sha256=<hex HMAC-SHA256>")
    key = _key(settings)
    signed = message(timestamp, path, body)
    current = key.current()
    if _matches(current, signed, digest):
        return GAME
    fresh = key.reread(current)  # the key may have been rotated since the cache read it
    if fresh is not None and _matches(fresh, signed, digest):
        return GAME
    raise Unauthorized(DOES_NOT_VERIFY)


def _matches(key: str, signed: bytes, digest: str) -> bool:
    expected = hmac.new(key.encode(), signed, hashlib.sha256).hexdigest()
    # guard: signal-signature-not-compared
    return hmac.compare_digest(expected, digest.lower().encode("ascii", "replace").decode())


def _key(settings: Settings) -> SigningKey:
    if settings.signal_secret:
        return SigningKey.fixed(settings.signal_secret)
    arn = settings.signal_secret_arn
    if not arn:
        raise AuthUnavailable("signed signals are not configured (EVENTS_SIGNAL_SECRET or EVENTS_SIGNAL_SECRET_ARN)")
    with _keys_lock:
        if arn not in _keys:
            from ..secrets import plain_secret  # boto3 only where a secret ARN is configured

            _keys[arn] = SigningKey(lambda force: plain_secret(arn, "EVENTS_SIGNAL_SECRET_ARN", force_fetch=force))
        return _keys[arn]
