"""One outbound HTTP request with an overall deadline and a size cap: the game bridge and webhooks send with it.

Invariant: `post` returns or raises within `timeout` seconds of being called —
name lookup, connect, TLS handshake, sending, the answer's headers and its body
all count against one deadline, after which the socket is closed — and it never
holds more than `max_answer_bytes` of an answer. A failure says whether the
request's first byte had been sent (`OutboundError.sent`): before it, the peer
cannot have acted; after it, nobody knows. Socket timeouts alone cannot
promise that (urllib3's and httpx's included): they bound each read, so an
answer dripping a byte a second lasts as long as its sender likes. Here every
read and write gets only what is left of the deadline.

h11 speaks HTTP/1.1 (status line, headers, chunked or delimited bodies, interim
1xx answers, at most MAX_INTERIM_ANSWERS of them); this module owns only the I/O. No proxy from the environment and
no redirect is ever followed: a signed request goes where it was addressed or
nowhere.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from .errors import ConnectionFailed, DeadlineExceeded

MAX_ANSWER_BYTES = 1024 * 1024  # an answer is read up to 1 MB; the rest is never read
MAX_HEADER_BYTES = 16 * 1024  # the status line and headers of one answer
# Interim 1xx answers skipped before the final one; more is a peer feeding the socket for ever, which the reads
# past the deadline (of what has already arrived) would otherwise take for as long as it sends.
MAX_INTERIM_ANSWERS = 8
RECEIVE_BYTES = 64 * 1024  # one read


@dataclass(frozen=True)
class Endpoint:
    scheme: str
    host: str
    port: int
    authority: str  # the Host header: host[:port] as the URL spells it
    path: str  # without a trailing slash
    query: str

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        """Raises ValueError unless `url` is an absolute http(s) URL without credentials."""
        parts = urlsplit(url.strip().rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
            raise ValueError(f"not an http(s) URL: {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)  # .port raises ValueError if malformed
        return cls(parts.scheme, parts.hostname, port, parts.netloc, parts.path, parts.query)

    def target(self, suffix: str = "") -> str:
        """The request target: the URL's path, then `suffix`, then the URL's query."""
        path = f"{self.path}{suffix}" or "/"
        return f"{path}?{self.query}" if self.query else path


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes  # at most max_answer_bytes
    truncated: bool  # the answer went on past the cap (or declared it would); `body` is what was kept
    headers: dict[str, str] = field(default_factory=dict)  # the final answer's headers, names in lower case


def signed_headers(secret: str, at: datetime, body: bytes) -> dict[str, str]:
    """`X-Event-Timestamp` (Unix seconds of `at`) and `X-Event-Signature: sha256=HMAC("{timestamp}.{body}")`."""
    timestamp = str(int(at.replace(tzinfo=UTC).timestamp()))
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return {"X-Event-Timestamp": timestamp, "X-Event-Signature": f"sha256={digest}"}


def post(
    endpoint: Endpoint,
    target: str,
    body: bytes,
    headers: dict[str, str],
    *,
    timeout: float,
    max_answer_bytes: int = MAX_ANSWER_BYTES,
) -> Answer:
    """POST `body`; the final answer (interim 1xx answers skipped), or OutboundError within `timeout`."""
    return _request("POST", endpoint, target, body, headers, timeout=timeout, max_answer_bytes=max_answer_bytes)


def patch(endpoint: Endpoint, target: str, body: bytes, headers: dict[str, str], *, timeout: float,
          max_answer_bytes: int = MAX_ANSWER_BYTES) -> Answer:
    """PATCH `body` (an edit of a chat message) under the same deadline and cap as a POST."""
    return _request("PATCH", endpoint, target, body, headers, timeout=timeout, max_answer_bytes=max_answer_bytes)


def put(endpoint: Endpoint, body: bytes, headers: dict[str, str], *, timeout: float) -> Answer:
    """PUT `body` to the endpoint's URL (the migrate function's answer to CloudFormation) under the same deadline and cap."""
    return _request("PUT", endpoint, endpoint.target(), body, headers, timeout=timeout, max_answer_bytes=MAX_ANSWER_BYTES)


def get(endpoint: Endpoint, *, timeout: float, max_answer_bytes: int = MAX_ANSWER_BYTES, target: str | None = None,
        headers: dict[str, str] | None = None) -> Answer:
    """GET `target` (the endpoint's URL without one) under the same overall deadline and answer cap as a POST."""
    return _request("GET", endpoint, endpoint.target() if target is None else target, b"", headers or {},
                    timeout=timeout, max_answer_bytes=max_answer_bytes)


def _request(method: str, endpoint: Endpoint, target: str, body: bytes, headers: dict[str, str], *,
             timeout: float, max_answer_bytes: int) -> Answer:
    import h11  # only a process that sends pays for the import

    deadline = time.monotonic() + timeout
    # guard: a-failure-before-sending-is-in-doubt
    progress = _Progress()
    try:
        sock = _connect(endpoint, deadline)
        try:
            return _exchange(h11, sock, method, endpoint, target, body, headers, deadline, max_answer_bytes, progress)
        finally:
            sock.close()
    except TimeoutError:
        raise DeadlineExceeded(f"no complete answer within {round(timeout, 2):g}s", sent=progress.sent) from None
    except OSError as error:
        # guard: a-lost-connection-after-sending-is-not-in-doubt
        raise ConnectionFailed(f"{type(error).__name__}: {error}", sent=progress.sent) from None
    except h11.RemoteProtocolError as error:
        raise ConnectionFailed(f"unreadable answer: {error}", sent=progress.sent) from None


@dataclass
class _Progress:
    sent: bool = False  # a byte of the request has left: from here on a failure leaves the outcome unknown


def _exchange(h11: ModuleType, sock: socket.socket, method: str, endpoint: Endpoint, target: str, body: bytes, headers: dict[str, str],
              deadline: float, max_answer_bytes: int, progress: _Progress) -> Answer:
    # guard: outbound-headers-uncapped
    connection = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEADER_BYTES)
    request = h11.Request(
        method=method,
        target=target,
        headers=[("Host", endpoint.authority), ("Content-Length", str(len(body))), ("Connection", "close"),
                 *headers.items()],
    )
    _send_all(sock, connection.send(request) + connection.send(h11.Data(data=body)) + connection.send(h11.EndOfMessage()),
              deadline, progress)
    status, kept, size, answered, interim = 0, [], 0, {}, 0
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            connection.receive_data(_receive(sock, deadline))
        elif isinstance(event, h11.Response):
            status = event.status_code
            answered = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in event.headers}
            declared = answered.get("content-length")
            if declared is not None and int(declared) > max_answer_bytes:
                return Answer(status, b"", truncated=True, headers=answered)
        elif isinstance(event, h11.Data):
            # guard: outbound-answer-kept-past-its-cap
            kept.append(event.data[: max_answer_bytes - size])
            size += len(event.data)
            if size > max_answer_bytes:
                return Answer(status, b"".join(kept), truncated=True, headers=answered)
        elif isinstance(event, h11.EndOfMessage):
            return Answer(status, b"".join(kept), truncated=False, headers=answered)
        elif isinstance(event, h11.ConnectionClosed):
            raise ConnectionResetError("the peer closed the connection without answering")
        else:  # an InformationalResponse (1xx, e.g. 103 Early Hints): the final answer follows
            interim += 1
            # guard: outbound-interim-answers-uncapped
            if interim > MAX_INTERIM_ANSWERS:
                raise ConnectionAbortedError(f"more than {MAX_INTERIM_ANSWERS} interim (1xx) answers before the final one")


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _send_all(sock: socket.socket, data: bytes, deadline: float, progress: _Progress) -> None:
    view = memoryview(data)
    while view:
        # guard: outbound-send-without-the-deadline
        sock.settimeout(_left(deadline))
        written = sock.send(view)
        # guard: a-failure-after-the-first-byte-is-not-in-doubt
        progress.sent = progress.sent or written > 0
        view = view[written:]


