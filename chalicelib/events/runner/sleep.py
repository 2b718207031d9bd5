"""Sleep when idle: the tick turns its minute rule off behind a one-time wake-up and a backstop.

The invariant: **the engine is never asleep without a wake-up that fires.** Put as
the order every transition keeps (`store/engine_state.py` holds the row's half):
the state row says awake only while the minute rule is on, and the rule is off only
while the row says asleep (or waking) and that sleep's wake-up and backstop stand.
So a failure, a timeout or a lost process at any point leaves either a tick coming
(the rule on) or a schedule that starts one; nothing is ever called "awake" on the
strength of an AWS call that has not answered.

Going to sleep (`try_sleep`), when nothing is due within the planning horizon:

1. the row moves awake -> asleep (compare-and-set; it gets the sleep's epoch);
2. it looks for work again: any found, the sleep is called off (the row awake
   again, unless a later sleep holds it: its rule never went off) and the tick stays up;
3. the one-time wake-up (next work less a warm-up) and its backstop (`BACKSTOP_AFTER`
   later) are created, named after the sleep: on error the sleep is called off, the
   rule never went off, and the failure is counted (`SleepFailed`);
4. the minute rule goes off: on error it is turned back on and the sleep called off;
   if even that fails, the row stays asleep behind its wake-ups (counted too);
5. the row stays asleep (asleep -> asleep, compare-and-set on the sleep's epoch): if
   anyone moved it meanwhile (work created, or a tick woke), the tick wakes as a
   starting one does, turning the rule on even if the row already says awake, since
   a woken tick may have turned it on before step 4 turned it off. If that fails,
   a row found awake goes back to asleep behind new wake-ups.

Step 4 begins only with time for the worst case of steps 4 and 5 left in the
invocation (`SLEEP_SECONDS`; else the sleep is called off), so Lambda's timeout
never stops a tick between turning the rule off and the row's staying asleep.

Every sleep is bounded: its wake-up is early enough for its backstop to fire
within `LONGEST_SLEEP` (a day) whatever the next work is, so the engine wakes at
least once a day, looks, and sleeps again. That bounds what any lost wake-up
path can cost (a nudge lost every way, a wake time written wrong) at a day.

Waking up (`started`, at the start of every tick invocation): a row not awake has
its rule turned on first, and only then is it moved to awake (compare-and-set on
the epoch read before the call; if it moved, read it again and repeat). Then that
sleep's wake-up and backstop are deleted (a failure there only costs a spare
invocation). If the rule cannot be turned on, the row stays as it was (a `waking`
row goes back to asleep, so the next work created nudges at once), a tick a
schedule started puts the sleep's wake-up and backstop back `BACKSTOP_AFTER` and
twice that from now (so does a sleep that lost its row to a wake, below) (the schedule that started it deleted itself: without this a
rule that keeps refusing leaves nothing to try again, and with one alone a lost
invocation of it would), and the error fails the invocation. An invocation that a wake-up, a backstop or a nudge started
turns the rule on even when the row says awake. A backstop that finds the row not
awake means the wake-up was spent without waking the engine: logged, and counted
for the alarm.

Anything that creates work commits it first and then moves the row asleep ->
waking (`nudge.py`), turning the rule on and nudging the tick if it did: either
the tick's look in step 2 sees the work, or the creator finds the row asleep and
nudges, or step 5 sees the creator's move and turns the rule back on (a step 4
that turned the creator's rule off again); if that fails, the sleep's wake-up and
backstop are put back five and ten minutes from now.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

from ...db import Database
from ..adapters.aws import AWS_CALL_SECONDS, BACKSTOP_SOURCE, RULE_SOURCE, WAKE_SOURCE
from ..cron import DEFAULT_TIMEZONE, Schedule
from ..store import chat_messages, definitions, engine_state, escalations, runs
from ..store.engine_state import SleepState

logger = logging.getLogger(__name__)

WARM_UP = timedelta(seconds=60)  # Aurora resumes in ~15 s; the first tick then has the rest of the minute
BACKSTOP_AFTER = timedelta(minutes=5)  # the backstop fires this long after the wake-up it backs
LOOK_AHEAD = timedelta(days=400)  # past any yearly schedule's next occurrence; the wake-up is never later
# A sleep's backstop fires within this, whatever the next work: a nudge lost every way waits no longer.
LONGEST_SLEEP = timedelta(days=1)
# Rule off, stay asleep, rule on again, and the two wake-ups of a sleep put back: what step 4 on may take.
SLEEP_SECONDS = 4 * AWS_CALL_SECONDS
MAX_WAKE_TRIES = 5  # a row moved under a waking tick this many times running: its rule is on, it gives up

SLEEP_LOST_SOURCE = "events.sleep"  # a sleep that lost its row to a wake while the rule went off

_ALL = datetime(9999, 12, 31)


def next_work(db: Database, now: datetime, horizon: timedelta, escalate_after: timedelta | None = None,
              chat_platforms: frozenset[str] = frozenset()) -> datetime:
    """When the tick next has something to do: the earliest run wake time (a parked cue's timers among
    them), a stalled run's escalation (with `escalate_after`), a chat message's next edit try (on the
    `chat_platforms` the tick has a bot for), or a recurring
    definition's next unplanned occurrence (in its own time zone) less the horizon, whichever is earliest;
    never later than the look-ahead's end, so a sleep past it re-plans then."""
    wake = db.autocommit(runs.next_wake)
    if escalate_after:
        stall = db.autocommit(lambda tx: escalations.next_due(tx, escalate_after))
        if stall is not None and (wake is None or stall < wake):
            wake = stall
    # guard: a-chat-edit-to-try-again-sleeps-through
    edit = db.autocommit(lambda tx: chat_messages.next_edit_at(tx, chat_platforms))
    if edit is not None and (wake is None or edit < wake):
        wake = edit
    for recurrence in db.autocommit(lambda tx: definitions.recurrences(tx, _ALL)):
        after = max(now, recurrence.planned_through or now, recurrence.version_created_at)
        # guard: wake-up-in-utc-not-the-definitions-zone
        zone = recurrence.timezone or DEFAULT_TIMEZONE
        try:
            occurrence = next(Schedule(recurrence.cron, zone).between(after, now + LOOK_AHEAD), None)
        except ValueError:  # the planner logs an unreadable schedule; it creates no work
            continue
        # guard: wake-up-at-the-later-of-occurrence-and-wake-time
        if occurrence is not None and (wake is None or occurrence - horizon < wake):
            wake = occurrence - horizon
    look_ahead_end = now + LOOK_AHEAD
    # guard: no-wake-up-past-the-look-ahead
    return look_ahead_end if wake is None or wake > look_ahead_end else wake


