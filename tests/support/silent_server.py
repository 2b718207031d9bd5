"""A peer that accepts connections and never answers: an AWS endpoint hanging."""

from __future__ import annotations

import socket
import threading


class SilentServer:
    """Accepts connections and never answers (Secrets Manager hanging); counts the connections."""

    def __init__(self):
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self.port = self._listener.getsockname()[1]
        self._listener.settimeout(0.2)
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                self._held.append(self._listener.accept()[0])
            except TimeoutError:
                continue

    @property
    def connections(self) -> int:
        return len(self._held)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for held in self._held:
            held.close()
        self._listener.close()
