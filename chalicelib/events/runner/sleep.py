"""Sleep when idle: the tick turns its minute rule off, sets a one-time wake-up, and lets the database pause.

The invariant: a sleeping deployment never holds live work. Work means a run
whose wake time falls inside the planning horizon, or an occurrence of a
recurring definition that does. The tick goes to sleep in this order:

1. the state row moves awake -> asleep (compare-and-set);
2. it looks for work again: any found, the row goes back to awake and the tick stays up;
3. the minute rule goes off and a one-time EventBridge Scheduler schedule is set
   for the next wake less a warm-up (none if nothing is ever due);
4. it reads the row once more: someone who created work since step 1 has moved
   it to waking, so the rule goes back on and the tick stays up;
5. it closes its database connections (Aurora pauses only once none is open).

Anything that creates work commits it first and then moves the row asleep ->
waking (`nudge.py`), nudging the tick if it did: either the tick's look in
step 2 sees the work, or the row is already asleep when the creator looks, or
step 4 sees the creator's move. The tick that starts moves the row to awake
and turns the rule back on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from ...db import Database
from ..cron import DEFAULT_TIMEZONE, Schedule
from ..nudge import tick_payload
from ..store import definitions, engine_state, runs

logger = logging.getLogger(__name__)

WARM_UP = timedelta(seconds=60)  # Aurora resumes in ~15 s; the first tick then has the rest of the minute
_LOOK_AHEAD = timedelta(days=400)  # past any yearly schedule's next occurrence
_ALL = datetime(9999, 12, 31)


def next_work(db: Database, now: datetime, horizon: timedelta) -> datetime | None:
    """When the tick next has something to do: the earliest run wake time, or a recurring
    definition's next unplanned occurrence less the horizon (when the planner takes it); None: never."""
    wake = db.autocommit(runs.next_wake)
    for recurrence in db.autocommit(lambda tx: definitions.recurrences(tx, _ALL)):
        after = max(now, recurrence.planned_through or now, recurrence.version_created_at)
        try:
            occurrence = next(Schedule(recurrence.cron, recurrence.timezone or DEFAULT_TIMEZONE).between(after, now + _LOOK_AHEAD), None)
        except ValueError:  # the planner logs an unreadable schedule; it creates no work
            continue
        if occurrence is not None and (wake is None or occurrence - horizon < wake):
            wake = occurrence - horizon
    return wake


class Switches(Protocol):
    """What puts the deployment to sleep and wakes it: its minute rule and a one-time wake-up."""

    def rule_on(self) -> None: ...
    def rule_off(self) -> None: ...
    def wake_at(self, when: datetime) -> None: ...
    def cancel_wake(self) -> None: ...


@dataclass
class AwsSwitches:
    """The minute rule and the one-time wake-up schedule, through boto3 clients the caller builds."""

    events: Any
    scheduler: Any
    rule_name: str
    function_arn: str
    role_arn: str

    @property
    def schedule_name(self) -> str:
        return f"{self.rule_name}-wake"  # the tick's role may manage only schedules named after its rule

    def rule_on(self) -> None:
        self.events.enable_rule(Name=self.rule_name)

    def rule_off(self) -> None:
        self.events.disable_rule(Name=self.rule_name)

    def wake_at(self, when: datetime) -> None:
        """The one-time schedule, replaced if one is set; it deletes itself after firing."""
        self.cancel_wake()
        self.scheduler.create_schedule(
            Name=self.schedule_name,
            ScheduleExpression=f"at({when:%Y-%m-%dT%H:%M:%S})",
            ScheduleExpressionTimezone="UTC",
            FlexibleTimeWindow={"Mode": "OFF"},
            Target={"Arn": self.function_arn, "RoleArn": self.role_arn, "Input": tick_payload("events.wake").decode()},
            ActionAfterCompletion="DELETE",
        )

    def cancel_wake(self) -> None:
        try:
            self.scheduler.delete_schedule(Name=self.schedule_name)
        except self.scheduler.exceptions.ResourceNotFoundException:
            pass


def aws_switches(rule_name: str, function_arn: str, role_arn: str) -> AwsSwitches:
    import boto3  # only a deployment that sleeps needs it

    return AwsSwitches(boto3.client("events"), boto3.client("scheduler"), rule_name, function_arn, role_arn)


class Sleeper:
    """The tick's side of sleeping: waking up at the start of an invocation, and going to sleep when idle."""

    def __init__(self, db: Database, switches: Switches, horizon: timedelta):
        self.db, self.switches, self.horizon = db, switches, horizon

    def started(self, now: datetime) -> None:
        """A tick invocation began: if the deployment slept (or was being woken), it is awake now."""
        if self.db.autocommit(lambda tx: engine_state.up(tx, now)):
            self.switches.rule_on()
            self.switches.cancel_wake()
            logger.info("awake: the minute rule is on again")

    def try_sleep(self, now: datetime) -> bool:
        """Go to sleep if nothing is due within the horizon; True if the deployment now sleeps."""
        first = next_work(self.db, now, self.horizon)
        if self._busy(first, now) or not self.db.autocommit(lambda tx: engine_state.fall_asleep(tx, now, first)):
            return False
        wake = next_work(self.db, now, self.horizon)  # work that came while we decided
        if self._busy(wake, now):
            self.db.autocommit(lambda tx: engine_state.up(tx, now))
            return False
        self.switches.rule_off()
        if wake is not None:
            self.switches.wake_at(max(now, wake - WARM_UP))
        if self.db.autocommit(engine_state.state) != "asleep":  # work created meanwhile woke it
            self.started(now)
            return False
        logger.info("asleep until %s", "woken" if wake is None else (wake - WARM_UP).isoformat())
        return True

    def _busy(self, wake: datetime | None, now: datetime) -> bool:
        return wake is not None and wake <= now + self.horizon
