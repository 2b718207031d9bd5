"""Sleep and wake that can never strand the engine (issue 21): each way the old order stranded it, pinned.

Each test names the stranding case it pins and says what the engine did before
the fix (every one of them failed on that code). The AWS side is moto, reached
through the engine's own clients (`adapters/aws.aws_client`, with their deadlines), and
faults are botocore hooks on those clients (`tests/support/aws_faults.py`), met
inside botocore's retries as a real fault would be.
"""

import threading
from datetime import datetime, timedelta

import boto3
import pytest
from botocore.exceptions import ConnectionClosedError
from moto import mock_aws

from chalicelib.config import Settings
from chalicelib.db import Database
from chalicelib.events import nudge
from chalicelib.events.adapters import aws as aws_adapter
from chalicelib.events.adapters.aws import BACKSTOP_SOURCE, NUDGE_SOURCE, WAKE_SOURCE, AwsSwitches, aws_switches
from chalicelib.events.runner import compose
from chalicelib.events.runner.sleep import (
    BACKSTOP_AFTER,
    LONGEST_SLEEP,
    LOOK_AHEAD,
    SLEEP_SECONDS,
    WARM_UP,
    Sleeper,
    next_work,
)
from chalicelib.events.store import engine_state
from tests.support.aws_faults import Faults
from tests.support.factory import document, make_definition
from tests.support.runner_kit import schedule, step

RULE = "events-tick"
FUNCTION = "arn:aws:lambda:eu-west-1:123456789012:function:events-tick"
ROLE = "arn:aws:iam::123456789012:role/events-wake"
HORIZON = timedelta(minutes=15)
SETTINGS = Settings(sleep=True, tick_rule_name=RULE, tick_function_arn=FUNCTION, wake_role_arn=ROLE)
HELLO = document([[step("core.announce", message="hello")]])


@pytest.fixture
def aws(monkeypatch):
    """The deployment's rule in moto, and its switches built by the engine (its clients, its deadlines)."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "test")
    monkeypatch.setattr(aws_adapter, "_clients", {})
    monkeypatch.setattr(compose, "_switches", None)
    with mock_aws():
        boto3.client("events").put_rule(Name=RULE, ScheduleExpression="rate(1 minute)", State="ENABLED")
        yield aws_switches(RULE, FUNCTION, ROLE)


@pytest.fixture
def faults(aws):
    return Faults(aws.events, aws.scheduler)


@pytest.fixture
def awake(db):
    db.autocommit(lambda tx: tx.execute("UPDATE event_engine_state SET state = 'awake', sleeps_until = NULL"))
    return db


def rule_state(aws: AwsSwitches) -> str:
    return aws.events.describe_rule(Name=RULE)["State"]


def schedules(aws: AwsSwitches) -> dict[str, datetime]:
    """The standing one-time schedules: name -> when they fire."""
    found = {}
    for entry in aws.scheduler.list_schedules()["Schedules"]:
        expression = aws.scheduler.get_schedule(Name=entry["Name"])["ScheduleExpression"]
        found[entry["Name"]] = datetime.strptime(expression, "at(%Y-%m-%dT%H:%M:%S)")
    return found


def row(db) -> engine_state.EngineState:
    return db.autocommit(engine_state.read)


def asleep_behind(db, aws) -> tuple[datetime, datetime]:
    """The engine is asleep behind a wake-up and a backstop of its sleep: their times."""
    seen = row(db)
    assert seen.state == "asleep" and rule_state(aws) == "DISABLED"
    standing = schedules(aws)
    return standing[aws.wake_up_name(seen.wake_ups)], standing[aws.backstop_name(seen.wake_ups)]


def sleep(db, clock, aws) -> tuple[datetime, datetime]:
    assert Sleeper(db, aws, HORIZON).try_sleep(clock.now())
    return asleep_behind(db, aws)


# ── going to sleep ──────────────────────────────────────────────────────────


def test_a_sleep_whose_wake_up_cannot_be_created_stays_awake_with_its_rule_on(awake, clock, aws, faults):
    """Stranding case: CreateSchedule fails. Before the fix the row was committed asleep and the rule
    turned off before the wake-up was created: asleep, rule off, no wake-up, every later run missed."""
    schedule(awake, clock.now(), HELLO, scheduled_for=clock.now() + timedelta(hours=2))
    faults.fail("CreateSchedule")
    assert not Sleeper(awake, aws, HORIZON).try_sleep(clock.now())
    assert row(awake).state == "awake" and rule_state(aws) == "ENABLED"
    assert "DisableRule" not in faults.calls  # the rule never went off


def test_a_sleep_whose_backstop_cannot_be_created_stays_awake_and_leaves_no_wake_up(awake, clock, aws, faults):
    schedule(awake, clock.now(), HELLO, scheduled_for=clock.now() + timedelta(hours=2))
    faults.fail("CreateSchedule", nth=2)
    assert not Sleeper(awake, aws, HORIZON).try_sleep(clock.now())
    assert row(awake).state == "awake" and rule_state(aws) == "ENABLED" and schedules(aws) == {}


def test_a_sleep_whose_rule_will_not_go_off_stays_awake_with_its_rule_on(awake, clock, aws, faults):
    faults.fail("DisableRule")
    assert not Sleeper(awake, aws, HORIZON).try_sleep(clock.now())
    assert row(awake).state == "awake" and rule_state(aws) == "ENABLED" and schedules(aws) == {}


def test_a_rule_that_may_be_off_and_will_not_come_back_on_leaves_the_row_asleep_behind_its_wake_ups(
        awake, clock, aws, faults):
    """DisableRule times out after it took effect, and EnableRule fails: the row must not say awake."""
    real = aws.events.disable_rule

    def off_then_time_out(**kwargs):
        real(**kwargs)
        faults.fail("EnableRule")
        raise TimeoutError("read timeout after the rule went off")

    aws.events.disable_rule = off_then_time_out
    assert Sleeper(awake, aws, HORIZON).try_sleep(clock.now())
    asleep_behind(awake, aws)


def test_a_sleep_without_time_left_to_finish_it_safely_is_called_off_before_the_rule_goes_off(awake, clock, aws, faults):
    """Lambda's timeout must never stop a tick between turning the rule off and settling the row."""
    assert not Sleeper(awake, aws, HORIZON, time_left=lambda: SLEEP_SECONDS - 1).try_sleep(clock.now())
    assert row(awake).state == "awake" and rule_state(aws) == "ENABLED" and "DisableRule" not in faults.calls
    assert schedules(aws) == {}
    assert Sleeper(awake, aws, HORIZON, time_left=lambda: SLEEP_SECONDS + 1).try_sleep(clock.now())


