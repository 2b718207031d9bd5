"""What became of each thing a run left in the world: the resource ledger's statuses.

The invariant: a resource status is named here and nowhere else; the store's SQL
writes one only through `ResourceSQL` (`sql.py`).
"""

from __future__ import annotations

from enum import Enum


class ResourceStatus(str, Enum):
    """What became of one thing a run left in the world (`event_run_resources`)."""

    LIVE = "live"  # recorded, not reverted (a resource without a revert stays live)
    REVERTING = "reverting"  # a revert step of the run's cleanup is open for it
    REVERTED = "reverted"  # its revert was done
    REVERT_FAILED = "revert_failed"  # its revert failed or was refused: a person retries it, or accepts it
