"""GET /health's secrets check, bounded and with its failure remembered, so a flood of it costs little.

`/health` is open to anyone. Reading the secrets is quick from the cache, but a
Secrets Manager that hangs holds a read for seconds (the client's bound is ~6 s),
and every request would hold one of the API's concurrent executions that long.
Invariant: an answer takes at most WAIT_SECONDS however Secrets Manager behaves
— the check runs on a thread of its own, one at a time per process (a request
that finds one running waits on that one) — and a failure, or a check that did
not finish in time, is answered from memory for FAILURE_SECONDS without asking
Secrets Manager again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .errors import SecretUnreadable

WAIT_SECONDS = 1.0
FAILURE_SECONDS = 10.0
NOT_IN_TIME = "the secrets could not be checked in time; try again shortly"


class _Check(threading.Thread):
    def __init__(self, check: Callable[[], None]):
        super().__init__(name="health-check", daemon=True)
        self._check = check
        self.failure: Exception | None = None

    def run(self) -> None:
        try:
            self._check()
        except Exception as error:  # handed to the request that waits on this check
            self.failure = error


class SecretsHealth:
    def __init__(self, check: Callable[[], None], *, monotonic: Callable[[], float] = time.monotonic):
        self._check = check
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._running: _Check | None = None
        self._failed: tuple[float, list[str]] | None = None  # (answered from memory until, the failure's messages)

    def check(self) -> None:
        """Return when every secret is readable; raise SecretUnreadable otherwise (see the module's invariant)."""
        with self._lock:
            if self._failed is not None and self._monotonic() < self._failed[0]:
                raise SecretUnreadable(*self._failed[1])
            if self._running is None or not self._running.is_alive():
                self._running = _Check(self._check)
                self._running.start()
            running = self._running
        running.join(WAIT_SECONDS)
        if running.is_alive():
            failure: Exception | None = SecretUnreadable(NOT_IN_TIME)
        else:
            failure = running.failure
        with self._lock:
            remembered = failure.messages if isinstance(failure, SecretUnreadable) else None
            self._failed = None if remembered is None else (self._monotonic() + FAILURE_SECONDS, remembered)
        if failure is not None:
            raise failure
