"""`python -m chalicelib bridge-check <url>`: a game team's bridge driven through the protocol, case by case.

Invariant: the check judges the bridge exactly as the engine would — every
request is sent by the engine's own client (`outbound`: one overall deadline,
the 1 MB answer cap), every answer classified by the engine's own rules
(`adapters.bridge.classify`, `read_status`, `ledger.listed`) — so a bridge
that passes is one the engine runs against, and a failure says what was
expected and what came back. It sends only the action the team names
(`--action`, harmless: the kits' `test.noop`), the one that can be slowed
(`--slow-action`) and the one that leaves a resource (`--spawn-action`) with its
revert, each under keys of its own (`bridge-check-…`). It sees answers, never
the game's world: "applied once" is judged by a repeat's answer being the
first's (the kits' test actions answer a receipt unique to each application,
so a bridge that applies again shows). It cannot restart the game: a run says
so (a NOTE line), and `--record FILE` then `--replay FILE` (after the operator
restarts the game) checks the keys survived, each asked about (applied) and
answered its recorded answer again.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from .. import outbound
from .actions.outcome import Status, Verdict
from .adapters.bridge import classify, delivery_body, read_status
from .errors import BridgeCaseFailed as Failed
from .errors import BridgeUnreachable, OutboundError
from .ledger import listed

STALE_SECONDS = 600  # twice the window a bridge should allow either side of its clock
KEY_HINT = ("the bridge refused a request the engine signed: its key (EVENT_BRIDGE_KEY in the kits) must be the"
            " engine's GAME_BRIDGE_SECRET, and its clock within 300 s of this machine's")
PATH_HINT = ("deliveries signed with the same key were accepted, so the key and the clock are right: the bridge checks"
             " the status signature over another path than the engine signed (GET.{path and query}. of GAME_BRIDGE_URL's"
             " path as spelled, e.g. /game%20bridge/actions/…): a percent-decoded path (WSGI's PATH_INFO), a prefix a"
             " proxy strips or rewrites; verify over the raw request target")
DEADLINE_NOTE = ("the engine's deadline is min(10 s, EVENT_STEP_LEASE_SECONDS/4): 10 s under a lease of 40 s or more;"
                 " with a shorter lease run with --deadline <the lease/4>")
RESTART_NOTE = ("persistence across a restart was not checked (bridge-check cannot restart the game): run with --record"
                " FILE, restart the game, then run with --replay FILE")


@dataclass
class Case:
    name: str
    verdict: str = "PASS"  # PASS | FAIL | SKIP, as the lines print them
    said: str = ""  # what was expected and what came back; why it was skipped


@dataclass
class Report:
    url: str
    cases: list[Case] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # NOTE (what was not checked) and WARN (passed only just) lines

    @property
    def passed(self) -> bool:
        return all(case.verdict != "FAIL" for case in self.cases)

    def lines(self) -> Iterator[str]:
        for case in self.cases:
            yield f"{case.verdict:4} {case.name}" + (f": {case.said}" if case.said else "")
        yield from self.notes
        failed = sum(case.verdict == "FAIL" for case in self.cases)
        yield f"{len(self.cases)} cases: {failed} failed, {sum(c.verdict == 'SKIP' for c in self.cases)} skipped"

    def as_json(self) -> dict[str, Any]:
        return {"url": self.url, "passed": self.passed, "cases": [asdict(case) for case in self.cases],
                "notes": self.notes}


@dataclass(frozen=True)
class Options:
    url: str
    key: str
    action: str = "test.noop"
    slow_action: str | None = None
    spawn_action: str | None = "test.spawn"
    status: bool = True  # the bridge serves the status endpoint
    deadline: float = 10.0  # the engine's overall deadline for one exchange: min(10, EVENT_STEP_LEASE_SECONDS/4)
    slow_seconds: float = 3.0  # how long --slow-action is asked to take
    record: str | None = None  # a file the keys delivered done and their answers are written to, for --replay
    replay: str | None = None  # a file --record wrote: its keys are sent again (the game restarted) and only that


class Checker:
    def __init__(self, options: Options, now: Callable[[], datetime] = lambda: datetime.now(UTC).replace(tzinfo=None)):
        self.options = options
        self._endpoint = outbound.Endpoint.parse(options.url)
        self._now = now
        self._run = f"{uuid.uuid4().hex[:8]}"
        self._steps = iter(range(1, 1_000_000))
        self._lock = threading.Lock()
        self.timing = True  # a case whose requests are slow by design turns this off while it runs
        self.slowest: tuple[float, str] = (0.0, "")  # the longest an answer took, and the request's
        self.delivered = False  # a delivery signed as the engine signs was accepted (so the key is right)...
        self.checks_deliveries = False  # ...and one signed otherwise was refused 401 (so deliveries are verified)
        self.recorded: dict[str, dict[str, Any]] = {}  # key: a done delivery's action, params and answer
        self.attempts: dict[str, int] = {}  # key: the highest attempt a delivery or status request named

    def key(self, case: str) -> str:
        return f"bridge-check-{self._run}-{case}"

    # -- the requests, as the engine sends them ---------------------------------------------------------------

    def deliver(self, action: str, key: str, attempt: int = 1, *, params: dict[str, Any] | None = None,
                signed_with: str | None = None, at: datetime | None = None, signature: str | None = None,
                unsigned: bool = False, header_key: str | None = None, path_action: str | None = None
                ) -> outbound.Answer:
        """A delivery of `action` under `key`, signed as the engine signs it, or spoilt as a case asks: unsigned,
        another signature, key or time, or a header key (`header_key`) or path (`path_action`) the body does not
        name."""
        body = delivery_body(0, next(self._steps), 1, action, 1, params or {}, key, attempt)
        headers = {"Content-Type": "application/json", "Idempotency-Key": header_key or key}
        if not unsigned:
            headers |= outbound.signed_headers(signed_with or self.options.key, at or self._now(), body)
        if signature is not None:
            headers["X-Event-Signature"] = signature
        target = self._endpoint.target(f"/actions/{path_action or action}")
        answer = self._timed(f"a delivery of {action}", key, attempt, lambda: outbound.post(
            self._endpoint, target, body, headers, timeout=self.options.deadline))
        as_the_engine = signature is None and not unsigned and signed_with is None and at is None
        if not as_the_engine and answer.status == 401:
            self.checks_deliveries = True
        if as_the_engine and header_key is None and path_action is None and answer.status != 401:
            self.delivered = True
            if classify(answer).verdict is Verdict.DONE:
                with self._lock:
                    self.recorded.setdefault(key, {"action": action, "key": key, "params": params or {},
                                                   "answer": json.loads(answer.body)})
        return answer

    def status(self, action: str, key: str, attempt: int, *, unsigned: bool = False, signed_with: str | None = None,
               at: datetime | None = None, signature: str | None = None) -> outbound.Answer:
        """A status request as the engine signs it, or spoilt as a case asks (as `deliver`)."""
        target = self._endpoint.target(f"/actions/{action}/status/{key}")
        target = f"{target}{'&' if '?' in target else '?'}attempt={attempt}"
        headers = {} if unsigned else outbound.signed_headers(signed_with or self.options.key, at or self._now(),
                                                              f"GET.{target}.".encode())
        if signature is not None:
            headers["X-Event-Signature"] = signature
        return self._timed("a status request", key, attempt, lambda: outbound.get(
            self._endpoint, target=target, headers=headers, timeout=self.options.deadline))

    def _timed(self, what: str, key: str, attempt: int, send: Callable[[], outbound.Answer]) -> outbound.Answer:
        with self._lock:
            self.attempts[key] = max(self.attempts.get(key, 0), attempt)
        started = time.monotonic()
        try:
            answer = send()
            took = time.monotonic() - started
            with self._lock:
                if self.timing and took > self.slowest[0]:
                    self.slowest = (took, what)
            return answer
        except OutboundError as error:
            if not error.sent:
                raise BridgeUnreachable(f"nothing answered at {self.options.url} ({error}): is the bridge running,"
                                        " and is this its address?") from None
            raise Failed(f"no answer within the engine's {self.options.deadline:g} s deadline: {error}") from None

    # -- what the engine would make of an answer ---------------------------------------------------------------

    def status_of(self, action: str, key: str, attempt: int) -> str:
        answer = self.status(action, key, attempt)
        if answer.status == 401:
            raise Failed(f"the status endpoint answered {_shown(answer)}: {self.why_refused()}")
        probe = read_status(answer)
        if probe.status is Status.UNKNOWN:
            raise Failed(f"the status endpoint gave no status the engine knows ({probe.detail})")
        return probe.status.value

    def why_refused(self) -> str:
        """Why the engine's signed status request was refused: the key, unless deliveries showed it right (one is
        sent when none was yet: a status case may come first)."""
        if not self.delivered:
            self.deliver(self.options.action, self.key("signing-probe"))
        return PATH_HINT if self.delivered and self.checks_deliveries else KEY_HINT

    def not_applied(self, key: str) -> None:
        if self.options.status:
            said = self.status_of(self.options.action, key, 1)
            if said != "not_applied":
                raise Failed(f"a refused delivery must not be applied: the status endpoint then said {said!r}")


def _shown(answer: outbound.Answer) -> str:
    return f"HTTP {answer.status} {answer.body[:200].decode('utf-8', 'replace')}"


def _expect_refused(check: Checker, case: str, **how: Any) -> str:
    key = check.key(case)
    answer = check.deliver(check.options.action, key, **how)
    if answer.status != 401:
        raise Failed(f"expected 401 and nothing applied, got {_shown(answer)}: check the signature, its key and its"
                     " timestamp window before reading anything")
    check.not_applied(key)
    return "401, not applied"


def _done(check: Checker, action: str, key: str, attempt: int = 1, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return _done_in(check.deliver(action, key, attempt, params=params))


def _done_in(answer: outbound.Answer) -> dict[str, Any]:
    """The answer's body, once the engine would take it as done with resources it would record."""
    if answer.status == 401:
        raise Failed(f"expected done, got {_shown(answer)}: {KEY_HINT}")
    outcome = classify(answer)
    if outcome.verdict is not Verdict.DONE:
        raise Failed(f"expected done, got {outcome.verdict.value}: {outcome.error}")
    _, problem = listed(outcome.result)
    if problem:
        raise Failed(f"its resources would be refused by the engine: {problem}")
    return outcome.result or {}


