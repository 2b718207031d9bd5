"""event_run_phases: a started run's phases as rows, written by the statements that already move the run.

A phase's row costs no statement of its own on the way through the run: the
start inserts every row of the run in one INSERT (phase 1 opened, in the start's
transaction), and the guarded UPDATE that leaves a phase (`runs.leave_phase`)
marks that phase drained and opens the next, in the same statement, so a row
never disagrees with its run. `INSERT IGNORE` on (run_id, number): a start that
is retried writes nothing twice. A phase with a condition not yet met is never
left: `runs.leave_phase` guards on it, and the run's wake time waits for it
(`wake`); meeting it is a person's or a signal's move, which wakes the run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ...db import Tx, placeholders
from ..lifecycle import ClosedBy, OnDeadline, PhaseKind, PhaseSQL, RunSQL, WaitSQL, condition_of
from ..model import Phase, iso
from ..programme import PhasePlan
from .wake import AUTO_SIGNAL_AT

TIMER = "timer"  # who meets a condition at its deadline
COLUMNS = ("run_id, number, kind, name, opened_at, drained_at, `condition`, condition_met, met_at, met_by,"
           " `signal`, limit_seconds, on_deadline, deadline, closed_at, closed_by, deadline_moved_by, deadline_moved_at,"
           " deadline_moved_reason")
NAME_LIMIT = 200  # the column's width


def insert_plan(tx: Tx, run_id: int, plans: Sequence[PhasePlan], opened: int, now: datetime, *,
                time_scale: float = 1.0) -> None:
    """Every phase of a starting run (number, kind, name, condition, signal, limit), the one numbered
    `opened` opened now with its deadline (its limit on the run's clock: `time_scale`). A signal received
    before the run started (kept by the signal route) is folded in: that phase's condition is met from the start (`fold_signals`)."""
    rows = [
        (run_id, plan.number, PhaseKind(plan.kind).value, plan.name[:NAME_LIMIT], now if plan.number == opened else None,
         None if plan.condition.row() is None else json.dumps(plan.condition.row()), plan.signal,
         None if plan.limit is None else plan.limit.seconds, None if plan.limit is None else plan.limit.on_deadline.value,
         # guard: a-dry-runs-first-phase-deadline-is-not-divided-by-its-speed
         now + timedelta(seconds=plan.limit.seconds * time_scale) if plan.limit is not None and plan.number == opened
         else None)
        for plan in plans
    ]
    values = placeholders(len(rows), "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)")
    columns = "run_id, number, kind, name, opened_at, `condition`, `signal`, limit_seconds, on_deadline, deadline"
    tx.send_ahead(
        f"INSERT IGNORE INTO event_run_phases ({columns}) VALUES {values}",  # noqa: S608 — constant columns; VALUES is placeholders only
        [value for row in rows for value in row],
    )
    # guard: an-early-signal-is-never-folded-in
    if any(plan.signal is not None for plan in plans):
        fold_signals(tx, run_id)


def fold_signals(tx: Tx, run_id: int) -> None:
    """Signals the run received before it had phase rows meet their phases' conditions (who sent them, when)."""
    tx.send_ahead(
        """UPDATE event_run_phases p JOIN event_run_signals g ON g.run_id = p.run_id AND g.name = p.`signal`
              SET p.condition_met = TRUE, p.met_at = g.received_at, p.met_by = g.received_by
            WHERE p.run_id = %s AND NOT p.condition_met""",
        (run_id,),
    )


# SQL over a phase row `p`: the phase is over — its condition met (by a person, a signal or its close)
# or its deadline passed with `close` — so no step of it starts, and an answer from one in flight no
# longer applies its on_failure. A step is claimed only of a phase that takes claims (`TAKES_CLAIMS`):
# not met, and no deadline passed, even a `pause` one (the run pauses before anything else of it starts).
# guard: a-pause-deadline-ends-its-phase
OVER = f"(p.condition_met OR (p.deadline <= %s AND p.on_deadline = {PhaseSQL.CLOSE}))"
# guard: claim-refuses-only-a-met-phase
TAKES_CLAIMS = "(NOT p.condition_met AND (p.deadline IS NULL OR p.deadline > %s))"
# The tick must close it: not closed yet, and its condition met or its deadline passed.
CLOSE_DUE = "(p.closed_at IS NULL AND (p.condition_met OR p.deadline <= %s))"


@dataclass(frozen=True)
class Standing:
    """A drained phase's row as it stands, locked: held (its condition not met), due (its deadline passed,
    its condition not met: the tick closes it or pauses the run), or who met it and when."""

    held: bool
    met: dict[str, Any] | None = None  # {"by", "at", "closed_by"?, "deadline_passed"?}: whoever met its condition
    began: bool = False  # held, and this read marked it drained: the hold begins now
    due: bool = False


def hold(tx: Tx, run_id: int, number: int, now: datetime) -> Standing:
    """Whether a drained phase is held (its condition not met) or due to close; if held, its row is
    marked drained now.

    Read with a lock, so the answer stands until the caller's commit: a control that
    meets the condition waits for it, and then wakes the run. A phase with no row (a
    run started before phase rows existed) has no condition. When it is met, who met it
    and when come with the same read (the next phase's `run.phase` row says so), and
    whether its deadline had passed too when the tick found it met (or closed it).
    """
    row = tx.one(
        "SELECT `condition`, condition_met, met_by, met_at, drained_at, deadline, closed_at, closed_by, `signal`"
        " FROM event_run_phases WHERE run_id = %s AND number = %s FOR UPDATE",
        (run_id, number),
    )
    if row is None:
        return Standing(held=False)
    if row["condition_met"]:
        met: dict[str, Any] = {"by": row["met_by"], "at": iso(row["met_at"])}
        if row["closed_by"] is not None:
            met["closed_by"] = row["closed_by"]
        # guard: a-signal-before-its-deadline-said-to-be-late
        if row["met_by"] != TIMER and row["deadline"] is not None and row["deadline"] <= (row["closed_at"] or now):
            # guard: a-signal-past-its-deadline-leaves-the-run-phase-row-silent
            met["deadline_passed"] = True  # a signal (or a person) won over the deadline
        return Standing(held=False, met=met)
    if row["condition"] is None:
        return Standing(held=False)
    if row["deadline"] is not None and row["deadline"] <= now and row["closed_by"] is None:
        return Standing(held=False, due=True)
    # The run, working at this phase, waits for what holds it (nobody for `after`), in the same statement.
    # guard: a-held-phase-is-not-waited-for
    tx.execute(
        f"""UPDATE event_run_phases p JOIN event_runs r ON r.id = p.run_id
               SET p.drained_at = COALESCE(p.drained_at, %s),
                   r.waiting_for = IF(r.status IN ({RunSQL.WORKING}) AND r.current_phase = p.number, %s, r.waiting_for)
             WHERE p.run_id = %s AND p.number = %s""",  # noqa: S608 — the status list is lifecycle's rendering; values are parameters
        (now, _waits_for(row["condition"]), run_id, number),
    )
    return Standing(held=True, began=row["drained_at"] is None)


@dataclass(frozen=True)
class Closing:
    """What a close found, locked: the phase's condition, who met it, and whether its deadline passed."""

    closed_by: ClosedBy
    on_deadline: OnDeadline | None  # at a passed deadline: close or pause
    met_by: str | None
    deadline_passed: bool
    limit_seconds: int | None
    signal: str | None


def closing(tx: Tx, run_id: int, number: int, now: datetime) -> Closing | None:
    """The phase's row, locked, if the tick must close it now (`CLOSE_DUE`); None if not (closed already,
    or nothing is due). A met condition wins over a passed deadline."""
    row = tx.one(
        f"""SELECT `condition`, condition_met, met_by, deadline, on_deadline, limit_seconds, `signal`,
                   EXISTS (SELECT 1 FROM event_run_signals g WHERE g.run_id = p.run_id AND g.name = p.`signal`
                              AND g.effect <> {PhaseSQL.PHASE_OVER}) AS signalled
              FROM event_run_phases p WHERE run_id = %s AND number = %s AND {CLOSE_DUE} FOR UPDATE""",  # noqa: S608 — CLOSE_DUE is this module's constant; values are parameters
        (run_id, number, now),
    )
    if row is None:
        return None
    passed = row["deadline"] is not None and row["deadline"] <= now
    by_deadline = condition_of(_json(row["condition"])).closed_at_its_deadline_by
    # Met by its signal's receipt, or by a person; else its deadline closes it.
    # guard: a-passed-deadline-beats-the-signal
    closed_by = (ClosedBy.SIGNAL if row["signalled"] else ClosedBy.ADVANCE) if row["condition_met"] else by_deadline
    on_deadline = None if row["on_deadline"] is None else OnDeadline(row["on_deadline"])
    # guard: a-passed-pause-deadline-beats-the-signal
    return Closing(closed_by, on_deadline if not row["condition_met"] else None, row["met_by"], passed,
                   row["limit_seconds"], row["signal"])


def close(tx: Tx, run_id: int, number: int, closed_by: ClosedBy, now: datetime) -> bool:
    """Mark the phase closed (its condition met: by the timer, when a deadline closes it); a compare-and-set
    on its not being closed and something being due."""
    # Its open steps (a parked cue among them) are cancelled in the same unit: the run, working at this
    # phase, waits for nothing now (`waiting_for`, in this statement), but a decision: a step parked in doubt
    # is left open (`steps.cancel_phase`), holding the phase until a person decides.
    # guard: a-closed-phase-keeps-its-condition-unmet
    # guard: a-closed-phase-is-still-waited-for
    return tx.execute(
        f"""UPDATE event_run_phases p JOIN event_runs r ON r.id = p.run_id
               SET p.closed_at = %s, p.closed_by = %s, p.met_at = IF(p.condition_met, p.met_at, %s),
                   p.met_by = IF(p.condition_met, p.met_by, %s), p.condition_met = TRUE,
                   r.waiting_for = IF(r.status IN ({RunSQL.WORKING}) AND r.current_phase = p.number
                                      AND NOT r.waiting_for <=> {WaitSQL.DECISION}, NULL, r.waiting_for)
             WHERE p.run_id = %s AND p.number = %s AND {CLOSE_DUE}""",  # noqa: S608 — CLOSE_DUE and the status list are constants; values are parameters
        (now, ClosedBy(closed_by).value, now, TIMER, run_id, number, now),
    ) >= 1


def auto_signal_due(tx: Tx, run_id: int, number: int, now: datetime) -> str | None:
    """The signal a dry run's engine sends its phase now (`auto_signal_seconds` after the phase opened), if it
    waits for one that has not come; None for a live run, or when nothing is due."""
    # guard: a-dry-runs-signal-is-sent-before-it-is-due
    row = tx.one(
        f"""SELECT p.`signal` FROM event_run_phases p JOIN event_runs r ON r.id = p.run_id
             WHERE p.run_id = %s AND p.number = %s AND NOT p.condition_met AND p.closed_at IS NULL
               AND {AUTO_SIGNAL_AT} <= %s""",  # noqa: S608 — AUTO_SIGNAL_AT is a constant; values are parameters
        (run_id, number, now),
    )
    return None if row is None else str(row["signal"])


def drop_deadline(tx: Tx, run_id: int, number: int, now: datetime) -> bool:
    """A `pause` deadline acted: the phase waits on without one (once). Compare-and-set on its having passed."""
    return tx.execute(
        """UPDATE event_run_phases SET deadline = NULL
            WHERE run_id = %s AND number = %s AND deadline <= %s AND closed_at IS NULL AND NOT condition_met""",
        (run_id, number, now),
    ) == 1


def move_deadline(tx: Tx, run_id: int, number: int, moved: tuple[datetime, datetime], actor: str, reason: str | None,
                  now: datetime, *, seen_version: int | None = None) -> bool:
    """A person moves the deadline of phase `number` from `moved[0]` (as read) to `moved[1]`, later than now: a
    compare-and-set on the run being at that phase, live (running, ending or paused, not cleaning up), and
    the phase open to it (its deadline as read, not closed, not over: its condition not met, nor a `close`
    deadline passed, which the engine already treats as the phase's end though the tick has not closed it yet:
    steps answering in flight were cancelled as "phase ended"). Who moved it, when and
    why are kept on the phase row; a running or ending run wakes now (its release then writes the wake time the
    new deadline gives; a paused one has none), and its version is raised (`seen_version`: held to the version a person saw)."""
    seen = "" if seen_version is None else " AND r.version = %s"
    # guard: extend-a-phase-the-run-is-not-at
    # guard: extend-a-closed-phase
    # guard: extend-into-the-past
    # guard: extend-without-waking-the-run
    # guard: extend-revives-a-phase-its-close-deadline-ended
    return tx.execute(
        f"""UPDATE event_runs r JOIN event_run_phases p ON p.run_id = r.id AND p.number = r.current_phase
               SET p.deadline = %s, p.deadline_moved_by = %s, p.deadline_moved_at = %s, p.deadline_moved_reason = %s,
                   r.version = r.version + 1, r.updated_at = %s,
                   r.wake_at = IF(r.status IN ({RunSQL.DUE}), %s, r.wake_at)
             WHERE r.id = %s AND r.current_phase = %s AND r.status IN ({RunSQL.LIVE_PHASE}) AND r.cleanup_target IS NULL
               AND p.deadline = %s AND p.closed_at IS NULL AND NOT {OVER} AND %s > %s{seen}""",  # noqa: S608 — the status literals are lifecycle's renderings (constants); values are parameters
        (moved[1], actor, now, reason, now, now, run_id, number, moved[0], now, moved[1], now,
         *(() if seen_version is None else (seen_version,))),
    ) >= 1


def _json(raw: Any) -> Any:
    return json.loads(raw) if isinstance(raw, (str, bytes)) else raw


def _waits_for(condition: Any) -> str | None:
    """What a run held by the phase row's condition waits for (None: nobody, or no condition)."""
    waits = None if condition is None else condition_of(_json(condition)).waits_for
    return None if waits is None else waits.value


def get(tx: Tx, run_id: int, number: int) -> Phase | None:
    row = tx.one(f"SELECT {COLUMNS} FROM event_run_phases WHERE run_id = %s AND number = %s", (run_id, number))  # noqa: S608 — COLUMNS is a constant; values are parameters
    return None if row is None else Phase.from_row(row)


def current_of(tx: Tx, at: Sequence[tuple[int, int]]) -> dict[int, Phase]:
    """The row of the phase each (run id, phase number) names, by run id (primary-key lookups)."""
    if not at:
        return {}
    rows = tx.all(
        f"SELECT {COLUMNS} FROM event_run_phases WHERE {' OR '.join(['(run_id = %s AND number = %s)'] * len(at))}",  # noqa: S608 — COLUMNS and the repeated pair are constants; values are parameters
        tuple(value for pair in at for value in pair),
    )
    return {int(r["run_id"]): Phase.from_row(r) for r in rows}


def list_for_run(tx: Tx, run_id: int) -> list[Phase]:
    rows = tx.all(f"SELECT {COLUMNS} FROM event_run_phases WHERE run_id = %s ORDER BY number", (run_id,))  # noqa: S608 — COLUMNS is a constant; the id is a parameter
    return [Phase.from_row(r) for r in rows]
