"""One tick worker process for P5/P6: waits for "go" on stdin, drains one tick, prints a JSON report.

    EVENTS_DB_URL=mysql://… python -m bench.tick_worker

The worker is a runner with a pool of one, so one process is one worker and one
connection. It measures, for every step it finishes, the time from its claim
(the claim statement's return; its unit of work commits before the step is
dispatched) to the COMMIT of the transaction that finished it, by wrapping the
store's claim and the runner's outcome write in this process only; the
engine's code is unchanged.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from chalicelib.db import Database
from chalicelib.events.runner import attempt
from chalicelib.events.store import steps

from .workload import drain, make_runner, quiet_channels


class ClaimToTerminal:
    def __init__(self) -> None:
        self.latencies_ms: list[float] = []
        self._claimed_at: dict[int, float] = {}
        self._finishing = threading.local()

    def install(self, db: Database) -> None:
        claim, settle_outcome, transaction = steps.claim, attempt.settle_outcome, db.transaction

        def timed_claim(tx, step, now, lease_seconds):
            won = claim(tx, step, now, lease_seconds)
            if won is not None:
                self._claimed_at[step.id] = time.perf_counter()
            return won

        def marked_settle_outcome(tx, step, *args, **kwargs):
            self._finishing.step_id = step.id
            return settle_outcome(tx, step, *args, **kwargs)

        def timed_transaction(work):
            result = transaction(work)
            step_id = getattr(self._finishing, "step_id", None)
            if step_id is not None:
                self._finishing.step_id = None
                self.latencies_ms.append((time.perf_counter() - self._claimed_at.pop(step_id)) * 1000)
            return result

        # Timing wrappers, in this benchmark process only.
        steps.claim, attempt.settle_outcome = timed_claim, marked_settle_outcome
        db.transaction = timed_transaction  # type: ignore[method-assign]  # wraps the instance's own method


def main() -> int:
    quiet_channels()
    db = Database(os.environ["EVENTS_DB_URL"], read_timeout=600)
    runner = make_runner(db, concurrency=1)
    probe = ClaimToTerminal()
    probe.install(db)
    db.connection()  # connect before the start line, so startup is not timed
    print("ready", flush=True)
    sys.stdin.readline()
    started = time.time()
    report = drain(runner)
    finished = time.time()
    runner.close()
    print(json.dumps({"dispatched": report.dispatched, "started": started, "finished": finished,
                      "latencies_ms": probe.latencies_ms}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