def test_a_called_off_sleep_never_wakes_a_later_sleeps_row(awake, clock):
    first = awake.transaction(lambda tx: engine_state.fall_asleep(tx, clock.now(), clock.now()))
    assert awake.autocommit(lambda tx: engine_state.call_off(tx, clock.now(), first))
    later = awake.transaction(lambda tx: engine_state.fall_asleep(tx, clock.now(), clock.now()))
    assert not awake.autocommit(lambda tx: engine_state.call_off(tx, clock.now(), first))  # its rule may be off
    assert row(awake).state == "asleep" and row(awake).wake_ups == later


def test_every_sleep_leaves_a_wake_up_and_a_backstop_after_it(awake, clock, aws):
    schedule(awake, clock.now(), HELLO, scheduled_for=clock.now() + timedelta(hours=2))
    wake_up, backstop = sleep(awake, clock, aws)
    assert wake_up == clock.now() + timedelta(hours=2) - WARM_UP
    assert backstop == wake_up + BACKSTOP_AFTER


def test_a_leap_day_schedule_beyond_the_look_ahead_still_leaves_a_wake_up_at_its_end(awake, clock, aws):
    """Stranding case: a cron whose next occurrence lies past the look-ahead (`0 20 29 2 *` from December
    2026: February 2028). Before the fix the engine went to sleep with no wake-up at all. The next work is
    the look-ahead's end, and the sleep wakes a day ahead at the latest (issue 37) to look again."""
    make_definition(awake, clock.now(), document([[step("core.announce", message="leap")]],
                                                 schedule={"cron": "0 20 29 2 *"}))
    assert next_work(awake, clock.now(), HORIZON) == clock.now() + LOOK_AHEAD < datetime(2028, 2, 29, 20, 0)
    wake_up, backstop = sleep(awake, clock, aws)
    assert (wake_up, backstop) == (clock.now() + LONGEST_SLEEP - BACKSTOP_AFTER, clock.now() + LONGEST_SLEEP)


