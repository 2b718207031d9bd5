"""event_run_steps, the claimer's statements: the claim, then its answer's write, fenced on the claim.

The invariant: `attempts` is raised by the claim and by nothing else, and
nothing lowers it (a person's retry or resend renews the step's allowance,
`attempts_allowed_from`, instead); a claimer's later writes
(park, reschedule, finish, its cancel) match the claim's token and attempt, so a
process that outlived its lease, whose step was reclaimed and claimed again
elsewhere, changes nothing.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from ....db import Tx
from ... import waiting
from ...lifecycle import (
    CLAIM,
    DELAY_NEXT,
    END_IN_FLIGHT,
    FINISH,
    PARK,
    RESCHEDULE,
    RUNNER_FINISHES,
    ParkReason,
    RunSQL,
    StepSQL,
    StepStatus,
    WaitSQL,
)
from ...model import Attention, Claim, Step, kept_note
from .. import phases
from .fragments import NOT_LEFT_BEHIND
from .write import write

RUN_ENDED = "its run ended while this step was in flight"
PHASE_ENDED = "its phase ended while this step was in flight"
_WITH_ITS_RUN = " JOIN event_runs r ON r.id = s.run_id"
_WITH_ITS_RUN_AND_PHASE = f"{_WITH_ITS_RUN} LEFT JOIN event_run_phases p ON p.run_id = s.run_id AND p.number = s.phase"


def claim_token() -> str:
    """128 random bits as 32 hex digits: what marks one claim (of a step or a run lease) as its taker's."""
    return os.urandom(16).hex()


def _check_seconds(seconds: float, what: str) -> None:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise ValueError(f"{what} must be a non-negative number of seconds, got {seconds!r}")


def claim(tx: Tx, step: Step, now: datetime, lease_seconds: float) -> Claim | None:
    """`pending -> running` with a fresh lease and token; None if the claim lost.

    One statement decides everything: the step is still pending at the attempt
    count the caller saw, it is due, its run is still runnable (so a pause
    pressed mid-tick stops the next claim), and its phase is not ending (its
    condition met, or its deadline passed: the phase row, joined rather than
    asked in a subquery, which P1 measured at a tenth of a step's time, must
    pass `phases.TAKES_CLAIMS`), and under a cleanup only a revert step is taken
    (`NOT_LEFT_BEHIND`; of a finished run, only the reverts of its Clean up under way); a run of a mode this version does not know is never
    taken (a newer version's: `understood`). `started_at` keeps the first attempt.

    The claim carries the step's allowance as read: held to the pending step at
    the attempts read, it cannot have changed, since a retry or a resend moves a
    step out of failed or parked, which only a claim (raising attempts) reaches.
    """
    _check_seconds(lease_seconds, "lease")
    token = claim_token()
    # guard: step-claim
    # guard: step-claim-not
    # guard: step-claim-without-a-key
    # guard: step-claim-in-a-run-not-runnable
    # guard: claim-in-an-ending-phase
    # guard: step-claim-in-a-run-of-an-unknown-mode
    changed = write(
        tx, CLAIM,
        f"""s.id = %s AND s.attempts = %s
               AND (s.due_at IS NULL OR s.due_at <= %s)
               AND s.idempotency_key <> ''
               AND (r.status IN ({RunSQL.RUNNABLE}) OR {waiting.late_revert("r", "s")}) AND {NOT_LEFT_BEHIND}
               AND r.mode IN ({RunSQL.MODES})
               AND (p.run_id IS NULL OR {phases.TAKES_CLAIMS})""",
        (step.id, step.attempts, now, now),
        joins=_WITH_ITS_RUN_AND_PHASE, alias="s", now=now, lease=(token, now + timedelta(seconds=lease_seconds)),
    )
    return Claim(step.id, token, step.attempts + 1, step.attempts_allowed_from) if changed == 1 else None


# Over for this step (`s`, its run `r`): its run ended, or a cleanup began and it is not one of the reverts.
# guard: a-step-in-flight-at-a-cleanup-is-requeued-by-its-answer
_RUN_OVER_FOR_S = (f"((r.status IN ({RunSQL.TERMINAL}) AND NOT {waiting.late_revert('r', 's')})"
                   f" OR NOT {NOT_LEFT_BEHIND})")

# The claim's fence (its status, running, is the move's source): the token and the attempt it wrote.
# guard: fence-without
_FENCE = "id = %s AND claimed_by = %s AND attempts = %s"
# guard: cancel-if-run-over-without-the-token
_FENCE_OF_S = "s.id = %s AND s.claimed_by = %s AND s.attempts = %s"  # joined as `s`


