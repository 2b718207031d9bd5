"""Where the bridge keeps what it did for each idempotency key: at most once, and the attempt fence.

Invariant: every decision about a key is one atomic step of the store. `begin`
decides, for a delivery of (key, attempt), whether it is behind the fence, a
repeat of a key already answered (its answer is replayed, nothing applied
again), a key being applied right now, or new (then marked in progress until
a lease runs out); `status` raises the key's fence to the attempt asked about
and says what it knows, in the same step. An in-progress mark whose lease has
run out (the game crashed or restarted mid-delivery, or its handler hung) is
no longer in progress: `status` says `not_applied` and the next `begin` takes
the key as new. That is sound because the world change commits with `finish`:
a mark that expired never applied anything. The lease (LEASE_SECONDS by
default) must be longer than any handler runs (the Bridge's `handler_seconds`
deadline makes sure). A real store does each in one database transaction
(`SELECT … FOR UPDATE` on the key's row, or a conditional write) and records
the answer in the same transaction as the game-world change, so a crash cannot
leave an action applied with no answer recorded. `MemoryStore` is for trying
the kit: it forgets everything when the process stops, so a restarted game
would apply a repeated delivery again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .answers import Answer

Decision = Literal["new", "replay", "fenced", "busy"]
Status = Literal["applied", "not_applied", "in_progress"]

LEASE_SECONDS = 60.0  # how long a key stays in progress: longer than any handler runs


@dataclass(frozen=True)
class Begun:
    """What `begin` decided: `answer` for a replay, `fence` (the attempt asked about) when fenced. For `new`, a
    store may give a `context` (an open transaction, a connection): the handler gets it as `Delivery.context`, to
    make the world change in it, and the kit hands it to `finish` or `abandon` as their last argument, so that the
    change and its answer commit (or roll back) together. With no context they are called without it."""

    decision: Decision
    answer: Answer | None = None
    fence: int = 0
    context: Any = None


@dataclass(frozen=True)
class Known:
    """What `status` answers for a key: its status and, once applied, the answer that applied it."""

    status: Status
    answer: Answer | None = None


class Store(Protocol):
    def begin(self, key: str, attempt: int) -> Begun:
        """Fenced, replay, busy (in progress and its lease not run out), or new: marked in progress for a lease."""

    def finish(self, key: str, answer: Answer) -> None:
        """Record the answer a new delivery produced (with the world change, in a real store)."""

    def abandon(self, key: str) -> None:
        """The handler raised before it acted: the key is neither applied nor in progress."""

    def status(self, key: str, attempt: int) -> Known:
        """Raise the fence to `attempt`; applied, in_progress (its lease not run out) or not_applied."""


class ContextStore(Protocol):
    """A `Store` whose `begin` gives a context for `new`: its `finish` and `abandon` take it as well."""

    def begin(self, key: str, attempt: int) -> Begun: ...

    def finish(self, key: str, answer: Answer, context: Any) -> None:
        """Record the answer in `context`, with the world change made there, and commit them together."""

    def abandon(self, key: str, context: Any) -> None:
        """Roll `context` back (the handler raised or answered a failure): neither applied nor in progress."""

    def status(self, key: str, attempt: int) -> Known: ...


@dataclass
class _Key:
    fence: int = 0
    in_progress_until: float | None = None  # the store's clock; None: not in progress
    answer: Answer | None = None


@dataclass
class MemoryStore:
    """A `Store` in this process's memory, for development and tests only (see the module's docstring).
    `lease_seconds`: how long a key stays in progress; `clock`: seconds, for tests."""

    lease_seconds: float = LEASE_SECONDS
    clock: Callable[[], float] = time.monotonic
    _keys: dict[str, _Key] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _in_progress(self, row: _Key) -> bool:
        return row.in_progress_until is not None and self.clock() < row.in_progress_until

    def begin(self, key: str, attempt: int) -> Begun:
        with self._lock:
            row = self._keys.setdefault(key, _Key())
            # guard: the-bridge-kit-has-no-attempt-fence
            if attempt < row.fence:
                return Begun("fenced", fence=row.fence)
            if row.answer is not None:
                return Begun("replay", answer=row.answer)
            if self._in_progress(row):
                return Begun("busy")
            # not in progress, or its lease ran out: a mark that expired applied nothing (the change commits with finish)
            row.in_progress_until = self.clock() + self.lease_seconds
            return Begun("new")

    def finish(self, key: str, answer: Answer) -> None:
        with self._lock:
            row = self._keys.setdefault(key, _Key())
            row.in_progress_until, row.answer = None, answer

    def abandon(self, key: str) -> None:
        with self._lock:
            self._keys.setdefault(key, _Key()).in_progress_until = None

    def status(self, key: str, attempt: int) -> Known:
        with self._lock:
            row = self._keys.setdefault(key, _Key())
            row.fence = max(row.fence, attempt)
            if row.answer is not None and row.answer.applied:
                return Known("applied", row.answer)
            # a refusal recorded: not applied, and a re-send is answered the same refusal
            return Known("in_progress" if self._in_progress(row) else "not_applied")