def test_a_recurring_definitions_wake_up_is_computed_in_its_own_time_zone(awake, clock, aws):
    """Issue 23, item 1: 20:00 in Los Angeles is 04:00 UTC the next morning, not 20:00 UTC."""
    clock.set(datetime(2026, 12, 4, 20, 30))
    make_definition(awake, clock.now(), document([[step("core.announce", message="evening")]],
                                                 schedule={"cron": "0 20 * * *", "timezone": "America/Los_Angeles"}))
    wake_up, _ = sleep(awake, clock, aws)
    assert wake_up == datetime(2026, 12, 5, 4, 0) - HORIZON - WARM_UP


@pytest.mark.parametrize("run_hours, cron, expected", [
    (2, "0 1 * * *", datetime(2026, 12, 4, 22, 0) - WARM_UP),  # the run at 22:00 comes first
    (9, "0 1 * * *", datetime(2026, 12, 5, 1, 0) - HORIZON - WARM_UP),  # the occurrence at 01:00 does
])
def test_the_wake_up_is_the_earlier_of_the_next_occurrence_and_the_stored_wake_times(awake, clock, aws, run_hours, cron, expected):
    """Issue 23, item 2: whichever comes first wakes the engine, the other would be too late."""
    schedule(awake, clock.now(), HELLO, scheduled_for=clock.now() + timedelta(hours=run_hours))
    make_definition(awake, clock.now(), document([[step("core.announce", message="night")]], schedule={"cron": cron}))
    wake_up, _ = sleep(awake, clock, aws)
    assert wake_up == expected


# ── waking up ───────────────────────────────────────────────────────────────


def test_a_wake_whose_rule_cannot_be_turned_on_leaves_the_row_asleep_behind_both_wake_ups(awake, clock, aws, faults):
    """Stranding case: EnableRule fails on waking. Before the fix the row was committed awake before the
    rule was enabled: awake, rule off, the backstop deleted, and no nudge ever again (it needs `asleep`)."""
    wake_up, backstop = sleep(awake, clock, aws)
    clock.set(wake_up)
    faults.fail("EnableRule")
    with pytest.raises(ConnectionClosedError):
        Sleeper(awake, aws, HORIZON).started(clock.now(), WAKE_SOURCE)  # the invocation fails: TickErrorsAlarm
    assert asleep_behind(awake, aws) == (wake_up + BACKSTOP_AFTER, wake_up + 2 * BACKSTOP_AFTER)
    clock.set(backstop)  # the wake-up put back
    assert Sleeper(awake, aws, HORIZON).started(clock.now(), WAKE_SOURCE)
    assert row(awake).state == "awake" and rule_state(aws) == "ENABLED" and schedules(aws) == {}


def test_a_rule_that_refuses_every_woken_tick_is_tried_again_behind_both_wake_ups_put_back(awake, clock, aws, faults):
    """Stranding cases (found by R11): EnableRule refuses every attempt and the schedule that started the tick
    deleted itself. Before the first fix the failed tick left nothing standing: asleep, rule off, no schedule,
    and only created work could ever wake the engine again. Before the second, it put back the backstop
    alone: one lost invocation of it (R11 at full size) left nothing standing again."""
    wake_up, _ = sleep(awake, clock, aws)
    seen, fired = row(awake), wake_up
    wake_name, backstop_name = aws.wake_up_name(seen.wake_ups), aws.backstop_name(seen.wake_ups)
    for _ in range(2):
        faults.clear()
        faults.fail("EnableRule")  # every attempt of this tick's call
        clock.set(fired)
        aws.scheduler.delete_schedule(Name=wake_name)  # it fired: ActionAfterCompletion DELETE
        with pytest.raises(ConnectionClosedError):
            Sleeper(awake, aws, HORIZON).started(clock.now(), WAKE_SOURCE)
        assert schedules(aws) == {wake_name: fired + BACKSTOP_AFTER, backstop_name: fired + 2 * BACKSTOP_AFTER}
        fired += BACKSTOP_AFTER
    assert row(awake).state == "asleep" and rule_state(aws) == "DISABLED"
    faults.clear()
    aws.scheduler.delete_schedule(Name=wake_name)  # the wake-up put back is lost: its backstop still stands
    clock.set(fired + BACKSTOP_AFTER)
    assert Sleeper(awake, aws, HORIZON).started(clock.now(), BACKSTOP_SOURCE)
    assert row(awake).state == "awake" and rule_state(aws) == "ENABLED" and schedules(aws) == {}


