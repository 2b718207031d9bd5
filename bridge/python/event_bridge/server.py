"""The bridge served over HTTP: a WSGI application, and a standard-library server for trying it.

Invariant: a request body larger than the bridge reads (1 MB) is refused with
413 before it is read, and every answer is a JSON object with its length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .answers import Answer
from .bridge import MAX_BODY_BYTES, Bridge

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 409: "Conflict",
            413: "Content Too Large", 422: "Unprocessable Content", 429: "Too Many Requests", 500: "Internal Server Error"}


def _too_large() -> Answer:
    return Answer({"reason": f"the body is larger than {MAX_BODY_BYTES} bytes"}, 413)


def wsgi_app(bridge: Bridge) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
    """A WSGI application serving `bridge` (gunicorn, waitress, or any framework that mounts one)."""
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        if length > MAX_BODY_BYTES:
            answer = _too_large()
        else:
            headers = {name[5:].replace("_", "-"): value for name, value in environ.items() if name.startswith("HTTP_")}
            target = environ.get("PATH_INFO", "") + (f"?{environ['QUERY_STRING']}" if environ.get("QUERY_STRING") else "")
            answer = bridge.handle(environ["REQUEST_METHOD"], target, headers, environ["wsgi.input"].read(length))
        payload = answer.payload()
        start_response(f"{answer.status} {_REASONS.get(answer.status, 'Answer')}",
                       [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
        return [payload]
    return app


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def make_server(bridge: Bridge, host: str = "127.0.0.1", port: int = 8081) -> ThreadingHTTPServer:
    """A threading HTTP server for `bridge` (port 0: any free port); `serve_forever()` it."""
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._send(_too_large())
                self.close_connection = True
                return
            self._send(bridge.handle("POST", self.path, dict(self.headers.items()), self.rfile.read(length)))

        def do_GET(self) -> None:
            self._send(bridge.handle("GET", self.path, dict(self.headers.items()), b""))

        def _send(self, answer: Answer) -> None:
            payload = answer.payload()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    return _Server((host, port), Handler)
