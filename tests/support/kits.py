"""The game-side bridge kits (bridge/), served for tests on loopback: the Python kit in a thread, the Node kit
under the machine's `node`."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON_KIT = ROOT / "bridge" / "python"
NODE_KIT = ROOT / "bridge" / "node"

if str(PYTHON_KIT) not in sys.path:  # the kit's source tree, as `pip install ./bridge/python` would install it
    sys.path.insert(0, str(PYTHON_KIT))

import event_bridge  # noqa: E402


@contextmanager
def serving(bridge: event_bridge.Bridge) -> Iterator[str]:
    """`bridge` served on a free loopback port for the block: its base URL."""
    server = event_bridge.make_server(bridge, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def node_example(key: str) -> Iterator[str]:
    """The Node kit's example bridge (bridge/node/example.js) under the machine's `node`, on a free port."""
    import subprocess

    process = subprocess.Popen(["node", str(NODE_KIT / "example.js")], env={"EVENT_BRIDGE_KEY": key, "PORT": "0",
                               "PATH": "/usr/bin:/bin:/usr/local/bin"}, stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        if not line.startswith("event bridge on "):
            raise RuntimeError(f"the Node example did not start: {line!r}")
        yield line.removeprefix("event bridge on ").strip()
    finally:
        process.terminate()
        process.wait(10)