def case_unsigned(check: Checker) -> str:
    return _expect_refused(check, "unsigned", unsigned=True)


def case_forged(check: Checker) -> str:
    return _expect_refused(check, "forged", signature="sha256=" + "0" * 64)


def case_stale(check: Checker) -> str:
    return _expect_refused(check, "stale", at=check._now() - timedelta(seconds=STALE_SECONDS))


def case_other_key(check: Checker) -> str:
    return _expect_refused(check, "other-key", signed_with=check.options.key + "-not-this-one")


def case_delivery(check: Checker) -> str:
    _done(check, check.options.action, check.key("once"))
    return "done, a JSON object within the cap and the deadline"


def case_repeat(check: Checker) -> str:
    key = check.key("repeat")
    first = _done(check, check.options.action, key)
    for attempt in (1, 2):  # the same delivery again (its answer lost), then the engine's next attempt of the key
        answer = check.deliver(check.options.action, key, attempt)
        if answer.status == 409:
            raise Failed(f"attempt {attempt} of a key already answered must get the first answer again (2xx, the same"
                         f" body), got {_shown(answer)}: the engine would fail a step the game applied")
        again = _done_in(answer)
        if again != first:
            raise Failed(f"attempt {attempt} of a key already answered must get the first answer again (applied"
                         f" once), got {again} after {first}: record the answer by idempotency key and replay it")
    if check.options.status and (said := check.status_of(check.options.action, key, 3)) != "applied":
        raise Failed(f"after a done delivery the status endpoint must say applied, said {said!r}")
    return "the first answer replayed to a repeat and to attempt 2" + (", status applied" if check.options.status else "")


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
                         f" got {_shown(answer)}: take the action, key and attempt from the verified body, or check"
                         " they are the request's")
    for each in (key, claimed):
        check.not_applied(each)
    return f"refused for another {' and for another '.join(spoilt)}, nothing applied"


