"""event_run_steps: every statement, each guarded by its own WHERE clause.

Two rules govern the writes here:

1. `attempts` is raised by `claim` and by nothing else; no sweep ever lowers it
   (a sweep that reset it once made the attempt ceiling unreachable and a row
   cycle for ever). Only `requeue`, a named person's decision, sets it to 0.
2. A *parked* step is `running` with a NULL lease: in flight, held by nobody.
   Nothing treats a NULL lease as stale, so a cue can wait overnight. Its
   `park_reason` says for what: a cue, or a decision on a step in doubt
   (`in_doubt`: its last attempt has no known outcome), which holds its phase.

The claimer's later writes (park, reschedule, finish) are fenced on the claim's
token and attempt: a process that outlived its lease, whose step was reclaimed
and claimed again elsewhere, changes nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ...db import Tx, placeholders
from .. import waiting
from ..lifecycle import RUNNER_FINISHES, ResourceSQL, RunSQL, StepSQL
from ..model import (
    Attention,
    Claim,
    OnDoubt,
    OnFailure,
    ParkReason,
    Step,
    StepSpec,
    StepStatus,
    is_whole_number,
    kept_note,
)
from . import phases

COLUMNS = (
    "id, run_id, phase, seq, action_id, params, action_version, on_failure, idempotency_key,"
    " status, attempts, claimed_by, claim_expires_at, due_at, started_at, finished_at, last_error,"
    " acknowledged_by, acknowledged_at, remind_at, reminders_sent, escalate_at, escalation_tries, times_out_at, retries, resource_id,"
    " in_doubt, on_doubt, park_reason"
)
GAVE_UP = "gave up after repeated interruptions"
RUN_ENDED = "its run ended while this step was in flight"
PHASE_ENDED = "its phase ended while this step was in flight"


def claim_token() -> str:
    """128 random bits as 32 hex digits: what marks one claim (of a step or a run lease) as its taker's."""
    return os.urandom(16).hex()


def _check_seconds(seconds: float, what: str) -> None:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise ValueError(f"{what} must be a non-negative number of seconds, got {seconds!r}")


# ── reads ──────────────────────────────────────────────────────────────────
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


