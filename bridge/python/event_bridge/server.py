"""The bridge served over HTTP: a WSGI application, and a standard-library server for trying it.

Invariant: a request body is read only when the request declares its length
once, as ASCII digits, at most what the bridge reads (1 MB), and then exactly
that many bytes are read. Anything else is refused before a byte of its body
is read, with the kit's error body: 400 (a malformed or repeated length), 411
(a POST with no length, or with a Transfer-Encoding) or 413 (over 1 MB); the
standard-library server then closes the connection. Every answer is a JSON
object with its length. A status request is verified against the whole path
the engine asked for, mounted under a prefix (WSGI's SCRIPT_NAME) or not, as
the engine spelled it (percent-encoded), not as a WSGI server decoded it. The
standard-library server keeps no access log; the kit's own warnings go to the
`event_bridge` logger, and so does a connection the client hung up on (at
debug: the engine gave up on a slow answer), not a traceback on stderr. It
closes, unanswered, a connection whose request is not whole within
REQUEST_SECONDS of waiting for it (15 s; the engine sends a whole request at
once), so a client that drips bytes or sends nothing holds a thread that long
at most; a keep-alive connection idle that long is closed too.
"""

from __future__ import annotations

import io
import logging
import socket
import sys
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, urlsplit

from .answers import Answer
from .bridge import MAX_BODY_BYTES, Bridge, logger

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 409: "Conflict", 411: "Length Required",
            413: "Content Too Large", 422: "Unprocessable Content", 429: "Too Many Requests", 500: "Internal Server Error",
            502: "Bad Gateway", 503: "Service Unavailable"}
_MOST_DIGITS = len(str(MAX_BODY_BYTES))
REQUEST_SECONDS = 15.0  # make_server: a request not whole in this time has its connection closed (a slow drip)


def _too_large() -> Answer:
    return Answer({"reason": f"the body is larger than {MAX_BODY_BYTES} bytes"}, 413)


def _body_length(declared: list[str], required: bool) -> int | Answer:
    """The body's length from the request's Content-Length values, or the answer that refuses the request."""
    if not declared:
        return Answer({"reason": "a POST declares its body's length in Content-Length"}, 411) if required else 0
    if len(declared) > 1:
        return Answer({"reason": "Content-Length is given more than once"}, 400)
    text = declared[0].strip(" \t")
    # isdigit() alone takes "²" and other non-ASCII digits, which int() refuses
    if not (text.isascii() and text.isdigit()):
        return Answer({"reason": "Content-Length is not a number of bytes in ASCII digits"}, 400)
    # counted before int(): int() refuses more than 4,300 digits
    if len(text.lstrip("0")) > _MOST_DIGITS or int(text) > MAX_BODY_BYTES:
        return _too_large()
    return int(text)


def _targets(environ: dict[str, Any]) -> list[str]:
    """The spellings of the path and query the engine asked for and signed, the most faithful first. A WSGI server
    hands the path decoded (PEP 3333: SCRIPT_NAME and PATH_INFO as latin-1), so a percent-encoded or non-ASCII
    prefix (GAME_BRIDGE_URL=https://host/game%20bridge) is no longer what was signed. The raw target when the
    server gives it (REQUEST_URI, gunicorn's RAW_URI), with the mount prefix before it when a proxy stripped it;
    the path quoted again from its bytes; the path as decoded (the last, also what a delivery's path is read from)."""
    query = environ.get("QUERY_STRING", "")
    tail = f"?{query}" if query else ""
    script, path = environ.get("SCRIPT_NAME", ""), environ.get("PATH_INFO", "")
    spelled = []
    raw = environ.get("REQUEST_URI") or environ.get("RAW_URI") or ""
    if raw and not raw.startswith("/"):  # an absolute-form request line: http://host/path?query
        parts = urlsplit(raw)
        raw = parts.path + (f"?{parts.query}" if parts.query else "")
    if raw:
        spelled.append(raw)
        if script and not raw.startswith((script, _quoted(script))):  # a proxy stripped the prefix it is mounted at
            spelled.append(_quoted(script) + raw)
    spelled += [_quoted(script + path) + tail, script + path + tail]
    return list(dict.fromkeys(spelled))


