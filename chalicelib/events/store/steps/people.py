"""event_run_steps, a person's step controls: confirm, resend, skip, acknowledge, release, take over, retry and
a cue's timeout moved,
each one guarded UPDATE, held to the state the person saw when their If-Match named it.

The invariant: a parked step is `running` with a NULL lease, in flight and held
by nobody, so nothing treats it as stale and a cue can wait overnight; only a
person's statement here finishes, re-sends or skips it, and one that makes work
wakes the step's run now in its own statement (its wake time only ever earlier).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ....db import Tx
from ... import waiting
from ...lifecycle import (
    ACKNOWLEDGE,
    CONFIRM,
    MOVE_TIMEOUT,
    RELEASE,
    REOPEN_REVERT,
    RESEND,
    RETRY,
    RETRY_REVERT,
    SKIP,
    TAKE_OVER,
    ResourceSQL,
    RunSQL,
    StepStatus,
)
from ...model import Step, kept_note
from .. import phases
from .fragments import NOT_LEFT_BEHIND, UNLEASED, holder_is, reached
from .write import write

_WITH_ITS_RUN = " JOIN event_runs r ON r.id = s.run_id"
# A person's step control made work: the run's wake time becomes now (only ever
# earlier, and only for a run a tick picks up), in the control's own statement.
# guard: confirm-and-skip-do-not-wake
# guard: step-controls-wake-only-a-run-without-a-wake
_WAKE_RUN_NOW = f"""r.wake_at = IF((r.status IN ({RunSQL.DUE}) OR r.late_cleanup = {RunSQL.LATE_CLEANUP_STARTED})
                                   AND (r.wake_at IS NULL OR r.wake_at > %s), %s, r.wake_at)"""


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


def confirm_parked(tx: Tx, step_id: int, now: datetime, note: str | None = None, *, choice: str | None = None,
                   seen: Step | None = None) -> bool:
    """A person did what a parked step asked: it is done, with their note (and, a cue with choices, the answer
    they chose), and its run wakes now (`seen`: held to the state their If-Match named)."""
    as_seen, seen_args = _as_seen(seen)
    # guard: confirm-a-leased-step
    return write(
        tx, CONFIRM, f"s.id = %s AND {UNLEASED}{as_seen}", (step_id, *seen_args), now=now,
        sets=f"s.last_error = %s, s.choice = %s, {_WAKE_RUN_NOW}, r.waiting_for = {waiting.CUE_ANSWERED}",
        set_args=(kept_note(note), choice, now, now),
        joins=_WITH_ITS_RUN, alias="s",
    ) > 0


def resend(tx: Tx, step_id: int, now: datetime, note: str | None = None, *, seen: Step | None = None) -> bool:
    """A person sends a step parked in doubt again (the resend control): pending, its attempts and key kept
    with a fresh allowance of attempts (the ceiling counts those after it), no longer in doubt (so its next
    claim sends it without asking the game), and its run wakes now and waits for it no more. Not in a finished
    run, not a step a cleanup left behind, not in a phase that is over (nothing of it runs again). `seen`:
    held to the state their If-Match named."""
    as_seen, seen_args = _as_seen(seen)
    # guard: resend-of-a-step
    # guard: resend-in-a-phase-that-ended
    return write(
        tx, RESEND,
        f"""s.id = %s AND {waiting.parked_in_doubt('s')}
                   AND r.status NOT IN ({RunSQL.TERMINAL}) AND {NOT_LEFT_BEHIND}
                   AND NOT EXISTS (SELECT 1 FROM event_run_phases p
                                    WHERE p.run_id = s.run_id AND p.number = s.phase AND {phases.OVER}){as_seen}""",  # noqa: S608 — the fragments and _as_seen's text are constants; values are parameters
        (step_id, now, *seen_args),
        sets=f"s.escalate_at = NULL, s.last_error = %s, {_WAKE_RUN_NOW}, r.waiting_for = {waiting.CUE_ANSWERED}",
        set_args=(kept_note(note), now, now), joins=_WITH_ITS_RUN, alias="s",
    ) > 0


def skip_by_human(tx: Tx, step_id: int, now: datetime, reason: str | None = None, *, parked: bool,
                  seen: Step | None = None) -> bool:
    """A person decided against a pending step, or (`parked`) a parked one, of a run that is not over; its run
    wakes now, and a skipped cue is no longer waited for.

    The caller names which of the two it read (locked): the statement's WHERE holds the step to it. A leased
    step cannot be recalled; a step of a finished run is history (but a revert of its Clean up under way).
    `seen`: held to the state their If-Match named.
    """
    as_seen, seen_args = _as_seen(seen)
    answered = f", r.waiting_for = {waiting.CUE_ANSWERED}" if parked else ""
    # guard: skip-a-parked-step-as-pending
    move, state = (SKIP[StepStatus.RUNNING], f" AND {UNLEASED}") if parked else (SKIP[StepStatus.PENDING], "")
    # guard: skip-in-a-finished-run
    return write(
        tx, move,
        f"""s.id = %s{state}
                   AND (r.status NOT IN ({RunSQL.TERMINAL}) OR {waiting.late_revert("r", "s")}){as_seen}""",
        (step_id, *seen_args), now=now, sets=f"s.last_error = %s, {_WAKE_RUN_NOW}{answered}",
        set_args=(kept_note(reason), now, now), joins=_WITH_ITS_RUN, alias="s",
    ) > 0


# A hold of a parked cue ends at `held_until` (NULL: it has no end), and its run wakes by then at the latest
# (only ever earlier, and only a run a tick picks up, a finished run's Clean up among them, as `_WAKE_RUN_NOW`):
# the statement that takes the hold writes both.
# guard: a-hold-wakes-its-run-never
# guard: a-hold-on-a-finished-runs-revert-never-lapses
_HELD_UNTIL = f"""s.held_until = %s, r.wake_at = IF(%s IS NOT NULL
                                                  AND (r.status IN ({RunSQL.DUE}) OR r.late_cleanup = {RunSQL.LATE_CLEANUP_STARTED})
                                                  AND (r.wake_at IS NULL OR %s < r.wake_at), %s, r.wake_at)"""


def _held_until_args(held_until: datetime | None) -> tuple[datetime | None, ...]:
    return (held_until,) * 4


def acknowledge(tx: Tx, step_id: int, actor: str, now: datetime, *, held_until: datetime | None = None,
                seen: Step | None = None) -> bool:
    """`actor` has the parked cue until `held_until` (None: without a bound): a compare-and-set on its being
    parked and nobody having it yet (the first acknowledge stands; a second, by anyone, changes nothing). Its
    reminders and escalation stop in the same statement, and whose hold lapsed before is forgotten; its
    timeout stands. Its run wakes by the hold's end at the latest. `seen`: held to the state their If-Match named."""
    as_seen, seen_args = _as_seen(seen)
    # guard: acknowledge-over-someone-elses
    # guard: an-acknowledge-leaves-the-reminders-running
    return write(
        tx, ACKNOWLEDGE,
        f"""s.id = %s AND {UNLEASED} AND NOT {waiting.parked_in_doubt('s')}
               AND s.acknowledged_by IS NULL{as_seen}""",
        (step_id, *seen_args),
        sets="s.acknowledged_by = %s, s.acknowledged_at = %s, s.remind_at = NULL, s.escalate_at = NULL"
             f", s.lapsed_by = NULL, s.lapsed_acknowledged_at = NULL, {_HELD_UNTIL}",
        set_args=(actor, now, *_held_until_args(held_until)), joins=_WITH_ITS_RUN, alias="s",
    ) >= 1