def _reached(alias: str) -> str:
    """SQL: the runner got to this step. A step a person skipped before it ever
    started was not reached: the runner's cursor stays where it was."""
    # guard: cursor-moved-by-a-step-skipped-before-it-started
    return f"{alias}.status <> {StepSQL.PENDING} AND NOT ({alias}.status = {StepSQL.SKIPPED} AND {alias}.started_at IS NULL)"


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
             WHERE s.run_id = %s AND s.phase = %s AND {_reached('s')}""",  # noqa: S608 — _reached renders constant SQL around a fixed alias; ids are parameters
        (run_id, phase),
    )
    return None if row is None or row["seq"] is None else int(row["seq"])


def status_counts(tx: Tx, run_id: int) -> dict[str, int]:
    rows = tx.all(
        "SELECT status, COUNT(*) AS n FROM event_run_steps WHERE run_id = %s GROUP BY status",
        (run_id,),
    )
    return {r["status"]: int(r["n"]) for r in rows}


# ── materialising ──────────────────────────────────────────────────────────
def materialise_phase(tx: Tx, run_id: int, phase: int, specs: Sequence[StepSpec]) -> list[Step]:
    """Insert a phase's steps in authored order; return the phase as it stands.

    Three statements whatever the number of steps: one multi-row INSERT IGNORE
    against UNIQUE (run_id, phase, seq), so a tick that overran into the next
    cannot double-materialise; one UPDATE that stamps the idempotency key of
    every new row from its own id, computed in SQL (sent ahead of the SELECT:
    no round trip of its own); one SELECT. The key is
    stamped only where it is still empty, so a key a dispatch has already sent
    is never overwritten. When the INSERT wrote every row, each row is as it
    wrote it and the SELECT reads back only the ids and keys the server chose
    (`Step.new`); otherwise it reads the phase whole.
    """
    if not specs:
        raise ValueError("a phase needs at least one step")
    rows = []
    for seq, spec in enumerate(specs):
        if not isinstance(spec.params, dict):
            raise ValueError(f"step {seq}: params must be an object, got {type(spec.params).__name__}")
        on_failure, on_doubt = OnFailure(spec.on_failure).value, OnDoubt(spec.on_doubt).value
        rows.append(
            (run_id, phase, seq, spec.action_id, json.dumps(spec.params), int(spec.action_version), on_failure,
             on_doubt)
        )
    values = placeholders(len(rows), "(%s, %s, %s, %s, %s, %s, %s, %s)")
    inserted = tx.execute(
        # guard: materialise-twice-inserts-twice
        f"""INSERT IGNORE INTO event_run_steps
              (run_id, phase, seq, action_id, params, action_version, on_failure, on_doubt)
            VALUES {values}""",  # noqa: S608 — only %s placeholders, counted from len(rows); every value is a parameter
        [value for row in rows for value in row],
    )
    # guard: materialise-restamps-keys
    tx.send_ahead(
        """UPDATE event_run_steps
              SET idempotency_key = LEFT(SHA2(CONCAT(run_id, '|', id), 256), 40)
            WHERE run_id = %s AND phase = %s AND idempotency_key = ''""",
        (run_id, phase),
    )
    if inserted != len(specs):
        return list_for_phase(tx, run_id, phase)
    keys = tx.all(
        "SELECT id, idempotency_key FROM event_run_steps WHERE run_id = %s AND phase = %s ORDER BY seq",
        (run_id, phase),
    )
    return [
        Step.new(key["id"], run_id, phase, seq, spec, key["idempotency_key"])
        for seq, (spec, key) in enumerate(zip(specs, keys, strict=True))
    ]


# ── the claimer's statements ───────────────────────────────────────────────
def claim(tx: Tx, step: Step, now: datetime, lease_seconds: float) -> Claim | None:
    """`pending -> running` with a fresh lease and token; None if the claim lost.

    One statement decides everything: the step is still pending at the attempt
    count the caller saw, it is due, its run is still runnable (so a pause
    pressed mid-tick stops the next claim), and its phase is not ending (its
    condition met, or its deadline passed: the phase row, joined rather than
    asked in a subquery, which P1 measured at a tenth of a step's time, must
    pass `phases.TAKES_CLAIMS`), and under a cleanup only a revert step is taken
    (`_NOT_LEFT_BEHIND`). `started_at` keeps the first attempt.
    """
    _check_seconds(lease_seconds, "lease")
    token = claim_token()
    # guard: step-claim
    # guard: step-claim-not
    # guard: step-claim-without-a-key
    # guard: step-claim-in-a-run-not-runnable
    # guard: claim-in-an-ending-phase
    changed = tx.execute(
        f"""UPDATE event_run_steps s JOIN event_runs r ON r.id = s.run_id
                   LEFT JOIN event_run_phases p ON p.run_id = s.run_id AND p.number = s.phase
               SET s.status = {StepSQL.RUNNING}, s.attempts = s.attempts + 1,
                   s.claimed_by = %s, s.claim_expires_at = %s,
                   s.started_at = COALESCE(s.started_at, %s)
             WHERE s.id = %s AND s.status = {StepSQL.PENDING} AND s.attempts = %s
               AND (s.due_at IS NULL OR s.due_at <= %s)
               AND s.idempotency_key <> ''
               AND r.status IN ({RunSQL.RUNNABLE}) AND {_NOT_LEFT_BEHIND}
               AND (p.run_id IS NULL OR {phases.TAKES_CLAIMS})""",  # noqa: S608 — the status lists and the phase's fragment are constants; values are parameters
        (token, now + timedelta(seconds=lease_seconds), now, step.id, step.attempts, now, now),
    )
    return Claim(step.id, token, step.attempts + 1) if changed == 1 else None


# A run under a cleanup (its cleanup_target set) works its revert steps only: any other step of it is
# over once its answer is in, never claimed, re-queued or parked again (`r` the run, `s` the step).
_NOT_LEFT_BEHIND = "(r.cleanup_target IS NULL OR s.resource_id IS NOT NULL)"
# guard: a-step-in-flight-at-a-cleanup-is-requeued-by-its-answer
_RUN_OVER_FOR_S = f"(r.status IN ({RunSQL.TERMINAL}) OR NOT {_NOT_LEFT_BEHIND})"

# guard: fence-without
_FENCE = f"id = %s AND status = {StepSQL.RUNNING} AND claimed_by = %s AND attempts = %s"
# guard: cancel-if-run-over-without-the-token
_FENCE_OF_S = f"s.id = %s AND s.status = {StepSQL.RUNNING} AND s.claimed_by = %s AND s.attempts = %s"  # joined as `s`


def park(tx: Tx, claim: Claim, note: str | None = None, attention: Attention | None = None,
         reason: ParkReason = ParkReason.CUE) -> bool:
    """Leave the step running but held by nobody (lease NULL): a person finishes it. Its run, working at its
    phase, waits for this cue (or, parked in doubt, for a decision) from now (`waiting_for`, in the same
    statement; a paused run waits for its resume). The park's timers (`attention`) are written by the same
    statement, its count of reminders from nought; a step parked in doubt is in doubt (`in_doubt`)."""
    timers = attention or Attention()
    doubt = ParkReason(reason) is ParkReason.DOUBT
    waits_for = waiting.DECISION if doubt else waiting.CUE
    # guard: park-unfenced
    # guard: a-parked-cue-is-not-waited-for
    # guard: a-cue-parked-in-a-paused-run-hides-its-resume
    return (
        tx.execute(
            f"""UPDATE event_run_steps s JOIN event_runs r ON r.id = s.run_id
                   SET s.claim_expires_at = NULL, s.claimed_by = NULL, s.last_error = %s,
                       s.remind_at = %s, s.reminders_sent = 0, s.escalate_at = %s, s.escalation_tries = 0,
                       s.times_out_at = %s, s.park_reason = %s, s.in_doubt = %s,
                       r.waiting_for = IF(r.status IN ({RunSQL.WORKING}) AND r.current_phase = s.phase,
                                          {waits_for}, r.waiting_for)
                 WHERE {_FENCE_OF_S}""",  # noqa: S608 — _FENCE_OF_S and the renderings are constants; values are parameters
            (kept_note(note), timers.remind_at, timers.escalate_at, timers.times_out_at, ParkReason(reason).value,
             doubt, claim.step_id, claim.token, claim.attempt),
        )
        >= 1
    )


def reschedule(tx: Tx, claim: Claim, due_at: datetime, error: str | None = None, *, in_doubt: bool = False) -> bool:
    """Back to pending for a later attempt; `attempts` stays as the claim left it, and `in_doubt` says
    whether the attempt it ends has no known outcome (written here: no statement of its own).

    The caller's backoff is flat: due_at is also the event's own clock, and a
    doubling backoff would push a step far past the moment it was about.
    """
    # guard: reschedule-unfenced
    # guard: a-retry-forgets-its-doubt
    return (
        tx.execute(
            f"""UPDATE event_run_steps
                   SET status = {StepSQL.PENDING}, due_at = %s, claimed_by = NULL,
                       claim_expires_at = NULL, last_error = %s, in_doubt = %s
                 WHERE {_FENCE}""",  # noqa: S608 — _FENCE is a constant; values are parameters
            (due_at, kept_note(error), in_doubt, claim.step_id, claim.token, claim.attempt),
        )
        == 1
    )


def finish(tx: Tx, claim: Claim, status: StepStatus, now: datetime, error: str | None = None, *,
           in_doubt: bool = False) -> bool:
    """A terminal outcome of the claimer's own attempt: done, failed or refused (`in_doubt`: a give-up
    whose last attempt has no known outcome)."""
    status = StepStatus(status)
    if status not in RUNNER_FINISHES:
        raise ValueError(f"a claimer finishes a step as done, failed or refused, not {status.value}")
    # guard: finish-unfenced
    # guard: a-give-up-forgets-its-doubt
    return (
        tx.execute(
            f"""UPDATE event_run_steps
                   SET status = %s, last_error = %s, finished_at = %s,
                       claimed_by = NULL, claim_expires_at = NULL, in_doubt = %s
                 WHERE {_FENCE}""",  # noqa: S608 — _FENCE is a constant; the status and values are parameters
            (status.value, kept_note(error), now, in_doubt, claim.step_id, claim.token, claim.attempt),
        )
        == 1
    )


def cancel_if_over(tx: Tx, claim: Claim, now: datetime, *, in_doubt: bool = False) -> str | None:
    """The claimer's step, cancelled instead of parked or re-queued when its run ended meanwhile, or its
    phase (a signal, a person's advance, its deadline: `phases.ENDING`), or a cleanup began (a step that is
    not a revert is over once answered); the cause written, or None.

    A cancel leaves a leased step alone (nothing recalls a command already sent);
    this is where such a step lands once its answer is in, rather than waiting
    pending or parked for ever in a finished run or a phase nothing of which runs
    again. One statement on the way every park and retry takes; the cause is read
    back only when it took.
    """
    # guard: cancel-if-run-over-in-a-live-run
    took = tx.execute(
        f"""UPDATE event_run_steps s JOIN event_runs r ON r.id = s.run_id
                   LEFT JOIN event_run_phases p ON p.run_id = s.run_id AND p.number = s.phase
               SET s.status = {StepSQL.CANCELLED}, s.finished_at = %s,
                   s.last_error = IF({_RUN_OVER_FOR_S}, %s, %s),
                   s.claimed_by = NULL, s.claim_expires_at = NULL, s.in_doubt = %s
             WHERE {_FENCE_OF_S} AND ({_RUN_OVER_FOR_S} OR {phases.ENDING})""",  # noqa: S608 — the status lists and the phase's fragment are constants; values are parameters
        (now, RUN_ENDED, PHASE_ENDED, in_doubt, claim.step_id, claim.token, claim.attempt, now),
    )
    if took != 1:
        return None
    return str(tx.scalar("SELECT last_error FROM event_run_steps WHERE id = %s", (claim.step_id,)))


def phase_ended(tx: Tx, run_id: int, phase: int, now: datetime) -> bool:
    """Whether the phase is ending or ended (`phases.ENDING`): a failure there no longer applies its on_failure."""
    return tx.one(
        f"SELECT 1 AS ended FROM event_run_phases p WHERE p.run_id = %s AND p.number = %s AND {phases.ENDING}",  # noqa: S608 — the phase's fragment is a constant; values are parameters
        (run_id, phase, now),
    ) is not None


def hold_next(tx: Tx, run_id: int, phase: int, after_seq: int, due_at: datetime) -> bool:
    """Delay the next pending step of the phase until `due_at` (what core.wait does).

    Only ever moves a due_at later, so a re-dispatch of a wait whose answer was
    lost cannot push the following step out a second time. The step is picked
    first and the due_at guard applied to it: guarding inside the pick (as the
    original's ORDER BY … LIMIT 1 did) makes a second dispatch skip the held
    step and delay the one after it instead.
    """
    # guard: hold-next-moves-due-at-earlier
    # guard: hold-next-holds-a-settled-step
    # guard: hold-next-picks-past-a-skipped-step
    return (
        tx.execute(
            f"""UPDATE event_run_steps SET due_at = %s
                WHERE run_id = %s AND phase = %s AND status = {StepSQL.PENDING}
                  AND (due_at IS NULL OR due_at < %s)
                  AND seq = (SELECT seq FROM (
                        SELECT MIN(seq) AS seq FROM event_run_steps
                         WHERE run_id = %s AND phase = %s AND seq > %s AND status = {StepSQL.PENDING}
                      ) AS next_pending)""",  # noqa: S608 — the status literals are lifecycle's renderings (constants); values are parameters
            (due_at, run_id, phase, due_at, run_id, phase, after_seq),
        )
        == 1
    )


# ── the sweep ──────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Reclaimed:
    abandoned: list[Step]  # now cancelled: their run ended (or their phase is ending) while they were leased
    gave_up: list[Step]  # now failed: their on_failure must be applied by the caller
    requeued: list[Step]  # back to pending, attempts untouched
    parked: list[Step] = field(default_factory=list)  # at the ceiling under on_doubt park: parked for a decision


def reclaim_stale(tx: Tx, now: datetime, max_attempts: int, limit: int = 500, *,
                  escalate_at: datetime | None = None) -> Reclaimed:
    """Take back steps whose lease expired, in a transaction the caller owns.

    A step whose run ended while it was leased (cancel leaves a leased step
    alone) is cancelled: back in pending it would wait for ever in a finished
    run; so is a step whose phase is ending (its `last_error` says which). Of
    the rest, a step that used its last attempt becomes failed — or, under
    `on_doubt: park`, is parked for a person's decision (`escalate_at`: its
    escalation, None for none) — and the others go back to pending; the requeue
    also requires attempts below the ceiling and a live run, so the order cannot
    matter. A NULL lease (a parked step) is never stale, and attempts are never
    touched. Every step taken back is in doubt (`in_doubt`, in the same
    statements): nobody knows whether the attempt whose lease expired reached
    the game.
    """
    if not is_whole_number(max_attempts, at_least=1):
        raise ValueError(f"max_attempts must be a positive whole number, got {max_attempts!r}")
    # guard: sweep-at-the-lease-expiry-instant
    stale = f"""status = {StepSQL.RUNNING} AND claim_expires_at IS NOT NULL AND claim_expires_at < %s"""
    # Over for this step: its run ended, or a cleanup began and it is not one of the reverts.
    # guard: the-sweep-requeues-a-step-left-behind-by-a-cleanup
    run_over = f"""EXISTS (SELECT 1 FROM event_runs r WHERE r.id = run_id AND (r.status IN ({RunSQL.TERMINAL})
                              OR (r.cleanup_target IS NOT NULL AND event_run_steps.resource_id IS NULL)))"""  # noqa: S608 — the status list is rendered from RunStatus at import
    # Its phase is ending (a signal, an advance, its deadline): a step of it never goes back to pending.
    phase_over = f"""EXISTS (SELECT 1 FROM event_run_phases p WHERE p.run_id = event_run_steps.run_id
                                AND p.number = event_run_steps.phase AND {phases.ENDING})"""  # noqa: S608 — the phase's fragment is a constant
    parks = f"on_doubt = '{OnDoubt.PARK.value}'"
    abandoned = _sweep(
        tx,
        # guard: sweep-abandons-steps-of-live-runs
        f"{stale} AND ({run_over} OR {phase_over})",
        (now, now),
        f"""status = {StepSQL.CANCELLED}, finished_at = %s, last_error = IF({run_over}, %s, %s),
            claimed_by = NULL, claim_expires_at = NULL, in_doubt = TRUE""",
        (now, RUN_ENDED, PHASE_ENDED),
        limit,
    )
    gave_up = _sweep(
        tx,
        # guard: sweep-gives-up-below-the-ceiling
        f"{stale} AND attempts >= %s AND NOT {parks} AND NOT {run_over} AND NOT {phase_over}",
        (now, max_attempts, now),
        f"status = {StepSQL.FAILED}, finished_at = %s, last_error = %s, claimed_by = NULL, claim_expires_at = NULL,"
        " in_doubt = TRUE",
        (now, GAVE_UP),
        limit,
    )
    parked = _sweep(
        tx,
        f"{stale} AND attempts >= %s AND {parks} AND NOT {run_over} AND NOT {phase_over}",
        (now, max_attempts, now),
        f"""claimed_by = NULL, claim_expires_at = NULL, in_doubt = TRUE, park_reason = {waiting.DOUBT},
            last_error = %s, remind_at = NULL, reminders_sent = 0, escalate_at = %s, escalation_tries = 0,
            times_out_at = NULL""",
        (kept_note(f"{GAVE_UP}: waits for a decision"), escalate_at),
        limit,
    )
    if parked:
        _wait_for_decisions(tx, sorted({step.run_id for step in parked}))
    requeued = _sweep(
        tx,
        # guard: sweep-requeues
        f"{stale} AND attempts < %s AND NOT {run_over} AND NOT {phase_over}",
        (now, max_attempts, now),
        # guard: the-sweep-requeues-a-step-without-its-doubt
        f"status = {StepSQL.PENDING}, claimed_by = NULL, claim_expires_at = NULL, in_doubt = TRUE",
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


def _sweep(tx: Tx, where: str, where_args: tuple[Any, ...], assignments: str, set_args: tuple[Any, ...], limit: int) -> list[Step]:
    # Lock the candidates (skipping rows another sweeper holds), then change exactly
    # those under the same guard, then read them back for the caller's log rows.
    ids = [
        r["id"]
        for r in tx.all(
            # guard: sweep-waits-for-another-sweepers-rows
            f"SELECT id FROM event_run_steps WHERE {where} LIMIT %s FOR UPDATE SKIP LOCKED",  # noqa: S608 — where is one of reclaim's constant clauses; values are parameters
            (*where_args, limit),
        )
    ]
    if not ids:
        return []
    marks = placeholders(len(ids))
    tx.execute(
        # guard: sweep-update-unguarded
        f"UPDATE event_run_steps SET {assignments} WHERE id IN ({marks}) AND {where}",  # noqa: S608 — constant clauses and %s placeholders counted from len(ids); values are parameters
        (*set_args, *ids, *where_args),
    )
    return [
        Step.from_row(r)
        for r in tx.all(f"SELECT {COLUMNS} FROM event_run_steps WHERE id IN ({marks}) ORDER BY id", ids)  # noqa: S608 — COLUMNS is a constant; %s placeholders counted from len(ids)
    ]


# ── the run's and the people's statements ─────────────────────────────────
def cancel_pending(tx: Tx, run_id: int, now: datetime) -> int:
    """Cancel the steps of a run that have not started (abort_run)."""
    # guard: cancel-pending-cancels-settled-steps
    return tx.execute(
        f"""UPDATE event_run_steps SET status = {StepSQL.CANCELLED}, finished_at = %s
            WHERE run_id = %s AND status = {StepSQL.PENDING}""",  # noqa: S608 — the status literals are lifecycle's renderings (constants); values are parameters
        (now, run_id),
    )


def cancel_open(tx: Tx, run_id: int, now: datetime) -> int:
    """Cancel pending and parked steps of a cancelled run.

    A step with a live lease is left alone: something is dispatching it, and
    nothing can recall a command already sent. A parked cue is not a sent
    command, and leaving it running would claim a cancelled run still waits.
    """
    # guard: cancel-open-cancels-a-leased-step
    return tx.execute(
        f"""UPDATE event_run_steps SET status = {StepSQL.CANCELLED}, finished_at = %s, claimed_by = NULL
            WHERE run_id = %s
              AND (status = {StepSQL.PENDING} OR (status = {StepSQL.RUNNING} AND claim_expires_at IS NULL))""",  # noqa: S608 — the status literals are lifecycle's renderings (constants); values are parameters
        (now, run_id),
    )


# The steps a phase's end closes: pending, parked, or leased by a lease that lapsed (the sweep would bring it back).
# Not a step parked in doubt: it holds its phase until a person decides whether the game applied it.
# guard: advance-leaves-a-lapsed-step-to-come-back
# guard: a-phase-close-cancels-a-step-parked-in-doubt
_CLOSED_WITH_THE_PHASE = f"""run_id = %s AND phase = %s
               AND (status = {StepSQL.PENDING} OR (status = {StepSQL.RUNNING}
                    AND (claim_expires_at IS NULL OR claim_expires_at < %s)))
               AND NOT {waiting.parked_in_doubt('event_run_steps')}"""


def skip_phase_for_advance(tx: Tx, run_id: int, phase: int, now: datetime, reason: str | None) -> list[Step]:
    """The advance control's second statement: the phase's pending and parked steps are skipped with the
    person's reason (and a step whose lease lapsed: its late answer is fenced out, never re-queued); the
    steps as they were, for their log rows. A step in flight under a live lease is never touched: the
    advance's own guard refused while one was."""
    return _close_open_steps(tx, run_id, phase, now, StepSQL.SKIPPED, reason)


