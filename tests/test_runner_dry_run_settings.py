"""A dry run's setting never stops live events (issue 37, item 5).

The sandbox's key (GAME_BRIDGE_SANDBOX_SECRET_ARN) or the rehearsal channel's
(WEBHOOK_SECRET_ARN, when only REHEARSAL_CHANNEL is a webhook; DISCORD_ or
SLACK_BOT_TOKEN, when only REHEARSAL_CHANNEL is on Discord or Slack) is missing or
cannot be read: the tick's runner is built all the same, a live run due in the
same tick starts and finishes its step, the dry run's step fails with the cause on
its log (an ERROR line beside it), and the wake-up logic runs: a deployment woken
by a spent wake-up is left with a next tick. Secrets Manager and the deployment's
rule and schedules are moto's; the bridges, Discord and Slack are loopback servers.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from chalicelib import runtime
from chalicelib import secrets as engine_secrets
from chalicelib.events.adapters import aws as aws_adapter
from chalicelib.events.adapters.aws import WAKE_SOURCE, aws_switches
from chalicelib.events.errors import SecretUnreadable
from chalicelib.events.lifecycle import RehearsalBridge, RunStatus
from chalicelib.events.model import Rehearsal
from chalicelib.events.runner import compose, lambda_handler
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.runner.sleep import Sleeper
from chalicelib.events.store import engine_state, runs
from devtools.kit.game_bridge import SECRET, GameBridge
from tests.support.api import hs_settings
from tests.support.factory import document, make_definition, run_row
from tests.support.runner_kit import log_of, schedule, step, tick

REGION = "eu-west-1"
RULE = "events-tick"
FUNCTION = f"arn:aws:lambda:{REGION}:123456789012:function:events-tick"
ROLE = "arn:aws:iam::123456789012:role/events-wake"
MISSING = f"arn:aws:secretsmanager:{REGION}:123456789012:secret:events/missing-AbCdEf"  # never created
SPAWN = document([[step("world.spawn", mob="dragon")]], name="Dragon night")
NEWS = document([[step("core.announce", message="The gates open")]], name="Gates")


class Invocation:
    """A Lambda context with time enough for a tick and a sleep."""

    def get_remaining_time_in_millis(self) -> int:
        return 70_000  # the tick function's timeout


@pytest.fixture
def aws(monkeypatch):
    """moto's Secrets Manager (holding no secret), the minute rule and the scheduler, reached by the engine's own
    clients; the process's runner and switches built afresh from this test's settings."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "test")
    monkeypatch.setattr(aws_adapter, "_clients", {})
    monkeypatch.setattr(compose, "_switches", None)
    monkeypatch.setattr(compose, "_process", None)
    parameters.clear_caches()
    engine_secrets.forget()
    with mock_aws():
        boto3.client("events").put_rule(Name=RULE, ScheduleExpression="rate(1 minute)", State="ENABLED")
        yield aws_switches(RULE, FUNCTION, ROLE)
    if compose._process is not None:
        compose._process.runner.close()
    parameters.clear_caches()
    engine_secrets.forget()


@pytest.fixture
def live_bridge():
    with GameBridge() as bridge:
        yield bridge


def _settings(db_params, live_bridge, **extra):
    return dataclasses.replace(hs_settings(db_params), **{
        "sleep": True, "tick_rule_name": RULE, "tick_function_arn": FUNCTION, "wake_role_arn": ROLE,
        "game_bridge_url": live_bridge.url, "game_bridge_secret": SECRET, "step_lease_seconds": 20,
        "game_bridge_sandbox_url": "http://127.0.0.1:9/sandbox", "escalate_after_seconds": 0, **extra})


def _dry_run(db, clock, doc=SPAWN, bridge=RehearsalBridge.SANDBOX) -> int:
    definition = make_definition(db, clock.now(), doc)
    run = db.transaction(lambda tx: runs.insert_rehearsal(
        tx, definition_id=definition.id, definition_version=definition.current_version, grace_seconds=300,
        now=clock.now(), rehearsal=Rehearsal(60, bridge, 10, None)))
    return run.id


