"""R11: a Hypothesis state machine drives sleep, wake, nudges and AWS faults against the real code.

The engine's own sleep and wake code (`runner/sleep.py`, `nudge.py`, the
database-unreachable path of `runner/lambda_handler.py`) runs against the real
database and moto (the engine's clients, faulted through botocore hooks). AWS
fires the tick as it would (`tests.support.aws_world.World`). Rules:

- a minute passes (the rule fires while on, schedules fire when due, nudges are delivered);
- work is created through the API's path (a run due now, in ten minutes or in two hours, then the nudge);
- the first or second call of an operation from now (or of any) fails, dropped or timed out, once or
  on every attempt; the next nudge's invoke fails;
- the next invocation AWS starts is lost (it never runs: a throttle, a crash before `started`), or
  cannot reach the database (the outage path), at most once per sleep (the backstop covers one: a
  loss armed while the engine is awake counts against the sleep it lands in);
- a stale invocation starts (a wake-up, backstop, nudge or rule firing from before);
- the clock jumps ahead to whatever fires next.

The invariant, after every rule: **never asleep without a wake-up while work is scheduled** — the
minute rule off means the row is not awake and the sleep's wake-up or backstop stands (or a nudge
is on its way); and once faults stop, every run due starts within its minute.
"""

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test
from moto import mock_aws

from chalicelib.config import Settings
from chalicelib.events import nudge
from chalicelib.events.adapters import aws as aws_adapter
from chalicelib.events.adapters.aws import BACKSTOP_SOURCE, NUDGE_SOURCE, RULE_SOURCE, WAKE_SOURCE
from chalicelib.events.runner import compose, lambda_handler
from chalicelib.events.store import engine_state, runs
from tests.conftest import START, restore_migrated
from tests.support import aws_world
from tests.support.aws_faults import Faults
from tests.support.factory import document
from tests.support.runner_kit import make_runner, schedule, step
from tests.support.torture import sized

HORIZON = timedelta(minutes=15)
SETTINGS = Settings(sleep=True, tick_rule_name=aws_world.RULE, tick_function_arn=aws_world.FUNCTION,
                    wake_role_arn=aws_world.ROLE)
HELLO = document([[step("core.announce", message="hello")]])


class _Invokes:
    """The Lambda API in the machine: each nudge's invoke is kept, to be delivered (or lost) by a rule."""

    def __init__(self):
        self.calls = []
        self.fail_next = False

    def invoke(self, arn):
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("the Lambda API did not answer")
        self.calls.append(NUDGE_SOURCE)

    def take(self):
        taken, self.calls[:] = list(self.calls), []
        return taken


@pytest.fixture
def aws(monkeypatch):
    for name, value in aws_world.ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setattr(aws_adapter, "_clients", {})
    monkeypatch.setattr(compose, "_switches", None)
    with mock_aws():
        import boto3

        boto3.client("events").put_rule(Name=aws_world.RULE, ScheduleExpression="rate(1 minute)", State="ENABLED")
        yield Faults(*(aws_adapter.aws_client(service) for service in ("events", "scheduler")))


def test_sleep_and_wake_never_strand_the_engine_under_any_interleaving(db, clock, aws):
    faults = aws
    runner = make_runner(db, clock, None)
    invokes = _Invokes()
    monkey = pytest.MonkeyPatch()
    monkey.setattr(nudge, "invoke_tick", invokes.invoke)

    class SleepMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            restore_migrated(db)
            clock.set(START)
            db.autocommit(lambda tx: tx.execute(
                "UPDATE event_engine_state SET state = 'awake', sleeps_until = NULL, epoch = epoch + 1"))
            faults.clear()
            invokes.take()
            invokes.fail_next = False
            self.world = aws_world.World(db, clock, runner, invokes, HORIZON)
            self.world.deployment.reset()
            self.lose_next = None  # "lost" | "unreachable": what happens to the next invocation AWS starts
            self.losses = 0  # since the engine was last seen awake
            real = self.real_invoke = self.world.invoke

            def invoke(source):
                if self.lose_next is not None:
                    lost, self.lose_next = self.lose_next, None
                    if lost == "unreachable":  # the outage path: the database never answered
                        lambda_handler._next_tick_after_outage(SETTINGS, source)
                    return
                real(source)

            self.world.invoke = invoke

        # ── time and AWS ────────────────────────────────────────────────
        @rule()
        def a_minute_passes(self):
            self.world.minute()

        @rule()
        def time_jumps_to_what_fires_next(self):
            upcoming = list(self.world.deployment.schedules().values())
            if upcoming:
                self.world.run_until(min(upcoming) + timedelta(minutes=1))

        @precondition(lambda self: not faults.armed())
        @rule(operation=st.sampled_from(["CreateSchedule", "DisableRule", "EnableRule", "DeleteSchedule", None]),
              nth=st.integers(1, 2), kind=st.sampled_from(["error", "timeout"]), every=st.booleans())
        def an_aws_call_fails(self, operation, nth, kind, every):
            faults.fail(operation, kind=kind, attempts=float("inf") if every else 1, nth=nth)

        @rule()
        def the_next_nudge_cannot_be_sent(self):
            invokes.fail_next = True

        @precondition(lambda self: self.lose_next is None and self.losses == 0)
        @rule(how=st.sampled_from(["lost", "unreachable"]))
        def the_next_invocation_goes_wrong(self, how):
            self.lose_next, self.losses = how, self.losses + 1

        @rule(source=st.sampled_from([WAKE_SOURCE, BACKSTOP_SOURCE, NUDGE_SOURCE, RULE_SOURCE]))
        def a_stale_invocation_starts(self, source):
            self.real_invoke(source)

        # ── people ──────────────────────────────────────────────────────
        @rule(minutes=st.sampled_from([0, 10, 120]))
        def work_is_created(self, minutes):
            now = clock.now()
            schedule(db, now, HELLO, scheduled_for=now + timedelta(minutes=minutes))
            nudge.after_work_created(db, SETTINGS, now)

        # ── what must hold ──────────────────────────────────────────────
        @invariant()
        def never_asleep_without_a_wake_up(self):
            seen = db.autocommit(engine_state.read)
            if seen.state == "awake" and self.lose_next is None:  # a loss armed while awake is still to come
                self.losses = 0
            if self.world.deployment.rule() == "ENABLED":
                return
            assert seen.state != "awake", f"awake with the rule off: {seen}"
            standing = self.world.deployment.schedule_names()
            assert standing or invokes.calls, f"{seen.state} with the rule off, no wake-up and no nudge: {seen}"

        def teardown(self):
            """Faults stop, and a lost nudge's bound passes: a run scheduled now, past the horizon, starts
            within the minute of its time."""
            faults.clear()
            self.lose_next, invokes.fail_next = None, False
            clock.advance(nudge.WAKING_STALE.total_seconds())
            now = clock.now()
            due = now + HORIZON + timedelta(minutes=5)
            run = schedule(db, now, HELLO, scheduled_for=due)
            nudge.after_work_created(db, SETTINGS, now)
            self.world.run_until(due + timedelta(minutes=1))
            seen = db.autocommit(lambda tx: runs.get(tx, run.id))
            assert seen.started_at is not None and seen.started_at - due < timedelta(minutes=1), (
                seen, self.world.sources[-8:], self.world.failed[-3:])

    try:
        run_state_machine_as_test(SleepMachine, settings=settings(
            max_examples=sized(60, 600), stateful_step_count=sized(15, 40), deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]))
    finally:
        monkey.undo()
        runner.close()
