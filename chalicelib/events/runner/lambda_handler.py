"""The `tick` Lambda's handler: one scheduled invocation (the minute rule, a wake-up, its backstop or a nudge).

EventBridge fires the `tick` function at most once a minute; one invocation
ticks whenever a run's wake time comes (see `loop`) for that minute, as far as
the Lambda's remaining time allows, and never starts a step whose worst case
would not fit before the hard deadline.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pymysql

from ... import runtime, schema_version
from ...config import Settings
from ...db import HANDSHAKE_SECONDS, lost_connection
from ...errors import SchemaBehind
from ..adapters.aws import BACKSTOP_SOURCE, RULE_SOURCE, WAKE_SOURCE
from ..store import resources, runs, steps
from .compose import process_runner, process_switches
from .loop import Loop
from .sleep import Sleeper
from .tick import Runner
from .tick_metrics import counts

if TYPE_CHECKING:  # typing only: the tick's cold start does not import it
    from aws_lambda_powertools.utilities.typing import LambdaContext

SCHEDULE_PERIOD_SECONDS = 60.0  # EventBridge's rate: the next invocation takes over after this
SAFETY_SECONDS = 3.0  # left at the end of an invocation for returning and flushing logs

logger = logging.getLogger(__name__)


# The summary of an invocation that ticked no tick (the database out of reach).
NOTHING_TICKED: dict[str, Any] = {"ticks": [], "wake_reads": 0, "asleep": False, "parked_cue_age_seconds": None,
                                  "paused_run_age_seconds": None}


def run_invocation(
    runner: Runner,
    *,
    remaining_seconds: Callable[[], float],
    tick_seconds: float,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    sleeper: Sleeper | None = None,
) -> Loop:
    """Ticks on wake times for one schedule period, inside the invocation's remaining time; the loop, run."""
    finish_by = monotonic() + min(SCHEDULE_PERIOD_SECONDS, remaining_seconds() - SAFETY_SECONDS)
    loop = Loop(runner, finish_by, tick_seconds, monotonic=monotonic, sleep=sleep, sleeper=sleeper)
    loop.run()
    if loop.slept:
        runner.close_connections()  # the database pauses only once no connection is open
    return loop


def scheduled_tick(context: LambdaContext, source: str = RULE_SOURCE) -> dict[str, Any]:
    """The `tick` Lambda's work (the minute rule, a one-time wake-up, its backstop or a nudge: `source`):
    a summary of its ticks.

    A database that stays unreachable for the whole of the invocation's budget ends
    it with one ERROR line and a normal return (a failed invocation would only add a
    traceback and an asynchronous retry). Where the deployment sleeps, the invocation
    first turns the minute rule on, so a next tick comes whatever woke this one (a
    spent wake-up or nudge would leave none), and its line says which is true; so
    does one whose runner cannot be built (a live setting), before it fails.
    """
    started = time.monotonic()
    settings = runtime.settings()
    try:
        runner = process_runner()
    except Exception:
        # A live setting the runner cannot be built from (a dry run's never stops it: `compose`): the wake-up
        # logic below never runs, so whatever woke this invocation (a spent wake-up, its backstop) is not
        # the last tick there is: the minute rule is turned on, as for an outage, and the line says so.
        # guard: a-runner-that-cannot-be-built-leaves-no-next-tick
        logger.error("the tick's runner cannot be built from its settings; %s", _next_tick_after_outage(settings, source))
        raise

    def remaining_seconds() -> float:
        return context.get_remaining_time_in_millis() / 1000

    # The database is waited for here, inside the budget the loop would take work in: every read
    # below needs it (the parked cues, a sleeping deployment's database clock) and would otherwise
    # fail at once. At least one whole connection attempt is made, however little time is left.
    reach_until = started + min(SCHEDULE_PERIOD_SECONDS, remaining_seconds() - SAFETY_SECONDS) - runner.step_worst_case_seconds
    woke = False
    try:
        runner.db.reach(max(reach_until, time.monotonic() + HANDSHAKE_SECONDS))
        behind = schema_version.behind(runner.db, log=False)
        # guard: the-tick-works-on-an-unmigrated-schema
        if behind is not None:  # before the first migrate, or a migration that failed or was undone
            runner.db.close()  # nothing held open: the database may pause meanwhile
            # Failed, not ended normally: no run moves until it is migrated, and a deployment's tick only meets
            # this when something went wrong, so TickErrorsAlarm and the alarm topic's failure record say it.
            raise SchemaBehind(f"{behind}: no run moves until it is; `make migrate` applies it (after `make unlock` "
                               "if a killed migrate left its lock), and the next tick invocation looks again")
        parked_cue_age, paused_run_age = _waits_for_a_person(runner)  # read first: after a sleep the connections are closed
        resources_left = runner.db.autocommit(resources.count_left)
        sleeper = None
        if settings.sleep:
            sleeper = Sleeper(runner.db, process_switches(settings), runner.horizon,
                              time_left=lambda: remaining_seconds() - SAFETY_SECONDS,
                              escalate_after=timedelta(seconds=settings.escalate_after_seconds),
                              chat_platforms=runner.chat.platforms() if runner.chat else frozenset())
            woke = sleeper.started(runtime.clock().now(), source)
        loop = run_invocation(runner, remaining_seconds=remaining_seconds, tick_seconds=settings.tick_seconds, sleeper=sleeper)
    except pymysql.err.OperationalError as error:
        if not lost_connection(error):
            raise  # not an outage: a failure worth its traceback and the failed invocation's alarm
        seconds = round(time.monotonic() - started, 3)
        logger.error("the database was unreachable for this tick invocation's %.0f s (%s); %s", seconds,
                     error.args[-1], _next_tick_after_outage(settings, source))
        return {**NOTHING_TICKED, "seconds": seconds, "database_unreachable": True}
    ticks = [r.summary() for r in loop.reports]
    totals = invocation_totals(ticks)
    summary = {
        "ticks": ticks,
        "counts": counts(totals),  # the metrics the ticks' figures make (tick_metrics.py); observability publishes
        "wake_reads": loop.wake_reads,
        "asleep": loop.slept,
        "parked_cue_age_seconds": parked_cue_age,
        "paused_run_age_seconds": paused_run_age,
        "resources_left": resources_left,  # what cleanups could not revert (revert_failed): the ResourcesLeft metric
        "seconds": round(time.monotonic() - started, 3),  # wall time: what Lambda bills
        # guard: backstop-wake-not-counted
        "backstop_woke": woke and source == BACKSTOP_SOURCE,  # its wake-up was spent without waking the engine
        "sleep_failed": sleeper.failed_sleeps if sleeper else 0,  # SleepFailed: it stays awake while they fail
    }
    # the line carries the totals, not the same figures again under their metrics' names
    line = {key: value for key, value in summary.items() if key != "counts"}
    logger.info("tick invocation finished", extra={**line, "ticks": totals})
    return summary


