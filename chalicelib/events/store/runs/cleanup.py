"""event_runs cleaning up: into cleaning_up toward a target, woken, paused on a failed revert, and out.

The invariant: a run begins its cleanup once, only with something live to revert
or a step in flight and no step parked in doubt, and ends it only when no step
of it is open and nothing is left to revert (a failed revert pauses it for a
person, unless their resume accepts it); each is a move's own WHERE.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Unpack

from ....db import Tx, placeholders
from ... import waiting
from ...lifecycle import RunSQL, RunStatus
from .. import resources
from .moves import RunChanges, move

_RUN = "event_runs.id"
_NONE_PARKED_IN_DOUBT = f"""NOT EXISTS (SELECT 1 FROM event_run_steps d
                                          WHERE d.run_id = {_RUN} AND {waiting.parked_in_doubt('d')})"""  # noqa: S608 — constant fragments only


def begin_cleanup(
    tx: Tx, run_id: int, sources: Iterable[RunStatus], target: RunStatus, now: datetime, **changes: Unpack[RunChanges]
) -> bool:
    """Into cleaning_up toward `target`, only if the run has something live to revert or a step in flight
    (whose answer may list what it created), and never twice (a paused cleanup is a source status too), nor
    while a step of it is parked in doubt (whether the game applied it, a person decides first);
    False otherwise (nothing to clean: the caller moves it as it would have without a cleanup)."""
    moved_from = [RunStatus(s) for s in sources]
    # guard: a-cancel-with-cleanup-of-a-run-with-nothing-to-revert-cleans-up
    # guard: a-cleanup-begins-twice
    # guard: a-cleanup-begins-over-a-step-parked-in-doubt
    guard = (f"status IN ({placeholders(len(moved_from))}) AND cleanup_target IS NULL"
             f" AND ({resources.to_revert(_RUN)} OR {resources.in_flight(_RUN)}) AND {_NONE_PARKED_IN_DOUBT}")
    return move(tx, run_id, moved_from, RunStatus.CLEANING_UP, now, guard, [*(s.value for s in moved_from), now],
                cleanup_target=target, **changes)


# guard: a-cleanup-ends-with-something-left-to-revert
def end_cleanup(tx: Tx, run_id: int, source: RunStatus, target: RunStatus, now: datetime, *, accept_failures: bool,
                seen_version: int | None = None) -> bool:
    """A cleanup is over: the run reaches its target, only when no step of it is open and nothing is left to
    revert, and (unless a person's resume accepts them) no revert failed; a person's resume is held to the
    version they saw (`seen_version`)."""
    # guard: a-cleanup-ends-with-a-step-open
    guard = (f"status = %s AND cleanup_target = %s AND NOT {resources.step_open(_RUN)}"
             f" AND NOT {resources.to_revert(_RUN)}")
    if not accept_failures:
        # guard: a-cleanup-with-a-failed-revert-reaches-its-target
        guard += f" AND NOT {resources.revert_failed(_RUN)}"
    return move(tx, run_id, [source], target, now, guard, (RunStatus(source).value, RunStatus(target).value),
                seen_version=seen_version)


def wake_cleanup(tx: Tx, run_id: int, now: datetime) -> bool:
    """A run cleaning up wakes now (only ever earlier): a step it waited for has been answered."""
    return tx.execute(
        f"""UPDATE event_runs SET wake_at = %s
             WHERE id = %s AND status = {RunSQL.CLEANING_UP} AND (wake_at IS NULL OR wake_at > %s)""",  # noqa: S608 — the status literal is a constant; values are parameters
        (now, run_id, now),
    ) == 1


def pause_cleanup(tx: Tx, run_id: int, now: datetime, error: str) -> bool:
    """Every revert is over and some failed: the run pauses for a person (retry a revert, or resume to accept)."""
    guard = (f"status = {RunSQL.CLEANING_UP} AND NOT {resources.step_open(_RUN)}"
             f" AND NOT {resources.to_revert(_RUN)}")
    return move(tx, run_id, [RunStatus.CLEANING_UP], RunStatus.PAUSED, now, guard, (), last_error=error)
