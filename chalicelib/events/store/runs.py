"""event_runs: occurrences, their guarded transitions, the run lease, and the wake time.

Every statement that changes a run or hands it back also writes its wake time
(see `wake`): scheduling writes scheduled_for, taking the run lease the lease's expiry
(a worker that dies is looked at again then), the release the earliest timer
from the rows as they stand, and a status change what its row of
`lifecycle.TRANSITIONS` says: a pause or an end NULL, a person's resume now
(confirm and skip wake the run in their own statements, in `steps`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, TypedDict, Unpack

from ...db import Tx, must_exist, placeholders
from .. import waiting
from ..lifecycle import CLEANUP_TARGETS, WORKING, PhaseSQL, RunMode, RunSQL, RunStatus, StepSQL, WaitingFor, WaitSQL, Wake, writes
from ..model import Rehearsal, Run, is_whole_number, kept_note
from . import resources
from .wake import WAKE_AT, wake_args

COLUMNS = (
    "id, definition_id, definition_version, occurrence_key, status, scheduled_for, grace_seconds,"
    " current_phase, health, last_error, claimed_by, claim_expires_at, started_at, finished_at,"
    " created_at, updated_at, wake_at, waiting_for, version, cleanup_target,"
    " mode, speed, rehearsal_bridge, auto_confirm_seconds, auto_signal_seconds"
)
_UNSET = object()


def occurrence_key(definition_id: int, scheduled_for: datetime) -> str:
    """One occurrence of one definition: whoever plans it, the same key."""
    return f"{definition_id}@{scheduled_for:%Y-%m-%dT%H:%M:%S.%f}"


# ── reads ──────────────────────────────────────────────────────────────────
def of_occurrences(tx: Tx, definition_id: int, times: list[datetime]) -> dict[datetime, Run]:
    """The runs of these occurrences of a definition (those that have one), by their time: one read of the
    occurrence key's unique index."""
    if not times:
        return {}
    rows = tx.all(f"SELECT {COLUMNS} FROM event_runs WHERE occurrence_key IN %s",  # noqa: S608 — COLUMNS is a constant; the keys are parameters
                  ([occurrence_key(definition_id, t) for t in times],))
    return {run.scheduled_for: run for run in map(Run.from_row, rows)}


def get(tx: Tx, run_id: int, *, for_update: bool = False) -> Run | None:
    """The run; `for_update` locks it so a control reads the status it will act on."""
    lock = " FOR UPDATE" if for_update else ""
    row = tx.one(f"SELECT {COLUMNS} FROM event_runs WHERE id = %s{lock}", (run_id,))  # noqa: S608 — COLUMNS and the lock clause are constants; the id is a parameter
    return Run.from_row(row) if row else None


def list_page(
    tx: Tx,
    *,
    status: RunStatus | None = None,
    definition_id: int | None = None,
    waiting_for: str | None = None,
    rehearsal: str | None = None,
    limit: int = 50,
    before_id: int | None = None,
) -> tuple[list[Run], int | None]:
    """Runs newest first, keyset-paginated: returns the page and the next cursor (or None).

    `rehearsal` (`REHEARSAL_FILTERS`): `only` keeps the dry runs, `exclude` the live runs; None, both.

    `waiting_for` (`waiting.FILTERS`) keeps the runs waiting for that (`any`: for anything), one range of
    `event_runs_waiting` (`event_runs_waits` for any) in id order: no scan, however many runs there are.
    """
    if not 1 <= limit <= 500:
        raise ValueError(f"limit must be between 1 and 500, got {limit}")
    where: list[str] = []
    args: list[Any] = []
    if waiting_for == waiting.ANY:
        # guard: the-any-filter-lets-every-run-through
        where.append("waits = 1")
    elif waiting_for is not None:
        if waiting_for not in {kind.value for kind in WaitingFor}:
            raise ValueError(f"runs wait for one of {waiting.FILTERS}, not {waiting_for!r}")
        # guard: the-waiting-filter-ignores-what-it-asks-for
        where.append("waiting_for = %s")
        args.append(waiting_for)
    if status is not None:
        where.append("status = %s")
        args.append(RunStatus(status).value)
    if rehearsal is not None:
        if rehearsal not in REHEARSAL_FILTERS:
            raise ValueError(f"rehearsal is one of {REHEARSAL_FILTERS}, not {rehearsal!r}")
        where.append("mode = %s")  # one range of (mode, id)
        # guard: the-runs-filter-mixes-dry-runs-and-live-runs
        args.append((RunMode.REHEARSAL if rehearsal == "only" else RunMode.LIVE).value)
    if definition_id is not None:
        where.append("definition_id = %s")
        args.append(definition_id)
    if before_id is not None:
        where.append("id < %s")
        args.append(before_id)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    rows = tx.all(f"SELECT {COLUMNS} FROM event_runs {clause} ORDER BY id DESC LIMIT %s", (*args, limit + 1))  # noqa: S608 — COLUMNS and the where fragments are constants; filters are parameters
    page = [Run.from_row(r) for r in rows[:limit]]
    return page, (page[-1].id if len(rows) > limit else None)