def cancel_phase(tx: Tx, run_id: int, phase: int, now: datetime, cause: str) -> list[Step]:
    """Closing a phase (a signal, `after`, a timeout): its pending and parked steps are cancelled with the
    cause; a step in flight under a live lease is left to its answer (`cancel_if_phase_ended`)."""
    return _close_open_steps(tx, run_id, phase, now, StepSQL.CANCELLED, cause)


def _close_open_steps(tx: Tx, run_id: int, phase: int, now: datetime, to: str, note: str | None) -> list[Step]:
    """Read locked, then updated with the same WHERE: a step that moved in between is left."""
    rows = tx.all(f"SELECT {COLUMNS} FROM event_run_steps WHERE {_CLOSED_WITH_THE_PHASE} ORDER BY seq FOR UPDATE",  # noqa: S608 — COLUMNS and the WHERE are constants; values are parameters
                  (run_id, phase, now))
    if not rows:
        return []
    found = [Step.from_row(r) for r in rows]
    tx.execute(
        f"""UPDATE event_run_steps SET status = {to}, finished_at = %s, claimed_by = NULL,
                   claim_expires_at = NULL, last_error = %s
             WHERE id IN ({placeholders(len(found))}) AND {_CLOSED_WITH_THE_PHASE}""",  # noqa: S608 — `to` is a lifecycle rendering; the marks and WHERE are constants; values are parameters
        (now, kept_note(note), *(step.id for step in found), run_id, phase, now),
    )
    return found


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