def _asleep_behind_a_spent_wake_up(db, clock, aws) -> None:
    """The deployment went to sleep, and its wake-up fired (a schedule deletes itself when it fires)."""
    assert Sleeper(db, aws, timedelta(minutes=15)).try_sleep(clock.now())
    seen = db.autocommit(engine_state.read)
    aws.scheduler.delete_schedule(Name=aws.wake_up_name(seen.wake_ups))


def _has_a_next_tick(db, aws) -> bool:
    """The minute rule is on, or the row sleeps behind a wake-up and a backstop that stand."""
    if aws.events.describe_rule(Name=RULE)["State"] == "ENABLED":
        return True
    seen = db.autocommit(engine_state.read)
    standing = {entry["Name"] for entry in aws.scheduler.list_schedules()["Schedules"]}
    return seen.state == "asleep" and {aws.wake_up_name(seen.wake_ups), aws.backstop_name(seen.wake_ups)} <= standing


def _dispatched(db, run_id: int) -> dict:
    """The run's last attempt's answer, as its log row keeps it."""
    rows = [e.detail for e in log_of(db, run_id) if e.kind == "step.dispatch" and e.detail is not None]
    assert rows, [(e.kind, e.detail) for e in log_of(db, run_id)]
    return rows[-1]


def test_an_unreadable_sandbox_key_fails_the_dry_run_alone_and_the_spent_wake_up_is_put_back(
        db, clock, db_params, aws, live_bridge, caplog):
    """Before: the sandbox's key was read while the tick's runner was built, before the wake logic, so an
    unreadable one failed the whole invocation: the live run due in the same tick never started, and the
    spent wake-up (its backstop too) was not put back, leaving the deployment asleep with nothing to wake it."""
    settings = _settings(db_params, live_bridge, game_bridge_sandbox_secret_arn=MISSING)
    _asleep_behind_a_spent_wake_up(db, clock, aws)
    live = schedule(db, clock.now(), SPAWN)
    dry = _dry_run(db, clock)
    with runtime.override(settings=settings, database=db, clock=clock), caplog.at_level(logging.ERROR):
        lambda_handler.scheduled_tick(Invocation(), source=WAKE_SOURCE)
    assert [(r.action_id, r.json["run_id"]) for r in live_bridge.received()] == [("world.spawn", live.id)]
    assert run_row(db, live.id).status is RunStatus.COMPLETED
    rehearsed = run_row(db, dry)
    cause = "not sent: the secret named by GAME_BRIDGE_SANDBOX_SECRET_ARN cannot be read right now"
    assert rehearsed.status is RunStatus.PAUSED and cause in (rehearsed.last_error or ""), rehearsed
    assert _dispatched(db, dry)["outcome"] == "failed" and cause in _dispatched(db, dry)["error"]
    assert any(r.levelno == logging.ERROR and "GAME_BRIDGE_SANDBOX_SECRET_ARN" in r.getMessage() for r in caplog.records)
    assert _has_a_next_tick(db, aws)


def test_a_live_setting_that_stops_the_runner_still_turns_the_minute_rule_on(db, clock, db_params, aws, live_bridge):
    """The live bridge's key cannot be read: the invocation fails (no live event runs half-configured), but
    before, the runner's build came before the wake logic, so a spent wake-up left the deployment asleep."""
    settings = dataclasses.replace(_settings(db_params, live_bridge), game_bridge_secret=None,
                                   game_bridge_secret_arn=MISSING, game_bridge_sandbox_url=None)
    _asleep_behind_a_spent_wake_up(db, clock, aws)
    with runtime.override(settings=settings, database=db, clock=clock), pytest.raises(SecretUnreadable):
        lambda_handler.scheduled_tick(Invocation(), source=WAKE_SOURCE)
    assert aws.events.describe_rule(Name=RULE)["State"] == "ENABLED"