def wake_up_at(now: datetime, work: datetime) -> datetime:
    """The wake-up of a sleep that begins `now` with its next work at `work`: a warm-up before the work, never
    before now, and early enough for its backstop to fire within `LONGEST_SLEEP`."""
    # guard: a-sleep-without-a-bound
    return min(max(now, work - WARM_UP), now + LONGEST_SLEEP - BACKSTOP_AFTER)


class Switches(Protocol):
    """What puts the deployment to sleep and wakes it: its minute rule, a one-time wake-up and its backstop
    (on AWS, `adapters/aws.AwsSwitches`)."""

    def rule_on(self) -> None: ...
    def rule_off(self) -> None: ...
    def set_wake_ups(self, sleep: int, wake_at: datetime, backstop_at: datetime) -> None: ...
    def set_backstop(self, sleep: int, backstop_at: datetime) -> None: ...
    def cancel_wake_ups(self, sleep: int) -> None: ...


class Sleeper:
    """The tick's side of sleeping: waking up at the start of an invocation, and going to sleep when idle."""

    def __init__(self, db: Database, switches: Switches, horizon: timedelta,
                 time_left: Callable[[], float] = lambda: math.inf, escalate_after: timedelta | None = None,
                 chat_platforms: frozenset[str] = frozenset()):
        self.db, self.switches, self.horizon, self.time_left = db, switches, horizon, time_left
        self.escalate_after = escalate_after  # EVENT_ESCALATE_AFTER_SECONDS: a stalled run's escalation wakes it
        self.chat_platforms = chat_platforms  # a chat edit to try again wakes it (the tick's bots)
        self.failed_sleeps = 0  # sleeps that could not be set, their wake-ups or the rule refused (SleepFailed)

    def started(self, now: datetime, source: str = RULE_SOURCE) -> bool:
        """A tick invocation began: if the deployment slept (or was being woken), it is awake now; True if
        this invocation woke it. Raises if the rule could not be turned on (the row is left not awake)."""
        for _ in range(MAX_WAKE_TRIES):
            seen = self.db.autocommit(engine_state.read)
            if seen.state == SleepState.AWAKE:
                # guard: woken-tick-trusts-an-awake-row
                if source != RULE_SOURCE:
                    self._rule_on_anyway(source)
                return False
            # guard: wake-commits-awake-before-enabling-the-rule
            # guard: failed-wake-leaves-the-row-waking
            try:
                self.switches.rule_on()
            except Exception:
                if seen.state == SleepState.WAKING:  # the next work created nudges again at once
                    self.db.autocommit(lambda tx: engine_state.back_to_sleep(tx, now, seen.epoch))
                logger.error("could not turn the minute rule back on: the engine stays %s (%s woke it)", seen.state.value,
                             source)
                if source in (WAKE_SOURCE, BACKSTOP_SOURCE, SLEEP_LOST_SOURCE) and seen.wake_ups is not None:
                    # guard: a-refused-wake-puts-no-backstop-back
                    self._wake_ups_again(now, seen.wake_ups)
                raise
            if self.db.autocommit(lambda tx: engine_state.up(tx, now, seen.epoch)):
                # guard: wake-keeps-its-wake-ups
                if seen.wake_ups is not None:
                    self._cancel(seen.wake_ups)
                if source == BACKSTOP_SOURCE:
                    logger.warning("the backstop woke the deployment: its wake-up at %s did not",
                                   seen.sleeps_until.isoformat() if seen.sleeps_until else "?")
                logger.info("awake: the minute rule is on again (%s)", source)
                return True
        logger.warning("the engine state moved under this tick %d times running; the minute rule is on", MAX_WAKE_TRIES)
        return False

    def try_sleep(self, now: datetime) -> bool:
        """Go to sleep if nothing is due within the horizon; True if the deployment now sleeps."""
        first = next_work(self.db, now, self.horizon, self.escalate_after, self.chat_platforms)
        if self._busy(first, now):
            return False
        sleep = self.db.transaction(lambda tx: engine_state.fall_asleep(tx, now, wake_up_at(now, first)))
        if sleep is None:
            return False
        wake = next_work(self.db, now, self.horizon, self.escalate_after, self.chat_platforms)  # work that came while we decided
        # guard: sleep-without-looking-again
        if self._busy(wake, now):
            self._call_off(now, sleep)
            return False
        wake_at = wake_up_at(now, wake)
        try:
            self.switches.set_wake_ups(sleep, wake_at, wake_at + BACKSTOP_AFTER)
        except Exception:
            # guard: sleep-goes-on-without-its-wake-up
            self.failed_sleeps += 1
            logger.exception("could not set the wake-up: staying awake")
            if self._call_off(now, sleep):
                self._cancel(sleep)
            return False
        # guard: sleep-turns-the-rule-off-without-time-to-finish
        if self.time_left() < SLEEP_SECONDS:  # the wake-ups took long: no time left to finish safely
            if self._call_off(now, sleep):
                self._cancel(sleep)
            return False
        try:
            self.switches.rule_off()
        except Exception:
            self.failed_sleeps += 1
            logger.exception("could not turn the minute rule off: staying awake")
            # guard: sleep-stays-asleep-when-the-rule-will-not-go-off
            return self._rule_back_on(now, sleep)
        # guard: sleep-ignores-a-wake-while-the-rule-went-off
        if self.db.autocommit(lambda tx: engine_state.stay_asleep(tx, now, sleep, wake_at)):
            logger.info("asleep until %s (backstop %s)", wake_at.isoformat(), (wake_at + BACKSTOP_AFTER).isoformat())
            return True
        # Work was created, or a tick woke, while the rule went off: that tick may have turned it on first.
        try:
            self.started(now, SLEEP_LOST_SOURCE)  # the rule on, whatever the row says, and the row awake
        except Exception:
            logger.exception("could not turn the minute rule back on after a wake during the sleep")
            self._asleep_again(now, wake_at)
        return False

    def _busy(self, wake: datetime, now: datetime) -> bool:
        return wake <= now + self.horizon

    def _call_off(self, now: datetime, sleep: int) -> bool:
        """The sleep is called off while the rule is on: the row awake, unless a later sleep holds it."""
        return self.db.autocommit(lambda tx: engine_state.call_off(tx, now, sleep))

    def _rule_back_on(self, now: datetime, sleep: int) -> bool:
        """Turning the rule off failed (it may be off all the same); True if the row stays asleep."""
        try:
            self.switches.rule_on()
        except Exception:
            # guard: sleep-says-awake-while-the-rule-may-be-off
            logger.exception("could not turn the minute rule back on: asleep behind the wake-up")
            return True
        if self._call_off(now, sleep):
            self._cancel(sleep)
        return False

    def _asleep_again(self, now: datetime, wake_at: datetime) -> None:
        """The rule may be off and the row says awake: put the row back to asleep behind new wake-ups."""
        seen = self.db.autocommit(engine_state.read)
        if seen.state != SleepState.AWAKE:
            return  # a nudge is in flight (its tick turns the rule on) or another sleep holds the row
        sleep = self.db.transaction(lambda tx: engine_state.asleep_again(tx, now, seen.epoch, wake_at))
        if sleep is not None:
            self.switches.set_wake_ups(sleep, wake_at, wake_at + BACKSTOP_AFTER)

    def _wake_ups_again(self, now: datetime, sleep: int) -> None:
        """A schedule spent itself on a tick that could not turn the rule on: the sleep's wake-up and backstop
        stand again, `BACKSTOP_AFTER` and twice that from now, so a rule that stays unwilling is tried again
        rather than left off for good, and one lost invocation still leaves the other (as a sleep does)."""
        try:
            # guard: a-refused-wake-puts-back-only-the-backstop
            self.switches.set_wake_ups(sleep, now + BACKSTOP_AFTER, now + 2 * BACKSTOP_AFTER)
        except Exception:
            logger.exception("could not put the wake-ups back: nothing but created work wakes the engine")

    def _rule_on_anyway(self, source: str) -> None:
        try:
            self.switches.rule_on()
        except Exception:
            logger.exception("could not make sure the minute rule is on (%s woke the tick)", source)

    def _cancel(self, sleep: int) -> None:
        try:
            self.switches.cancel_wake_ups(sleep)
        except Exception:  # a stray wake-up only starts a spare invocation
            logger.warning("could not delete the wake-ups of sleep %d: they fire into an awake engine", sleep, exc_info=True)