# A person's step control made work: the run's wake time becomes now (only ever
# earlier, and only for a run a tick picks up), in the control's own statement.
# guard: confirm-and-skip-do-not-wake
# guard: step-controls-wake-only-a-run-without-a-wake
_WAKE_RUN_NOW = f"""r.wake_at = IF(r.status IN ({RunSQL.DUE}) AND (r.wake_at IS NULL OR r.wake_at > %s), %s, r.wake_at)"""


def confirm_parked(tx: Tx, step_id: int, now: datetime, note: str | None = None, *, seen: Step | None = None) -> bool:
    """A person did what a parked step asked: it is done, with their note, and its run wakes now (`seen`: held
    to the state their If-Match named)."""
    as_seen, seen_args = _as_seen(seen)
    # guard: confirm-a-leased-step
    return (
        tx.execute(
            f"""UPDATE event_run_steps s JOIN event_runs r ON r.id = s.run_id
                   SET s.status = {StepSQL.DONE}, s.finished_at = %s, s.claimed_by = NULL, s.last_error = %s,
                       {_WAKE_RUN_NOW}, r.waiting_for = {waiting.CUE_ANSWERED}
                 WHERE s.id = %s AND s.status = {StepSQL.RUNNING} AND s.claim_expires_at IS NULL{as_seen}""",  # noqa: S608 — _WAKE_RUN_NOW and _as_seen's text are constants; values are parameters
            (now, kept_note(note), now, now, step_id, *seen_args),
        )
        > 0
    )