FENCE_PROBE = 99  # the attempt a spoilt status request names: had it raised the fence, attempt 1 would be refused


def _expect_status_refused(check: Checker, case: str, **how: Any) -> str:
    """A status request the engine did not sign gets 401 and raises no fence: else anyone could send
    `status?attempt=99` for a (guessable) key, and the engine's own delivery would be refused 409."""
    key = check.key(f"status-{case}")
    answer = check.status(check.options.action, key, FENCE_PROBE, **how)
    if answer.status != 401:
        raise Failed(f"expected 401, got {_shown(answer)}: verify a status request's signature (over"
                     " GET.{path and query}., with the bridge key) and its timestamp before reading or fencing"
                     " anything; else anyone can fence off the engine's deliveries")
    answer = check.deliver(check.options.action, key, 1)
    if answer.status == 409:
        raise Failed(f"the status request was refused 401, but it raised the key's fence to attempt {FENCE_PROBE}:"
                     f" attempt 1 then got {_shown(answer)}; verify the signature before the store sees the request")
    _done_in(answer)
    return "401, no fence raised (attempt 1 then done)"


def case_status_unsigned(check: Checker) -> str:
    return _expect_status_refused(check, "unsigned", unsigned=True)


def case_status_forged(check: Checker) -> str:
    return _expect_status_refused(check, "forged", signature="sha256=" + "0" * 64)


