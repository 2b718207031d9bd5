"""A real game bridge on loopback that tests and benchmarks script: answers, delays, failures; every request recorded.

    with GameBridge() as bridge:
        bridge.script("world.spawn", Answer(503), Answer(503), Answer(200))
        ... tick against bridge.url ...
        assert [r.json["attempt"] for r in bridge.received("world.spawn")] == [1, 2, 3]

Unscripted requests get `default` (200 {"outcome": "done"}), or what `respond`
decides for their action. A delayed or gated answer also ends when `stop()` is
called, so a test never waits out a long delay.

A status endpoint (`GET /actions/{id}/status/{key}?attempt=n`, the probe of a
step in doubt) answers what `status` decides, else 404; each such request is
recorded apart (`probes`). `ApplyingGame` is a game that applies every delivery
it receives (it never de-duplicates on the key, so a duplicate shows) and
answers its status endpoint honestly, with the attempt fence.

It can misbehave as a hostile game side does: interim 1xx answers before the
final one, a body dripping a byte at a time, a body far larger than any cap
(streamed, never held), with or without a Content-Length. Each request's open
(arrival) and close (answered, or the client hung up, seen at once) are
recorded, so tests can check that no idempotency key ever had two attempts
open at the game side at once, and that an abandoned socket was closed.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import select
import socket
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

SECRET = "test-bridge-secret"


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: dict | str = field(default_factory=lambda: {"outcome": "done"})
    delay: float = 0.0
    gate: threading.Event | None = None  # answer only once the test sets it
    interim: tuple[int, ...] = ()  # 1xx answers sent first, e.g. (103,) for Early Hints
    drip: float = 0.0  # seconds between the body's bytes, once the headers are out
    repeat: int = 1  # the body is sent this many times over (a huge answer, never held in memory)
    declare_length: bool = True  # False: no Content-Length; the body ends when the server closes

    def payload(self) -> bytes:
        return (self.body if isinstance(self.body, str) else json.dumps(self.body)).encode()


def signed_by(secret: str, timestamp: str, signature: str, signed: bytes) -> bool:
    """The game side's check of the bridge contract's signature: `signature` is
    `sha256=HMAC-SHA256(secret, "{timestamp}." + signed)`, compared in constant time."""
    expected = hmac.new(secret.encode(), timestamp.encode() + b"." + signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(signature, f"sha256={expected}")


MEGABYTE = "x" * (1024 * 1024)


def dripping(every: float = 1.5) -> Answer:
    """200 done, its headers at once and then one byte every `every` seconds."""
    return Answer(200, {"outcome": "done", "note": "x" * 60}, drip=every)


def huge(megabytes: int, *, declared: bool = False) -> Answer:
    return Answer(200, MEGABYTE, repeat=megabytes, declare_length=declared)


def deep(levels: int = 100_000) -> Answer:
    return Answer(200, "[" * levels + "]" * levels)


@dataclass
class Received:
    action_id: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    at: float  # time.monotonic() on arrival: the request is open at the game side from here
    closed_at: float | None = None  # ... to here: answered in full, or the client hung up

    @property
    def json(self) -> dict:
        return json.loads(self.body)

    def signature_valid(self, secret: str = SECRET) -> bool:
        return signed_by(secret, self.headers.get("x-event-timestamp", ""), self.headers.get("x-event-signature", ""),
                         self.body)


@dataclass
class StatusAsked:
    """One GET of the status endpoint: the action, the key and the attempt it was asked before."""

    action_id: str
    key: str
    attempt: int
    target: str  # the path and query, as signed
    headers: dict[str, str]

    def signature_valid(self, secret: str = SECRET) -> bool:
        return signed_by(secret, self.headers.get("x-event-timestamp", ""), self.headers.get("x-event-signature", ""),
                         f"GET.{self.target}.".encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many tick workers connect at once; the default backlog of 5 stalls them


class GameBridge:
    def __init__(self, secret: str = SECRET, default: Answer = Answer()):
        self.secret = secret
        self.default = default
        self._scripts: dict[str, deque[Answer]] = defaultdict(deque)
        self._responders: dict[str, Callable[[Received], Answer]] = {}
        self._status_for: Callable[[StatusAsked], Answer] | None = None
        self._probes: list[StatusAsked] = []
        self._received: list[Received] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self.default_responder: Callable[[Received], Answer] | None = None
        self._server = _Server(("127.0.0.1", 0), self._handler())
        # A connection that goes away between select and accept left accept blocked, and the
        # teardown's shutdown() waiting on it for ever (seen once after a failing R5): with a
        # timeout, accept gives up and the serving loop sees the shutdown. Accepted sockets stay blocking.
        self._server.socket.settimeout(1.0)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="game-bridge", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> GameBridge:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> GameBridge:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def script(self, action_id: str, *answers: Answer) -> None:
        """The next answers for `action_id`, in order; then `default`."""
        with self._lock:
            self._scripts[action_id].extend(answers)

    def respond(self, action_id: str, answer_for: Callable[[Received], Answer]) -> None:
        """Answer every unscripted request for `action_id` with `answer_for(request)`."""
        with self._lock:
            self._responders[action_id] = answer_for

    def respond_to_every(self, answer_for: Callable[[Received], Answer]) -> None:
        """Answer every unscripted request of any action with `answer_for(request)`."""
        with self._lock:
            self._responders.clear()
            self.default_responder = answer_for

    def status(self, answer_for: Callable[[StatusAsked], Answer]) -> None:
        """Answer the status endpoint with `answer_for(asked)` (unset: 404)."""
        with self._lock:
            self._status_for = answer_for

    def probes(self) -> list[StatusAsked]:
        with self._lock:
            return list(self._probes)

    def overlapping_attempts(self) -> list[tuple[str, int, int]]:
        """(key, attempt, attempt) for two requests of one idempotency key open at the game side at once."""
        by_key: dict[str, list[Received]] = defaultdict(list)
        for request in self.received():
            by_key[request.headers["idempotency-key"]].append(request)
        overlaps = []
        for key, requests in by_key.items():
            requests.sort(key=lambda r: r.at)
            for earlier, later in itertools.pairwise(requests):
                if earlier.closed_at is None or earlier.closed_at > later.at:
                    overlaps.append((key, earlier.json["attempt"], later.json["attempt"]))
        return overlaps

    def received(self, action_id: str | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self._received if action_id is None or r.action_id == action_id]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        """Block until `count` requests have arrived (a test syncing with a process mid-dispatch)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self._received) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"the game bridge received {len(self._received)} of {count} requests")
                self._arrived.wait(left)
            return list(self._received)

    def _answer_for(self, received: Received) -> Answer:
        with self._lock:
            queue = self._scripts.get(received.action_id)
            if queue:
                return queue.popleft()
            responder = self._responders.get(received.action_id) or self.default_responder
        return responder(received) if responder else self.default

    def _record(self, received: Received) -> None:
        with self._arrived:
            self._received.append(received)
            self._arrived.notify_all()

    def _handler(self):
        bridge = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: with Nagle on, the body waits for
            # the client's delayed ACK (40 ms), which is the server's cost, not the engine's.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                action_id = self.path.rsplit("/", 1)[-1]
                headers = {k.lower(): v for k, v in self.headers.items()}
                received = Received(action_id, headers, body, time.monotonic())
                bridge._record(received)
                try:
                    self._answer(bridge._answer_for(received))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the dispatcher gave up (its deadline) or was killed mid-dispatch
                finally:
                    self.close_connection = True
                    with bridge._lock:
                        received.closed_at = time.monotonic()

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                segments = parts.path.rstrip("/").split("/")
                headers = {k.lower(): v for k, v in self.headers.items()}
                attempt = parse_qs(parts.query).get("attempt", ["0"])[0]
                is_status = len(segments) >= 4 and segments[-2] == "status" and attempt.isdigit()
                asked = StatusAsked(segments[-3], segments[-1], int(attempt), self.path, headers) if is_status else None
                with bridge._lock:
                    responder = bridge._status_for
                    if asked is not None:
                        bridge._probes.append(asked)
                try:
                    self._answer(responder(asked) if asked is not None and responder else Answer(404, {"reason": "no such"}))
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    self.close_connection = True

            def _answer(self, answer: Answer) -> None:
                if answer.delay and not self._wait(answer.delay):
                    return  # hung up, or stopping: drop the connection unanswered
                while answer.gate is not None and not answer.gate.is_set():
                    if not self._wait(0.05):
                        return
                for code in answer.interim:
                    self.send_response_only(code)
                    self.send_header("Link", "</style.css>; rel=preload")
                    self.end_headers()
                payload = answer.payload()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                if answer.declare_length:
                    self.send_header("Content-Length", str(len(payload) * answer.repeat))
                self.send_header("Connection", "close")
                self.end_headers()
                if answer.drip:
                    for i in range(len(payload)):
                        self.wfile.write(payload[i:i + 1])
                        if not self._wait(answer.drip):
                            return
                    return
                for _ in range(answer.repeat):
                    self.wfile.write(payload)

            def _wait(self, seconds: float) -> bool:
                """Sleep; False as soon as the client hangs up or the bridge stops."""
                deadline = time.monotonic() + seconds
                while (left := deadline - time.monotonic()) > 0:
                    if bridge._stopping.is_set():
                        return False
                    readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
                    if readable and self._hung_up():
                        return False
                return not bridge._stopping.is_set()

            def _hung_up(self) -> bool:
                try:
                    return self.connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    return True

            def log_message(self, *args) -> None:
                pass

        return Handler