REHEARSAL_FILTERS = ("only", "exclude")
WORKING_OR_STARTING = (RunStatus.STARTING, *WORKING)


def waiting_counts(tx: Tx) -> dict[str, Any]:
    """How many runs wait for a person or the game, by what (`any`: all of them), and how many are working
    (starting, running or ending, waiting for nobody): one statement, each count one range of an index."""
    kinds = ", ".join(f"(SELECT COUNT(*) FROM event_runs WHERE waiting_for = %s) AS `{kind.value}`" for kind in WaitingFor)  # noqa: S608 — the aliases are the lifecycle's words
    row = tx.one(
        f"""SELECT (SELECT COUNT(*) FROM event_runs WHERE status IN ({placeholders(len(WORKING_OR_STARTING))})) AS live,
                   {kinds}""",  # noqa: S608 — the column names are the lifecycle's words; values are parameters
        (*(s.value for s in WORKING_OR_STARTING), *(kind.value for kind in WaitingFor)),
    ) or {"live": 0, **{kind.value: 0 for kind in WaitingFor}}  # a SELECT of counts has its row: only EXPLAIN has none
    counts = {kind.value: int(row[kind.value]) for kind in WaitingFor}
    held_while_working = sum(counts[kind.value] for kind in WaitingFor if kind is not WaitingFor.RESUME)  # resume: paused, not live
    return {"waiting": {waiting.ANY: sum(counts.values()), **counts}, "working": int(row["live"]) - held_while_working}


def find_due(
    tx: Tx, now: datetime, limit: int, *, after: tuple[datetime, int] | None = None, shard: tuple[int, int] = (0, 1)
) -> list[Run]:
    """Runs whose wake time has come and that no live run lease holds, in wake order.

    One range of the (wake_at, id) index: a run parked at a cue, paused, holding
    behind a long wait or over is never read. `after` is the (wake_at, id) of the
    last run of the previous batch, so one tick reads its work in bounded batches
    and sees each run at most once. `shard` (index, count) keeps the runs whose id
    modulo count is index: ticks given different shards of one count never contend
    for a run (the run lease still guards each one; count 1 is every run).
    """
    keyset, args = "", []
    if after is not None:
        # guard: due-runs-page-skips-a-tied-wake
        keyset = "AND (wake_at > %s OR (wake_at = %s AND id > %s))"
        args = [after[0], after[0], after[1]]
    index, count = shard
    # guard: find-due
    # guard: find-due-takes-runs-not-yet-due
    # guard: find-due-ignores-its-shard
    rows = tx.all(
        f"""SELECT {COLUMNS} FROM event_runs
             WHERE wake_at <= %s
               AND (claim_expires_at IS NULL OR claim_expires_at < %s) {keyset}
               AND MOD(id, %s) = %s
             ORDER BY wake_at, id LIMIT %s""",  # noqa: S608 — COLUMNS and keyset are constants; times, ids, shard, limit are parameters
        (now, now, *args, count, index, limit),
    )
    return [Run.from_row(r) for r in rows]


def next_wake(tx: Tx) -> datetime | None:
    """The earliest wake time of any run, None when no run waits on a timer (the index's first entry)."""
    return tx.scalar("SELECT MIN(wake_at) AS wake_at FROM event_runs")