def release(tx: Tx, step_id: int, now: datetime, *, holder: str | None, remind_at: datetime | None,
            escalate_at: datetime | None, seen: Step | None = None) -> bool:
    """Nobody has the parked cue again: whoever had it (`holder`: a game master's own, or the one a moderator saw
    have it; None: whoever has it) lets it go. A new round of its attention begins in the same statement (`holds_ended`
    raised, so its notices have keys of their own): its reminders from `remind_at`, its escalation at
    `escalate_at`; its run wakes now. `seen`: held to the state their If-Match named."""
    as_seen, seen_args = _as_seen(seen)
    # guard: a-release-of-a-cue-nobody-has
    held = "s.acknowledged_by IS NOT NULL"
    # guard: a-release-of-a-step-no-longer-a-parked-cue
    parked = f" AND {UNLEASED} AND NOT {waiting.parked_in_doubt('s')}"
    # guard: a-game-master-releases-someone-elses-cue
    own, own_args = ("", ()) if holder is None else (f" AND {holder_is()}", (holder,))
    return write(
        tx, RELEASE, f"s.id = %s AND {held}{parked}{own}{as_seen}", (step_id, *own_args, *seen_args),
        sets=f"""s.acknowledged_by = NULL, s.acknowledged_at = NULL, s.held_until = NULL, s.holds_ended = s.holds_ended + 1,
                 s.remind_at = %s, s.reminders_sent = 0, s.escalate_at = %s, s.escalation_tries = 0, {_WAKE_RUN_NOW}""",
        set_args=(remind_at, escalate_at, now, now), joins=_WITH_ITS_RUN, alias="s",
    ) >= 1