class ApplyingGame:
    """A game side that applies every delivery it receives — it never de-duplicates on the key, so a duplicate
    shows as two applications — and answers the status endpoint as the bridge contract says: applied, in
    progress (received, not yet applied) or not applied; having answered for attempt n, it refuses any
    delivery of that key with a lower attempt (the attempt fence), before applying it.

    `hold`: each delivery is applied on arrival, its answer then waits for this event (a worker killed while
    it waits never hears it); `delay`: likewise, for this many seconds. `slow`: each delivery is applied only
    once this event is set, and is in progress until then."""

    def __init__(self, bridge: GameBridge, *, hold: threading.Event | None = None, slow: threading.Event | None = None,
                 delay: float = 0.0):
        self.applied: Counter[str] = Counter()  # key -> applications
        self.fenced: Counter[str] = Counter()  # key -> deliveries refused by the fence
        self._fence: dict[str, int] = {}
        self._applying: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.hold, self.slow, self.delay = hold, slow, delay
        bridge.respond_to_every(self.deliver)
        bridge.status(self.answer_status)

    def deliver(self, received: Received) -> Answer:
        key, attempt = received.headers["idempotency-key"], received.json["attempt"]
        with self._lock:
            if attempt < self._fence.get(key, 0):
                self.fenced[key] += 1
                return Answer(409, {"outcome": "refused", "reason": f"attempt {attempt} is behind the fence"})
            self._applying[key] += 1
        if self.slow is not None:
            self.slow.wait(30)
        with self._lock:
            self._applying[key] -= 1
            self.applied[key] += 1
        return Answer(200, {"outcome": "done"}, gate=self.hold, delay=self.delay)

    def answer_status(self, asked: StatusAsked) -> Answer:
        if not asked.signature_valid():
            return Answer(401, {"reason": "bad signature"})
        with self._lock:
            self._fence[asked.key] = max(self._fence.get(asked.key, 0), asked.attempt)
            if self.applied[asked.key]:
                return Answer(200, {"status": "applied"})
            if self._applying[asked.key]:
                return Answer(200, {"status": "in_progress"})
            return Answer(200, {"status": "not_applied"})

    def duplicates(self) -> dict[str, int]:
        """The keys applied more than once, and how many times."""
        with self._lock:
            return {key: n for key, n in self.applied.items() if n > 1}