def _next_tick_after_outage(settings: Settings, source: str) -> str:
    """What comes after an invocation that never reached the database: the minute rule is turned on where the
    deployment sleeps (this may have been its only wake-up); the words say what is true."""
    if not settings.sleep:
        return "the next scheduled tick tries again"
    try:
        # guard: unreachable-wake-leaves-no-next-tick
        process_switches(settings).rule_on()
    except Exception as error:  # the line says what is left, whatever AWS answered
        left = ("nothing is left to wake the engine: turn its minute rule on" if source == BACKSTOP_SOURCE
                else "only the sleep's backstop wakes the engine" if source == WAKE_SOURCE
                else "the next scheduled tick tries again" if source == RULE_SOURCE
                else "only the sleep's wake-up and backstop wake the engine")
        return f"the minute rule could not be turned on ({error!r}): {left}"
    return "the minute rule is on: the next minute's tick tries again"


def invocation_totals(ticks: list[dict[str, Any]]) -> dict[str, Any]:
    """An invocation's tick summaries as one: counts added, verdicts and statuses merged, the longest due lag.

    The invocation's log line carries this rather than every tick's summary, so it
    stays one size however many ticks a busy minute makes (a tick each time a wake
    time comes): the log bills per byte, and per tick it would bill per step.
    """
    totals: dict[str, Any] = {"count": len(ticks)}
    for tick in ticks:
        for key, value in tick.items():
            if key == "now":
                continue  # the line's own timestamp says when
            if key == "due_lag_seconds":
                if value is not None:
                    totals[key] = max(totals.get(key, 0.0), value)
            elif isinstance(value, dict):
                merged = totals.setdefault(key, {})
                for name, count in value.items():
                    merged[name] = merged.get(name, 0) + count
            else:
                totals[key] = totals.get(key, 0) + value  # a flag (out_of_budget) counts the ticks it was set in
    return totals


def _waits_for_a_person(runner: Runner) -> tuple[float, float]:
    """How long the longest-waiting parked cue and the longest-paused run have waited (for their alarms):
    0 when nothing waits.

    Published by every invocation; the deployment wakes for each such wait's escalation, so the alarms
    (TreatMissingData: ignore) see the figure pass their threshold even while it sleeps between. Missing
    data keeps an alarm's state, so the 0 of an invocation with nothing waiting is what returns it to OK."""
    now = runner.clock.now()

    def age(since: datetime | None) -> float:
        return 0.0 if since is None else max(0.0, (now - since).total_seconds())

    return age(runner.db.autocommit(steps.oldest_parked_since)), age(runner.db.autocommit(runs.oldest_paused_since))


