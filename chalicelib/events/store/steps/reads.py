"""event_run_steps read: a step, a run's or a phase's steps, the open ones, the parked ones, how far a phase got.

The invariant: a read writes nothing and decides nothing; every decision a read
informs is taken again by its write's own guard (a compare-and-set), so a read
that is stale by the time its write runs changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ....db import Tx, placeholders
from ... import waiting
from ...lifecycle import RunSQL, StepSQL
from ...model import Step
from .. import phases
from .fragments import COLUMNS, reached


def get(tx: Tx, step_id: int) -> Step | None:
    row = tx.one(f"SELECT {COLUMNS} FROM event_run_steps WHERE id = %s", (step_id,))  # noqa: S608 — COLUMNS is a constant; the id is a parameter
    return Step.from_row(row) if row else None


def get_on_run(tx: Tx, run_id: int, step_id: int, *, for_update: bool = False) -> Step | None:
    """A step of *this* run only: a step id from a URL under another run is not found.

    `for_update` locks it, so a control that loses its guarded statement names
    the status the step is really in.
    """
    lock = " FOR UPDATE" if for_update else ""
    row = tx.one(
        # guard: step-of-another-run-found
        f"SELECT {COLUMNS} FROM event_run_steps WHERE id = %s AND run_id = %s{lock}", (step_id, run_id)  # noqa: S608 — COLUMNS and the lock clause are constants; ids are parameters
    )
    return Step.from_row(row) if row else None


def first_newer(tx: Tx, run_id: int) -> dict[str, Any] | None:
    """The first step of the run holding a status or park reason this version does not know (a newer version
    wrote it), as its row (id, run_id, status, park_reason); None when this version knows every one."""
    return tx.one(
        f"""SELECT id, run_id, status, park_reason FROM event_run_steps
             WHERE run_id = %s AND (status NOT IN ({StepSQL.KNOWN}) OR park_reason NOT IN ({StepSQL.PARK_REASONS}))
             LIMIT 1""",  # noqa: S608 — the lifecycle's renderings (constants); the id is a parameter
        (run_id,),
    )


def oldest_parked_since(tx: Tx) -> datetime | None:
    """When the longest-parked step (a cue waiting for a person) of a live run started; None when none is
    parked (a dry run's is never in the alarm's figure)."""
    # guard: a-dry-runs-parked-cue-counts-in-the-parked-cue-alarm
    return tx.scalar(
        f"""SELECT MIN(s.started_at) AS since FROM event_run_steps s JOIN event_runs r ON r.id = s.run_id
             WHERE s.status = {StepSQL.RUNNING} AND s.claim_expires_at IS NULL AND r.mode = {RunSQL.LIVE}"""  # noqa: S608 — the status and mode literals are lifecycle's renderings (constants)
    )


def parked_of(tx: Tx, run_ids: Sequence[int]) -> dict[int, Step]:
    """The parked step of each of these runs that has one (a run has at most one: its phase's head)."""
    if not run_ids:
        return {}
    rows = tx.all(
        f"""SELECT {COLUMNS} FROM event_run_steps
             WHERE run_id IN ({placeholders(len(run_ids))}) AND status = {StepSQL.RUNNING} AND claim_expires_at IS NULL""",  # noqa: S608 — COLUMNS, the marks and the status literal are constants; ids are parameters
        tuple(run_ids),
    )
    return {int(r["run_id"]): Step.from_row(r) for r in rows}


def list_for_run(tx: Tx, run_id: int) -> list[Step]:
    rows = tx.all(
        f"SELECT {COLUMNS} FROM event_run_steps WHERE run_id = %s ORDER BY phase, seq", (run_id,)  # noqa: S608 — COLUMNS is a constant; the id is a parameter
    )
    return [Step.from_row(r) for r in rows]


def page_for_run(tx: Tx, run_id: int, after: Step | None, limit: int) -> list[Step]:
    """Up to `limit` of the run's steps in (phase, seq) order, after the step `after` (from the start without one).

    One range of the `(run_id, phase, seq)` index, whatever the run's size: what
    GET /runs/{id} answers a page at a time. The index is forced: with statistics
    gone stale (a table churned by deletes, purge behind) the optimiser was seen
    to choose a full scan and a sort instead.
    """
    if after is None:
        rows = tx.all(
            f"SELECT {COLUMNS} FROM event_run_steps FORCE INDEX (event_run_steps_position) WHERE run_id = %s ORDER BY phase, seq LIMIT %s",  # noqa: S608 — COLUMNS is a constant; ids and limit are parameters
            (run_id, limit),
        )
    else:
        rows = tx.all(
            f"""SELECT {COLUMNS} FROM event_run_steps FORCE INDEX (event_run_steps_position)
                 WHERE run_id = %s AND (phase > %s OR (phase = %s AND seq > %s))
                 ORDER BY phase, seq LIMIT %s""",  # noqa: S608 — COLUMNS is a constant; the rest are parameters
            (run_id, after.phase, after.phase, after.seq, limit),
        )
    return [Step.from_row(r) for r in rows]


def list_for_phase(tx: Tx, run_id: int, phase: int) -> list[Step]:
    rows = tx.all(
        f"SELECT {COLUMNS} FROM event_run_steps WHERE run_id = %s AND phase = %s ORDER BY seq",  # noqa: S608 — COLUMNS is a constant; ids are parameters
        (run_id, phase),
    )
    return [Step.from_row(r) for r in rows]


# guard: open-steps-pass-a-parked-or-leased-step
_OPEN_IN_PHASE = f"run_id = %s AND phase = %s AND status IN ({StepSQL.OPEN})"


def open_steps(tx: Tx, run_id: int, phase: int, limit: int = 1000) -> list[Step]:
    """The phase's pending and running steps, lowest seq first: next-open-step, as a list.

    Steps within a phase are strictly serial, so the first of these is the only
    one the runner may work on; a running or parked first step means the phase
    is occupied, not finished. The runner reads the list once per phase and
    works down it, because its claim re-checks everything in its WHERE clause.
    """
    rows = tx.all(
        f"SELECT {COLUMNS} FROM event_run_steps WHERE {_OPEN_IN_PHASE} ORDER BY seq LIMIT %s",  # noqa: S608 — COLUMNS and the WHERE are constants; ids and limit are parameters
        (run_id, phase, limit),
    )
    return [Step.from_row(r) for r in rows]


def open_steps_and_close_due(tx: Tx, run_id: int, phase: int, now: datetime, limit: int) -> tuple[list[Step], bool]:
    """`open_steps`, and whether the phase must be closed now (`phases.CLOSE_DUE`), in one statement: the
    phase's row is read once (a constant subquery) and carried on every step row. No open step: False
    (a drained phase's row is read, locked, when it is left)."""
    rows = tx.all(
        f"""SELECT {COLUMNS}, (SELECT {phases.CLOSE_DUE} FROM event_run_phases p
                                WHERE p.run_id = %s AND p.number = %s) AS close_due
              FROM event_run_steps WHERE {_OPEN_IN_PHASE} ORDER BY seq LIMIT %s""",  # noqa: S608 — COLUMNS, the status list and the phase's fragment are constants; values are parameters
        (now, run_id, phase, run_id, phase, limit),
    )
    due = bool(rows and rows[0].pop("close_due"))
    for row in rows:
        row.pop("close_due", None)
    return [Step.from_row(r) for r in rows], due


def last_started_seq(tx: Tx, run_id: int, phase: int | None) -> int | None:
    """The furthest seq the phase reached (see `_reached`), or None (also for a run with no phase yet).

    Only the step a paused phase is stopped at may be retried: the console's offer
    and the 409's wording use this; `requeue_where_stopped` holds the same rule in SQL.
    "The lowest unsettled step" would be wrong: a failed-and-skipped step lies
    behind the runner's cursor, and re-queueing it would strand it pending.
    """
    if phase is None:
        return None
    # guard: cursor-counts-pending-steps
    row = tx.one(
        f"""SELECT MAX(s.seq) AS seq FROM event_run_steps s
             WHERE s.run_id = %s AND s.phase = %s AND {reached('s')}""",  # noqa: S608 — _reached renders constant SQL around a fixed alias; ids are parameters
        (run_id, phase),
    )
    return None if row is None or row["seq"] is None else int(row["seq"])


def status_counts(tx: Tx, run_id: int) -> dict[str, int]:
    rows = tx.all(
        "SELECT status, COUNT(*) AS n FROM event_run_steps WHERE run_id = %s GROUP BY status",
        (run_id,),
    )
    return {r["status"]: int(r["n"]) for r in rows}


def holding_phase(tx: Tx, run_id: int, phase: int, now: datetime) -> Step | None:
    """The first step of a phase in flight under a live lease, or parked in doubt (what refuses an advance),
    or None. One range of the phase's steps (the position index, forced: the lease index looks cheaper to the
    optimiser and costs a sort)."""
    row = tx.one(
        f"""SELECT {COLUMNS} FROM event_run_steps s FORCE INDEX (event_run_steps_position)
             WHERE s.run_id = %s AND s.phase = %s
               AND ((s.status = {StepSQL.RUNNING} AND s.claim_expires_at >= %s) OR {waiting.parked_in_doubt('s')})
             ORDER BY s.seq LIMIT 1""",  # noqa: S608 — COLUMNS and the fragments are constants; values are parameters
        (run_id, phase, now),
    )
    return None if row is None else Step.from_row(row)


def parked_in_doubt_of(tx: Tx, run_id: int) -> Step | None:
    """The run's step parked in doubt, if it has one (a phase's head: at most one)."""
    row = tx.one(f"SELECT {COLUMNS} FROM event_run_steps s WHERE s.run_id = %s AND {waiting.parked_in_doubt('s')} LIMIT 1",  # noqa: S608 — COLUMNS and the fragment are constants; the id is a parameter
                 (run_id,))
    return None if row is None else Step.from_row(row)


def phase_ended(tx: Tx, run_id: int, phase: int, now: datetime) -> bool:
    """Whether the phase is over (`phases.OVER`): a failure there no longer applies its on_failure."""
    return tx.one(
        f"SELECT 1 AS ended FROM event_run_phases p WHERE p.run_id = %s AND p.number = %s AND {phases.OVER}",  # noqa: S608 — the phase's fragment is a constant; values are parameters
        (run_id, phase, now),
    ) is not None