def _receive(sock: socket.socket, deadline: float) -> bytes:
    left = deadline - time.monotonic()
    if left > 0:
        # guard: outbound-wait-without-the-deadline
        sock.settimeout(left)
        return sock.recv(RECEIVE_BYTES)
    # Past the deadline only what has already arrived is read, never waited for: a process
    # paused mid-call (a frozen Lambda, a stopped worker) still takes an answer waiting for it.
    # guard: outbound-answer-waiting-past-the-deadline-dropped
    sock.setblocking(False)
    try:
        return sock.recv(RECEIVE_BYTES)
    except (BlockingIOError, ssl.SSLWantReadError):
        raise TimeoutError from None


def _connect(endpoint: Endpoint, deadline: float) -> socket.socket:
    addresses = _resolve(endpoint.host, endpoint.port, deadline)
    error: OSError = ConnectionRefusedError(f"no address for {endpoint.host}")
    for index, (family, address) in enumerate(addresses):
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            # An address that never answers (an IPv4 name from an IPv6-only subnet) leaves time for the next.
            # guard: outbound-one-address-takes-the-whole-deadline
            sock.settimeout(_left(deadline) / (len(addresses) - index))
            sock.connect(address)
        except OSError as failed:  # TimeoutError included
            sock.close()
            error = failed
            continue
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if endpoint.scheme == "https":
                sock = _tls_context().wrap_socket(sock, server_hostname=endpoint.host, do_handshake_on_connect=False)
                sock.settimeout(_left(deadline))
                sock.do_handshake()  # one deadline for the whole handshake (CPython's ssl module)
        except BaseException:
            sock.close()
            raise
        return sock
    raise error


def _resolve(host: str, port: int, deadline: float) -> list[tuple[int, tuple[Any, ...]]]:
    """(family, address) pairs; a literal address needs no lookup. getaddrinfo takes no
    timeout, so it runs on a daemon thread that the deadline can walk away from."""
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return [(socket.AF_INET6 if literal.version == 6 else socket.AF_INET, (host, port))]
    found: list[Any] = []  # getaddrinfo's tuples, or the error it raised
    done = threading.Event()

    def lookup() -> None:
        try:
            found.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as error:
            found.append(error)
        finally:
            done.set()

    threading.Thread(target=lookup, name="resolve", daemon=True).start()
    # guard: a-hung-name-lookup-outlasts-the-deadline
    if not done.wait(_left(deadline)):
        raise TimeoutError
    if found and isinstance(found[0], OSError):
        raise found[0]
    return [(family, address) for family, _type, _proto, _name, address in found]


@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()  # loads the CA bundle once per process


def addresses(host: str, port: int, *, timeout: float) -> frozenset[str]:
    """The addresses `host` has (a literal address is its own), by the same bounded lookup a request makes:
    OSError when it has none, TimeoutError when the lookup takes longer than `timeout`."""
    found = _resolve(host, port, time.monotonic() + timeout)
    return frozenset(str(ipaddress.ip_address(address[0])) for _family, address in found)
