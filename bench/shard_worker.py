"""One tick process of the shards benchmark: waits for "go" on stdin, drains its shard of the backlog, prints a JSON report.

    EVENTS_DB_URL=mysql://… GAME_BRIDGE_URL=http://… EVENT_TICK_SHARD=0/2 python -m bench.shard_worker

The runner is the deployed one (`EVENT_TICK_CONCURRENCY` workers, 8 by default),
built from the settings as the tick Lambda builds it, module steps signed and
sent to the bridge; only the budget is the benchmark's (long enough to drain).
"""

from __future__ import annotations

import json
import os
import sys
import time

from chalicelib.config import Settings
from chalicelib.db import Database, DatabaseClock
from chalicelib.events.runner.compose import build_runner

from .workload import drain, quiet_channels


def main() -> int:
    quiet_channels()
    settings = Settings.from_env()
    db = Database(os.environ["EVENTS_DB_URL"], read_timeout=600)
    runner = build_runner(settings, db, DatabaseClock(db))
    db.connection()  # connect before the start line, so startup is not timed
    print("ready", flush=True)
    sys.stdin.readline()
    started = time.time()
    report = drain(runner)
    finished = time.time()
    runner.close()
    print(json.dumps({"dispatched": report.dispatched, "runs": report.runs_advanced, "started": started,
                      "finished": finished, "shard": list(settings.tick_shard)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
