"""The run lease: one worker walks a run at a time.

The invariant: a worker walks a run only once it has taken the run's lease (a
compare-and-set on a free or lapsed lease, `runs.take_lease`, with a token of its
own), and it releases the lease however the walk ends, even by an exception —
unless a terminal transition already cleared it. A lease that never committed
is no one's: releasing it matches no row. Every write of the walk is still
guarded on its own; the lease only keeps two workers from walking one run.
"""

from __future__ import annotations

from datetime import datetime

from ...db import Database, Tx
from ..lifecycle import RunStatus
from ..store import runs, steps


class RunLease:
    def __init__(self, db: Database, run_id: int, now: datetime, lease_seconds: float):
        self.db, self.run_id, self.now, self.lease_seconds = db, run_id, now, lease_seconds
        self.token = steps.claim_token()  # 128 fresh random bits: this lease's alone
        self.taken = False

    def take(self, tx: Tx) -> bool:
        """Take the lease in `tx` (alone, or as the first statement of the run's start)."""
        self.taken = runs.take_lease(tx, self.run_id, self.token, self.now, self.lease_seconds)
        return self.taken

    def release(self, status: RunStatus | None) -> None:
        """After the walk, `status` as it left the run (None: unknown, or the walk raised)."""
        # guard: a-worker-that-raises-keeps-its-run-lease
        if self.taken and (status is None or not status.terminal):
            # A terminal transition already cleared it; a lease that never committed is no one's.
            self.db.autocommit(lambda tx: runs.release_lease(tx, self.run_id, self.token, self.now))
