"""The world a sleeping deployment is tested in, in this process: the minute rule and the wake-ups in moto, the
nudge to a loopback Lambda API, and the deployment's state as the engine keeps it.

`aws` and `lambda_api` are fixtures: a test module imports them to use them (`# noqa: F401`). Each test starts
from an awake deployment (`reset_state`), and `asleep` puts it to sleep behind what is due, so the wake-up the
test reads is the one its own change aimed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta

import boto3
import pytest
from chalice.test import Client
from moto import mock_aws

from chalicelib import runtime
from chalicelib.events import nudge
from chalicelib.events.adapters import aws as aws_adapter
from chalicelib.events.adapters.aws import AwsSwitches
from chalicelib.events.runner import Budget
from chalicelib.events.runner.sleep import Sleeper
from chalicelib.events.store import engine_state
from tests.support.api import Api, hs_settings
from tests.support.aws_world import FUNCTION, ROLE, RULE, LambdaInvokes
from tests.support.runner_kit import make_runner

HORIZON = timedelta(minutes=15)


@pytest.fixture
def aws(monkeypatch):
    """The rule in moto; the engine's own clients (the nudge's rule among them) built against it."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setattr(aws_adapter, "_clients", {})
    with mock_aws():
        events = boto3.client("events", region_name="eu-west-1")
        events.put_rule(Name=RULE, ScheduleExpression="rate(1 minute)", State="ENABLED")
        yield AwsSwitches(events, boto3.client("scheduler", region_name="eu-west-1"), RULE, FUNCTION, ROLE)


def rule_state(aws):
    return aws.events.describe_rule(Name=RULE)["State"]


def wake_up(aws, kind="wake"):
    """The one standing wake-up (or backstop) schedule, or None."""
    names = [s["Name"] for s in aws.scheduler.list_schedules()["Schedules"] if s["Name"].startswith(f"{RULE}-{kind}-")]
    assert len(names) <= 1, names
    return aws.scheduler.get_schedule(Name=names[0]) if names else None


def state(db):
    return db.autocommit(engine_state.state)


def reset_state(db):
    db.autocommit(lambda tx: tx.execute("UPDATE event_engine_state SET state = 'awake', sleeps_until = NULL"))


def asleep(db, clock, aws, bridge=None):
    """One tick of whatever is due, then the deployment asleep behind its wake-up (its rule off)."""
    runner = make_runner(db, clock, bridge)
    try:
        runner.tick(Budget.for_seconds(30))
    finally:
        runner.close()
    assert Sleeper(db, aws, HORIZON).try_sleep(clock.now())
    assert state(db) == "asleep" and rule_state(aws) == "DISABLED"


@pytest.fixture
def lambda_api():
    """The loopback Lambda API, recording each Invoke (`calls`); a nudge reaches it through `invoke`."""
    api = LambdaInvokes()
    yield api
    api.close()


@contextlib.contextmanager
def nudging_api(db, clock, db_params, lambda_api: LambdaInvokes, monkeypatch) -> Iterator[Api]:
    """The API of a deployment that sleeps, its nudges going to the loopback Lambda API."""
    from app import app

    monkeypatch.setattr(nudge, "invoke_tick", lambda arn: lambda_api.invoke(arn))
    settings = hs_settings(db_params, sleep=True, tick_rule_name=RULE, tick_function_arn=FUNCTION, wake_role_arn=ROLE)
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        yield Api(client)