def resend(tx: Tx, step_id: int, now: datetime, note: str | None = None, *, seen: Step | None = None) -> bool:
    """A person sends a step parked in doubt again (the resend control): pending, its attempts and key kept,
    no longer in doubt (so its next claim sends it without asking the game), and its run wakes now and waits
    for it no more. Not in a finished run, not a step a cleanup left behind, not in a phase that is ending
    (nothing of it runs again). `seen`: held to the state their If-Match named."""
    as_seen, seen_args = _as_seen(seen)
    # guard: resend-of-a-step
    # guard: resend-in-a-phase-that-ended
    # guard: a-resent-step-stays-in-doubt
    return (
        tx.execute(
            f"""UPDATE event_run_steps s JOIN event_runs r ON r.id = s.run_id
                   SET s.status = {StepSQL.PENDING}, s.due_at = NULL, s.claimed_by = NULL, s.in_doubt = FALSE,
                       s.escalate_at = NULL, s.last_error = %s, {_WAKE_RUN_NOW}, r.waiting_for = {waiting.CUE_ANSWERED}
                 WHERE s.id = %s AND {waiting.parked_in_doubt('s')}
                   AND r.status NOT IN ({RunSQL.TERMINAL}) AND {_NOT_LEFT_BEHIND}
                   AND NOT EXISTS (SELECT 1 FROM event_run_phases p
                                    WHERE p.run_id = s.run_id AND p.number = s.phase AND {phases.ENDING}){as_seen}""",  # noqa: S608 — the fragments and _as_seen's text are constants; values are parameters
            (kept_note(note), now, now, step_id, now, *seen_args),
        )
        > 0
    )


