"""event_runs leased to one tick worker, and handed back with its wake time.

The invariant: a run is held by at most one worker: the lease is taken by a
compare-and-set on a free or expired lease, given back only by the token that
holds it, and each writes the run's wake time (the lease's expiry, so a worker
that dies is looked at again then; on release, the earliest timer of its rows).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ....db import Tx
from ...lifecycle import RunSQL
from .. import understood
from ..wake import WAKE_AT, wake_args


def take_lease(tx: Tx, run_id: int, token: str, now: datetime, lease_seconds: float) -> bool:
    """Lease a run to one tick worker: compare-and-set on a free or expired run lease.

    The wake time becomes the lease's expiry: if the worker dies holding the run,
    that is when another may take it.
    """
    if lease_seconds <= 0:
        raise ValueError(f"lease_seconds must be positive, got {lease_seconds!r}")
    expires = now + timedelta(seconds=lease_seconds)
    # guard: run-lease
    # guard: run-lease-of-a-run-not-due
    # guard: run-lease-of-a-run-it-does-not-understand
    return (
        tx.execute(
            # guard: run-lease-leaves-no-wake-for-a-dead-worker
            f"""UPDATE event_runs SET claimed_by = %s, claim_expires_at = %s, wake_at = %s
                 WHERE id = %s AND (status IN ({RunSQL.DUE}) OR late_cleanup = {RunSQL.LATE_CLEANUP_STARTED})
                   AND {understood.run_row("event_runs")}
                   AND (claim_expires_at IS NULL OR claim_expires_at < %s)""",  # noqa: S608 — the status list and the fragment are rendered from the lifecycle at import
            (token, expires, expires, run_id, now),
        )
        == 1
    )


def release_lease(tx: Tx, run_id: int, token: str, now: datetime) -> bool:
    """Give the run lease back and write its wake time; a no-op if the lease was cleared (pause) or taken over.

    The wake time is computed in the statement from the rows as they stand, not
    from what the worker last read: a person who confirmed a cue while the worker
    held the run locked the run row first, so this statement sees their change.
    """
    # guard: run-release-of-another-workers-lease
    return (
        tx.execute(
            # guard: release-keeps-the-wake-it-found
            f"""UPDATE event_runs r SET r.claimed_by = NULL, r.claim_expires_at = NULL, r.wake_at = {WAKE_AT}
                 WHERE r.id = %(run_id)s AND r.claimed_by = %(token)s""",  # noqa: S608 — WAKE_AT is wake.py's constant; values are named parameters
            {**wake_args(now), "run_id": run_id, "token": token},
        )
        == 1
    )