def take_over(tx: Tx, step_id: int, actor: str, now: datetime, *, held_until: datetime | None,
              seen: Step | None = None, from_holder: str | None = None) -> bool:
    """`actor` takes the parked cue over from whoever has it (`from_holder`: from that holder only, as the presser
    saw it): theirs from now until `held_until` (None: without a bound). A compare-and-set on someone else having
    it (nobody's, or the presser's own, changes nothing); its run wakes by the hold's end at the latest. `seen`:
    held to the state their If-Match named."""
    as_seen, seen_args = _as_seen(seen)
    # guard: a-take-over-takes-from-a-holder-not-seen
    seen_holder, holder_args = ("", ()) if from_holder is None else (f" AND {holder_is()}", (from_holder,))
    # guard: a-take-over-of-a-step-no-longer-a-parked-cue
    parked = f" AND {UNLEASED} AND NOT {waiting.parked_in_doubt('s')}"
    # guard: a-take-over-of-a-cue-nobody-else-has
    return write(
        tx, TAKE_OVER, f"s.id = %s AND {holder_is('<>')}{parked}{seen_holder}{as_seen}",
        (step_id, actor, *holder_args, *seen_args),
        sets=f"s.acknowledged_by = %s, s.acknowledged_at = %s, {_HELD_UNTIL}",
        set_args=(actor, now, *_held_until_args(held_until)), joins=_WITH_ITS_RUN, alias="s",
    ) >= 1


def requeue_where_stopped(tx: Tx, run_id: int, step_id: int, now: datetime, *, seen: Step | None = None) -> bool:
    """Re-queue the failed step a paused run is stopped at (the retry control).

    Every guard is in the statement: the step failed, its run is paused, it is in
    the run's current phase, and no later step of that phase has been reached
    (the anti-join). A failed step *behind* the cursor (failed under on_failure
    skip) is refused: re-queued, it would run again out of order. So is a step of
    a phase that is over (`phases.OVER`): nothing of it runs again. The statement raises `retries` (the
    step's tag never repeats across a retry) and renews its allowance of attempts, its attempts kept: the
    next attempt the game sees is above every one it saw; `seen` holds it to the state a person's If-Match named.
    Any step of a run paused in its cleanup is refused too (only its reverts are retried: `requeue_revert`).
    """
    as_seen, seen_args = _as_seen(seen)
    # guard: retry-a-step
    # guard: retry-in-a-run-not-paused
    # guard: retry-behind-the-cursor
    # guard: retry-blocked-by-a-later-pending-step
    # guard: retry-in-an-ending-phase
    # guard: a-step-behind-a-cleanup-is-retried
    return write(
        tx, RETRY,
        f"""s.id = %s AND s.run_id = %s
                  AND r.status = {RunSQL.PAUSED} AND s.phase = r.current_phase AND r.cleanup_target IS NULL
                  AND later.id IS NULL
                  AND NOT EXISTS (SELECT 1 FROM event_run_phases p
                                   WHERE p.run_id = s.run_id AND p.number = s.phase AND {phases.OVER}){as_seen}""",  # noqa: S608 — the status lists, the phase's fragment and _as_seen's text are constants; values are parameters
        (step_id, run_id, now, *seen_args), sets="s.last_error = NULL",
        joins=f"""{_WITH_ITS_RUN}
                 LEFT JOIN event_run_steps later
                        ON later.run_id = s.run_id AND later.phase = s.phase
                       AND later.seq > s.seq AND {reached('later')}""",
        alias="s",
    ) == 1


