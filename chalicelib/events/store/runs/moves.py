"""event_runs status changes: every one is a row of the lifecycle's transitions table, rendered by `move`.

The invariant: what a status change writes besides its statement's own columns
(finished_at, the claim, the wake time, what the run waits for, the version) is
its row of `lifecycle.TRANSITIONS`, never written out by hand; a move nobody
declared is refused. The statement brings only its guard (the rest of its WHERE,
a compare-and-set) and the phase rows it drains and opens, in the same UPDATE.
Health only ever degrades (`degrade`, or a move's `degrade`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, TypedDict, Unpack

from ....db import Tx, placeholders
from ... import waiting
from ...lifecycle import CLEANUP_TARGETS, RunSQL, RunStatus, StepSQL, WaitSQL, Wake, writes
from ...model import HealthSQL, Run, is_whole_number, kept_note

_UNSET = object()  # a move that leaves last_error as it was (None clears it)


class RunChanges(TypedDict, total=False):
    """What a status change of a run may write besides what its row of the transitions table says (see `move`)."""

    last_error: str | None
    current_phase: int | None
    degrade: bool
    seen_version: int | None


def move(
    tx: Tx,
    run_id: int,
    sources: Iterable[RunStatus],
    to: RunStatus,
    now: datetime,
    guard: str,
    guard_args: Iterable[Any],
    *,
    last_error: str | object | None = _UNSET,
    current_phase: int | None = None,
    degrade: bool = False,
    started: bool = False,
    phases: tuple[int | None, int | None] = (None, None),
    seen_version: int | None = None,
    cleanup_target: RunStatus | None = None,
) -> bool:
    """`UPDATE event_runs … WHERE id = run_id AND <guard>`: what every status change of a run writes.

    What the move writes besides its status comes from its row of
    `lifecycle.TRANSITIONS` (a move nobody declared is a ValueError): a terminal
    move stamps finished_at, the claim is dropped where the row says so, and the
    wake time is cleared (no timer moves the run), set to now (a person made
    work) or kept (the worker holds the run, and its release writes it).
    `current_phase` may only be written by a move into running (start and each
    phase advance) or into ending (the ending phase, which never pauses), so
    "where does resume go back to" can be derived from it. `phases` (drained,
    opened): the phase rows this move drains and opens, in the same statement,
    the opened one with its deadline (a run started before phase rows existed
    has none: the join finds nothing).
    Health only ever degrades.

    A move that changes the status raises `version` (the run's tag, `Run.etag`), decided here from the
    sources, never from the row's status: MySQL gives a multi-table UPDATE's SET no order, so an
    assignment after `status = %s` could read either status. A phase change (running to running) keeps
    it. `seen_version` holds the move to the version a person saw (their If-Match), in its WHERE.
    """
    to = RunStatus(to)
    sources = [RunStatus(s) for s in sources]
    row = writes(sources, to)
    if to in sources and len(sources) > 1:
        raise ValueError(f"a move into {to.value} from {sorted(s.value for s in sources)} may or may not change the status")
    if current_phase is not None and to not in (RunStatus.RUNNING, RunStatus.ENDING):
        raise ValueError("current_phase is written only by a transition into running or ending")
    if cleanup_target is not None and to is not RunStatus.CLEANING_UP:
        raise ValueError("only a move into cleaning_up names where its cleanup ends")
    if cleanup_target is not None and cleanup_target not in CLEANUP_TARGETS:
        raise ValueError(f"a cleanup ends in {[t.value for t in CLEANUP_TARGETS]}, not {cleanup_target.value}")
    if current_phase is not None and not is_whole_number(current_phase, at_least=1):
        raise ValueError(f"phases are numbered from 1, got {current_phase!r}")
    sets = ["status = %s", "updated_at = %s"]
    args: list[Any] = [to.value, now]
    # guard: a-status-change-keeps-the-version
    # guard: a-phase-change-raises-the-version
    if to not in sources:
        sets.append("event_runs.version = event_runs.version + 1")
    if seen_version is not None:
        # guard: a-run-move-ignores-the-version-seen
        guard = f"({guard}) AND event_runs.version = %s"
        guard_args = [*guard_args, seen_version]
    if started or to is RunStatus.STARTING:
        sets.append("started_at = COALESCE(started_at, %s)")
        args.append(now)
    if row.stamps_finished_at:
        sets.append("finished_at = %s")
        args.append(now)
    if row.clears_claim:
        sets.append("claimed_by = NULL, claim_expires_at = NULL")
    if row.wake is Wake.CLEARED:
        sets.append("wake_at = NULL")
    elif row.wake is Wake.NOW:
        sets.append("wake_at = %s")
        args.append(now)
    sets.append(f"waiting_for = {_waiting_after(sources, to, phases)}")
    if last_error is not _UNSET:
        sets.append("last_error = %s")
        args.append(kept_note(last_error))
    if current_phase is not None:
        sets.append("current_phase = %s")
        args.append(current_phase)
    if degrade:
        sets.append(f"health = {HealthSQL.DEGRADED}")
    if cleanup_target is not None:
        sets.append("cleanup_target = %s")
        args.append(RunStatus(cleanup_target).value)
    joins, join_args = "", []
    for alias, number, stamp in (("drained", phases[0], "drained_at"), ("opened", phases[1], "opened_at")):
        if number is not None:
            joins += f" LEFT JOIN event_run_phases {alias} ON {alias}.run_id = event_runs.id AND {alias}.number = %s"
            join_args.append(number)
            sets.append(f"{alias}.{stamp} = COALESCE({alias}.{stamp}, %s)")
            args.append(now)
            if alias == "opened":  # its deadline, from its limit as authored on the run's clock (a rehearsal's
                # speed divides it; none: DATE_ADD of NULL is NULL)
                # guard: a-later-phase-opens-without-its-deadline
                # guard: a-dry-runs-next-phase-deadline-is-not-divided-by-its-speed
                sets.append("opened.deadline = COALESCE(opened.deadline, DATE_ADD(%s, INTERVAL"
                            " ROUND(opened.limit_seconds * 1000000 / event_runs.speed) MICROSECOND))")
                args.append(now)
    # The run's row is the one the guard matches: a phase row changes only with it.
    return (
        tx.execute(
            f"UPDATE event_runs{joins} SET {', '.join(sets)} WHERE event_runs.id = %s AND {guard}",  # noqa: S608 — the joins, SET and guard fragments are this module's own text; values are parameters
            (*join_args, *args, run_id, *guard_args),
        )
        >= 1
    )


def _waiting_after(sources: list[RunStatus], to: RunStatus, phases: tuple[int | None, int | None]) -> str:
    """What a moved run waits for (`waiting`): a paused run for a resume; a run resumed at its phase for what
    its rows say (a parked cue, a held phase, or nothing: `waiting.from_rows`), and a paused cleanup resumed
    for its parked revert, if one waits; any other move, nothing (a new phase has nobody to wait for yet, a
    finished run none ever)."""
    if to is RunStatus.PAUSED:
        # guard: a-pause-is-not-waited-for
        return WaitSQL.RESUME
    if to is RunStatus.RUNNING and RunStatus.PAUSED in sources and phases == (None, None):
        # guard: a-resume-forgets-what-its-run-waits-for
        return waiting.from_rows("event_runs")
    if to is RunStatus.CLEANING_UP and RunStatus.PAUSED in sources:
        # guard: a-resumed-cleanup-forgets-its-parked-revert
        return waiting.from_rows("event_runs", cleaning_up=True)
    return "NULL"


def transition(
    tx: Tx,
    run_id: int,
    from_statuses: Iterable[RunStatus],
    to: RunStatus,
    now: datetime,
    **changes: Unpack[RunChanges],
) -> bool:
    """Move a run from one of `from_statuses` to `to`; False if it was in none of them.

    `changes`: last_error, current_phase (into running or ending only), degrade; the
    rest of what the move writes is its row of the transitions table.
    """
    sources = [RunStatus(s) for s in from_statuses]
    if not sources:
        raise ValueError("a transition needs at least one source status")
    marks = placeholders(len(sources))
    # guard: transition-from-any-status
    return move(tx, run_id, sources, to, now, f"status IN ({marks})", [s.value for s in sources], **changes)


def fail_unreadable(tx: Tx, run: Run, now: datetime, error: str) -> bool:
    """The run failed, its document unreadable (`error`): only while it is in the status and on the version it was
    read with (a person's upgrade since moved it to another version, whose document its next walk reads)."""
    # guard: an-upgraded-run-is-failed-for-its-old-version
    return move(tx, run.id, [run.status], RunStatus.FAILED, now, "status = %s AND definition_version = %s",
                [run.status.value, run.definition_version], last_error=error, degrade=True)


def degrade(tx: Tx, run_id: int, now: datetime, error: str | None = None) -> bool:
    """Mark a live run's health degraded (a skipped failure, a failed ending step).

    A finished run is history: a late answer from a step that was in flight when
    a person cancelled it is logged on the step, and leaves the run's health and
    last_error (the person's reason) as they were.
    """
    # guard: degrade-a-finished-run
    return (
        tx.execute(
            f"""UPDATE event_runs SET health = {HealthSQL.DEGRADED}, updated_at = %s,
                      last_error = COALESCE(%s, last_error)
                WHERE id = %s AND status NOT IN ({RunSQL.TERMINAL})""",  # noqa: S608 — the status list and the health are rendered from their enums at import
            (now, kept_note(error), run_id),
        )
        == 1
    )


def recover(tx: Tx, run_id: int, now: datetime) -> bool:
    """A live degraded run is healthy again once none of its steps stands failed or refused: called when a step a
    person retried succeeds (the trouble it was degraded for has ended)."""
    # guard: a-run-recovers-with-a-step-still-failed
    return (
        tx.execute(
            f"""UPDATE event_runs SET health = {HealthSQL.OK}, updated_at = %s
                WHERE id = %s AND health = {HealthSQL.DEGRADED} AND status NOT IN ({RunSQL.TERMINAL})
                  AND NOT EXISTS (SELECT 1 FROM event_run_steps s WHERE s.run_id = %s AND s.status IN ({StepSQL.FAILURES}))""",  # noqa: S608 — the status lists and the health are rendered from their enums at import
            (now, run_id, run_id),
        )
        == 1
    )
