"""The bridge-check's cases: one function each, a passing case's line its return, a failing one's `Failed`.

Invariant: a case sends only the actions the operator named (`--action`,
`--slow-action`, `--spawn-action` and the revert it lists), each under a key of
its own, and judges answers, never the game's world: "applied once" is a
repeat's answer being the first's, and is passed only for an action whose
answers to two fresh keys differ (the kits' test actions answer a receipt
unique to each application): one that answers every application alike could
apply a repeat again unseen, so it fails.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, NamedTuple

from ..errors import BridgeCaseFailed as Failed
from ..ledger import listed
from .checker import KEY_HINT, STALE_SECONDS, Checker, Options, catch, done, done_in, shown


def spoilt(check: Checker, way: str) -> dict[str, Any]:
    """How a request is made one the engine did not sign, each `way` a case of its own (delivery and status)."""
    ways: dict[str, dict[str, Any]] = {
        "unsigned": {"unsigned": True}, "forged": {"signature": "sha256=" + "0" * 64},
        "stale": {"at": check.now() - timedelta(seconds=STALE_SECONDS)},
        "other-key": {"signed_with": check.other_key}}
    return ways[way]


def refused_delivery(way: str) -> Callable[[Checker], str]:
    return lambda check: _expect_refused(check, way)


def refused_status(way: str) -> Callable[[Checker], str]:
    return lambda check: _expect_status_refused(check, way)


def _expect_refused(check: Checker, way: str) -> str:
    key = check.key(way)
    answer = check.deliver(check.options.action, key, **spoilt(check, way))
    if answer.status != 401:
        raise Failed(f"expected 401 and nothing applied, got {shown(answer)}: check the signature, its key and its"
                     " timestamp window before reading anything")
    check.not_applied(key)
    return "401, not applied"


NOT_SERVED = ("--action, --spawn-action and --slow-action must name actions this bridge serves (the kits' test"
              " actions: Bridge(..., test_actions=True), new Bridge({ testActions: true }))")


# What the engine's JSON writes unlike a parser's re-serialising: non-ASCII escaped (\u00f6), an escaped quote
# and slash, a float's ".0", an integer past 2**53 exactly (JavaScript would round it).
SERIALISED_PARAMS: dict[str, Any] = {"bridge_check": "J\u00f6rmungandr \u2603 \"/\"", "ratio": 1.0, "big": 2**60 + 1}


def case_delivery(check: Checker) -> str:
    """The first case, and the gate: a delivery exactly as the engine sends it, its params written as the engine
    writes JSON. When the bridge cannot be reached, refuses the engine's signature or does not serve --action,
    every other case would fail on that alone, so they are not run (`check.stopped`) and this one line says what
    to fix."""
    action = check.options.action
    try:
        answer = check.deliver(action, check.key("once"), params=SERIALISED_PARAMS)
        if answer.status in (401, 422):  # the params, or the request itself? the same delivery without params tells
            plain = check.deliver(action, check.key("once-without-params"))
    except Failed:
        check.stopped = "the engine's signed delivery got no answer it could take (above)"
        raise
    if answer.status in (401, 422) and plain.status not in (401, 422):
        raise Failed(f"a delivery whose params hold what the engine's JSON writes ({json.dumps(SERIALISED_PARAMS)})"
                     f" got {shown(answer)}, and the same delivery with params {{}} got HTTP {plain.status}: "
                     + ("the signature is checked over re-serialised JSON: HMAC the raw request bytes as received,"
                        " before any JSON parser" if answer.status == 401 else
                        f"--action {action} must take any params and stay harmless (these test the signature over"
                        " the JSON the engine writes)"))
    if answer.status == 401:
        check.stopped = "the bridge refuses the engine's signed delivery (above)"
        raise Failed(f"expected done, got {shown(answer)}: {KEY_HINT}")
    if answer.status == 422:
        check.stopped = f"the bridge refuses {action} (above)"
        raise Failed(f"expected done, got {shown(answer)}: {NOT_SERVED}")
    done_in(answer)
    return "done, a JSON object within the cap and the deadline (its params non-ASCII, a float and a large integer)"


def tells_applications_apart(check: Checker, action: str, params: dict[str, Any] | None = None) -> None:
    """Two fresh keys of `action` must get two different answers: a bridge that answers every application the same
    body would pass "applied once" whether it replayed a repeat or applied it again, so it is failed instead."""
    first = done(check, action, check.key(f"apart-{action}-1"), params=params)
    second = done(check, action, check.key(f"apart-{action}-2"), params=params)
    if first == second:
        raise Failed(f"{action} answers the same body to two different keys ({json.dumps(first)[:200]}), so a repeat"
                     " cannot be told from a second application: make it answer something unique per application (a"
                     " receipt), as the kits' test.noop does")


def case_repeat(check: Checker) -> str:
    tells_applications_apart(check, check.options.action)
    key = check.key("repeat")
    first = done(check, check.options.action, key)
    for attempt in (1, 2):  # the same delivery again (its answer lost), then the engine's next attempt of the key
        answer = check.deliver(check.options.action, key, attempt)
        if answer.status == 409:
            raise Failed(f"attempt {attempt} of a key already answered must get the first answer again (2xx, the same"
                         f" body), got {shown(answer)}: the engine would fail a step the game applied")
        again = done_in(answer)
        if again != first:
            raise Failed(f"attempt {attempt} of a key already answered must get the first answer again (applied"
                         f" once), got {again} after {first}: record the answer by idempotency key and replay it")
    if check.asks_status and (said := check.status_of(check.options.action, key, 3)) != "applied":
        raise Failed(f"after a done delivery the status endpoint must say applied, said {said!r}")
    return "the first answer replayed to a repeat and to attempt 2" + (", status applied" if check.asks_status else "")


def case_signed_body(check: Checker) -> str:
    """What is applied is what the verified body names: a request whose Idempotency-Key or path says otherwise is
    refused, so a captured signed delivery cannot be replayed under new keys or as another action."""
    action, key = check.options.action, check.key("signed-key")
    claimed = check.key("claimed-key")
    spoilt: dict[str, dict[str, Any]] = {"Idempotency-Key": {"header_key": claimed}}
    if check.options.spawn_action and check.options.spawn_action != action:
        spoilt[f"path's action ({check.options.spawn_action})"] = {"path_action": check.options.spawn_action}
    for what, how in spoilt.items():
        answer = check.deliver(action, key, **how)
        if not 400 <= answer.status < 500 or answer.status in (409, 422, 429):  # a refusal of the request itself
            raise Failed(f"a delivery whose {what} is not the signed body's must be refused (400 or 401) and applied"
                         " under neither,"
                         f" got {shown(answer)}: take the action, key and attempt from the verified body, or check"
                         " they are the request's")
    for each in (key, claimed):
        check.not_applied(each)
    return f"refused for another {' and for another '.join(spoilt)}, nothing applied"


FENCE_PROBE = 99  # the attempt a spoilt status request names: had it raised the fence, attempt 1 would be refused


def _expect_status_refused(check: Checker, way: str) -> str:
    """A status request the engine did not sign gets 401 and raises no fence: else anyone could send
    `status?attempt=99` for a (guessable) key, and the engine's own delivery would be refused 409."""
    key = check.key(f"status-{way}")
    answer = check.status(check.options.action, key, FENCE_PROBE, **spoilt(check, way))
    if answer.status != 401:
        raise Failed(f"expected 401, got {shown(answer)}: verify a status request's signature (over"
                     " GET.{path and query}., with the bridge key) and its timestamp before reading or fencing"
                     " anything; else anyone can fence off the engine's deliveries")
    answer = check.deliver(check.options.action, key, 1)
    if answer.status == 409:
        raise Failed(f"the status request was refused 401, but it raised the key's fence to attempt {FENCE_PROBE}:"
                     f" attempt 1 then got {shown(answer)}; verify the signature before the store sees the request")
    done_in(answer)
    return "401, no fence raised (attempt 1 then done)"