def case_status_stale(check: Checker) -> str:
    return _expect_status_refused(check, "stale", at=check._now() - timedelta(seconds=STALE_SECONDS))


def case_status_other_key(check: Checker) -> str:
    return _expect_status_refused(check, "other-key", signed_with=check.options.key + "-not-this-one")


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
    if answer.status != 409:
        raise Failed(f"after a status for attempt 3, a delivery of attempt 2 must be refused 409 (the attempt fence),"
                     f" got {_shown(answer)}: keep the highest attempt a status was asked for, per key")
    if (said := check.status_of(check.options.action, key, 3)) != "not_applied":
        raise Failed(f"a fenced delivery must not be applied: the status then said {said!r}")
    answer = check.deliver(check.options.action, key, attempt=3)  # what the engine sends after that not_applied
    if answer.status == 409:
        raise Failed(f"after a status for attempt 3, a delivery of attempt 3 itself must be applied (the engine re-sends"
                     f" exactly the attempt it asked about), got {_shown(answer)}: refuse only attempts below the"
                     " highest one asked about (attempt < fence, not <=), or every step in doubt fails as refused")
    try:
        _done_in(answer)
    except Failed as failed:
        raise Failed(f"after a status for attempt 3, a delivery of attempt 3 must be done: {failed}") from None
    if (said := check.status_of(check.options.action, key, 3)) != "applied":
        raise Failed(f"after attempt 3 was done the status must say applied, said {said!r}")
    return "409 behind the fence, not applied; the attempt asked about done, then applied"


