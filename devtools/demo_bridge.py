"""`make dev`'s demo game bridge: the Python bridge kit (bridge/python) in use, the example a game team copies.

The kit checks each request's signature and timestamp, applies each
idempotency key at most once, keeps the attempt fence and serves the status
endpoint (the dev stage runs with GAME_BRIDGE_STATUS=on, so a step in doubt is
asked about before it is re-sent). What is the demo's own is its handlers:
`world.spawn` leaves its npc in the ledger with a `world.despawn` revert (so
"Left in the game world", Cancel with cleanup and Clean up can be tried), and
`--demo failures` makes each module action go wrong on purpose, once per step:
`world.spawn` fails once (the run pauses until someone presses Retry),
`world.give_item` answers 503 twice (retried after a backoff), and
`world.fireworks` takes 8 s (in progress, as its status endpoint says).
"""

from __future__ import annotations

import errno
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import TYPE_CHECKING

from .kit.bridge_kit import event_bridge
from .output import say, verbose

if TYPE_CHECKING:
    from event_bridge import Answer, Delivery
FIREWORKS_SECONDS = 8.0


class DemoScript:
    """The demo's handlers: done to everything (calm), or the failures of `--demo failures`; the npcs spawned."""

    def __init__(self, demo: str):
        self.demo = demo
        # Deliveries that reached a handler, per step (a failure is not kept): a person's Retry of a step the game
        # answered comes with a new key, and the square is no longer full then.
        self.seen: Counter[tuple[int, int]] = Counter()
        self.spawned: set[str] = set()
        self.lock = threading.Lock()

    def _nth(self, delivery: Delivery) -> int:
        step = (delivery.run_id, delivery.step_id)
        with self.lock:
            self.seen[step] += 1
            return self.seen[step]

    def spawn(self, delivery: Delivery) -> Answer:
        if self.demo == "failures" and self._nth(delivery) == 1:
            return event_bridge.Answer({"reason": "the square is full: no room to spawn the scarecrow"}, 400)
        npc = f"{delivery.params.get('npc', 'npc')}-{delivery.run_id}-{delivery.step_id}"
        with self.lock:
            self.spawned.add(npc)
        return event_bridge.done(event_bridge.Resource("npc", npc, event_bridge.Revert("world.despawn", {"id": npc})))

    def despawn(self, delivery: Delivery) -> Answer:
        with self.lock:
            if delivery.params.get("id") not in self.spawned:
                raise event_bridge.Gone
            self.spawned.discard(delivery.params["id"])
        return event_bridge.done()

    def give_item(self, delivery: Delivery) -> Answer:
        if self.demo == "failures" and self._nth(delivery) <= 2:
            return event_bridge.Answer({"reason": "the item service is restarting"}, 503)
        return event_bridge.done()

    def fireworks(self, delivery: Delivery) -> Answer:
        if self.demo == "failures":
            time.sleep(FIREWORKS_SECONDS)
        return event_bridge.done()

    def handlers(self) -> dict[str, Callable[[Delivery], Answer]]:
        return {"world.spawn": self.spawn, "world.despawn": self.despawn, "world.give_item": self.give_item,
                "world.fireworks": self.fireworks}


class _Told(event_bridge.Bridge):
    """The kit's bridge, each answer said on the terminal when verbose (a 401 always: a key set wrong)."""

    def handle(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Answer:
        answer = super().handle(method, target, headers, body)
        if verbose() or answer.status == 401:
            path = target.split("?")[0].rstrip("/").split("/")
            what = f"{path[-3]} status" if method == "GET" and len(path) >= 4 else path[-1]  # world.spawn [status]
            say(f"[game bridge] {what} -> {answer.status} {json.dumps(answer.body)}")
        return answer


def listen_demo_bridge(url: str, secret: str, script: DemoScript, clock: Callable[[], float] = time.time
                       ) -> ThreadingHTTPServer | None:
    """The demo bridge, serving; None (and one line said) when its port is taken."""
    host, port = url.split("//", 1)[1].rstrip("/").rsplit(":", 1)
    try:
        server = event_bridge.make_server(_Told(secret, handlers=script.handlers(), clock=clock), host, int(port))
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        say_port_in_use(int(port), "the demo game bridge", "GAME_BRIDGE_URL", f"GAME_BRIDGE_URL=http://{host}:{int(port) + 1}")
        return None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def say_port_in_use(port: int, who: str, setting: str, example: str) -> None:
    print(f"port {port} is in use: {who} listens there under make dev; set {setting} to move it ({example} make dev)",
          file=sys.stderr, flush=True)
