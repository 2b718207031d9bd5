"""A parked cue's reminders and escalation, posted by the tick that holds its run's lease, and the lapse of an
acknowledge's hold.

The invariant: every timer acts through a compare-and-set on the moment the tick
read (`store/steps/attention.py`), committed before anything is posted, so two ticks never
both act on one moment, and a paused run (its run not working) or an acknowledged
cue claims none. Each notice has its own idempotency key (`{step key}:r{n}`,
`{step key}:e`; after the n-th hold released or lapsed, `{step key}:h{n}:r{m}` and
`{step key}:h{n}:e`), so a de-duplicating receiver drops only true repeats.

- A hold lapses **once**: its claim (on the holder and the hold's end the tick
  read) hands the cue back to nobody, keeps who had it for the notices, sets its
  reminders (if it has any) and its escalation due now, and writes its
  `step.hold_lapsed` row; the reminder and the escalation that follow name who had it.

- A reminder is **at most once**: the claim moves the count and the next moment
  (`max(now, moment) + interval`: a resumed run gets one reminder, not a backlog)
  and writes its `step.reminder` row; a post that fails adds a `notice.failed`
  row and is not sent again.
- An escalation is **at least once**: each try's claim moves its moment on by the
  retry backoff and writes its `step.escalated` row, so a tick lost mid-post is
  followed by another try; only a post, or the last of `max_attempts` tries
  failing (its `notice.failed` row, counted in the tick's errors), ends it.

Every claim and its row commit together: a tick lost after the claim leaves the
row saying the post was begun, never a claim nobody can see.

A timeout ends the cue or pauses the run: a move in a unit of work of the walk's
(`cue_timeout.py`), since the phase may go on after it in the same transaction.
A post is made only when the budget admits its channel's deadline.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from enum import Enum

from ...db import Database, Tx
from .. import journal
from ..actions.context import ActionContext
from ..actions.notice import Channel, Notice
from ..actions.perform import Actions
from ..actions.registry import REMIND_LIMIT_DEFAULT
from ..errors import ChannelError
from ..model import Run, Step
from ..store import log, steps
from .budget import Budget
from .outcomes import Rules

logger = logging.getLogger(__name__)


class Timer(str, Enum):
    TIMEOUT = "timeout"
    LAPSE = "lapse"
    ESCALATE = "escalate"
    REMIND = "remind"


def due(step: Step, now: datetime) -> Timer | None:
    """The parked step's timer that has come, if any: a timeout first (it ends the wait), then a hold's end (it
    makes the escalation and the reminders due), then the escalation."""
    if not step.parked:
        return None
    for timer, moment in ((Timer.TIMEOUT, step.times_out_at), (Timer.LAPSE, step.held_until),
                          (Timer.ESCALATE, step.escalate_at), (Timer.REMIND, step.remind_at)):
        if moment is not None and moment <= now:
            return timer
    return None


def waited_seconds(step: Step, now: datetime) -> int:
    """How long the cue has been up (since its first attempt began)."""
    return max(0, int((now - (step.started_at or now)).total_seconds()))


def remind_limit(step: Step) -> int:
    return int(step.params.get("remind_limit", REMIND_LIMIT_DEFAULT))


class Attender:
    """Posts one due reminder or escalation of a parked cue; each call is one claim and at most one post."""

    def __init__(self, db: Database, actions: Actions, rules: Rules, now: datetime, budget: Budget):
        self.db, self.actions, self.rules, self.now, self.budget = db, actions, rules, now, budget

    def affordable(self, timer: Timer) -> bool:
        """The tick's time left admits this timer's post (a timeout and a lapse post nothing)."""
        return timer in (Timer.TIMEOUT, Timer.LAPSE) or self.budget.allows(self._channel(timer).timeout)

    def lapse(self, step: Step) -> bool:
        """The hold the tick read ends unanswered: nobody has the cue, and its reminders (if it has any) and its
        escalation are due now, for the calls that follow; False if a person moved the cue first."""
        remind_at = self.now if step.params.get("remind_after_seconds") else None
        entry = journal.step_hold_lapsed(step)

        # guard: a-lapses-row-written-apart-from-it
        def claim(tx: Tx) -> bool:
            if not steps.lapse(tx, step, self.now, remind_at):
                return False
            log.append(tx, entry, self.now)
            return True

        return self.db.transaction(claim)

    def remind(self, step: Step, run: Run | None = None) -> bool:
        """The next reminder, at most once; False if another tick (or a person) moved the cue first.
        Its interval is on `run`'s clock (a rehearsal's speed divides it; None: a live run's)."""
        assert step.remind_at is not None  # noqa: S101 — for mypy only: `due` found it
        limit, n = remind_limit(step), step.reminders_sent + 1
        # guard: a-dry-runs-reminders-are-not-divided-by-its-speed
        interval = ActionContext.of(step, step.attempts, self.now, run).scaled(int(step.params["remind_after_seconds"]))
        # guard: a-resumed-run-is-reminded-of-the-backlog
        next_at = max(self.now, step.remind_at) + interval if n < limit else None
        channel, waited = self.actions.cue_channel, waited_seconds(step, self.now)
        notice = Notice.reminder(step, n, limit, waited, self.now, self.actions.console_url)
        entry = journal.step_reminder(step, n, limit, channel.name, notice.delivery_key, waited)

        # guard: a-reminders-row-written-after-its-post
        def claim(tx: Tx) -> bool:
            if not steps.claim_reminder(tx, step, n, next_at):
                return False
            log.append(tx, entry, self.now)
            return True

        if not self.db.transaction(claim):
            return False
        error = _post(channel, notice)
        if error is not None:
            logger.warning("run %s: reminder %d of step %s was not posted and is not sent again: %s",
                           step.run_id, n, step.id, error, extra={"run_id": step.run_id, "step_id": step.id})
            self.db.transaction(lambda tx: log.append(tx, journal.notice_failed(entry, error, None), self.now))
        return True

    def escalate(self, step: Step) -> tuple[bool, bool]:
        """One try of the escalation, at least once: (claimed, failed for good)."""
        retry_at = self.now + timedelta(seconds=self.rules.retry_seconds)
        tries, channel, waited = step.escalation_tries + 1, self.actions.escalations, waited_seconds(step, self.now)
        notice = Notice.escalation(step, waited, self.now, self.actions.console_url)
        entry = journal.step_escalated(step, channel.name, tries, self.rules.max_attempts, notice.delivery_key,
                                       waited)

        # guard: an-escalation-trys-row-written-after-its-post
        def claim(tx: Tx) -> bool:
            if not steps.claim_escalation(tx, step, retry_at):
                return False
            log.append(tx, entry, self.now)
            return True

        if not self.db.transaction(claim):
            return False, False
        error = _post(channel, notice)
        last = tries >= self.rules.max_attempts
        if error is not None and not last:
            logger.warning("run %s: escalation of step %s failed (try %d of %d), tried again at %s: %s",
                           step.run_id, step.id, tries, self.rules.max_attempts, retry_at.isoformat(), error,
                           extra={"run_id": step.run_id, "step_id": step.id})
            self.db.transaction(lambda tx: log.append(tx, journal.notice_failed(entry, error, retry_at), self.now))
            return True, False

        def over(tx: Tx) -> None:
            if steps.escalation_over(tx, step.id, tries) and error is not None:
                log.append(tx, journal.notice_failed(entry, error, None), self.now)

        self.db.transaction(over)
        return True, error is not None

    def _channel(self, timer: Timer) -> Channel:
        return self.actions.escalations if timer is Timer.ESCALATE else self.actions.cue_channel


def _post(channel: Channel, notice: Notice) -> str | None:
    """None when delivered; else what went wrong, for the log row."""
    try:
        channel.post(notice)
    except ChannelError as error:
        return f"{channel.name} channel: {error}"
    return None
