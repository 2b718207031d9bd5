"""event_runs cleaning up: into cleaning_up toward a target, woken, paused on a failed revert, and out; and
the cleanup of a finished run (a person's Clean up), which keeps the run's final status.

The invariant: a run begins its cleanup once, only with something live to revert
or a step in flight and no step parked in doubt, and ends it only when no step
of it is open and nothing is left to revert (a failed revert pauses it for a
person, unless their resume accepts it); each is a move's own WHERE. A finished
run's cleanup (`late_cleanup`) begins only when it has something live to revert
and no step open, never while one is under way, and ends on the same guard as a
cleanup's (done, or failed when a revert of it failed: a finished run cannot
pause); its status is never written.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Unpack

from ....db import Tx, placeholders
from ... import waiting
from ...lifecycle import CLEANUP_TARGETS, LateCleanup, ResourceSQL, RunSQL, RunStatus
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
             WHERE id = %s AND (status = {RunSQL.CLEANING_UP} OR late_cleanup = {RunSQL.LATE_CLEANUP_STARTED})
               AND (wake_at IS NULL OR wake_at > %s)""",  # noqa: S608 — the status literal is a constant; values are parameters
        (now, run_id, now),
    ) == 1


def pause_cleanup(tx: Tx, run_id: int, now: datetime, error: str) -> bool:
    """Every revert is over and some failed: the run pauses for a person (retry a revert, or resume to accept)."""
    guard = (f"status = {RunSQL.CLEANING_UP} AND NOT {resources.step_open(_RUN)}"
             f" AND NOT {resources.to_revert(_RUN)}")
    return move(tx, run_id, [RunStatus.CLEANING_UP], RunStatus.PAUSED, now, guard, (), last_error=error)


# What a finished run's cleanup left: a revert of it failed since it began (`late_cleanup_at`).
_FAILED_SINCE = f"""EXISTS (SELECT 1 FROM event_run_resources bad WHERE bad.run_id = {_RUN}
                             AND bad.status = {ResourceSQL.REVERT_FAILED} AND bad.changed_at >= event_runs.late_cleanup_at)"""  # noqa: S608 — constant fragments only


def begin_late_cleanup(tx: Tx, run_id: int, now: datetime) -> bool:
    """A finished run's cleanup begins (a person's Clean up): its status kept, `late_cleanup` started, woken now
    and its version raised; only a completed, failed or cancelled run with something live to revert or a revert
    that failed or was refused to send again (an earlier Clean up's, or its cancel's), no step of
    it open (a step in flight is answered first), and none under way already (a person's If-Match is held by the control, under the run's
    lock)."""
    # guard: a-finished-run-with-nothing-to-revert-cleans-up
    # guard: a-finished-runs-cleanup-begins-twice
    # guard: a-finished-runs-cleanup-begins-over-a-step-in-flight
    guard = (f"status IN ({placeholders(len(CLEANUP_TARGETS))}) AND NOT (late_cleanup <=> {RunSQL.LATE_CLEANUP_STARTED})"
             f" AND ({resources.to_revert(_RUN)} OR {resources.to_send_again(_RUN)}) AND NOT {resources.step_open(_RUN)}")
    return tx.execute(
        f"""UPDATE event_runs SET late_cleanup = {RunSQL.LATE_CLEANUP_STARTED}, late_cleanup_at = %s, wake_at = %s,
                   updated_at = %s, version = version + 1
             WHERE id = %s AND {guard}""",  # noqa: S608 — constant fragments; values are parameters
        (now, now, now, run_id, *(s.value for s in CLEANUP_TARGETS)),
    ) == 1


def end_late_cleanup(tx: Tx, run_id: int, now: datetime) -> LateCleanup | None:
    """A finished run's cleanup is over, only when no step of it is open and nothing is left to revert: done, or
    failed if a revert of it failed (its resources stay revert_failed, listed); the run lease and the wake time
    cleared with it, the status kept. None: not yet (or it was not under way)."""
    # guard: a-finished-runs-cleanup-ends-with-a-step-open
    # guard: a-finished-runs-cleanup-ends-with-something-left-to-revert
    changed = tx.execute(
        f"""UPDATE event_runs
               SET late_cleanup = IF({_FAILED_SINCE}, {RunSQL.LATE_CLEANUP_FAILED}, {RunSQL.LATE_CLEANUP_DONE}),
                   claimed_by = NULL, claim_expires_at = NULL, wake_at = NULL, waiting_for = NULL, updated_at = %s,
                   version = version + 1
             WHERE id = %s AND late_cleanup = {RunSQL.LATE_CLEANUP_STARTED}
               AND NOT {resources.step_open(_RUN)} AND NOT {resources.to_revert(_RUN)}""",  # noqa: S608 — constant fragments; values are parameters
        (now, run_id),
    )
    if changed != 1:
        return None
    return LateCleanup(tx.scalar("SELECT late_cleanup FROM event_runs WHERE id = %s", (run_id,)))