def parked_in_doubt_of(tx: Tx, run_id: int) -> Step | None:
    """The run's step parked in doubt, if it has one (a phase's head: at most one)."""
    row = tx.one(f"SELECT {COLUMNS} FROM event_run_steps s WHERE s.run_id = %s AND {waiting.parked_in_doubt('s')} LIMIT 1",  # noqa: S608 — COLUMNS and the fragment are constants; the id is a parameter
                 (run_id,))
    return None if row is None else Step.from_row(row)


def _as_seen(seen: Step | None) -> tuple[str, tuple[Any, ...]]:
    """SQL holding the step (as `s`) to the state a person saw, when their If-Match named it (`Step.etag`'s
    parts: retries, attempts, status, whether it is held by a lease, finished_at); nothing without one."""
    if seen is None:
        return "", ()
    # guard: a-step-statement-ignores-the-retries-seen
    # guard: a-step-statement-ignores-the-attempts-seen
    held = (" AND s.retries = %s AND s.attempts = %s AND s.status = %s AND (s.claim_expires_at IS NULL) = %s"
            " AND s.finished_at <=> %s")
    return held, (seen.retries, seen.attempts, seen.status.value, seen.claim_expires_at is None, seen.finished_at)


_PENDING_OF_S = f"s.status = {StepSQL.PENDING}"
# guard: skip-a-leased-step
_PARKED_OF_S = f"s.status = {StepSQL.RUNNING} AND s.claim_expires_at IS NULL"