def test_a_sandbox_without_its_key_fails_the_sandbox_dry_runs_alone_saying_which(db, clock, db_params, live_bridge):
    """The API needs only the sandbox's URL (it accepts the dry run); the tick, which signs for it, needs its
    key. Before, a tick told of a sandbox without one refused to start at all, live runs with it."""
    runner = build_runner(_settings(db_params, live_bridge, sleep=False), db, clock)
    try:
        live = schedule(db, clock.now(), SPAWN)
        dry = _dry_run(db, clock)
        tick(runner)
    finally:
        runner.close()
    assert run_row(db, live.id).status is RunStatus.COMPLETED and live_bridge.received()
    rehearsed = run_row(db, dry)
    assert rehearsed.status is RunStatus.PAUSED
    assert "not sent: GAME_BRIDGE_SANDBOX_URL is set" in _dispatched(db, dry)["error"]
    assert "GAME_BRIDGE_SANDBOX_SECRET or GAME_BRIDGE_SANDBOX_SECRET_ARN" in (rehearsed.last_error or "")


REHEARSAL_DISCORD, REHEARSAL_SLACK = "discord:100000000000000099", "slack:C0REHEARSE"


@pytest.mark.parametrize("channel, unusable, cause", [
    (REHEARSAL_DISCORD, {}, ("not sent: rehearsal channel is discord:<channel id>: set DISCORD_BOT_TOKEN or"
                             " DISCORD_BOT_TOKEN_SECRET_ARN")),
    (REHEARSAL_SLACK, {}, ("not sent: rehearsal channel is slack:<channel id>: set SLACK_BOT_TOKEN or"
                           " SLACK_BOT_TOKEN_SECRET_ARN")),
    (REHEARSAL_DISCORD, {"discord_bot_token_secret_arn": MISSING},
     "discord: not sent: the secret named by DISCORD_BOT_TOKEN_SECRET_ARN cannot be read right now"),
    (REHEARSAL_SLACK, {"slack_bot_token_secret_arn": MISSING},
     "slack: not sent: the secret named by SLACK_BOT_TOKEN_SECRET_ARN cannot be read right now"),
    ("webhook:{chat}/hooks/rehearsal", {}, ("not sent: rehearsal channel is a webhook: set WEBHOOK_SECRET or"
                                            " WEBHOOK_SECRET_ARN")),
    ("webhook:{chat}/hooks/rehearsal", {"webhook_secret_arn": MISSING},
     "webhook: not sent: the secret named by WEBHOOK_SECRET_ARN cannot be read right now"),
], ids=["discord-without-a-token", "slack-without-a-token", "discord-token-unreadable", "slack-token-unreadable",
        "webhook-without-a-key", "webhook-key-unreadable"])
def test_a_rehearsal_channel_that_cannot_be_used_fails_the_dry_runs_posts_alone(
        db, clock, db_params, aws, live_bridge, chat, caplog, channel, unusable, cause):
    """REHEARSAL_CHANNEL is the only channel on its platform, and what it posts with is missing or unreadable.
    Before, the runner's build refused it (ConfigError, or the secret's SecretUnreadable): no live run advanced."""
    settings = _settings(db_params, live_bridge, sleep=False, game_bridge_sandbox_url=None,
                         rehearsal_channel=channel.format(chat=chat.url), discord_api_url=chat.discord_url,
                         slack_api_url=chat.slack_url, **unusable)
    with caplog.at_level(logging.ERROR):
        runner = build_runner(settings, db, clock)
    try:
        live = schedule(db, clock.now(), NEWS)
        dry = _dry_run(db, clock, NEWS, RehearsalBridge.SIMULATE)
        tick(runner)
    finally:
        runner.close()
    assert run_row(db, live.id).status is RunStatus.COMPLETED
    retried = _dispatched(db, dry)
    assert retried["outcome"] == "retry" and retried["error"] == f"rehearsal channel: {cause}", retried
    assert chat.received() == []  # nothing reached Discord, Slack or the webhook
    why = cause.partition("not sent: ")[2]
    assert any(r.levelno == logging.ERROR and why in r.getMessage() for r in caplog.records)