def _quoted(path: str) -> str:
    """A WSGI path (latin-1 characters standing for its bytes) percent-encoded as a client sends it."""
    try:
        return quote(path.encode("latin-1"), safe="/:@!$&'()*+,;=~")
    except UnicodeEncodeError:  # not a PEP 3333 string: a framework that decoded it as UTF-8
        return quote(path.encode(), safe="/:@!$&'()*+,;=~")


def wsgi_app(bridge: Bridge) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
    """A WSGI application serving `bridge` (gunicorn, waitress, or any framework that mounts one)."""
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        # PEP 3333: CONTENT_LENGTH may be empty or absent; the WSGI server has already undone any Transfer-Encoding
        declared = environ.get("CONTENT_LENGTH") or ""
        length = _body_length([declared] if declared else [], required=method == "POST")
        if isinstance(length, Answer):
            answer = length
        else:
            headers = {name[5:].replace("_", "-"): value for name, value in environ.items() if name.startswith("HTTP_")}
            targets = _targets(environ)
            target = bridge.signed_target(targets, headers) if method == "GET" else targets[-1]
            answer = bridge.handle(method, target, headers, environ["wsgi.input"].read(length))
        payload = answer.payload()
        start_response(f"{answer.status} {_REASONS.get(answer.status, 'Answer')}",
                       [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
        return [payload]
    return app


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """On the `event_bridge` logger, not a traceback on stderr: a client that hung up (the engine gives up on
        a slow answer) is routine, at debug; anything else is the kit's to fix, a warning."""
        gone = isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError))
        logger.log(logging.DEBUG if gone else logging.WARNING, "serving a request from %s failed", client_address,
                   exc_info=True)


class _ReadsBy(io.RawIOBase):
    """A connection's bytes, each read waiting at most until the handler's deadline (TimeoutError after it)."""

    def __init__(self, sock: socket.socket, deadline: Callable[[], float]):
        super().__init__()
        self._sock, self._deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline() - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request was not whole in time")
        self._sock.settimeout(left)
        return self._sock.recv_into(buffer)


def make_server(bridge: Bridge, host: str = "127.0.0.1", port: int = 8081, *,
                request_seconds: float = REQUEST_SECONDS) -> ThreadingHTTPServer:
    """A threading HTTP server for `bridge` (port 0: any free port); `serve_forever()` it. A request (from
    waiting for its first line to the last byte of its body) is whole within `request_seconds`, or its
    connection is closed unanswered: a client that sends slowly, or nothing, holds a thread that long at most."""
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = request_seconds  # each write of an answer, too
        deadline = 0.0

        def setup(self) -> None:
            super().setup()
            self.rfile = io.BufferedReader(_ReadsBy(self.connection, lambda: self.deadline))

        def handle_one_request(self) -> None:
            # http.server closes the connection on a TimeoutError while it reads the request (or runs a do_*)
            self.deadline = time.monotonic() + request_seconds
            super().handle_one_request()

        def do_POST(self) -> None:
            if "Transfer-Encoding" in self.headers:
                # this server reads no chunked body: reading Content-Length bytes of one would misframe the next request
                length: int | Answer = Answer({"reason": "the body is sent with a Content-Length, not a Transfer-Encoding"}, 411)
            else:
                length = _body_length(self.headers.get_all("Content-Length") or [], required=True)
            if isinstance(length, Answer):
                self._send(length, close=True)  # the unread body must not be taken for a next request
                return
            self._send(bridge.handle("POST", self.path, dict(self.headers.items()), self.rfile.read(length)))

        def do_GET(self) -> None:
            self._send(bridge.handle("GET", self.path, dict(self.headers.items()), b""))

        def _send(self, answer: Answer, close: bool = False) -> None:
            payload = answer.payload()
            self.connection.settimeout(request_seconds)  # a read left it at what was left of the request's time
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            if close:
                self.send_header("Connection", "close")  # also sets close_connection
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    return _Server((host, port), Handler)
