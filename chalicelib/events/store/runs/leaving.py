"""event_runs moving on past a phase: the runner leaving a drained phase, a person's advance meeting a
held phase's condition.

The invariant: a phase is left only by the UPDATE that finds it over in its own
WHERE (no step of it open, its condition, if any, met, the run still at it), and
that same statement drains its row and opens the next one's; a condition is met
only by the advance's guarded UPDATE of the run's and the phase's rows together,
never while a step of it is in flight or parked in doubt.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ....db import Tx
from ... import waiting
from ...lifecycle import PhaseSQL, RunSQL, RunStatus, StepSQL
from .. import resources
from .moves import move


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
    # The finished phase's row (joined by `move` as `drained`): none, or no condition, or its condition met.
    # guard: a-held-phase-is-left
    guard += " AND (drained.run_id IS NULL OR drained.`condition` IS NULL OR drained.condition_met)"
    args += [run_id, finished_phase]
    if cleanup_target is not None:
        guard += f" AND {resources.to_revert('event_runs.id')}"
    return move(tx, run_id, [from_status], to, now, guard, args, current_phase=next_phase,
                phases=(finished_phase, next_phase), cleanup_target=cleanup_target)



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