def case_status_unknown(check: Checker) -> str:
    said = check.status_of(check.options.action, check.key("never-sent"), 1)
    if said != "not_applied":
        raise Failed(f"a key never delivered must be not_applied, said {said!r}")
    return "not_applied"


def case_fence(check: Checker) -> str:
    key = check.key("fence")
    if (said := check.status_of(check.options.action, key, 3)) != "not_applied":
        raise Failed(f"a key never delivered must be not_applied, said {said!r}")
    answer = check.deliver(check.options.action, key, attempt=2)
    if answer.status == 422:
        raise Failed(f"after a status for attempt 3, a delivery of attempt 2 must be refused 409 (the attempt fence),"
                     f" got {shown(answer)}, a refusal of the action itself, not the fence: {NOT_SERVED}")
    if answer.status != 409:
        raise Failed(f"after a status for attempt 3, a delivery of attempt 2 must be refused 409 (the attempt fence),"
                     f" got {shown(answer)}: keep the highest attempt a status was asked for, per key")
    if (said := check.status_of(check.options.action, key, 3)) != "not_applied":
        raise Failed(f"a fenced delivery must not be applied: the status then said {said!r}")
    answer = check.deliver(check.options.action, key, attempt=3)  # what the engine sends after that not_applied
    if answer.status == 409:
        raise Failed(f"after a status for attempt 3, a delivery of attempt 3 itself must be applied (the engine re-sends"
                     f" exactly the attempt it asked about), got {shown(answer)}: refuse only attempts below the"
                     " highest one asked about (attempt < fence, not <=), or every step in doubt fails as refused")
    try:
        done_in(answer)
    except Failed as failed:
        raise Failed(f"after a status for attempt 3, a delivery of attempt 3 must be done: {failed}") from None
    if (said := check.status_of(check.options.action, key, 3)) != "applied":
        raise Failed(f"after attempt 3 was done the status must say applied, said {said!r}")
    return "409 behind the fence, not applied; the attempt asked about done, then applied"


