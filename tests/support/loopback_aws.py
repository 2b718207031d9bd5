"""A loopback HTTP endpoint an AWS client is pointed at (`AWS_ENDPOINT_URL_<SERVICE>`): it answers 500, or never.

moto answers every call at once; this stands for an AWS endpoint in trouble, so a
test can count the requests a client makes (its retry limit) and time how long
it waits for an answer (its read timeout). `never_accepting()` is a listener whose
queue is full, so a connection attempt hears nothing (the client's connect timeout).
"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

INTERNAL_FAILURE = (b"<ErrorResponse><Error><Type>Receiver</Type><Code>InternalFailure</Code>"
                    b"<Message>boom</Message></Error></ErrorResponse>")


class LoopbackAws:
    def __init__(self, *, answer: bool):
        self.requests = 0
        self.release = threading.Event()
        peer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                peer.requests += 1
                if not answer:
                    peer.release.wait(120)
                    return
                self.send_response(500)
                self.send_header("Content-Type", "text/xml")
                self.send_header("Content-Length", str(len(INTERNAL_FAILURE)))
                self.end_headers()
                self.wfile.write(INTERNAL_FAILURE)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def loopback_aws(*, answer: bool) -> Iterator[LoopbackAws]:
    peer = LoopbackAws(answer=answer)
    try:
        yield peer
    finally:
        peer.close()


@contextmanager
def never_accepting() -> Iterator[str]:
    """The URL of a listener whose one queue place is taken: SYNs to it go unanswered."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    filler = socket.create_connection(listener.getsockname(), timeout=1)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        filler.close()
        listener.close()


def offline_credentials(monkeypatch: pytest.MonkeyPatch, region: str) -> None:
    """Credentials and a region for a client that talks to a loopback endpoint, never to AWS nor to moto."""
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_DEFAULT_REGION", region)):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