def case_in_progress(check: Checker) -> str:
    action, key = check.options.slow_action or check.options.action, check.key("slow")  # skipped when not named
    finished: list[Any] = []
    worker = threading.Thread(target=lambda: finished.append(_catch(lambda: check.deliver(
        action, key, 1, params={"seconds": check.options.slow_seconds}))), daemon=True)
    worker.start()
    seen, waited = [], 0.0  # waited: how long a status request asked while it ran took, when it ended meanwhile
    check.timing = False  # the slow delivery is slow by design
    try:
        while worker.is_alive():
            asked = time.monotonic()
            seen.append(check.status_of(action, key, 1))
            if seen[-1] == "in_progress":
                break
            if not worker.is_alive():
                waited = time.monotonic() - asked
            time.sleep(0.1)
        worker.join(check.options.deadline + 1)
    finally:
        check.timing = True
    if finished and isinstance(finished[0], Failed):
        raise finished[0]
    if finished and finished[0].status == 409:
        raise Failed(f"the slow delivery of attempt 1 was refused ({_shown(finished[0])}) after a status request asked"
                     " about attempt 1: the engine re-sends exactly the attempt it asked about, so refuse only attempts"
                     " below the highest one asked about (attempt < fence, not <=)")
    if finished:
        _done_in(finished[0])
    if "in_progress" not in seen and waited > check.options.slow_seconds / 2:
        raise Failed(f"a status request sent while a slow delivery ran was answered only after it finished ({waited:.1f} s"
                     f" later, saying {seen[-1]!r}): the server serves one request at a time, so the engine's status"
                     " requests and re-sends wait behind every slow action; serve requests concurrently (a threading"
                     " or multi-worker server)")
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
    together = threading.Barrier(count)
    answers: list[Any] = [None] * count

    def send(index: int) -> None:
        together.wait()
        answers[index] = _catch(lambda: check.deliver(action, key, 1 + index % 2, params=params))

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
    shown = "; ".join(_shown(answer) for answer in answers if answer is not None)
    done = [_done_in(answer) for answer in answers if answer is not None and answer.status != 429]
    if not done:
        raise Failed(f"{count} deliveries of one key sent at once were all answered 429 ({shown}): one of them must"
                     " be applied; answer 429 only while another delivery of the key is being applied")
    if any(body != done[0] for body in done):
        raise Failed(f"{count} deliveries of one key sent at once were applied more than once (different answers:"
                     f" {shown}): answer 429 to a delivery of a key in progress, and mark the key in progress in"
                     " the same lock or transaction that checks it (a row lock, an insert that fails on a duplicate"
                     " key)")
    if check.options.status and (said := check.status_of(action, key, 2)) != "applied":
        raise Failed(f"after {count} deliveries of one key at once, the status said {said!r}, not applied")
    how = "429 to the rest" if len(done) < count else "the same answer to each"
    return (f"{count} at once{'' if slow else f' ({action}: with --slow-action they overlap for sure)'}: applied once,"
            f" {how}" + (", status applied" if check.options.status else ""))


def case_revert(check: Checker) -> str:
    action = check.options.spawn_action or check.options.action  # skipped when not named
    result = _done(check, action, check.key("spawn"))
    entries, _ = listed(result)
    reverts = [e.revert for e in entries if e.revert is not None and e.revert.action != "core.cue"]
    if not reverts:
        raise Failed(f"{action} must list a resource with a module-action revert, answered {result}")
    revert = reverts[0]
    _done(check, revert.action, check.key("revert-1"), params=revert.params)
    _done(check, revert.action, check.key("revert-2"), params=revert.params)
    return f"{len(entries)} resource(s) well formed; {revert.action} done, and done again once already gone"


def recording(check: Checker) -> dict[str, Any]:
    """What --record writes: each key delivered done, its action, params and answer, and the attempt a replay
    sends (above any the run named: a fence raised by a status request survives a restart too)."""
    entries = [dict(entry, attempt=check.attempts.get(key, 1) + 1) for key, entry in check.recorded.items()]
    return {"url": check.options.url, "written": check._now().isoformat(timespec="seconds"), "keys": entries}


