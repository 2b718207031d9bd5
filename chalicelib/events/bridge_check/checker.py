"""The bridge-check's client: requests sent exactly as the engine sends them, answers read by the engine's rules.

Invariant: every request goes through the engine's own client (`outbound`: one
overall deadline, the 1 MB answer cap) and every answer is classified by the
engine's own rules (`adapters.bridge.classify`, `read_status`, `ledger.listed`),
so what a case concludes is what the engine would make of the same answer.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

from ... import outbound
from ...config import RANGES
from ..actions.outcome import Status, Verdict
from ..adapters.bridge import classify, delivery_body, read_status
from ..errors import BridgeCaseFailed as Failed
from ..errors import BridgeUnreachable, DeadlineExceeded, OutboundError
from ..ledger import listed
from ..runner.compose import MAX_BRIDGE_TIMEOUT_SECONDS

STALE_SECONDS = 600  # twice the window a bridge should allow either side of its clock
# The engine signs with its tick's one clock read: a step walked late in the longest tick, then sent under the
# deadline, arrives this old. Requests signed as the engine signs carry a timestamp this far back.
SIGNED_BEFORE_SENT_SECONDS = round(RANGES["EVENT_TICK_SECONDS"][2] + MAX_BRIDGE_TIMEOUT_SECONDS)
CLOCK_WARN_SECONDS = 60  # a bridge's clock this far off this machine's (its answers' Date) is warned about
KEY_HINT = ("the bridge refused a request the engine signed: its key (EVENT_BRIDGE_KEY in the kits) must be the"
            " engine's GAME_BRIDGE_SECRET, its clock within 300 s of this machine's, and its window the full 300 s"
            f" (the engine signs when its tick began: a request arrives up to {SIGNED_BEFORE_SENT_SECONDS} s after)")
PATH_HINT = ("deliveries signed with the same key were accepted, so the key and the clock are right: the bridge checks"
             " the status signature over another path than the engine signed (GET.{path and query}. of GAME_BRIDGE_URL's"
             " path as spelled, e.g. /game%20bridge/actions/…): a percent-decoded path (WSGI's PATH_INFO), a prefix a"
             " proxy strips or rewrites; verify over the raw request target")


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
        self.now = now
        self.run_id = f"{uuid.uuid4().hex[:8]}"
        self._steps = iter(range(1, 1_000_000))
        self._lock = threading.Lock()
        self.timing = True  # a case whose requests are slow by design turns this off while it runs
        self.slowest: tuple[float, str] = (0.0, "")  # the longest an answer took, and the request's
        self.clock_ahead = 0.0  # the bridge's clock less this machine's, as far off as an answer's Date showed it
        self.delivered = False  # a delivery signed as the engine signs was accepted (so the key is right)...
        self.checks_deliveries = False  # ...and one signed otherwise was refused 401 (so deliveries are verified)
        self.recorded: dict[str, dict[str, Any]] = {}  # key: a done delivery's action, params and answer
        self.attempts: dict[str, int] = {}  # key: the highest attempt a delivery or status request named
        self.asks_status = options.status  # turned off when the bridge turns out to serve no status endpoint (404)
        self.stopped: str | None = None  # why the cases left are not run: a failure every one of them would repeat

    @property
    def other_key(self) -> str:
        """A key that is not the bridge's: what a request signed by someone else is signed with."""
        return self.options.key + "-not-this-one"

    def signed_at(self) -> datetime:
        """The timestamp the engine would sign a request sent now with, at its oldest (SIGNED_BEFORE_SENT_SECONDS)."""
        return self.now() - timedelta(seconds=SIGNED_BEFORE_SENT_SECONDS)

    def key(self, case: str) -> str:
        return f"bridge-check-{self.run_id}-{case}"

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
            headers |= outbound.signed_headers(signed_with or self.options.key, at or self.signed_at(), body)
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
        headers = {} if unsigned else outbound.signed_headers(signed_with or self.options.key, at or self.signed_at(),
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
            ahead = clock_ahead(answer)
            with self._lock:
                if self.timing and took > self.slowest[0]:
                    self.slowest = (took, what)
                if abs(ahead) > abs(self.clock_ahead):
                    self.clock_ahead = ahead
        except OutboundError as error:
            raise self.transport_failure(error) from None
        if 300 <= answer.status < 400:  # the engine follows no redirect: every request would get this answer
            raise Failed(f"the bridge redirects (HTTP {answer.status}) to {answer.headers.get('location', 'nowhere named')}:"
                         " set GAME_BRIDGE_URL to the base URL it names (https:// when it redirects there); the"
                         " engine follows no redirect")
        return answer

    def transport_failure(self, error: OutboundError) -> Failed:
        """What a request that got no HTTP answer means, in the words of its fix: a certificate the engine does not
        trust, TLS against plain HTTP either way round, nothing listening, a deadline passed."""
        said, url = str(error), self.options.url
        if "CERTIFICATE_VERIFY_FAILED" in said:
            return BridgeUnreachable(f"the engine does not trust the bridge's TLS certificate ({said}): it checks it"
                                     " against the system's CA bundle, never a private CA or a self-signed"
                                     " certificate: serve one a public CA signed (or plain http:// on loopback or a"
                                     " private network)")
        if "WRONG_VERSION_NUMBER" in said:
            return BridgeUnreachable(f"the server at {url} speaks plain HTTP, not TLS ({said}): use http://, or serve"
                                     " TLS there")
        if not error.sent:
            return BridgeUnreachable(f"nothing answered at {url} ({error}): is the bridge running, and is this its"
                                     " address?")
        if isinstance(error, DeadlineExceeded):
            return Failed(f"no answer within the engine's {self.options.deadline:g} s deadline: {error}")
        return Failed(f"the bridge closed the connection without an HTTP answer ({said})" + (
            ": a server that speaks TLS does that to plain HTTP, so if it serves TLS use https://"
            if url.lower().startswith("http://") else ""))

    # -- what the engine would make of an answer ---------------------------------------------------------------

    def status_of(self, action: str, key: str, attempt: int) -> str:
        answer = self.status(action, key, attempt)
        if answer.status == 404:
            self.asks_status = False  # said once, here: the cases that need the endpoint are not run
            raise Failed(f"no status endpoint at {self.options.url.rstrip('/')}/actions/{{id}}/status/{{key}} (a signed"
                         f" status request got {shown(answer)}): serve it, or run with --no-status and leave"
                         " GAME_BRIDGE_STATUS off")
        if answer.status == 401:
            raise Failed(f"the status endpoint answered {shown(answer)}: {self.why_refused()}")
        probe = read_status(answer)
        if probe.status is Status.UNKNOWN:
            raise Failed(f"the status endpoint gave no status the engine knows ({probe.detail})")
        return probe.status.value

    def why_refused(self) -> str:
        """Why the engine's signed status request was refused: the key, unless deliveries showed it right (one is
        sent when none was yet: a status case may come first)."""
        if not self.delivered:
            self.deliver(self.options.action, self.key("signing-probe"))
        if self.delivered and not self.checks_deliveries:  # a bridge that verifies no delivery tells nothing of the key
            self.deliver(self.options.action, self.key("signing-probe-other-key"), signed_with=self.other_key)
        return PATH_HINT if self.delivered and self.checks_deliveries else KEY_HINT

    def not_applied(self, key: str) -> None:
        if self.asks_status:
            said = self.status_of(self.options.action, key, 1)
            if said != "not_applied":
                raise Failed(f"a refused delivery must not be applied: the status endpoint then said {said!r}")


def clock_ahead(answer: outbound.Answer) -> float:
    """How far the answering server's clock (its Date header, to the second) is ahead of this machine's; 0 without
    a Date it can read. Judged within a second's rounding either way, so a clock in step reads 0."""
    try:
        said = parsedate_to_datetime(answer.headers["date"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return 0.0
    off = said - time.time()
    return 0.0 if -2 < off < 1 else off


def shown(answer: outbound.Answer) -> str:
    return f"HTTP {answer.status} {answer.body[:200].decode('utf-8', 'replace')}"


def done(check: Checker, action: str, key: str, attempt: int = 1, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return done_in(check.deliver(action, key, attempt, params=params))


def done_in(answer: outbound.Answer) -> dict[str, Any]:
    """The answer's body, once the engine would take it as done with resources it would record."""
    if answer.status == 401:
        raise Failed(f"expected done, got {shown(answer)}: {KEY_HINT}")
    outcome = classify(answer)
    if outcome.verdict is not Verdict.DONE:
        raise Failed(f"expected done, got {outcome.verdict.value}: {outcome.error}")
    _, problem = listed(outcome.result)
    if problem:
        raise Failed(f"its resources would be refused by the engine: {problem}")
    return outcome.result or {}


def catch(run: Callable[[], Any]) -> Any:
    try:
        return run()
    except Failed as failed:
        return failed

