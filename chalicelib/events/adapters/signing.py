"""The HMAC key outbound requests are signed with, kept current through a rotation of its secret.

Invariant: a request (a POST over its body, a GET over its method and path) is
signed with the key as it stands — a key named by a secret ARN is read through
the secrets cache on every use, so a rotated secret is signed with within the
cache's max age (300 s) — and a receiver that answers 401 to a signature makes
the key be read again at once, past the cache: when that gives another key, the
same request (same body, same idempotency key) is sent once more, signed with
it, inside what is left of the same overall deadline; the key's reads count
against that deadline too (the re-read is made only while a whole read and a
send still fit). The receiver refused the
first signature, so it acted on nothing. A dispatch, a webhook's post and a
status probe all go through this one path (`post_signed`, `get_signed`).
Forced re-reads are at most one per REREAD_SECONDS per key, so a receiver that
refuses everything costs a Secrets Manager call every few seconds, not one per
step; a read that fails keeps the last key read (and is logged) and is not
tried again for UNREADABLE_SECONDS, so a Secrets Manager outage after the
cache's age never stops dispatching nor holds each dispatch for a read.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime

from ... import outbound
from ...errors import DeadlineExceeded
from ..errors import SecretUnreadable

logger = logging.getLogger(__name__)

REREAD_SECONDS = 5.0
UNREADABLE_SECONDS = 30.0  # how long the last key is used unasked after the secret could not be read
UNAUTHORISED = 401


class SigningKey:
    """A fixed key (`SigningKey.fixed`), or one read by `read(force)` from a secret."""

    def __init__(self, read: Callable[[bool], str], *, read_worst_seconds: float = 0.0,
                 monotonic: Callable[[], float] = time.monotonic):
        self._read = read
        self.read_worst_seconds = read_worst_seconds  # the longest a read of the secret takes (0: a fixed key)
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._last: str | None = None
        self._forced_at = -float("inf")
        self._unreadable_until = -float("inf")  # after a failed read, the last key is used without asking

    @classmethod
    def fixed(cls, key: str) -> SigningKey:
        return cls(lambda force: key)

    def current(self) -> str:
        """The key now: from the secrets cache (read again once older than its max age)."""
        with self._lock:
            if self._last is not None and self._monotonic() < self._unreadable_until:
                return self._last  # the secret could not be read a moment ago: no dispatch waits on it again
        try:
            key = self._read(False)
        except SecretUnreadable as error:
            with self._lock:
                if self._last is None:
                    raise
                self._unreadable_until = self._monotonic() + UNREADABLE_SECONDS
                logger.warning("%s; signing with the key read before", error.messages[0])
                return self._last
        with self._lock:
            self._last = key
        return key

    def reread(self, refused: str) -> str | None:
        """After a 401 to a request signed with `refused`: the key read past the cache, if it differs."""
        with self._lock:
            now = self._monotonic()
            if now - self._forced_at < REREAD_SECONDS:
                return self._last if self._last not in (None, refused) else None
            self._forced_at = now
        try:
            key = self._read(True)
        except SecretUnreadable as error:
            logger.warning("%s after a 401 to a signature", error.messages[0])
            return None
        with self._lock:
            self._last = key
        return key if key != refused else None


def post_signed(endpoint: outbound.Endpoint, target: str, body: bytes, headers: dict[str, str], key: SigningKey,
                at: datetime, *, timeout: float, max_answer_bytes: int = outbound.MAX_ANSWER_BYTES) -> outbound.Answer:
    """`outbound.post` signed with `key` at `at` over its body, sent once more with a re-read key after a 401."""
    return _signed(lambda signature, left: outbound.post(endpoint, target, body, {**headers, **signature}, timeout=left,
                                                         max_answer_bytes=max_answer_bytes), body, key, at, timeout)


def get_signed(endpoint: outbound.Endpoint, target: str, key: SigningKey, at: datetime, *,
               timeout: float) -> outbound.Answer:
    """`outbound.get` of `target` signed with `key` at `at` over "GET.{target}." (a GET has no body to sign: its
    method and path are what it asks), sent once more with a re-read key after a 401, as a POST is."""
    # guard: the-probe-is-signed-without-its-method-and-path
    signs = f"GET.{target}.".encode()
    return _signed(lambda signature, left: outbound.get(endpoint, target=target, headers=signature, timeout=left),
                   signs, key, at, timeout)


def _signed(send: Callable[[dict[str, str], float], outbound.Answer], signs: bytes, key: SigningKey, at: datetime,
            timeout: float) -> outbound.Answer:
    """`send(signature headers, seconds left)` signed over `signs` with the key now; after a 401, once more with
    the key read again past the cache, when it differs, inside what is left of the one deadline (see above)."""
    deadline = time.monotonic() + timeout
    signed_with = key.current()  # a read of the secret, when its cache is old, is inside the deadline too
    left = deadline - time.monotonic()
    # guard: a-signed-request-runs-past-its-deadline
    if left <= 0:
        raise DeadlineExceeded(f"nothing was sent: reading the signing key took the whole {timeout:g} s")
    answer = send(outbound.signed_headers(signed_with, at, signs), left)
    # guard: a-401-is-not-signed-again-with-a-rotated-key
    if answer.status != UNAUTHORISED:
        return answer
    # Only with room for a whole read of the secret and a send after it: the re-read is not cut short.
    if deadline - time.monotonic() <= key.read_worst_seconds:
        return answer
    fresh = key.reread(signed_with)
    left = deadline - time.monotonic()
    if fresh is None or left <= 0:
        return answer
    logger.warning("a signature was refused (401): sending again with the key as the secret now holds it")
    return send(outbound.signed_headers(fresh, at, signs), left)
