"""The real app served over HTTP on loopback, in this process, with the settings a test chooses.

Chalice's own local server runs in a thread; `runtime.override` decides the
settings and database it answers with, so one test can switch the API to an
OpenID Connect issuer's keys, or to a database that is not there; `failing`
makes some paths answer as a gateway does when the function's answer cannot be
sent (502); `answering_late` lets the app act and then answers as the gateway does when it gave up waiting
(504 after the commit); `captive` answers some paths as a network's sign-in page does (200, HTML);
`dropping` lets the app answer a request and then drops the
connection before the answer reaches the page (a flaky network); `delaying`
holds some paths' answers. Answers are gzipped as API Gateway does with the project's
`minimum_compression_size`, so a page's weight is what a browser receives. Every request path is recorded, so tests can see what the page
asked for and when.
"""

from __future__ import annotations

import gzip
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from chalice.config import Config
from chalice.local import ChaliceRequestHandler, CustomLocalChalice, LocalChalice, LocalDevServer

from app import app
from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.db import Database, DatabaseClock

PROJECT_CONFIG = Path(__file__).resolve().parents[2] / ".chalice" / "config.json"
MINIMUM_COMPRESSION_SIZE = json.loads(PROJECT_CONFIG.read_text())["minimum_compression_size"]


class ConsoleServer:
    def __init__(self, settings: Settings, database: Database):
        self.settings = settings
        self.database = database
        self.requests: list[tuple[float, str, str]] = []  # (monotonic time, method, path)
        self._failing: dict[str, int] = {}  # path start -> the status answered instead of the app's
        self._dropping: dict[tuple[str, str], int] = {}  # (method, path start) -> how many answers still to drop
        self._captive: set[str] = set()  # path starts answered by a network's sign-in page instead of the app
        self._late: dict[tuple[str, str], list[int]] = {}  # (method, path start) -> [gateway status, how many still]
        self._delaying: dict[str, float] = {}  # path start -> seconds each answer is held
        self.keys: list[tuple[float, str, str, str | None]] = []  # (monotonic time, method, path, Idempotency-Key)
        self._lock = threading.Lock()
        server = self

        class Recording(ChaliceRequestHandler):
            def _recorded(self) -> None:
                with server._lock:
                    server.requests.append((time.monotonic(), self.command, self.path))
                    server.keys.append((time.monotonic(), self.command, self.path, self.headers.get("Idempotency-Key")))
                    failing = next((status for start, status in server._failing.items() if self.path.startswith(start)), None)
                    delay = next((seconds for start, seconds in server._delaying.items() if self.path.startswith(start)), 0.0)
                    dropped = next(((method, start) for (method, start), left in server._dropping.items()
                                    if left > 0 and method == self.command and self.path.startswith(start)), None)
                    if dropped is not None:
                        server._dropping[dropped] -= 1
                    late = next(((method, start) for (method, start), (_, left) in server._late.items()
                                 if left > 0 and method == self.command and self.path.startswith(start)), None)
                    late_status = None
                    captive = any(self.path.startswith(start) for start in server._captive)
                    if late is not None:
                        late_status = server._late[late][0]
                        server._late[late][1] -= 1
                if delay:
                    time.sleep(delay)
                if captive:
                    self._sign_in_page()
                elif failing is not None:
                    self._gateway_error(failing)
                elif dropped is not None:
                    self._answer_lost()
                elif late_status is not None:
                    self._answered_late(late_status)
                else:
                    self._generic_handle()

            def _app_answers_unsent(self) -> None:
                # The app answers in full (its change made), into nothing: not a byte of it reaches the client.
                # (through __dict__: mypy cannot type the handler's own attribute in this class made in a method)
                sent = self.__dict__["wfile"]
                self.__dict__["wfile"] = io.BytesIO()
                try:
                    self._generic_handle()
                finally:
                    self.__dict__["wfile"] = sent

            def _answer_lost(self) -> None:
                # ... and then the connection drops.
                try:
                    self._app_answers_unsent()
                finally:
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

            def _answered_late(self, status: int) -> None:
                # ... and the gateway, tired of waiting, answers `status`.
                self._app_answers_unsent()
                self._gateway_answer(status)

            def _sign_in_page(self) -> None:
                # What a venue's Wi-Fi answers once its session lapsed: its own page, 200, whatever was asked.
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = b"<!doctype html><title>Hotel Wi-Fi</title><p>Accept the terms to go on."
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _gateway_error(self, status: int) -> None:
                # What API Gateway answers when the function's answer cannot be sent (over 6 MB, a crash). The
                # request's body is read first: left unread, it would be taken for the connection's next request.
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._gateway_answer(status)

            def _gateway_answer(self, status: int) -> None:
                body = b'{"message": "Internal server error"}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _send_http_response_with_body(self, code, headers, body) -> None:
                if isinstance(body, str):
                    body = body.encode("utf-8")
                accepted = self.headers.get("Accept-Encoding", "")
                if "gzip" in accepted and len(body) >= MINIMUM_COMPRESSION_SIZE:
                    body = gzip.compress(body)
                    headers = {**headers, "Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
                super()._send_http_response_with_body(code, headers, body)

            # Chalice binds every do_X to _generic_handle itself, so each is rebound here.
            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = do_PATCH = do_OPTIONS = _recorded

            def log_message(self, *args) -> None:
                pass

        # What chalice.local.create_local_server does, with the recording handler: the app's
        # class becomes one whose current_request is per thread (undone in stop()).
        self._original_class = app.__class__
        CustomLocalChalice.__bases__ = (LocalChalice, self._original_class)
        app.__class__ = CustomLocalChalice
        self._server = LocalDevServer(app, Config.create(chalice_stage="dev"), "127.0.0.1", 0, handler_cls=Recording)
        self._thread = threading.Thread(target=self._server.server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="console-api", daemon=True)
        self._override = runtime.override(settings=settings, database=database, clock=DatabaseClock(database))

    @property
    def url(self) -> str:
        host, port = self._server.server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def console_url(self) -> str:
        return f"{self.url}/console"

    def start(self) -> ConsoleServer:
        self._override.__enter__()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.server.shutdown()
        self._server.server.server_close()
        self._override.__exit__(None, None, None)
        app.__class__ = self._original_class

    @contextmanager
    def answering_with(self, **parts) -> Iterator[None]:
        """Other settings= or database= for the length of the block."""
        with runtime.override(**parts):
            yield

    @contextmanager
    def failing(self, path_start: str, status: int = 502) -> Iterator[None]:
        """Every request whose path starts with `path_start` answered `status` by the gateway, for the block."""
        with self._lock:
            self._failing[path_start] = status
        try:
            yield
        finally:
            with self._lock:
                del self._failing[path_start]

    @contextmanager
    def dropping(self, path_start: str, method: str = "POST", times: int = 1) -> Iterator[None]:
        """The next `times` requests of `method` whose path starts with `path_start` are answered by the app and
        their answers lost on the way (the connection closed before any of it is sent), for the block."""
        with self._lock:
            self._dropping[(method, path_start)] = times
        try:
            yield
        finally:
            with self._lock:
                del self._dropping[(method, path_start)]

    @contextmanager
    def captive(self, path_start: str) -> Iterator[None]:
        """Every request whose path starts with `path_start` answered 200 with a network's HTML sign-in page, for the
        block (a captive portal whose session lapsed)."""
        with self._lock:
            self._captive.add(path_start)
        try:
            yield
        finally:
            with self._lock:
                self._captive.discard(path_start)

    @contextmanager
    def answering_late(self, path_start: str, status: int = 504, method: str = "POST", times: int = 1) -> Iterator[None]:
        """The next `times` requests of `method` whose path starts with `path_start` are acted on by the app, and
        answered `status` by the gateway instead of the app's answer (its timeout after the commit), for the block."""
        with self._lock:
            self._late[(method, path_start)] = [status, times]
        try:
            yield
        finally:
            with self._lock:
                del self._late[(method, path_start)]

    @contextmanager
    def delaying(self, path_start: str, seconds: float) -> Iterator[None]:
        """Every answer to a path that starts with `path_start` held `seconds` first, for the block."""
        with self._lock:
            self._delaying[path_start] = seconds
        try:
            yield
        finally:
            with self._lock:
                del self._delaying[path_start]

    def keys_sent(self, path_start: str, method: str = "POST", since: float = 0.0) -> list[str | None]:
        """The Idempotency-Key of each request of `method` to a path starting with `path_start` since `since` (a
        time.monotonic()), in order."""
        with self._lock:
            return [key for at, verb, path, key in self.keys
                    if at >= since and verb == method and path.startswith(path_start)]

    def requested(self, path_start: str, since: float = 0.0, method: str | None = None) -> list[str]:
        """The paths asked for since `since` (a time.monotonic()) that start with `path_start`, of `method` only if given."""
        return [path for _, path in self.requested_at(path_start, since, method)]

    def requested_at(self, path_start: str, since: float = 0.0, method: str | None = None) -> list[tuple[float, str]]:
        """`requested`, each path with when it arrived."""
        with self._lock:
            return [(at, path) for at, verb, path in self.requests
                    if at >= since and path.startswith(path_start) and method in (None, verb)]
