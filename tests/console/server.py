"""The real app served over HTTP on loopback, in this process, with the settings a test chooses.

Chalice's own local server runs in a thread; `runtime.override` decides the
settings and database it answers with, so one test can switch the API to an
OpenID Connect issuer's keys, or to a database that is not there; `failing`
makes some paths answer as a gateway does when the function's answer cannot be
sent (502). Answers are gzipped as API Gateway does with the project's
`minimum_compression_size`, so a page's weight is what a browser receives. Every request path is recorded, so tests can see what the page
asked for and when.
"""

from __future__ import annotations

import gzip
import json
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
        self._lock = threading.Lock()
        server = self

        class Recording(ChaliceRequestHandler):
            def _recorded(self) -> None:
                with server._lock:
                    server.requests.append((time.monotonic(), self.command, self.path))
                    failing = next((status for start, status in server._failing.items() if self.path.startswith(start)), None)
                if failing is not None:
                    self._gateway_error(failing)
                else:
                    self._generic_handle()

            def _gateway_error(self, status: int) -> None:
                # What API Gateway answers when the function's answer cannot be sent (over 6 MB, a crash).
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

    def requested(self, path_start: str, since: float = 0.0, method: str | None = None) -> list[str]:
        """The paths asked for since `since` (a time.monotonic()) that start with `path_start`, of `method` only if given."""
        return [path for _, path in self.requested_at(path_start, since, method)]

    def requested_at(self, path_start: str, since: float = 0.0, method: str | None = None) -> list[tuple[float, str]]:
        """`requested`, each path with when it arrived."""
        with self._lock:
            return [(at, path) for at, verb, path in self.requests
                    if at >= since and path.startswith(path_start) and method in (None, verb)]
