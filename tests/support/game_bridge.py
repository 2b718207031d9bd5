"""A real game bridge on loopback that tests script: answers, delays, failures; every request recorded.

    with GameBridge() as bridge:
        bridge.script("world.spawn", Answer(503), Answer(503), Answer(200))
        ... tick against bridge.url ...
        assert [r.json["attempt"] for r in bridge.received("world.spawn")] == [1, 2, 3]

Unscripted requests get `default` (200 {"outcome": "done"}). A delayed or gated
answer also ends when `stop()` is called, so a test never waits out a long delay.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = "test-bridge-secret"


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: dict | str = field(default_factory=lambda: {"outcome": "done"})
    delay: float = 0.0
    gate: threading.Event | None = None  # answer only once the test sets it

    def payload(self) -> bytes:
        return (self.body if isinstance(self.body, str) else json.dumps(self.body)).encode()


@dataclass(frozen=True)
class Received:
    action_id: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    at: float  # time.monotonic() on arrival

    @property
    def json(self) -> dict:
        return json.loads(self.body)

    def signature_valid(self, secret: str = SECRET) -> bool:
        timestamp = self.headers.get("x-event-timestamp", "")
        expected = hmac.new(secret.encode(), timestamp.encode() + b"." + self.body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(self.headers.get("x-event-signature", ""), f"sha256={expected}")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many tick workers connect at once; the default backlog of 5 stalls them


class GameBridge:
    def __init__(self, secret: str = SECRET, default: Answer = Answer()):
        self.secret = secret
        self.default = default
        self._scripts: dict[str, deque[Answer]] = defaultdict(deque)
        self._received: list[Received] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="game-bridge", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "GameBridge":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "GameBridge":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def script(self, action_id: str, *answers: Answer) -> None:
        """The next answers for `action_id`, in order; then `default`."""
        with self._lock:
            self._scripts[action_id].extend(answers)

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

    def _answer_for(self, action_id: str) -> Answer:
        with self._lock:
            queue = self._scripts.get(action_id)
            return queue.popleft() if queue else self.default

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
                bridge._record(Received(action_id, headers, body, time.monotonic()))
                answer = bridge._answer_for(action_id)
                if answer.delay and bridge._stopping.wait(answer.delay):
                    return  # stopping: drop the connection unanswered
                while answer.gate is not None and not answer.gate.wait(0.05):
                    if bridge._stopping.is_set():
                        return
                payload = answer.payload()
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the dispatcher gave up (timeout) or was killed mid-dispatch

            def log_message(self, *args) -> None:
                pass

        return Handler