# ── writes ─────────────────────────────────────────────────────────────────
def insert_occurrence(
    tx: Tx,
    *,
    definition_id: int,
    definition_version: int,
    scheduled_for: datetime,
    grace_seconds: int,
    now: datetime,
) -> tuple[Run | None, bool]:
    """Create the run for one occurrence, or find the one already there.

    Returns (run, created). INSERT IGNORE on the occurrence key, so two planners
    (overlapping ticks, a double-clicked button) end with one run. The INSERT is
    guarded on the occurrence not being skipped (`event_occurrence_skips`): for a
    skipped one nothing is inserted and the run is None (unless one was there before).
    """
    if not is_whole_number(grace_seconds, at_least=0):
        raise ValueError(f"grace_seconds must be a non-negative whole number, got {grace_seconds!r}")
    key = occurrence_key(definition_id, scheduled_for)
    # guard: planner-plans-a-skipped-occurrence
    # guard: schedule-without-a-wake
    created = tx.execute(
        # guard: schedule-twice-is-two-runs
        f"""INSERT IGNORE INTO event_runs
             (definition_id, definition_version, occurrence_key, status, scheduled_for,
              grace_seconds, health, created_at, updated_at, wake_at)
           SELECT %s, %s, %s, {RunSQL.SCHEDULED}, %s, %s, 'ok', %s, %s, %s FROM DUAL
            WHERE NOT EXISTS (SELECT 1 FROM event_occurrence_skips
                               WHERE definition_id = %s AND scheduled_for = %s)""",  # noqa: S608 — the status literals are lifecycle's renderings (constants); values are parameters
        (definition_id, definition_version, key, scheduled_for, grace_seconds, now, now, scheduled_for,
         definition_id, scheduled_for),
    )
    # A locking read sees the latest committed row: under REPEATABLE READ a plain
    # SELECT would read this transaction's older snapshot and miss a run that a
    # concurrent planner inserted (and that our INSERT IGNORE waited for).
    row = tx.one(f"SELECT {COLUMNS} FROM event_runs WHERE occurrence_key = %s LOCK IN SHARE MODE", (key,))  # noqa: S608 — COLUMNS is a constant; the occurrence key is a parameter
    return (Run.from_row(row) if row else None), created == 1


REHEARSAL_KEY_PREFIX = "rehearsal:"  # no occurrence key of a schedule (`occurrence_key`) starts so


def insert_rehearsal(tx: Tx, *, definition_id: int, definition_version: int, grace_seconds: int, now: datetime,
                     rehearsal: Rehearsal) -> Run:
    """A dry run of a version, scheduled for now: its occurrence key is in a namespace of its own (never an
    occurrence of the schedule's, so the planner, the calendar and a skip never see it), its mode rehearsal."""
    key = f"{REHEARSAL_KEY_PREFIX}{definition_id}:{uuid.uuid4().hex}"
    tx.execute(
        f"""INSERT INTO event_runs
             (definition_id, definition_version, occurrence_key, status, scheduled_for, grace_seconds, health,
              created_at, updated_at, wake_at, mode, speed, rehearsal_bridge, auto_confirm_seconds, auto_signal_seconds)
           VALUES (%s, %s, %s, {RunSQL.SCHEDULED}, %s, %s, 'ok', %s, %s, %s, %s, %s, %s, %s, %s)""",  # noqa: S608 — the status literal is lifecycle's rendering; values are parameters
        (definition_id, definition_version, key, now, grace_seconds, now, now, now, RunMode.REHEARSAL.value,
         rehearsal.speed, rehearsal.bridge.value, rehearsal.auto_confirm_seconds, rehearsal.auto_signal_seconds),
    )
    row = tx.one(f"SELECT {COLUMNS} FROM event_runs WHERE occurrence_key = %s", (key,))  # noqa: S608 — COLUMNS is a constant; the key is a parameter
    return Run.from_row(must_exist(row))


class RunChanges(TypedDict, total=False):
    """What a status change of a run may write besides what its row of the transitions table says (see `_move`)."""

    last_error: str | None
    current_phase: int | None
    degrade: bool
    seen_version: int | None


