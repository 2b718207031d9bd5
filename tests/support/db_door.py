"""A loopback TCP port in front of the test MariaDB that a test scripts: pass, refuse, accept and stall, or hang.

`refuse()` closes the listening socket, so connections are refused as by a
server that is down; `stall(seconds)` accepts and says nothing for that long
(forever with None), as a hung server or an Aurora resuming from a pause holds
a handshake, then passes the bytes on; `hang()` stops passing bytes on
connections already made, as a server that hangs after the handshake;
`open()` passes straight through.
"""

from __future__ import annotations

import select
import socket
import threading
import time

from chalicelib.db import ConnectionParams


class DatabaseDoor:
    def __init__(self, upstream: ConnectionParams):
        self.upstream = upstream
        self._stall_until: float | None = 0.0  # monotonic; None: for ever
        self._closed = threading.Event()
        self._hung = threading.Event()
        self._listener: socket.socket | None = None
        self.accepted = 0
        self.port = self._listen(0)

    def url(self) -> str:
        u = self.upstream
        return ConnectionParams(
            host="127.0.0.1", port=self.port, user=u.user, password=u.password, database=u.database
        ).url()

    # ── what the test says ──────────────────────────────────────────────
    def refuse(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(); close() alone would not
            except OSError:
                pass
            listener.close()

    def stall(self, seconds: float | None) -> None:
        """Hold each connection silent until `seconds` from now (None: for ever), then pass it on."""
        self._stall_until = None if seconds is None else time.monotonic() + seconds
        if self._listener is None:
            self._listen(self.port)

    def hang(self) -> None:
        """Pass nothing more on any connection, made or to come, until `open()`."""
        self._hung.set()

    def open(self) -> None:
        self._hung.clear()
        self.stall(0)

    def close(self) -> None:
        self._closed.set()
        self.refuse()

    def __enter__(self) -> DatabaseDoor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ── the machinery ───────────────────────────────────────────────────
    def _listen(self, port: int) -> int:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return listener.getsockname()[1]

    def _accept(self, listener: socket.socket) -> None:
        while not self._closed.is_set():
            try:
                client, _ = listener.accept()
            except OSError:  # refused from now on: the listener was closed
                return
            self.accepted += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            while not self._closed.is_set():
                until = self._stall_until
                if until is not None and time.monotonic() >= until:
                    break
                readable, _, _ = select.select([client], [], [], 0.05)
                if readable and not client.recv(1, socket.MSG_PEEK):
                    return  # the client gave up while held
            else:
                return
            u = self.upstream
            if u.unix_socket:
                server = socket.socket(socket.AF_UNIX)
                server.connect(u.unix_socket)
            else:
                server = socket.create_connection((u.host, u.port))
            with server:
                self._pipe(client, server)

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        while not self._closed.is_set():
            if self._hung.is_set():  # bytes wait in the kernel's buffers, unread
                time.sleep(0.05)
                continue
            readable, _, _ = select.select(list(peers), [], [], 0.1)
            for sock in readable:
                try:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)
                except OSError:
                    return