def test_a_nudged_tick_that_cannot_turn_the_rule_on_puts_the_row_back_to_asleep_so_the_next_work_nudges(
        awake, clock, aws, faults):
    sleep(awake, clock, aws)
    invoked = []
    assert nudge.after_work_created(awake, SETTINGS, clock.now(), invoke=invoked.append)
    faults.fail("EnableRule")
    with pytest.raises(ConnectionClosedError):
        Sleeper(awake, aws, HORIZON).started(clock.now(), NUDGE_SOURCE)
    seen = row(awake)
    assert seen.state == "asleep" and {aws.wake_up_name(seen.wake_ups), aws.backstop_name(seen.wake_ups)} <= set(schedules(aws))
    assert rule_state(aws) == "ENABLED"  # as the nudge left it: the next minute's tick wakes the engine
    assert nudge.after_work_created(awake, SETTINGS, clock.now(), invoke=invoked.append)  # at once, not after a bound
    assert invoked == [FUNCTION, FUNCTION]


def test_a_spent_wake_up_is_backed_by_the_backstop_which_says_so(awake, clock, aws, caplog):
    """Stranding case: the one wake-up spent on an invocation that failed (the tick has no retries).
    Before the fix nothing else was scheduled: the engine slept on."""
    _, backstop = sleep(awake, clock, aws)
    clock.set(backstop)  # the wake-up's invocation died before `started`
    assert Sleeper(awake, aws, HORIZON).started(clock.now(), BACKSTOP_SOURCE)
    assert row(awake).state == "awake" and rule_state(aws) == "ENABLED"
    assert any(r.levelname == "WARNING" and "the backstop woke the deployment" in r.getMessage() for r in caplog.records)


def test_a_backstop_that_fires_into_an_awake_engine_changes_nothing(awake, clock, aws):
    sleep(awake, clock, aws)
    assert Sleeper(awake, aws, HORIZON).started(clock.now(), WAKE_SOURCE)
    epoch = row(awake).epoch
    assert not Sleeper(awake, aws, HORIZON).started(clock.now(), BACKSTOP_SOURCE)
    assert row(awake).epoch == epoch and rule_state(aws) == "ENABLED"


def test_a_wake_up_that_finds_the_row_awake_still_makes_sure_the_rule_is_on(awake, clock, aws):
    """A tick killed between marking the row awake and enabling the rule, as an older engine did, is
    repaired by the next wake-up, backstop or nudge; the minute rule's own invocation needs no call."""
    aws.events.disable_rule(Name=RULE)
    assert not Sleeper(awake, aws, HORIZON).started(clock.now())
    assert rule_state(aws) == "DISABLED"
    assert not Sleeper(awake, aws, HORIZON).started(clock.now(), WAKE_SOURCE)
    assert rule_state(aws) == "ENABLED" and row(awake).state == "awake"


def test_a_nudge_whose_invoke_fails_puts_the_row_back_to_asleep(awake, clock, aws):
    """Issue 23, item 3: the row goes back to asleep, so the next work created nudges again."""
    sleep(awake, clock, aws)

    def unreachable(arn):
        raise ConnectionError("the Lambda API did not answer")

    assert not nudge.after_work_created(awake, SETTINGS, clock.now(), invoke=unreachable)
    assert row(awake).state == "asleep"
    invoked = []
    assert nudge.after_work_created(awake, SETTINGS, clock.now(), invoke=invoked.append) and invoked == [FUNCTION]


def test_a_row_left_waking_past_the_bound_is_nudged_again(awake, clock, aws):
    """Stranding case: a nudge whose invocation was lost. Before the fix the row stayed `waking` for ever
    and no work created afterwards nudged the tick again."""
    sleep(awake, clock, aws)
    invoked = []
    assert nudge.after_work_created(awake, SETTINGS, clock.now(), invoke=invoked.append)  # its invocation is lost
    clock.advance(nudge.WAKING_STALE.total_seconds() - 1)
    assert not nudge.after_work_created(awake, SETTINGS, clock.now(), invoke=invoked.append)  # may still be starting
    clock.advance(2)
    assert nudge.after_work_created(awake, SETTINGS, clock.now(), invoke=invoked.append)
    assert invoked == [FUNCTION, FUNCTION] and row(awake).state == "waking"