def _move(
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
        sets.append("health = 'degraded'")
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
    its rows say (a parked cue, a held phase, or nothing: `waiting.from_rows`); any other move, nothing (a
    new phase has nobody to wait for yet, a finished run none ever)."""
    if to is RunStatus.PAUSED:
        # guard: a-pause-is-not-waited-for
        return WaitSQL.RESUME
    if to is RunStatus.RUNNING and RunStatus.PAUSED in sources and phases == (None, None):
        # guard: a-resume-forgets-what-its-run-waits-for
        return waiting.from_rows("event_runs")
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
    return _move(tx, run_id, sources, to, now, f"status IN ({marks})", [s.value for s in sources], **changes)


def leave_phase(
    tx: Tx,
    run_id: int,
    finished_phase: int,
    from_status: RunStatus,
    to: RunStatus,
    now: datetime,
    *,
    next_phase: int | None = None,
    cleanup_target: RunStatus | None = None,
) -> bool:
    """Move a run on from `finished_phase` (to the next phase, to ending, or to completed; under
    `cleanup_on: complete`, into cleaning_up toward `cleanup_target`, only if it has something to revert).

    The same statement marks the finished phase's row drained and opens the next's.

    Guarded on the phase having no pending or running step left and no condition
    unmet, and, from running, on it being the run's current phase: a runner working from a stale
    view (a step re-queued meanwhile, another worker already past it) changes nothing.
    """
    from_status = RunStatus(from_status)
    args: list[Any]
    # guard: leave-phase-from-any-status
    guard, args = "status = %s", [from_status.value]
    if from_status is RunStatus.RUNNING:
        # guard: leave-phase-the-run-has-left
        guard += " AND current_phase = %s"
        args.append(finished_phase)
    # guard: leave-phase-past
    guard += f""" AND NOT EXISTS (SELECT 1 FROM event_run_steps s
                                  WHERE s.run_id = %s AND s.phase = %s AND s.status IN ({StepSQL.OPEN}))"""  # noqa: S608 — the status literals are lifecycle's renderings (constants); values are parameters
    # The finished phase's row (joined by `_move` as `drained`): none, or no condition, or its condition met.
    # guard: a-held-phase-is-left
    guard += " AND (drained.run_id IS NULL OR drained.`condition` IS NULL OR drained.condition_met)"
    args += [run_id, finished_phase]
    if cleanup_target is not None:
        guard += f" AND {resources.to_revert('event_runs.id')}"
    return _move(tx, run_id, [from_status], to, now, guard, args, current_phase=next_phase,
                 phases=(finished_phase, next_phase), cleanup_target=cleanup_target)


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
    return _move(tx, run_id, moved_from, RunStatus.CLEANING_UP, now, guard, [*(s.value for s in moved_from), now],
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
    return _move(tx, run_id, [source], target, now, guard, (RunStatus(source).value, RunStatus(target).value),
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
    return _move(tx, run_id, [RunStatus.CLEANING_UP], RunStatus.PAUSED, now, guard, (), last_error=error)


def start_within_grace(tx: Tx, run_id: int, now: datetime, *, into_phase: int | None = None) -> bool:
    """`scheduled -> starting`, only while now lies in [scheduled_for, scheduled_for + grace].

    With `into_phase`, straight on into running at that phase, for a caller that
    materialises it in the same transaction (nobody could see it starting).
    """
    # guard: start-before-scheduled-for
    # guard: start-after-the-grace-window
    guard = f"status = {RunSQL.SCHEDULED} AND scheduled_for <= %s AND %s <= scheduled_for + INTERVAL grace_seconds SECOND"
    # guard: runner-start-left-in-starting
    to = RunStatus.STARTING if into_phase is None else RunStatus.RUNNING
    return _move(tx, run_id, [RunStatus.SCHEDULED], to, now, guard, (now, now), current_phase=into_phase, started=True)


def miss_after_grace(tx: Tx, run_id: int, now: datetime) -> bool:
    """`scheduled -> missed`, only once now is past scheduled_for + grace."""
    # guard: miss-inside-the-grace-window
    guard = f"status = {RunSQL.SCHEDULED} AND %s > scheduled_for + INTERVAL grace_seconds SECOND"
    return _move(tx, run_id, [RunStatus.SCHEDULED], RunStatus.MISSED, now, guard, (now,))


def degrade(tx: Tx, run_id: int, now: datetime, error: str | None = None) -> bool:
    """Mark a live run's health degraded (a skipped failure, a failed ending step).

    A finished run is history: a late answer from a step that was in flight when
    a person cancelled it is logged on the step, and leaves the run's health and
    last_error (the person's reason) as they were.
    """
    # guard: degrade-a-finished-run
    return (
        tx.execute(
            f"""UPDATE event_runs SET health = 'degraded', updated_at = %s,
                      last_error = COALESCE(%s, last_error)
                WHERE id = %s AND status NOT IN ({RunSQL.TERMINAL})""",  # noqa: S608 — the status list is rendered from RunStatus at import
            (now, kept_note(error), run_id),
        )
        == 1
    )


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
    return (
        tx.execute(
            # guard: run-lease-leaves-no-wake-for-a-dead-worker
            f"""UPDATE event_runs SET claimed_by = %s, claim_expires_at = %s, wake_at = %s
                 WHERE id = %s AND status IN ({RunSQL.DUE})
                   AND (claim_expires_at IS NULL OR claim_expires_at < %s)""",  # noqa: S608 — the status list is rendered from RunStatus at import
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



def advance_phase(tx: Tx, run_id: int, phase: int, actor: str, now: datetime, *, resuming: bool,
                  seen_version: int | None = None) -> bool:
    """A person's advance: the run's current main phase has its condition met by `actor`, and the run wakes now.

    One guarded UPDATE of the run's row and its phase's row: the run is running (or,
    `resuming`, paused) at `phase` (from paused it is running again, its last error
    cleared, as a resume does), the phase is a main phase whose condition nobody met yet, and
    no step of it is in flight under a live lease (the NOT EXISTS: an answer on its
    way is waited for, not raced) nor parked in doubt (a person decides it first). An advance is a run-level
    change: it raises the run's version, and
    `seen_version` holds it to the version a person saw (their If-Match). A run paused in its cleanup is never
    advanced: its phases are over.
    """
    # guard: an-advance-ignores-the-version-seen
    seen = "" if seen_version is None else " AND r.version = %s"
    # guard: advance-of-a-phase-the-run-is-not-at
    # guard: advance-of-the-ending
    # guard: advance-races-a-step-in-flight
    # guard: advance-does-not-wake-its-run
    # guard: an-advanced-phase-is-still-waited-for
    # guard: an-advance-keeps-the-version
    # guard: an-advance-passes-a-step-parked-in-doubt
    return (
        tx.execute(
            f"""UPDATE event_runs r JOIN event_run_phases p ON p.run_id = r.id AND p.number = r.current_phase
                   SET p.condition_met = TRUE, p.met_at = %s, p.met_by = %s,
                       {"r.last_error = NULL," if resuming else ""} r.version = r.version + 1,
                       r.status = {RunSQL.RUNNING}, r.updated_at = %s, r.wake_at = %s, r.waiting_for = NULL
                 WHERE r.id = %s AND r.status = %s AND r.current_phase = %s AND r.cleanup_target IS NULL{seen}
                   AND p.kind = {PhaseSQL.MAIN} AND NOT p.condition_met
                   AND NOT EXISTS (SELECT 1 FROM event_run_steps s
                                    WHERE s.run_id = r.id AND s.phase = p.number
                                      AND ((s.status = {StepSQL.RUNNING} AND s.claim_expires_at >= %s)
                                           OR {waiting.parked_in_doubt('s')}))""",  # noqa: S608 — the status literals are lifecycle's renderings (constants); values are parameters
            (now, actor, now, now, run_id, (RunStatus.PAUSED if resuming else RunStatus.RUNNING).value, phase,
             *(() if seen_version is None else (seen_version,)), now),
        )
        >= 1
    )


def oldest_paused_since(tx: Tx) -> datetime | None:
    """When the longest-paused live run was paused (its last status change); None when none is paused (a dry
    run is never in the alarm's figure)."""
    return tx.scalar(
        # guard: a-paused-dry-run-counts-in-the-paused-run-alarm
        f"SELECT MIN(updated_at) AS since FROM event_runs WHERE status = {RunSQL.PAUSED} AND mode = {RunSQL.LIVE}"  # noqa: S608 — the status and mode are lifecycle's renderings
    )