def requeue_revert(tx: Tx, run_id: int, step_id: int, now: datetime) -> bool:
    """Re-queue a revert that failed or was refused, of a run paused in its cleanup (the retry control), and
    its resource `reverting` again: one statement over the step, its run and its resource. Any failed revert
    may be retried, in any order: reverts do not depend on one another."""
    # guard: a-revert-is-retried-while-its-cleanup-runs
    return write(
        tx, RETRY_REVERT,
        f"""s.id = %s AND s.run_id = %s
                  AND r.status = {RunSQL.PAUSED} AND r.cleanup_target IS NOT NULL
                  AND res.status = {ResourceSQL.REVERT_FAILED}""",
        (step_id, run_id), sets=f"s.last_error = NULL, res.status = {ResourceSQL.REVERTING}, res.changed_at = %s",
        set_args=(now,), joins=f"{_WITH_ITS_RUN} JOIN event_run_resources res ON res.id = s.resource_id", alias="s",
    ) >= 1


def reopen_reverts(tx: Tx, run_id: int, now: datetime) -> None:
    """The reverts a cancel abandoned (cancelled, their resources live again) and those that failed or were
    refused (their resources revert_failed) of a finished run whose Clean up has begun, pending again with a
    fresh allowance, and their resources `reverting`: one statement over the steps, their run and their
    resources. The tick then works them with the reverts it writes for the rest (`resources.open_reverts`: a
    resource keeps its one revert step)."""
    # guard: a-finished-runs-failed-revert-is-reopened-with-its-resource-left
    write(
        tx, REOPEN_REVERT,
        f"""s.run_id = %s AND r.late_cleanup = {RunSQL.LATE_CLEANUP_STARTED}
                  AND res.status IN ({ResourceSQL.LIVE}, {ResourceSQL.REVERT_FAILED})""",
        (run_id,), sets=f"s.last_error = NULL, res.status = {ResourceSQL.REVERTING}, res.changed_at = %s",
        set_args=(now,), joins=f"{_WITH_ITS_RUN} JOIN event_run_resources res ON res.id = s.resource_id", alias="s",
    )
def move_timeout(tx: Tx, step_id: int, moved: tuple[datetime, datetime], now: datetime, *, seen: Step | None = None) -> bool:
    """A person moves a parked cue's timeout from `moved[0]` (as read) to `moved[1]`, later than now: a
    compare-and-set on its being a parked cue (not in doubt) of a run not over (or a finished run's Clean-up
    revert, whose timeout the tick still acts on), with that timeout. Its run wakes
    now if the new timeout is earlier than its wake time (else its release writes the wake time it gives).
    `seen`: held to the state their If-Match named."""
    as_seen, seen_args = _as_seen(seen)
    # guard: extend-a-cue-into-the-past
    # guard: a-late-reverts-timeout-cannot-be-moved
    return write(
        tx, MOVE_TIMEOUT,
        f"""s.id = %s AND {UNLEASED} AND NOT {waiting.parked_in_doubt('s')}
               AND (r.status NOT IN ({RunSQL.TERMINAL}) OR {waiting.late_revert('r', 's')})
               AND s.times_out_at = %s AND %s > %s{as_seen}""",
        (step_id, moved[0], moved[1], now, *seen_args),
        sets=f"s.times_out_at = %s, {_WAKE_RUN_NOW}", set_args=(moved[1], moved[1], now),
        joins=_WITH_ITS_RUN, alias="s",
    ) >= 1