# ── a sleeping tick and a woken one, interleaved ────────────────────────────


class _Interleaved:
    """The engine's switches with a hook around one call: `before` runs first, `after` once it is done."""

    def __init__(self, inner, name, before=lambda: None, after=lambda: None):
        self.inner, self.name, self.before, self.after, self.calls = inner, name, before, after, 0

    def __getattr__(self, name):
        call = getattr(self.inner, name)
        if name != self.name:
            return call

        def hooked(*args):
            self.calls += 1
            if self.calls == 1:
                self.before()
            call(*args)
            if self.calls == 1:
                self.after()

        return hooked


@pytest.mark.parametrize("woken_row_moves", ["before the sleeping tick settles", "after it settled"])
def test_a_tick_woken_while_another_turns_the_rule_off_leaves_the_rule_on(db_params, awake, clock, aws, woken_row_moves):
    """Stranding case (the race a black-box run hit three times out of three): a woken tick turns the rule
    on, the tick going to sleep then turns it off, and the woken tick marks the row awake. Before the fix
    the rule stayed off with the row awake and the wake-up deleted: no tick, no nudge, no wake-up."""
    at_rule_off, rule_on_done, woken_may_go, woken_done = (threading.Event() for _ in range(4))
    first = woken_row_moves == "before the sleeping tick settles"

    def woken_first():
        woken_may_go.set()
        assert woken_done.wait(10)

    sleeping = _Interleaved(aws, "rule_off", before=lambda: (at_rule_off.set(), rule_on_done.wait(10)),
                            after=woken_first if first else lambda: None)
    woken = _Interleaved(aws, "rule_on", after=lambda: (rule_on_done.set(), woken_may_go.wait(10)))
    results = {}

    def go_to_sleep():
        results["slept"] = Sleeper(Database(db_params), sleeping, HORIZON).try_sleep(clock.now())

    def wake():  # a tick a stale wake-up (or the minute rule's last firing) started
        try:
            Sleeper(Database(db_params), woken, HORIZON).started(clock.now(), WAKE_SOURCE)
        finally:
            woken_done.set()

    going, starting = threading.Thread(target=go_to_sleep), threading.Thread(target=wake)
    going.start()
    assert at_rule_off.wait(10)  # the row asleep behind its wake-ups; the woken tick reads it now
    starting.start()
    if not first:
        going.join(10)
        woken_may_go.set()
    going.join(10)
    starting.join(10)
    assert woken_done.is_set() and not going.is_alive()
    seen = row(awake)
    assert seen.state == "awake" and rule_state(aws) == "ENABLED", (seen, rule_state(aws), results)


# ── the clients' deadlines ──────────────────────────────────────────────────


def test_every_aws_client_of_sleep_and_wake_has_a_deadline(aws):
    for service in ("events", "scheduler", "lambda"):
        config = aws_adapter.aws_client(service).meta.config
        assert (config.connect_timeout, config.read_timeout) == (aws_adapter.CONNECT_SECONDS, aws_adapter.READ_SECONDS)
        assert config.retries == {"mode": "standard", "total_max_attempts": aws_adapter.ATTEMPTS}
    assert aws_adapter.AWS_CALL_SECONDS <= 15  # a call inside the 29 s of an API request, with room to answer


def test_work_whose_nudge_failed_while_the_rule_went_off_keeps_the_engine_awake(awake, clock, aws):
    """Work created while the tick turns its rule off, whose nudge then fails (the row back to asleep):
    the row moved and came back, so the tick must not settle into a sleep that strands that work."""

    def unreachable(arn):
        raise ConnectionError("the Lambda API did not answer")

    def work_arrives():
        now = clock.now()
        schedule(awake, now, HELLO)
        assert not nudge.after_work_created(awake, SETTINGS, now, invoke=unreachable)

    assert not Sleeper(awake, _Interleaved(aws, "rule_off", after=work_arrives), HORIZON).try_sleep(clock.now())
    assert row(awake).state == "awake" and rule_state(aws) == "ENABLED"
