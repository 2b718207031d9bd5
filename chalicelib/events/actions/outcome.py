"""What a dispatch came to, and what the game said when asked about a step in doubt.

The runner turns an Outcome into one fenced write; a Probe (the answer of the
bridge's status endpoint) decides, before a step in doubt is sent again,
whether it is sent at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from ..model import Attention


class Verdict(str, Enum):
    DONE = "done"  # finished; with hold_until, the next step of the phase waits until then
    PARKED = "parked"  # in flight and held by nobody: a person confirms or skips it
    RETRY = "retry"  # try again after a flat backoff, until the attempt ceiling
    REFUSED = "refused"  # the module understood and declined
    FAILED = "failed"  # any other error, or an answer nobody can read


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    error: str | None = None
    hold_until: datetime | None = None
    note: str | None = None
    attention: Attention | None = None  # a park's timers
    http_status: int | None = None
    latency_ms: int | None = None
    result: dict[str, Any] | None = field(default=None, compare=False)  # the answer body, parsed (a JSON object)
    in_doubt: bool = False  # no known outcome (a retry), or parked for a decision on it (parked)
    probe: str | None = None  # a step in doubt: what the game's status endpoint said before this attempt

    @classmethod
    def done(cls, **extra: Any) -> Outcome:
        return cls(Verdict.DONE, **extra)

    @classmethod
    def parked(cls, note: str | None = None, attention: Attention | None = None) -> Outcome:
        return cls(Verdict.PARKED, note=note, attention=attention)

    @classmethod
    def parked_in_doubt(cls, note: str, attention: Attention | None = None) -> Outcome:
        """Not sent: the step's last attempt has no known outcome, and its on_doubt parks it for a decision."""
        return cls(Verdict.PARKED, note=note, attention=attention, in_doubt=True)

    @classmethod
    def retry(cls, error: str, **extra: Any) -> Outcome:
        return cls(Verdict.RETRY, error=error, **extra)

    @classmethod
    def refused(cls, error: str, **extra: Any) -> Outcome:
        return cls(Verdict.REFUSED, error=error, **extra)

    @classmethod
    def failed(cls, error: str, **extra: Any) -> Outcome:
        return cls(Verdict.FAILED, error=error, **extra)


class Status(str, Enum):
    """What the game's status endpoint says of a step in doubt."""

    APPLIED = "applied"  # the game applied it: the step is done, with the resources the answer lists
    NOT_APPLIED = "not_applied"  # it did not, and will refuse a delivery of an earlier attempt: send it now
    IN_PROGRESS = "in_progress"  # it is applying it: ask again after the backoff
    UNKNOWN = "unknown"  # no usable answer: the step's on_doubt decides


@dataclass(frozen=True)
class Probe:
    status: Status
    detail: str  # what the log's `probe` says: the status, or why it is unknown
    answer: dict[str, Any] | None = None  # an applied answer's body (its resources are recorded)
    http_status: int | None = None
    latency_ms: int | None = None
    refused: str | None = None  # applied, and the key's answer was a refusal: its reason (the step is refused)
