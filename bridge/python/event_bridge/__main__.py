"""`python -m event_bridge [--port 8081]`: the kit's bridge with only its test actions, for trying it and for
`bridge-check`. The key: EVENT_BRIDGE_KEY (the engine's GAME_BRIDGE_SECRET)."""

from __future__ import annotations

import argparse
import os
import sys

from . import Bridge, make_server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m event_bridge", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    args = parser.parse_args(argv)
    key = os.environ.get("EVENT_BRIDGE_KEY", "")
    if not key:
        print("EVENT_BRIDGE_KEY must hold the bridge key (the engine's GAME_BRIDGE_SECRET)", file=sys.stderr)
        return 2
    server = make_server(Bridge(key), args.host, args.port)
    print(f"event bridge on http://{args.host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