def case_in_progress(check: Checker) -> str:
    action, key = check.options.slow_action or check.options.action, check.key("slow")  # skipped when not named
    finished: list[Any] = []
    worker = threading.Thread(target=lambda: finished.append(catch(lambda: check.deliver(
        action, key, 1, params={"seconds": check.options.slow_seconds}))), daemon=True)
    worker.start()
    seen, waited = [], 0.0  # waited: the longest a status request asked while it ran took to be answered
    check.timing = False  # the slow delivery is slow by design
    try:
        while worker.is_alive():
            asked = time.monotonic()
            seen.append(check.status_of(action, key, 1))
            if seen[-1] == "in_progress":
                break
            # timed, not read off the worker: the delivery's thread may still be reading its answer when this returns
            waited = max(waited, time.monotonic() - asked)
            time.sleep(0.1)
        worker.join(check.options.deadline + 1)
    finally:
        check.timing = True
    if finished and isinstance(finished[0], Failed):
        raise finished[0]
    if finished and finished[0].status == 409:
        raise Failed(f"the slow delivery of attempt 1 was refused ({shown(finished[0])}) after a status request asked"
                     " about attempt 1: the engine re-sends exactly the attempt it asked about, so refuse only attempts"
                     " below the highest one asked about (attempt < fence, not <=)")
    if finished:
        done_in(finished[0])
    if "in_progress" not in seen and waited > check.options.slow_seconds / 2:
        raise Failed(f"a status request sent while a slow delivery ran was answered only after it finished ({waited:.1f} s"
                     f" later, saying {seen[-1]!r}): the server serves one request at a time, or the store's status"
                     " waits for a lock the delivery holds, so the engine's status requests and re-sends wait behind"
                     " every slow action; serve requests concurrently (a threading or multi-worker server), and read"
                     " the key's in-progress mark without waiting for the delivery's lock (docs/game-bridge.md, the store)")
    if "in_progress" not in seen:
        raise Failed(f"while a slow delivery ran, the status endpoint said {sorted(set(seen)) or 'nothing'}, never"
                     " in_progress: record the key as in progress before the action starts")
    if (said := check.status_of(action, key, 1)) != "applied":
        raise Failed(f"once the slow delivery was done, the status said {said!r}, not applied")
    return "in_progress while it ran, then applied"


AT_ONCE_PLAIN = 4  # deliveries of one key sent together when no action can be slowed: a racy check-then-mark shows


