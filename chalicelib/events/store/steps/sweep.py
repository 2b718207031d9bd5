"""event_run_steps, the sweep: steps whose lease lapsed are taken back, in a transaction the caller owns.

The invariant: a NULL lease (a parked step) is never stale, and `attempts` is
never touched by a sweep (a sweep that reset it once made the attempt ceiling
unreachable and a row cycle for ever); the ceiling counts the attempts of the
step's allowance (`CEILING`: those since a person last retried or resent it);
each step is taken back by one of four guarded moves whose guards are
disjoint, so their order cannot matter, and each is in doubt afterwards
(nobody knows whether its attempt reached the game).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ....db import Tx, placeholders
from ... import waiting
from ...lifecycle import ABANDON, GIVE_UP, PARK_IN_DOUBT, REQUEUE, RunSQL, StepMove, StepSQL
from ...model import Step, is_whole_number, kept_note
from .. import phases, understood
from .claimer import PHASE_ENDED, RUN_ENDED
from .fragments import COLUMNS
from .write import statuses_of, write

GAVE_UP = "gave up after repeated interruptions"
# The attempt count at which the step's allowance is spent: the ceiling counts only the attempts since a
# person last retried or resent it (written as a sum: the unsigned columns are never subtracted).
# guard: the-sweep-counts-attempts-before-the-retry
CEILING = "attempts_allowed_from + %s"


@dataclass(frozen=True)
class Reclaimed:
    abandoned: list[Step]  # now cancelled: their run ended (or their phase is over) while they were leased
    gave_up: list[Step]  # now failed: their on_failure must be applied by the caller
    requeued: list[Step]  # back to pending, attempts untouched
    parked: list[Step] = field(default_factory=list)  # at the ceiling under on_doubt park: parked for a decision


def reclaim_stale(tx: Tx, now: datetime, max_attempts: int, limit: int = 500, *,
                  escalate_after_seconds: int = 0) -> Reclaimed:
    """Take back steps whose lease expired, in a transaction the caller owns.

    A step whose run ended while it was leased (cancel leaves a leased step
    alone) is cancelled: back in pending it would wait for ever in a finished
    run; so is a step whose phase is over (its `last_error` says which). Of
    the rest, a step that used its last attempt becomes failed — or, under
    `on_doubt: park`, is parked for a person's decision (escalated
    `escalate_after_seconds` from now on its run's clock, divided by a dry run's
    speed; 0: never) — and the others go back to pending; the requeue
    also requires attempts below the ceiling (both count the step's allowance:
    the attempts since a person last retried or resent it) and a live run, so the order cannot
    matter. A NULL lease (a parked step) is never stale, and attempts are never
    touched. Every step taken back is in doubt (`in_doubt`, in the same
    statements): nobody knows whether the attempt whose lease expired reached
    the game. A step of a run whose mode or status this version does not know
    (a newer version's) is never taken back.
    """
    if not is_whole_number(max_attempts, at_least=1):
        raise ValueError(f"max_attempts must be a positive whole number, got {max_attempts!r}")
    # Its status, running, is each move's source.
    # guard: sweep-at-the-lease-expiry-instant
    stale = """claim_expires_at IS NOT NULL AND claim_expires_at < %s"""
    # Its run's mode and status are ones this version knows: a newer version's run is left as it stands.
    # guard: the-sweep-takes-back-a-step-of-a-run-it-does-not-understand
    stale += f" AND EXISTS (SELECT 1 FROM event_runs k WHERE k.id = event_run_steps.run_id AND {understood.run_row('k')})"  # noqa: S608 — the fragment is a constant
    # Over for this step: its run ended, or a cleanup began and it is not one of the reverts.
    # guard: the-sweep-requeues-a-step-left-behind-by-a-cleanup
    run_over = f"""EXISTS (SELECT 1 FROM event_runs r WHERE r.id = run_id
                              AND ((r.status IN ({RunSQL.TERMINAL}) AND NOT {waiting.late_revert("r", "event_run_steps")})
                                   OR (r.cleanup_target IS NOT NULL AND event_run_steps.resource_id IS NULL)))"""  # noqa: S608 — the status list is rendered from RunStatus at import
    # Its phase is over (a signal, an advance, its deadline): a step of it never goes back to pending.
    phase_over = f"""EXISTS (SELECT 1 FROM event_run_phases p WHERE p.run_id = event_run_steps.run_id
                                AND p.number = event_run_steps.phase AND {phases.OVER})"""  # noqa: S608 — the phase's fragment is a constant
    parks = f"on_doubt = {StepSQL.PARKS_IN_DOUBT}"
    abandoned = _sweep(
        tx, ABANDON,
        # guard: sweep-abandons-steps-of-live-runs
        f"{stale} AND ({run_over} OR {phase_over})",
        (now, now),
        f"last_error = IF({run_over}, %s, %s)",
        (RUN_ENDED, PHASE_ENDED),
        limit, now,
    )
    gave_up = _sweep(
        tx, GIVE_UP,
        # guard: sweep-gives-up-below-the-ceiling
        f"{stale} AND attempts >= {CEILING} AND NOT {parks} AND NOT {run_over} AND NOT {phase_over}",
        (now, max_attempts, now),
        "last_error = %s",
        (GAVE_UP,),
        limit, now,
    )
    # The decision's escalation on its run's clock: the deployment's delay (µs), divided by a dry run's speed.
    # guard: a-dry-runs-swept-decision-escalates-after-the-live-delay
    escalate_at = """IF(%s = 0, NULL, %s + INTERVAL ROUND(%s / (SELECT k.speed FROM event_runs k
                                                                 WHERE k.id = event_run_steps.run_id)) MICROSECOND)"""
    delay = escalate_after_seconds * 1_000_000
    parked = _sweep(
        tx, PARK_IN_DOUBT,
        f"{stale} AND attempts >= {CEILING} AND {parks} AND NOT {run_over} AND NOT {phase_over}",
        (now, max_attempts, now),
        f"""park_reason = {StepSQL.DOUBT}, last_error = %s, remind_at = NULL, reminders_sent = 0,
            escalate_at = {escalate_at}, escalation_tries = 0, times_out_at = NULL""",
        (kept_note(f"{GAVE_UP}: waits for a decision"), delay, now, delay),
        limit,
    )
    if parked:
        _wait_for_decisions(tx, sorted({step.run_id for step in parked}))
    requeued = _sweep(
        tx, REQUEUE,
        # guard: sweep-requeues
        f"{stale} AND attempts < {CEILING} AND NOT {run_over} AND NOT {phase_over}",
        (now, max_attempts, now),
        "",
        (),
        limit,
    )
    return Reclaimed(abandoned=abandoned, gave_up=gave_up, requeued=requeued, parked=parked)


def _wait_for_decisions(tx: Tx, run_ids: Sequence[int]) -> None:
    """The runs of steps the sweep parked in doubt wait for a decision, if they work that step's phase (the
    sweep's own UPDATE is of the steps alone: their runs' `waiting_for` is this statement's, rarely needed)."""
    tx.execute(
        f"""UPDATE event_runs r SET r.waiting_for = {waiting.from_rows()}
             WHERE r.id IN ({placeholders(len(run_ids))}) AND r.status IN ({RunSQL.WORKING})""",  # noqa: S608 — the fragments are constants; ids are parameters
        tuple(run_ids),
    )


def _sweep(tx: Tx, move: StepMove, where: str, where_args: tuple[Any, ...], sets: str, set_args: tuple[Any, ...],
           limit: int, now: datetime | None = None) -> list[Step]:
    # Lock the candidates (skipping rows another sweeper holds), then change exactly
    # those under the same guard, then read them back for the caller's log rows.
    ids = [
        r["id"]
        for r in tx.all(
            # guard: sweep-waits-for-another-sweepers-rows
            f"SELECT id FROM event_run_steps WHERE {statuses_of(move)} AND {where} LIMIT %s FOR UPDATE SKIP LOCKED",  # noqa: S608 — the move's statuses and reclaim's constant clauses; values are parameters
            (*where_args, limit),
        )
    ]
    if not ids:
        return []
    marks = placeholders(len(ids))
    write(
        tx, move,
        # guard: sweep-update-unguarded
        f"id IN ({marks}) AND {where}",
        (*ids, *where_args), sets=sets, set_args=set_args, now=now,
    )
    return [
        Step.from_row(r)
        for r in tx.all(f"SELECT {COLUMNS} FROM event_run_steps WHERE id IN ({marks}) ORDER BY id", ids)  # noqa: S608 — COLUMNS is a constant; %s placeholders counted from len(ids)
    ]
