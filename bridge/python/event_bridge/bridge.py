"""The game side of the bridge, HTTP-neutral: a request in, an answer out.

Invariant: a delivery reaches a handler only when its signature verifies, its
signed body names the action, key and attempt the request carries, it is not
behind the key's attempt fence, and the key was never answered before (a
repeat gets the recorded answer again); the status endpoint raises the fence
before it answers. So a delivery is applied at most once per idempotency key,
and a delivery still on its way from a worker that died cannot land after a
`not_applied` (docs/contract.md, "The game bridge"). Once a handler has
answered, its key is never applied again: an answer the engine would not take
(`checked`) is recorded as a final 422 refusal that the status endpoint
reports `applied`. Only a handler that raises (having changed nothing) or
answers a failure (429, a 5xx) leaves the key to be tried again. A handler
runs only when the store's `begin` decided `new`. A store that fails before
the handler ran is a 503 (nothing applied); one that fails to record the
handler's answer is a 502, which the engine reads as in doubt (the outcome is
unknown). Each handler failure, each refused answer and each store failure is
logged on the `event_bridge` logger, naming the action, key and attempt.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from . import signing
from .answers import Answer, BadAnswer, Resource, Revert, checked, done, refused
from .store import LEASE_SECONDS, ContextStore, MemoryStore, Store

MAX_BODY_BYTES = 1024 * 1024
MAX_SLOW_SECONDS = 30.0
MAX_PROBLEM_CHARS = 150  # the engine keeps 300 characters of a reason: ours stays whole
# A handler's deadline unless one is given: half the default lease, so that the kit lets a hung handler's key go
# (rolling its context back) well before the lease could let a re-send take the key while the handler still acts.
HANDLER_SECONDS = LEASE_SECONDS / 2

logger = logging.getLogger("event_bridge")


@dataclass(frozen=True)
class Delivery:
    """One signed delivery of a module action, as the engine sent it."""

    action: str
    key: str
    attempt: int
    run_id: int
    step_id: int
    params: dict[str, Any]
    rehearsal: bool  # a sandbox dry run: act on the sandbox world, never the live one
    body: dict[str, Any]
    context: Any = None  # what the store's begin gave (its open transaction): make the world change in it


class Gone(Exception):
    """Raised by a revert handler whose thing is already gone: answered done (a revert is idempotent)."""


Handler = Callable[[Delivery], Answer]
# the bridge key, a list of keys any of which verifies (a rotation: the new key and the old one), or a function that
# reads either as it stands now
Key = str | Sequence[str] | Callable[[], str | Sequence[str]]


def _error(status: int, reason: str) -> Answer:
    return Answer({"outcome": "refused", "reason": reason} if status in (409, 422) else {"reason": reason}, status)


class Bridge:
    """`handlers` maps action ids to functions of a Delivery; `test.noop`, `test.slow`, `test.spawn` and
    `test.despawn` are built in (they touch nothing in the game) for `bridge-check` and for trying the kit."""

    def __init__(self, key: Key, store: Store | None = None, handlers: dict[str, Handler] | None = None, *,
                 clock: Callable[[], float] = time.time, test_actions: bool = True,
                 handler_seconds: float | None = HANDLER_SECONDS):
        self._key = key
        self.store: Store = store if store is not None else MemoryStore()
        lease = getattr(self.store, "lease_seconds", None)
        if isinstance(lease, (int, float)) and (handler_seconds is None or handler_seconds >= lease):
            raise ValueError(f"handler_seconds ({handler_seconds}) must be shorter than the store's lease_seconds"
                             f" ({lease:g}): else a handler still running when its key's lease runs out is applied"
                             " twice, the engine's re-send taking the key as new")
        self.handlers: dict[str, Handler] = dict(_TEST_ACTIONS) if test_actions else {}
        self.handlers.update(handlers or {})
        self._clock = clock
        # a handler not answered within this many seconds is answered 500 and its key let go (None: no deadline,
        # refused with a store that says its lease); shorter than the store's lease, so a key is never taken again
        # while its first handler may still act
        self.handler_seconds = handler_seconds

    def action(self, action_id: str) -> Callable[[Handler], Handler]:
        """Decorator: `@bridge.action("world.spawn")` registers the handler of that module action."""
        def register(handler: Handler) -> Handler:
            self.handlers[action_id] = handler
            return handler
        return register

    def handle(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Answer:
        """The answer to one request: `target` is the path with its query, `headers` any case."""
        lowered = {name.lower(): value for name, value in headers.items()}
        path = urlsplit(target).path.rstrip("/").split("/")
        if method == "POST" and len(path) >= 3 and path[-2] == "actions":
            return self._deliver(path[-1], lowered, body)
        if method == "GET" and len(path) >= 5 and path[-4] == "actions" and path[-2] == "status":
            return self._status(target, path[-1], lowered)
        return _error(404, f"no such endpoint: {method} {urlsplit(target).path}")

    def signed_target(self, targets: list[str], headers: dict[str, str]) -> str:
        """Of the spellings of one status request's path and query (a server's raw target, the WSGI path quoted
        again), the one its signature verifies, else the first: what a WSGI server decoded is signed as sent."""
        lowered = {name.lower(): value for name, value in headers.items()}
        for target in targets:
            try:
                signing.verify(self._current_key(), lowered, signing.status_signed(target), self._clock())
            except signing.Unsigned:
                continue
            return target
        return targets[0]

    def _current_key(self) -> str | Sequence[str]:
        return self._key() if callable(self._key) else self._key

    def _deliver(self, action_id: str, headers: dict[str, str], body: bytes) -> Answer:
        try:
            signing.verify(self._current_key(), headers, body, self._clock())
        except signing.Unsigned as why:
            return _error(401, str(why))
        delivery = _delivery(action_id, headers, body)
        if isinstance(delivery, str):
            return _error(400, delivery)
        handler = self.handlers.get(action_id)
        if handler is None:
            return _error(422, f"this bridge has no action {action_id!r}")
        seen = f"{action_id} key {delivery.key!r} attempt {delivery.attempt}"
        try:
            begun = self.store.begin(delivery.key, delivery.attempt)
        except Exception as error:  # nothing ran: the engine may try again later
            logger.warning("%s: the store failed in begin: answered 503, nothing applied", seen, exc_info=True)
            return _error(503, f"the bridge's store failed before the action ran: {type(error).__name__}: {error}"[:500])
        if begun.decision == "fenced":
            return _error(409, f"attempt {delivery.attempt} is behind the fence: a status was answered for attempt {begun.fence}")
        if begun.decision == "replay" and begun.answer is not None:
            return begun.answer
        if begun.decision == "busy":
            return _error(429, "a delivery of this key is being applied now")
        if begun.decision != "new":  # a replay without its answer, or a decision this kit does not know: never run
            logger.error("%s: the store's begin decided %r%s: answered 500, the handler not run (fix the store)", seen,
                         begun.decision, " without its answer" if begun.decision == "replay" else "")
            return _error(500, f"the bridge's store decided {str(begun.decision)[:40]!r}"
                               f"{' without its answer' if begun.decision == 'replay' else ''}: the action was not run")
        context = begun.context
        if context is not None:
            delivery = dataclasses.replace(delivery, context=context)
        try:
            answer = _answer_in_time(handler, delivery, self.handler_seconds)
        except _Late:
            self._let_go(delivery.key, context, seen)
            logger.warning("%s: the handler did not answer within %g s: answered 500, the engine sends it again "
                           "(a handler past its deadline must change nothing more)", seen, self.handler_seconds)
            return _error(500, f"the {action_id} handler did not answer within {self.handler_seconds:g} s")
        except BadAnswer as error:  # the handler ran: the world may have changed, so it must not run again
            logger.warning("%s: the engine would not take the handler's answer (%s): answered and recorded a final 422, "
                           "the action is not applied again", seen, error, exc_info=True)
            answer = _unsendable(action_id, str(error))
        except Exception as error:  # the handler's own failure: it must act on nothing it did not undo
            self._let_go(delivery.key, context, seen)
            logger.warning("%s: the handler failed: answered 500, the engine sends it again", seen, exc_info=True)
            return _error(500, f"the {action_id} handler failed: {type(error).__name__}: {error}"[:500])
        if answer.status >= 300 and answer.status not in (409, 422):
            self._let_go(delivery.key, context, seen)  # a failure applied nothing: the engine's retry reaches the handler again
            return answer
        try:
            if context is None:  # done or refused: the key's answer for good
                self.store.finish(delivery.key, answer)
            else:
                cast(ContextStore, self.store).finish(delivery.key, answer, context)
        except Exception as error:  # the handler ran and its answer is not recorded: applied or not, nobody knows here
            logger.error("%s: the store failed in finish after the handler answered: the outcome is unknown; answered "
                         "502 (in doubt: the engine asks the status endpoint or a person)", seen, exc_info=True)
            return Answer({"reason": f"the bridge's store failed to record the {action_id} answer: the outcome is "
                                     f"unknown: {type(error).__name__}: {error}"[:500]}, 502)
        return answer

    def _let_go(self, key: str, context: Any, seen: str) -> None:
        """`abandon` the key; a store that fails leaves it in progress until its lease runs out (nothing applied)."""
        try:
            if context is None:
                self.store.abandon(key)
            else:
                cast(ContextStore, self.store).abandon(key, context)
        except Exception:
            logger.warning("%s: the store failed in abandon: the key stays in progress until its lease runs out", seen,
                           exc_info=True)

    def _status(self, target: str, key: str, headers: dict[str, str]) -> Answer:
        try:
            signing.verify(self._current_key(), headers, signing.status_signed(target), self._clock())
        except signing.Unsigned as why:
            return _error(401, str(why))
        attempt = parse_qs(urlsplit(target).query).get("attempt", [""])[0]
        if not attempt.isdigit():
            return _error(400, "the status request names its attempt: ?attempt=<n>")
        try:
            known = self.store.status(key, int(attempt))
        except Exception as error:
            logger.warning("status of key %r attempt %s: the store failed: answered 503", key, attempt, exc_info=True)
            return _error(503, f"the bridge's store failed: {type(error).__name__}: {error}"[:500])
        answer: dict[str, Any] = {"status": known.status}
        recorded = {} if known.answer is None else known.answer.body
        if "resources" in recorded:
            answer["resources"] = recorded["resources"]
        if recorded.get("outcome") == "refused":  # applied, and refused (an answer the kit would not send): so it stays
            answer |= {"outcome": "refused", "reason": recorded.get("reason", "")}
        return Answer(answer)


class _Late(Exception):
    """The handler did not answer within its deadline."""


def _answer_in_time(handler: Handler, delivery: Delivery, seconds: float | None) -> Answer:
    """`_answer_of`, within `seconds` when given: else _Late (the handler's thread is left to end on its own)."""
    if seconds is None:
        return _answer_of(handler, delivery)
    outcome: list[Answer | BaseException] = []

    def run() -> None:
        try:
            outcome.append(_answer_of(handler, delivery))
        except BaseException as failure:  # handed to the request's thread, raised there
            outcome.append(failure)

    worker = threading.Thread(target=run, name=f"event_bridge {delivery.action} {delivery.key}", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive() or not outcome:
        raise _Late
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _answer_of(handler: Handler, delivery: Delivery) -> Answer:
    """The handler's answer, `checked`; a revert's `Gone` is done."""
    try:
        answer = handler(delivery)
    except Gone:
        answer = done(note="already gone")
    return checked(answer)


def _unsendable(action_id: str, problem: str) -> Answer:
    """The key's final answer when the handler ran and answered what the engine would not take: a refusal (the
    engine does not retry a 422) that a person can read and that the status endpoint reports `applied`."""
    if len(problem) > MAX_PROBLEM_CHARS:
        problem = problem[:MAX_PROBLEM_CHARS - 1] + "…"
    return Answer({"outcome": "refused", "applied": True,
                   "reason": f"the {action_id} handler's answer is not one the engine takes ({problem}); "
                             "the action ran once and will not be applied again: fix the handler"}, 422)


def _delivery(action_id: str, headers: dict[str, str], body: bytes) -> Delivery | str:
    """The signed body as a Delivery, or why it does not match the request it came in."""
    try:
        data = json.loads(body)
    except ValueError:
        return "the body is not JSON"
    if not isinstance(data, dict):
        return "the body is not a JSON object"
    key = headers.get("idempotency-key", "")
    checks = ((data.get("action") == action_id, f"the signed body names action {data.get('action')!r}, the path {action_id!r}"),
              (bool(key) and data.get("idempotency_key") == key, "the signed body's idempotency_key is not the Idempotency-Key header"),
              (isinstance(data.get("attempt"), int) and data["attempt"] >= 1, "the signed body's attempt is not a number from 1"),
              (isinstance(data.get("run_id"), int) and isinstance(data.get("step_id"), int), "the signed body names no run_id and step_id"),
              (isinstance(data.get("params", {}), dict), "the signed body's params are not an object"))
    for ok, why in checks:
        if not ok:
            return why
    return Delivery(action_id, key, data["attempt"], data["run_id"], data["step_id"], data.get("params") or {},
                    data.get("rehearsal") is True, data)


def _noop(delivery: Delivery) -> Answer:
    # a receipt of its own on each application: a bridge that applies a repeat again answers differently
    return done(receipt=uuid.uuid4().hex)


def _slow(delivery: Delivery) -> Answer:
    seconds = delivery.params.get("seconds", 3)
    if not isinstance(seconds, (int, float)) or not 0 <= seconds <= MAX_SLOW_SECONDS:
        return refused(f"test.slow takes seconds from 0 to {MAX_SLOW_SECONDS:g}")
    time.sleep(seconds)
    return done(receipt=uuid.uuid4().hex)


_MARKERS: set[str] = set()  # the test markers test.spawn made and test.despawn has not removed


def _spawn(delivery: Delivery) -> Answer:
    _MARKERS.add(delivery.key)
    return done(Resource("test_marker", delivery.key, Revert("test.despawn", {"id": delivery.key})))


def _despawn(delivery: Delivery) -> Answer:
    marker = delivery.params.get("id")
    if marker not in _MARKERS:
        raise Gone
    _MARKERS.discard(marker)
    return done()


_TEST_ACTIONS: dict[str, Handler] = {"test.noop": _noop, "test.slow": _slow, "test.spawn": _spawn, "test.despawn": _despawn}