def park(tx: Tx, claim: Claim, note: str | None = None, attention: Attention | None = None,
         reason: ParkReason = ParkReason.CUE) -> bool:
    """Leave the step running but held by nobody (lease NULL): a person finishes it. Its run, working at its
    phase (or cleaning up, at a revert), waits for this cue (or, parked in doubt, for a decision) from now
    (`waiting_for`, in the same statement; a paused run waits for its resume). The park's timers (`attention`)
    are written by the same statement, its count of reminders from nought, and how long an acknowledge will hold
    it; a step parked in doubt is in doubt (`in_doubt`). It is held by nobody: a step parked again (a revert
    retried, or re-opened by a Clean up) does not keep the hold of its last park, which nobody has on this one."""
    timers = attention or Attention()
    doubt = ParkReason(reason) is ParkReason.DOUBT
    waits_for = WaitSQL.DECISION if doubt else WaitSQL.CUE
    # guard: park-unfenced
    # guard: a-parked-cue-is-not-waited-for
    # guard: a-cue-parked-in-a-paused-run-hides-its-resume
    # guard: a-step-parked-again-keeps-its-last-hold
    return write(
        tx, PARK, _FENCE_OF_S, (claim.step_id, claim.token, claim.attempt),
        sets=f"""s.last_error = %s, s.remind_at = %s, s.reminders_sent = 0, s.escalate_at = %s, s.escalation_tries = 0,
                 s.times_out_at = %s, s.park_reason = %s, s.hold_seconds = %s, s.acknowledged_by = NULL,
                 s.acknowledged_at = NULL, s.held_until = NULL, s.lapsed_by = NULL, s.lapsed_acknowledged_at = NULL,
                 r.waiting_for = IF({waiting.works_step("r", "s")}, {waits_for}, r.waiting_for)""",
        set_args=(kept_note(note), timers.remind_at, timers.escalate_at, timers.times_out_at, ParkReason(reason).value,
                  timers.hold_seconds),
        joins=_WITH_ITS_RUN, alias="s", in_doubt=doubt,
    ) >= 1


def reschedule(tx: Tx, claim: Claim, due_at: datetime, error: str | None = None, *, in_doubt: bool = False) -> bool:
    """Back to pending for a later attempt; `attempts` stays as the claim left it, and `in_doubt` says
    whether the attempt it ends has no known outcome (written here: no statement of its own).

    The caller's backoff is flat: due_at is also the event's own clock, and a
    doubling backoff would push a step far past the moment it was about.
    """
    # guard: reschedule-unfenced
    # guard: a-retry-forgets-its-doubt
    return write(tx, RESCHEDULE, _FENCE, (claim.step_id, claim.token, claim.attempt), sets="due_at = %s, last_error = %s",
                 set_args=(due_at, kept_note(error)), in_doubt=in_doubt) == 1


def finish(tx: Tx, claim: Claim, status: StepStatus, now: datetime, error: str | None = None, *,
           in_doubt: bool = False) -> bool:
    """A terminal outcome of the claimer's own attempt: done, failed or refused (`in_doubt`: a give-up
    whose last attempt has no known outcome)."""
    status = StepStatus(status)
    if status not in RUNNER_FINISHES:
        raise ValueError(f"a claimer finishes a step as done, failed or refused, not {status.value}")
    # guard: finish-unfenced
    # guard: a-give-up-forgets-its-doubt
    return write(tx, FINISH[status], _FENCE, (claim.step_id, claim.token, claim.attempt), now=now,
                 sets="last_error = %s", set_args=(kept_note(error),), in_doubt=in_doubt) == 1


def cancel_if_over(tx: Tx, claim: Claim, now: datetime, *, in_doubt: bool = False) -> str | None:
    """The claimer's step, cancelled instead of parked or re-queued when its run ended meanwhile, or its
    phase (a signal, a person's advance, its deadline: `phases.OVER`), or a cleanup began (a step that is
    not a revert is over once answered); the cause written, or None.

    A cancel leaves a leased step alone (nothing recalls a command already sent);
    this is where such a step lands once its answer is in, rather than waiting
    pending or parked for ever in a finished run or a phase nothing of which runs
    again. One statement on the way every park and retry takes; the cause is read
    back only when it took.
    """
    # guard: cancel-if-run-over-in-a-live-run
    took = write(
        tx, END_IN_FLIGHT, f"{_FENCE_OF_S} AND ({_RUN_OVER_FOR_S} OR {phases.OVER})",
        (claim.step_id, claim.token, claim.attempt, now),
        sets=f"s.last_error = IF({_RUN_OVER_FOR_S}, %s, %s)", set_args=(RUN_ENDED, PHASE_ENDED),
        joins=_WITH_ITS_RUN_AND_PHASE, alias="s", now=now, in_doubt=in_doubt,
    )
    if took != 1:
        return None
    return str(tx.scalar("SELECT last_error FROM event_run_steps WHERE id = %s", (claim.step_id,)))


def delay_next(tx: Tx, run_id: int, phase: int, after_seq: int, due_at: datetime) -> bool:
    """Delay the next pending step of the phase until `due_at` (what core.wait does).

    Only ever moves a due_at later, so a re-dispatch of a wait whose answer was
    lost cannot push the following step out a second time. The step is picked
    first and the due_at guard applied to it: guarding inside the pick (as the
    original's ORDER BY … LIMIT 1 did) makes a second dispatch skip the held
    step and delay the one after it instead.
    """
    # guard: hold-next-moves-due-at-earlier
    # guard: hold-next-picks-past-a-skipped-step
    return write(
        tx, DELAY_NEXT,
        f"""run_id = %s AND phase = %s
                  AND (due_at IS NULL OR due_at < %s)
                  AND seq = (SELECT seq FROM (
                        SELECT MIN(seq) AS seq FROM event_run_steps
                         WHERE run_id = %s AND phase = %s AND seq > %s AND status = {StepSQL.PENDING}
                      ) AS next_pending)""",  # noqa: S608 — the status literal is lifecycle's rendering (a constant); values are parameters
        (run_id, phase, due_at, run_id, phase, after_seq), sets="due_at = %s", set_args=(due_at,),
    ) == 1
