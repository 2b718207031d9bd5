"""event_runs created, a scheduled run postponed or upgraded, and started within its grace window or missed after it.

The invariant: one occurrence of a definition is one run, whoever plans it: the
occurrence key's unique index and INSERT IGNORE decide, never a read followed by
an insert; a dry run's key lies in a namespace of its own, so it is never an
occurrence. Whether a scheduled run may start or is missed is decided by the
grace window in the move's own WHERE, against the one clock's now.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from ....db import Tx, must_exist, placeholders
from ...lifecycle import RunMode, RunSQL, RunStatus
from ...model import HealthSQL, Rehearsal, Run, is_whole_number
from .moves import move
from .overlap import UNDER_WAY_BESIDE, under_way_beside
from .reads import COLUMNS, occurrence_key


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
           SELECT %s, %s, %s, {RunSQL.SCHEDULED}, %s, %s, {HealthSQL.OK}, %s, %s, %s FROM DUAL
            WHERE NOT EXISTS (SELECT 1 FROM event_occurrence_skips
                               WHERE definition_id = %s AND scheduled_for = %s)""",  # noqa: S608 — the status and health literals are their enums' renderings (constants); values are parameters
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
           VALUES (%s, %s, %s, {RunSQL.SCHEDULED}, %s, %s, {HealthSQL.OK}, %s, %s, %s, %s, %s, %s, %s, %s)""",  # noqa: S608 — the status and health literals are their enums' renderings; values are parameters
        (definition_id, definition_version, key, now, grace_seconds, now, now, now, RunMode.REHEARSAL.value,
         rehearsal.speed, rehearsal.bridge.value, rehearsal.auto_confirm_seconds, rehearsal.auto_signal_seconds),
    )
    row = tx.one(f"SELECT {COLUMNS} FROM event_runs WHERE occurrence_key = %s", (key,))  # noqa: S608 — COLUMNS is a constant; the key is a parameter
    return Run.from_row(must_exist(row))



def start_within_grace(tx: Tx, run_id: int, now: datetime, *, into_phase: int | None = None,
                       alone_of: int | None = None, cancelled: tuple[int, ...] = ()) -> bool:
    """`scheduled -> starting`, only while now lies in [scheduled_for, scheduled_for + grace], or once the run
    queued behind an earlier one (`overlap.queue`) is let go, however late.

    With `into_phase`, straight on into running at that phase, for a caller that
    materialises it in the same transaction (nobody could see it starting).
    With `alone_of`, its definition (whose schedule's overlap is not allow), only
    while no other live run of it is under way: two of its runs falling due
    together, on two workers or two ticks, each read none under way before the
    other committed, and both started. The subquery's read locks what it reads,
    so one waits for the other (or is its deadlock's victim, re-run whole) and
    starts nothing; its run decides again on its next walk, seeing the other.
    The runs its own decision `cancelled` (overlap: cancel_previous) are not
    counted: one that cleans up is under way still.
    """
    # guard: start-before-scheduled-for
    # guard: start-after-the-grace-window
    guard = (f"status = {RunSQL.SCHEDULED} AND scheduled_for <= %s"
             # guard: a-queued-run-starts-only-in-its-grace-window
             " AND (%s <= scheduled_for + INTERVAL grace_seconds SECOND OR queued_behind IS NOT NULL)")
    args: tuple[object, ...] = (now, now)
    # guard: two-runs-of-a-definition-start-together
    if alone_of is not None:
        others = f" WHERE under_way.id NOT IN ({placeholders(len(cancelled))})" if cancelled else ""
        guard += f" AND NOT EXISTS (SELECT 1 FROM ({UNDER_WAY_BESIDE}) AS under_way{others})"  # noqa: S608 — constants; values are parameters
        args += (*under_way_beside(alone_of, run_id), *cancelled)
    # guard: runner-start-left-in-starting
    to = RunStatus.STARTING if into_phase is None else RunStatus.RUNNING
    return move(tx, run_id, [RunStatus.SCHEDULED], to, now, guard, args, current_phase=into_phase, started=True)


def miss_after_grace(tx: Tx, run_id: int, now: datetime) -> bool:
    """`scheduled -> missed`, only once now is past scheduled_for + grace, and never a run queued behind another
    (queue_one: it starts once that one is over, however late; a start it lost is tried again)."""
    # guard: miss-inside-the-grace-window
    # guard: a-queued-run-that-lost-its-start-is-missed
    guard = (f"status = {RunSQL.SCHEDULED} AND %s > scheduled_for + INTERVAL grace_seconds SECOND"
             " AND queued_behind IS NULL")
    return move(tx, run_id, [RunStatus.SCHEDULED], RunStatus.MISSED, now, guard, (now,))


def upgrade(tx: Tx, run_id: int, to: int, grace_seconds: int, now: datetime, *, seen_version: int | None = None) -> bool:
    """A scheduled live run moved to version `to` of its definition, with that version's grace window: only while
    `to` is the definition's current version (a version saved since the press read it moves nothing), the run was
    made from an earlier one, and its time is still ahead (a run whose time has come is the tick's to start, as it
    is). The same run at the same time: its occurrence key, wake time and place in a queue kept. A run-level change
    a person made: its version is raised, and `seen_version` holds it to the version they saw (their If-Match)."""
    seen = "" if seen_version is None else " AND version = %s"
    # guard: upgrade-a-started-run
    # guard: upgrade-a-dry-run
    # guard: upgrade-to-an-earlier-version
    # guard: upgrade-a-run-whose-time-has-come
    # guard: upgrade-to-a-version-no-longer-current
    return tx.execute(
        f"""UPDATE event_runs SET definition_version = %s, grace_seconds = %s, version = version + 1, updated_at = %s
             WHERE id = %s AND status = {RunSQL.SCHEDULED} AND mode = %s AND definition_version < %s AND scheduled_for > %s
               AND EXISTS (SELECT 1 FROM event_definitions AS d
                            WHERE d.id = event_runs.definition_id AND d.current_version = %s){seen}""",  # noqa: S608 — the status literal is lifecycle's rendering; values are parameters
        (to, grace_seconds, now, run_id, RunMode.LIVE.value, to, now, to,
         *(() if seen_version is None else (seen_version,))),
    ) == 1


def postpone(tx: Tx, run_id: int, to: datetime, now: datetime, *, seen_version: int | None = None) -> bool:
    """A scheduled run moved to `to`, later than now: the same run, its occurrence key kept, its wake time `to`
    (as the schedule's INSERT writes it), and no longer queued behind a run under way (`overlap.queue`): it decides
    its overlap afresh at its new time, within its grace window, and leaves the queue's one place to the next
    occurrence. A run-level change a person made: its version is raised, and `seen_version` holds it to the
    version they saw (their If-Match)."""
    seen = "" if seen_version is None else " AND version = %s"
    # guard: postpone-a-started-run
    # guard: postpone-into-the-past
    # guard: postpone-without-its-wake
    # guard: a-postponed-run-stays-queued
    return tx.execute(
        f"""UPDATE event_runs SET scheduled_for = %s, wake_at = %s, queued_behind = NULL, version = version + 1, updated_at = %s
             WHERE id = %s AND status = {RunSQL.SCHEDULED} AND %s > %s{seen}""",  # noqa: S608 — the status literal is lifecycle's rendering; values are parameters
        (to, to, now, run_id, to, now, *(() if seen_version is None else (seen_version,))),
    ) == 1
