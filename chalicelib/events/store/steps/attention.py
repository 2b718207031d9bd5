"""event_run_steps, a parked cue's attention timers (runner/attention.py): its reminders, its escalation, its
timeout, and the lapse of a hold nobody answered.

The invariant: each timer acts at most once per moment it was due. Each claim is
a compare-and-set on the moment the tick read, the step still parked and its run
working or cleaning up (`ATTENDED`: a paused run neither reminds nor times out) and both of words this
version knows (a newer version's park is left alone); a reminder or an
escalation also on nobody having the cue.
"""

from __future__ import annotations

from datetime import datetime

from ....db import Tx
from ... import waiting
from ...lifecycle import DROP_TIMEOUT, ESCALATE, ESCALATION_OVER, LAPSE, REMIND, TIME_OUT, RunSQL, StepSQL, StepStatus
from ...model import Step, kept_note
from .fragments import UNLEASED, holder_is
from .write import write

_WITH_ITS_RUN = " JOIN event_runs r ON r.id = s.run_id"
# guard: a-paused-run-reminds
_ATTENDED = f"s.id = %s AND {UNLEASED} AND (r.status IN ({RunSQL.ATTENDED}) OR {waiting.late_revert('r', 's')})"
# Parked for a reason, in a run of a mode, this version knows: a newer version's park is not a cue of this one.
# guard: a-step-parked-for-an-unknown-reason-is-attended
_ATTENDED += f" AND r.mode IN ({RunSQL.MODES}) AND (s.park_reason IS NULL OR s.park_reason IN ({StepSQL.PARK_REASONS}))"


def claim_reminder(tx: Tx, step: Step, n: int, next_at: datetime | None) -> bool:
    """The n-th reminder is this tick's to post (at most once: the claim commits before the post);
    `next_at` is when the one after it is due (None: that was the last)."""
    # guard: a-reminder-claimed-twice
    # guard: a-reminder-to-an-acknowledged-cue
    return write(
        tx, REMIND, f"{_ATTENDED} AND s.acknowledged_by IS NULL AND s.remind_at = %s AND s.reminders_sent = %s",
        (step.id, step.remind_at, n - 1), sets="s.reminders_sent = %s, s.remind_at = %s", set_args=(n, next_at),
        joins=_WITH_ITS_RUN, alias="s",
    ) == 1


def claim_escalation(tx: Tx, step: Step, retry_at: datetime) -> bool:
    """This tick tries the escalation now; until a post marks it sent (`escalation_over`), the next try is
    due at `retry_at` (at least once: a tick lost mid-post is followed by another)."""
    # guard: an-escalation-to-an-acknowledged-cue
    return write(
        tx, ESCALATE, f"{_ATTENDED} AND s.acknowledged_by IS NULL AND s.escalate_at = %s AND s.escalation_tries = %s",
        (step.id, step.escalate_at, step.escalation_tries),
        sets="s.escalation_tries = s.escalation_tries + 1, s.escalate_at = %s", set_args=(retry_at,),
        joins=_WITH_ITS_RUN, alias="s",
    ) == 1


def escalation_over(tx: Tx, step_id: int, tries: int) -> bool:
    """The escalation was posted, or its last try failed: nothing more is tried (fenced on the try)."""
    return write(tx, ESCALATION_OVER, "id = %s AND escalation_tries = %s AND escalate_at IS NOT NULL", (step_id, tries),
                 sets="escalate_at = NULL") == 1


def time_out(tx: Tx, step: Step, to: StepStatus, now: datetime, cause: str, choice: str | None = None) -> bool:
    """Nobody answered the cue in time: it is `to` (cancelled, or done as assumed, with the answer `choice`
    assumed for a cue with choices), its timers gone, and its run waits for it no more. A compare-and-set on
    the timeout the tick read having come."""
    if to not in TIME_OUT:
        raise ValueError(f"a cue times out cancelled or done, not {to.value}")
    # guard: a-timeout
    # guard: a-timed-out-cue-is-still-waited-for
    return write(
        tx, TIME_OUT[to], f"{_ATTENDED} AND s.times_out_at = %s AND s.times_out_at <= %s",
        (step.id, step.times_out_at, now), now=now,
        sets=f"""s.last_error = %s, s.choice = %s, s.remind_at = NULL, s.escalate_at = NULL, s.times_out_at = NULL,
                 r.waiting_for = {waiting.CUE_ANSWERED}""",
        set_args=(kept_note(cause), choice), joins=_WITH_ITS_RUN, alias="s",
    ) >= 1


def drop_timeout(tx: Tx, step: Step, now: datetime) -> bool:
    """The cue's timeout acted without ending it (`on_timeout: pause`, or in the ending): it waits on without one."""
    return write(tx, DROP_TIMEOUT, f"{_ATTENDED} AND s.times_out_at = %s AND s.times_out_at <= %s",
                 (step.id, step.times_out_at, now), sets="s.times_out_at = NULL", joins=_WITH_ITS_RUN, alias="s") == 1


def lapse(tx: Tx, step: Step, now: datetime, remind_at: datetime | None) -> bool:
    """The hold the tick read came to its end unanswered: nobody has the cue now, and who had it and since when
    are kept for the notices of the new round of attention that begins in the same statement (`holds_ended`
    raised, so they have keys of their own): its reminders from `remind_at`, its escalation now. A
    compare-and-set on the holder and the hold's end the tick read, come."""
    # guard: a-hold-lapses-twice
    return write(
        tx, LAPSE, f"{_ATTENDED} AND {holder_is()} AND s.held_until = %s AND s.held_until <= %s",
        (step.id, step.acknowledged_by, step.held_until, now),
        sets="""s.lapsed_by = %s, s.lapsed_acknowledged_at = %s, s.acknowledged_by = NULL, s.acknowledged_at = NULL,
                s.held_until = NULL, s.holds_ended = s.holds_ended + 1, s.remind_at = %s, s.reminders_sent = 0,
                s.escalate_at = %s, s.escalation_tries = 0""",
        set_args=(step.acknowledged_by, step.acknowledged_at, remind_at, now), joins=_WITH_ITS_RUN, alias="s",
    ) == 1
