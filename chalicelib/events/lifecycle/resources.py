"""What became of each thing a run left in the world: the resource ledger's statuses, and why a revert is never sent.

The invariant: a resource status, and a reason its revert is refused, is named
here and nowhere else; the store's SQL writes a status only through
`ResourceSQL` (`sql.py`).
"""

from __future__ import annotations

from enum import Enum


class ResourceStatus(str, Enum):
    """What became of one thing a run left in the world (`event_run_resources`)."""

    LIVE = "live"  # recorded, not reverted (a resource without a revert stays live)
    REVERTING = "reverting"  # a revert step of the run's cleanup is open for it
    REVERTED = "reverted"  # its revert was done
    REVERT_FAILED = "revert_failed"  # its revert failed or was refused: a person retries it, or accepts it


def undeclared_revert(action: str) -> str:
    """Why a resource's revert is never sent (its `revert_refused`): the game listed it with a module action the
    bridge does not declare (EVENT_MODULE_ACTIONS). The resource stays live, and a cleanup leaves it, saying why."""
    return f"cannot revert: undeclared action {action}"