def read_recording(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, ValueError) as error:
        raise ValueError(f"--replay {path}: not a file --record wrote ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list) or not data["keys"]:
        raise ValueError(f"--replay {path}: no keys recorded in it (was the first run's --record passing?)")
    return data


def case_replay(check: Checker) -> str:
    """The keys of the first run (--record), sent again after the game restarted: each answered its recorded
    answer, so a re-send the engine makes after a restart is not applied again."""
    recorded = read_recording(check.options.replay or "")["keys"]
    forgot = []
    for entry in recorded:
        action, key, attempt = entry["action"], entry["key"], entry["attempt"]
        if check.options.status and (said := check.status_of(action, key, attempt)) != "applied":
            forgot.append(f"{key} ({action}): the status endpoint said {said!r}, but the first run applied it")
            continue
        answer = check.deliver(action, key, attempt, params=entry["params"])
        if answer.status == 401:
            raise Failed(f"expected the recorded answers, got {_shown(answer)}: {KEY_HINT}")
        try:
            again = _done_in(answer)
        except Failed:
            again = None
        if again != entry["answer"]:
            forgot.append(f"{key} ({action}) answered {_shown(answer)}, recorded {json.dumps(entry['answer'])[:200]}")
    if forgot:
        raise Failed(f"{len(forgot)} of {len(recorded)} keys of the first run were not answered as before: {forgot[0]}:"
                     " if the game restarted in between, it forgot its keys, and the engine's re-send of a step in"
                     " doubt would be applied again; give the bridge a store that keeps them (not the kits'"
                     " MemoryStore), with the world change, on disk")
    return f"{len(recorded)} keys of the first run each answered their recorded answer" + (
        ", status applied first" if check.options.status else "")


def _catch(run: Callable[[], Any]) -> Any:
    try:
        return run()
    except Failed as failed:
        return failed


# name, the case, why it is skipped (None: it runs)
def cases(options: Options) -> list[tuple[str, Callable[[Checker], str], str | None]]:
    no_status = None if options.status else "needs the status endpoint (--no-status given)"
    return [
        ("unsigned delivery refused", case_unsigned, None),
        ("forged signature refused", case_forged, None),
        ("stale timestamp refused", case_stale, None),
        ("another key refused", case_other_key, None),
        ("valid delivery done", case_delivery, None),
        ("same key replays its first answer", case_repeat, None),
        ("signed body names what is applied", case_signed_body, None),
        ("unsigned status request refused", case_status_unsigned, no_status),
        ("forged status request refused", case_status_forged, no_status),
        ("stale status request refused", case_status_stale, no_status),
        ("status request under another key refused", case_status_other_key, no_status),
        ("unknown key not applied", case_status_unknown, no_status),
        ("attempt fence", case_fence, no_status),
        ("in progress while a slow delivery runs", case_in_progress,
         no_status or (None if options.slow_action else "needs an action that can be slowed (--slow-action)")),
        ("one key delivered twice at once applied once", case_at_once, None),
        ("resources well formed, revert idempotent", case_revert,
         None if options.spawn_action else "needs an action that leaves a resource (--spawn-action)"),
    ]


REPLAYED = "keys of the first run answered as recorded"


def run(options: Options, *, progress: Callable[[str], None] | None = None) -> Report:
    check, report = Checker(options), Report(options.url)
    if options.replay:
        read_recording(options.replay)  # a file that is no recording is the operator's mistake, said before anything
    unreachable = False
    listed_cases = [(REPLAYED, case_replay, None)] if options.replay else cases(options)
    for name, case, skipped in listed_cases:
        if unreachable:
            result = Case(name, "SKIP", "not run: nothing answered at the bridge's address (above)")
        elif skipped:
            result = Case(name, "SKIP", skipped)
        else:
            try:
                result = Case(name, "PASS", case(check))
            except Failed as failed:
                result = Case(name, "FAIL", str(failed))
                unreachable = isinstance(failed, BridgeUnreachable)
        report.cases.append(result)
        if progress:
            progress(next(iter(Report(options.url, [result]).lines())))
    report.notes = notes(check, unreachable)
    return report


def notes(check: Checker, unreachable: bool) -> list[str]:
    """The NOTE and WARN lines: the deadline judged against, an answer slower than half of it, and what was (or
    was not) done about a restart."""
    options, said = check.options, []
    took, what = check.slowest
    if took > options.deadline / 2:
        said.append(f"WARN the slowest answer took {took:.1f} s ({what}), more than half the {options.deadline:g} s"
                    " deadline: a busier game or a shorter EVENT_STEP_LEASE_SECONDS would cut it off; answer at once"
                    " and do long work after answering (or in the action's own steps)")
    said.append(f"NOTE answers were judged against a {options.deadline:g} s deadline; {DEADLINE_NOTE}")
    if options.replay:
        return said
    if options.record and not unreachable:
        entries = recording(check)
        folder = os.path.dirname(os.path.abspath(options.record))
        temporary = os.path.join(folder, f".{os.path.basename(options.record)}.{check._run}")
        with open(temporary, "w", encoding="utf-8") as file:
            json.dump(entries, file, indent=1)
        os.replace(temporary, options.record)
        said.append(f"NOTE recorded {len(entries['keys'])} keys and their answers in {options.record}: restart the"
                    f" game, then run bridge-check {options.url} --replay {options.record} (each key must be answered"
                    " as recorded)")
    else:
        said.append(f"NOTE {RESTART_NOTE}")
    return said


def main(options: Options, *, as_json: bool, out: Callable[[str], None] = print) -> int:
    report = run(options, progress=None if as_json else out)
    if as_json:
        out(json.dumps(report.as_json(), indent=2))
    else:
        for line in [*report.notes, list(report.lines())[-1]]:
            out(line)
    return 0 if report.passed else 1


def add_arguments(check: argparse.ArgumentParser) -> None:
    """The bridge-check command's arguments (`python -m chalicelib bridge-check`)."""
    check.add_argument("url", help="the bridge's base URL, as GAME_BRIDGE_URL")
    check.add_argument("--action", default="test.noop", help="a harmless action to deliver (default test.noop)")
    check.add_argument("--slow-action", help="an action that takes params {\"seconds\"} that long (the kits' test.slow)")
    check.add_argument("--spawn-action", default="test.spawn",
                       help="an action that leaves a resource with a revert (default test.spawn; '' to skip)")
    check.add_argument("--no-status", action="store_true", help="the bridge serves no status endpoint")
    check.add_argument("--deadline", type=float, default=10.0,
                       help="seconds an exchange may take (default 10): the engine's is min(10,"
                            " EVENT_STEP_LEASE_SECONDS/4), so pass the lease/4 when it is under 40 s; an answer"
                            " slower than half of it is warned about")
    check.add_argument("--record", metavar="FILE", help="write the keys delivered and their answers to FILE, to"
                                                        " --replay them after restarting the game")
    check.add_argument("--replay", metavar="FILE", help="after restarting the game, send the keys --record wrote"
                                                        " again and expect their recorded answers (runs only that)")
    check.add_argument("--json", action="store_true", help="one JSON report for CI instead of lines")


def options_from(args: argparse.Namespace, key: str) -> Options:
    """The Options of parsed `add_arguments`; ValueError for a bad URL or a --replay file that is no recording."""
    if args.record and args.replay:
        raise ValueError("--record and --replay are the two halves of a restart check: one per run")
    if args.replay:
        read_recording(args.replay)
    return Options(args.url, key, args.action, args.slow_action, args.spawn_action or None, not args.no_status,
                   args.deadline, record=args.record, replay=args.replay)
