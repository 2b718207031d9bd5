"""Where a cue's reminders and escalations go, on real channels: a FIFO SNS topic (moto) that de-duplicates on
the key (a moto server) delivers every reminder; the escalation webhook pings ESCALATION_MENTION's role and nobody else; a
definition whose reminder or escalation is not shorter than its timeout is a 400 naming it; the settings that
drive escalation refuse bad values with their name."""

import json

import boto3
import pytest

from chalicelib.config import Settings
from chalicelib.errors import ConfigError
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.store import steps
from devtools.kit.game_bridge import Answer
from tests.support import aws_world
from tests.support.api import ADMIN
from tests.support.factory import document
from tests.support.runner_kit import schedule, step, tick

REGION = "eu-west-1"


@pytest.fixture
def aws():
    """A moto server on loopback, the environment pointed at it (the engine's SNS client reaches it there)."""
    with aws_world.moto_server():
        yield boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)


def test_a_fifo_topic_receives_every_reminder_each_under_its_own_key(db, clock, aws):
    sns, sqs = aws
    topic = sns.create_topic(Name="cues.fifo", Attributes={"FifoTopic": "true"})["TopicArn"]
    queue = sqs.create_queue(QueueName="inbox.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    runner = build_runner(Settings(cue_channel=f"sns:{topic}"), db, clock)
    try:
        run = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire",
                                                        remind_after_seconds=30, remind_limit=3)]]))
        tick(runner)
        for _ in range(4):  # inside SNS's five-minute de-duplication window, every one
            clock.advance(30)
            tick(runner)
    finally:
        runner.close()
    cue = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]
    delivered = []
    while batch := sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", []):
        delivered += [json.loads(m["Body"]) for m in batch]
        sqs.delete_message_batch(QueueUrl=queue, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                                          for i, m in enumerate(batch)])
    keys = [m["MessageAttributes"]["idempotency_key"]["Value"] for m in delivered]
    assert keys == [cue.idempotency_key] + [f"{cue.idempotency_key}:r{n}" for n in (1, 2, 3)]
    assert [m["MessageAttributes"]["kind"]["Value"] for m in delivered] == ["cue", "reminder", "reminder", "reminder"]


def test_the_escalation_webhook_pings_the_mentioned_role_alone(db, clock, game_bridge):
    game_bridge.script("escalation", Answer(204, ""))
    runner = build_runner(Settings(
        escalation_channel=f"webhook:{game_bridge.url}/hooks/escalation", escalation_mention="123456789012345678",
        webhook_secret="hook-secret", escalate_after_seconds=60), db, clock)
    try:
        run = schedule(db, clock.now(), document([[step("core.cue", instruction="Ring @everyone's bell")]]))
        tick(runner)
        clock.advance(60)
        tick(runner)
    finally:
        runner.close()
    [request] = game_bridge.received("escalation")
    body = request.json
    assert body["content"].startswith(f"<@&123456789012345678> Escalation: Run {run.id} · Phase 1 · step 1 (")
    assert "@\u200beveryone" in body["content"]  # an authored mention stays broken
    assert body["allowed_mentions"] == {"parse": [], "roles": ["123456789012345678"]}
    assert body["event"]["kind"] == "escalation" and body["event"]["run_id"] == run.id
    assert request.signature_valid("hook-secret")


@pytest.mark.parametrize(("attention", "named"), [
    ({"remind_after_seconds": 60, "timeout_seconds": 60}, "remind_after_seconds (60) must be shorter than timeout_seconds (60)"),
    ({"escalate_after_seconds": 90, "timeout_seconds": 60}, "escalate_after_seconds (90) must be shorter than timeout_seconds (60)"),
    ({"on_timeout": "pause"}, "on_timeout needs timeout_seconds"),
    ({"remind_after_seconds": 4}, "remind_after_seconds"),
    ({"remind_limit": 21}, "remind_limit"),
    ({"on_timeout": "later", "timeout_seconds": 60}, "on_timeout"),
])
def test_a_cue_whose_timers_cannot_work_is_refused_with_the_field_named(api, db, attention, named):
    doc = document([[step("core.cue", instruction="Light the bonfire", **attention)]])
    answer = api.post("/definitions", doc, auth=ADMIN)
    assert answer.status == 400, answer.body
    assert any(named in error for error in answer.body["errors"]), answer.body
    assert api.get("/definitions", auth=ADMIN).body["definitions"] == []


@pytest.mark.parametrize(("env", "named"), [
    ({"ESCALATION_MENTION": "@here"}, "ESCALATION_MENTION"),
    ({"EVENT_ESCALATE_AFTER_SECONDS": "-1"}, "EVENT_ESCALATE_AFTER_SECONDS"),
    ({"ESCALATION_CHANNEL": "email:ops@example.com"}, "ESCALATION_CHANNEL"),
])
def test_escalation_settings_are_checked_with_their_name(env, named):
    with pytest.raises(ConfigError, match=named):
        Settings.from_env(env)


def test_escalation_settings_default_to_a_quarter_hour_on_the_cue_channel():
    settings = Settings.from_env({})
    assert (settings.escalate_after_seconds, settings.escalation_channel, settings.escalation_mention) == (900, None, None)
