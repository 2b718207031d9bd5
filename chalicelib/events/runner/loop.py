"""Ticks over time: tick when the earliest wake time comes, and look for it about once a second (ten times a
second while a person is awaited).

The invariant: between ticks the loop sends one statement (the earliest wake
time and whether a run waits for a person, the first entries of two indexes)
every poll period, never faster: 0.9 s, or 0.1 s while a run waits for a person
(a cue, a decision, an advance, a resume). It ticks as soon as a new wake time
it has seen comes, never less than a poll period after the last tick began. So
a step behind a wait starts at its due time, and the step after a person's
control (which set the run's wake time to now) within about a tenth of a second
of their press, the last person's awaited too (the first look after a person
was awaited keeps their pace). A wake time the last tick already had a chance at (a run another
process holds, or a step whose attempt did not fit the time that tick had: the
loop had read that very wake time before the tick began, or the tick wrote it,
its own time) is tried again 0.9 s after that tick began, never sooner, whoever
is awaited. A wake time older than the last tick and read for the first time was
committed while that tick ran (a control's transaction reads its time before the
tick began and commits after): it is due a tenth of a second after that tick
began. Only a tick that ran out of its own time with work left (so lasted longer
than 0.9 s) is followed at once.

Where the deployment may sleep (`sleeper`), a loop that finds nothing due
within the planning horizon tries to put it to sleep (`sleep.py`), at most
once a minute, and ends if it did.

Wake times are database times; the loop maps them onto its monotonic clock
through the last tick's `now`, so a process whose own clock is skewed still
wakes on time.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .budget import Budget
from .sleep import Sleeper
from .tick import Runner, TickReport

# The longest the loop goes without reading the earliest wake time: about a second, a
# little less, so that a read and the tick after it fit inside the second a step's wait may overrun.
POLL_SECONDS = 0.9
# While a run waits for a person: their press is followed by the next step's dispatch within about this
# and a tick (a person watching the chat message or the console sees it move at once). Ten indexed reads a
# second, only while the deployment is awake and somebody is waited for (docs/performance.md, P8 idle).
PEOPLE_POLL_SECONDS = 0.1
PLAN_SECONDS = 60.0  # recurring definitions are planned this often (their horizon is minutes)


@dataclass
class Loop:
    """Run ticks until `finish_by` (monotonic seconds) or until `stop` is set."""

    runner: Runner
    finish_by: float
    tick_seconds: float  # each tick's window for taking work
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    on_report: Callable[[TickReport], None] = lambda report: None
    stop: threading.Event = field(default_factory=threading.Event)
    sleeper: Sleeper | None = None  # set where the deployment may sleep when idle (EVENTS_SLEEP=on)
    wake_reads: int = 0  # statements sent between ticks, for the idle figures
    budget: Budget | None = None  # the tick in hand's, so a stop can reach its workers
    slept: bool = False  # the loop ended because the deployment went to sleep
    reports: list[TickReport] = field(default_factory=list)  # every tick's, in order (what `run` returns)
    read_before_tick: datetime | None = None  # the earliest wake time the loop read before the last tick began
    person_was_awaited: bool = False  # at the loop's last look: the look after a person's press keeps their pace

    def run(self) -> list[TickReport]:
        self._tried_sleep = -math.inf
        reports = self.reports
        planned_at = -math.inf
        while self._fits():
            started = self.monotonic()
            plan = started - planned_at >= PLAN_SECONDS
            self.budget = Budget(min(started + self.tick_seconds, self.finish_by), self.finish_by, self.monotonic, self.stop)
            report = self.runner.tick(self.budget, plan=plan)
            planned_at = started if plan else planned_at
            reports.append(report)
            self.on_report(report)
            if not self._wait_for_wake(report, started, planned_at + PLAN_SECONDS):
                break
        return reports

    def _sleeps(self, wake: datetime | None, report: TickReport, started: float) -> bool:
        """Nothing due within the horizon: try to put the deployment to sleep, at most once a minute."""
        now = self.monotonic()
        if self.sleeper is None or now - self._tried_sleep < PLAN_SECONDS:
            return False
        estimate = report.now + timedelta(seconds=now - started)
        if wake is not None and wake <= estimate + self.runner.horizon:
            return False
        self._tried_sleep = now
        self.slept = self.sleeper.try_sleep(estimate)
        return self.slept

    def _fits(self) -> bool:
        return not self.stop.is_set() and self.finish_by - self.monotonic() > self.runner.step_worst_case_seconds

    def _wait_for_wake(self, report: TickReport, started: float, plan_due: float) -> bool:
        """Sleep until the next tick is due, never sooner than the poll period after this one began; False if
        the loop should end instead."""
        earliest = started + POLL_SECONDS
        # guard: the-loop-ticks-faster-than-it-polls
        if report.out_of_budget and self.monotonic() >= earliest:
            return True  # work was left for want of time: straight on
        while self._fits():
            lookout = self.runner.lookout()
            self.wake_reads += 1
            wake = lookout.wake
            if self._sleeps(wake, report, started):
                return False
            # Older than the last tick, not its own (it writes its time), and not read before it: committed while
            # it ran by someone whose transaction read the time before it began (a person's control).
            # guard: a-wake-committed-while-the-tick-ran-waits-a-second
            pressed = wake is not None and wake < report.now and wake != self.read_before_tick
            # The last person awaited has just pressed: their step is due now, at their pace, not a second after
            # the last tick (one look at that pace more, then a second's).
            # guard: the-look-after-the-last-press-waits-a-second
            awaited = lookout.person_awaited or self.person_was_awaited
            self.person_was_awaited = lookout.person_awaited
            # guard: a-person-awaited-is-looked-for-once-a-second
            poll = PEOPLE_POLL_SECONDS if awaited or pressed else POLL_SECONDS
            if wake is None:
                due = plan_due
            elif wake > report.now:  # new since the last tick looked: due when it comes
                due = min(plan_due, started + (wake - report.now).total_seconds())
            elif pressed:
                due = started
            else:  # the last tick had its chance at it (another process holds the run, or its step did not fit)
                due = earliest
            due = max(due, started + poll)  # whatever is due, the loop never ticks faster than it polls
            now = self.monotonic()
            pause = min(due, now + poll, self.finish_by - self.runner.step_worst_case_seconds) - now
            if pause > 0:
                self.sleep(pause)
            if self.monotonic() >= due:
                self.read_before_tick = wake
                return True
        return False