def skip_by_human(tx: Tx, step_id: int, now: datetime, reason: str | None = None, *, parked: bool,
                  seen: Step | None = None) -> bool:
    """A person decided against a pending step, or (`parked`) a parked one, of a run that is not over; its run
    wakes now, and a skipped cue is no longer waited for.

    The caller names which of the two it read (locked): the statement's WHERE holds the step to it. A leased
    step cannot be recalled; a step of a finished run is history. `seen`: held to the state their If-Match named.
    """
    as_seen, seen_args = _as_seen(seen)
    # guard: skip-a-parked-step-as-pending
    # guard: skip-in-a-finished-run
    return (
        tx.execute(
            f"""UPDATE event_run_steps s JOIN event_runs r ON r.id = s.run_id
                   SET s.status = {StepSQL.SKIPPED}, s.finished_at = %s, s.claimed_by = NULL, s.last_error = %s,
                       {_WAKE_RUN_NOW}{", r.waiting_for = " + waiting.CUE_ANSWERED if parked else ""}
                 WHERE s.id = %s AND {_PARKED_OF_S if parked else _PENDING_OF_S}
                   AND r.status NOT IN ({RunSQL.TERMINAL}){as_seen}""",  # noqa: S608 — _WAKE_RUN_NOW, the step states and _as_seen's text are constants; values are parameters
            (now, kept_note(reason), now, now, step_id, *seen_args),
        )
        > 0
    )


def acknowledge(tx: Tx, step_id: int, actor: str, now: datetime, *, seen: Step | None = None) -> bool:
    """`actor` has the parked cue: a compare-and-set on its being parked and nobody having it yet (the first
    acknowledge stands; a second, by anyone, changes nothing). Its reminders and escalation stop in the same
    statement; its timeout stands. `seen`: held to the state their If-Match named."""
    as_seen, seen_args = _as_seen(seen)
    # guard: acknowledge-over-someone-elses
    # guard: an-acknowledge-leaves-the-reminders-running
    return tx.execute(
        f"""UPDATE event_run_steps s SET s.acknowledged_by = %s, s.acknowledged_at = %s,
                   s.remind_at = NULL, s.escalate_at = NULL
             WHERE s.id = %s AND {_PARKED_OF_S} AND NOT {waiting.parked_in_doubt('s')}
               AND s.acknowledged_by IS NULL{as_seen}""",  # noqa: S608 — the step state and _as_seen's text are constants; values are parameters
        (actor, now, step_id, *seen_args),
    ) == 1


# ── a parked cue's attention timers (runner/attention.py) ─────────────────
# Each claim is a compare-and-set on the moment the tick read, the step still parked and its run working
# (a paused run neither reminds nor times out); a reminder or an escalation also on nobody having the cue.
# guard: a-paused-run-reminds
_ATTENDED = f"s.id = %s AND {_PARKED_OF_S} AND r.status IN ({RunSQL.WORKING})"


def claim_reminder(tx: Tx, step: Step, n: int, next_at: datetime | None) -> bool:
    """The n-th reminder is this tick's to post (at most once: the claim commits before the post);
    `next_at` is when the one after it is due (None: that was the last)."""
    # guard: a-reminder-claimed-twice
    # guard: a-reminder-to-an-acknowledged-cue
    return tx.execute(
        f"""UPDATE event_run_steps s JOIN event_runs r ON r.id = s.run_id
               SET s.reminders_sent = %s, s.remind_at = %s
             WHERE {_ATTENDED} AND s.acknowledged_by IS NULL AND s.remind_at = %s AND s.reminders_sent = %s""",  # noqa: S608 — _ATTENDED is a constant; values are parameters
        (n, next_at, step.id, step.remind_at, n - 1),
    ) == 1


def claim_escalation(tx: Tx, step: Step, retry_at: datetime) -> bool:
    """This tick tries the escalation now; until a post marks it sent (`escalation_over`), the next try is
    due at `retry_at` (at least once: a tick lost mid-post is followed by another)."""
    # guard: an-escalation-to-an-acknowledged-cue
    return tx.execute(
        f"""UPDATE event_run_steps s JOIN event_runs r ON r.id = s.run_id
               SET s.escalation_tries = s.escalation_tries + 1, s.escalate_at = %s
             WHERE {_ATTENDED} AND s.acknowledged_by IS NULL AND s.escalate_at = %s AND s.escalation_tries = %s""",  # noqa: S608 — _ATTENDED is a constant; values are parameters
        (retry_at, step.id, step.escalate_at, step.escalation_tries),
    ) == 1


def escalation_over(tx: Tx, step_id: int, tries: int) -> bool:
    """The escalation was posted, or its last try failed: nothing more is tried (fenced on the try)."""
    return tx.execute(
        "UPDATE event_run_steps SET escalate_at = NULL WHERE id = %s AND escalation_tries = %s AND escalate_at IS NOT NULL",
        (step_id, tries),
    ) == 1