def case_at_once(check: Checker) -> str:
    """The engine can send a key's next attempt while its first still runs (its deadline passed, the game did not
    notice): the key is applied once, every done answer is the same, and the others are 429 ("being applied now")."""
    slow = check.options.slow_action
    action, key = slow or check.options.action, check.key("at-once")
    params = {"seconds": check.options.slow_seconds} if slow else None
    count = 2 if slow else AT_ONCE_PLAIN
    tells_applications_apart(check, action, {"seconds": 0} if slow else None)
    together = threading.Barrier(count)
    answers: list[Any] = [None] * count

    def send(index: int) -> None:
        together.wait()
        answers[index] = catch(lambda: check.deliver(action, key, 1 + index % 2, params=params))

    workers = [threading.Thread(target=send, args=(index,), daemon=True) for index in range(count)]
    check.timing = not slow  # the slow action is slow by design
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(check.options.deadline + 2)
    finally:
        check.timing = True
    for answer in answers:
        if isinstance(answer, Failed):
            raise answer
    answered = "; ".join(shown(answer) for answer in answers if answer is not None)
    bodies = [done_in(answer) for answer in answers if answer is not None and answer.status != 429]
    if not bodies:
        raise Failed(f"{count} deliveries of one key sent at once were all answered 429 ({answered}): one of them must"
                     " be applied; answer 429 only while another delivery of the key is being applied")
    if any(body != bodies[0] for body in bodies):
        raise Failed(f"{count} deliveries of one key sent at once were applied more than once (different answers:"
                     f" {answered}): answer 429 to a delivery of a key in progress, and mark the key in progress in"
                     " the same lock or transaction that checks it (a row lock, an insert that fails on a duplicate"
                     " key)")
    if check.asks_status and (said := check.status_of(action, key, 2)) != "applied":
        raise Failed(f"after {count} deliveries of one key at once, the status said {said!r}, not applied")
    how = "429 to the rest" if len(bodies) < count else "the same answer to each"
    return (f"{count} at once{'' if slow else f' ({action}: with --slow-action they overlap for sure)'}: applied once,"
            f" {how}" + (", status applied" if check.asks_status else ""))


def case_revert(check: Checker) -> str:
    action = check.options.spawn_action or check.options.action  # skipped when not named
    result = done(check, action, check.key("spawn"))
    entries, _ = listed(result)
    reverts = [e.revert for e in entries if e.revert is not None and e.revert.action != "core.cue"]
    if not reverts:
        raise Failed(f"{action} must list a resource with a module-action revert, answered {result}")
    revert = reverts[0]
    done(check, revert.action, check.key("revert-1"), params=revert.params)
    done(check, revert.action, check.key("revert-2"), params=revert.params)
    return f"{len(entries)} resource(s) well formed; {revert.action} done, and done again once already gone"


class Listed(NamedTuple):
    name: str
    run: Callable[[Checker], str]
    skipped: str | None  # why it is not run (None: it runs)
    needs_status: bool = False  # not run once the bridge turned out to serve no status endpoint


def cases(options: Options) -> list[Listed]:
    """Every case in the order run: the gate first (`case_delivery`), then the status endpoint found (a bridge
    without one is told so once, by the first case that asks it)."""
    no_status = None if options.status else "needs the status endpoint (--no-status given)"
    return [
        Listed("valid delivery done", case_delivery, None),
        Listed("unknown key not applied", case_status_unknown, no_status, True),
        Listed("unsigned delivery refused", refused_delivery("unsigned"), None),
        Listed("forged signature refused", refused_delivery("forged"), None),
        Listed("stale timestamp refused", refused_delivery("stale"), None),
        Listed("another key refused", refused_delivery("other-key"), None),
        Listed("same key replays its first answer", case_repeat, None),
        Listed("signed body names what is applied", case_signed_body, None),
        Listed("unsigned status request refused", refused_status("unsigned"), no_status, True),
        Listed("forged status request refused", refused_status("forged"), no_status, True),
        Listed("stale status request refused", refused_status("stale"), no_status, True),
        Listed("status request under another key refused", refused_status("other-key"), no_status, True),
        Listed("attempt fence", case_fence, no_status, True),
        Listed("in progress while a slow delivery runs", case_in_progress,
               no_status or (None if options.slow_action else "needs an action that can be slowed (--slow-action)"),
               True),
        Listed("one key delivered twice at once applied once", case_at_once, None),
        Listed("resources well formed, revert idempotent", case_revert,
               None if options.spawn_action else "needs an action that leaves a resource (--spawn-action)"),
    ]
