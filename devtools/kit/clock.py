"""Manual time: one clock a test or a benchmark moves by hand, so nothing waits on the wall clock."""

from __future__ import annotations

from datetime import datetime, timedelta


class ManualClock:
    """Stands still until told to move."""

    def __init__(self, start: datetime):
        self._now = start.replace(tzinfo=None)

    def now(self) -> datetime:
        return self._now

    def set(self, when: datetime) -> None:
        self._now = when.replace(tzinfo=None)

    def advance(self, seconds: float) -> datetime:
        self._now += timedelta(seconds=seconds)
        return self._now