def time_out(tx: Tx, step: Step, to: StepStatus, now: datetime, cause: str) -> bool:
    """Nobody answered the cue in time: it is `to` (cancelled, or done as assumed), its timers gone, and its
    run waits for it no more. A compare-and-set on the timeout the tick read having come."""
    if to not in (StepStatus.CANCELLED, StepStatus.DONE):
        raise ValueError(f"a cue times out cancelled or done, not {to.value}")
    # guard: a-timeout
    return tx.execute(
        f"""UPDATE event_run_steps s JOIN event_runs r ON r.id = s.run_id
               SET s.status = %s, s.finished_at = %s, s.last_error = %s,
                   s.remind_at = NULL, s.escalate_at = NULL, s.times_out_at = NULL,
                   r.waiting_for = {waiting.CUE_ANSWERED}
             WHERE {_ATTENDED} AND s.times_out_at = %s AND s.times_out_at <= %s""",  # noqa: S608 — _ATTENDED and the rendering are constants; values are parameters
        (to.value, now, kept_note(cause), step.id, step.times_out_at, now),
    ) >= 1


def drop_timeout(tx: Tx, step: Step, now: datetime) -> bool:
    """The cue's timeout acted without ending it (`on_timeout: pause`, or in the ending): it waits on without one."""
    return tx.execute(
        f"""UPDATE event_run_steps s JOIN event_runs r ON r.id = s.run_id SET s.times_out_at = NULL
             WHERE {_ATTENDED} AND s.times_out_at = %s AND s.times_out_at <= %s""",  # noqa: S608 — _ATTENDED is a constant; values are parameters
        (step.id, step.times_out_at, now),
    ) == 1


def requeue_where_stopped(tx: Tx, run_id: int, step_id: int, now: datetime, *, seen: Step | None = None) -> bool:
    """Re-queue the failed step a paused run is stopped at (the retry control).

    Every guard is in the statement: the step failed, its run is paused, it is in
    the run's current phase, and no later step of that phase has been reached
    (the anti-join). A failed step *behind* the cursor (failed under on_failure
    skip) is refused: re-queued, it would run again out of order. So is a step of
    a phase that is ending (`phases.ENDING`): nothing of it runs again. The statement raises `retries` (the
    step's tag never repeats across a retry); `seen` holds it to the state a person's If-Match named.
    Any step of a run paused in its cleanup is refused too (only its reverts are retried: `requeue_revert`).
    """
    as_seen, seen_args = _as_seen(seen)
    # guard: retry-a-step
    # guard: retry-in-a-run-not-paused
    # guard: retry-behind-the-cursor
    # guard: retry-blocked-by-a-later-pending-step
    # guard: retry-in-an-ending-phase
    # guard: a-retry-keeps-the-retries
    # guard: a-step-behind-a-cleanup-is-retried
    return (
        tx.execute(
            f"""UPDATE event_run_steps s
                 JOIN event_runs r ON r.id = s.run_id
                 LEFT JOIN event_run_steps later
                        ON later.run_id = s.run_id AND later.phase = s.phase
                       AND later.seq > s.seq AND {_reached('later')}
                  SET s.status = {StepSQL.PENDING}, s.attempts = 0, s.retries = s.retries + 1, s.due_at = NULL, s.last_error = NULL,
                      s.claimed_by = NULL, s.claim_expires_at = NULL, s.finished_at = NULL
                WHERE s.id = %s AND s.run_id = %s AND s.status = {StepSQL.FAILED}
                  AND r.status = {RunSQL.PAUSED} AND s.phase = r.current_phase AND r.cleanup_target IS NULL
                  AND later.id IS NULL
                  AND NOT EXISTS (SELECT 1 FROM event_run_phases p
                                   WHERE p.run_id = s.run_id AND p.number = s.phase AND {phases.ENDING}){as_seen}""",  # noqa: S608 — _reached, the status lists, the phase's fragment and _as_seen's text are constants; values are parameters
            (step_id, run_id, now, *seen_args),
        )
        == 1
    )


def requeue_revert(tx: Tx, run_id: int, step_id: int, now: datetime) -> bool:
    """Re-queue a revert that failed or was refused, of a run paused in its cleanup (the retry control), and
    its resource `reverting` again: one statement over the step, its run and its resource. Any failed revert
    may be retried, in any order: reverts do not depend on one another."""
    # guard: a-revert-is-retried-while-its-cleanup-runs
    return (
        tx.execute(
            f"""UPDATE event_run_steps s
                 JOIN event_runs r ON r.id = s.run_id
                 JOIN event_run_resources res ON res.id = s.resource_id
                  SET s.status = {StepSQL.PENDING}, s.attempts = 0, s.retries = s.retries + 1, s.due_at = NULL,
                      s.last_error = NULL, s.claimed_by = NULL, s.claim_expires_at = NULL, s.finished_at = NULL,
                      res.status = {ResourceSQL.REVERTING}, res.changed_at = %s
                WHERE s.id = %s AND s.run_id = %s AND s.status IN ({StepSQL.FAILURES})
                  AND r.status = {RunSQL.PAUSED} AND r.cleanup_target IS NOT NULL
                  AND res.status = {ResourceSQL.REVERT_FAILED}""",  # noqa: S608 — the status lists are lifecycle's renderings (constants); values are parameters
            (now, step_id, run_id),
        )
        >= 1
    )
