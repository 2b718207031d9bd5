"""How long a tick may keep taking work, measured on a monotonic clock the caller injects."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Budget:
    """`take_work_until`: no new run or step after it. `finish_by`: the hard end
    (the Lambda's own deadline); a step starts only if its worst case fits before it."""

    take_work_until: float
    finish_by: float
    monotonic: Callable[[], float] = time.monotonic
    stop: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def for_seconds(
        cls, seconds: float, *, hard_seconds: float | None = None, monotonic: Callable[[], float] = time.monotonic
    ) -> Budget:
        start = monotonic()
        return cls(start + seconds, start + (seconds if hard_seconds is None else hard_seconds), monotonic)

    def portion(self, fraction: float) -> Budget:
        """The first `fraction` of the time left for taking work, as a budget of its own."""
        now = self.monotonic()
        until = now + max(0.0, self.take_work_until - now) * fraction
        return Budget(until, min(until, self.finish_by), self.monotonic, self.stop)

    def allows(self, worst_case_seconds: float) -> bool:
        now = self.monotonic()
        return not self.stop.is_set() and now < self.take_work_until and now + worst_case_seconds <= self.finish_by
