"""The `sns:` channel under moto: what a cue and an announcement publish lands in a subscribed queue, attributes and all."""

import json
import subprocess
import sys
import time

import boto3
import pytest
from moto import mock_aws

from chalicelib.config import Settings
from chalicelib.events.actions.notice import Notice
from chalicelib.events.adapters.sns_channel import SnsChannel
from chalicelib.events.errors import ChannelError
from chalicelib.events.lifecycle import StepStatus
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.store import steps
from tests.conftest import START
from tests.support.factory import document
from tests.support.loopback_aws import loopback_aws, never_accepting, offline_credentials
from tests.support.runner_kit import ROOT, RULES, schedule, step, tick, to_post_again

REGION = "eu-west-1"
CONSOLE = "https://events.example.com/api/console"


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        yield boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)


def _queue_on(aws, topic_arn, name="inbox"):
    sns, sqs = aws
    fifo = {"FifoQueue": "true"} if name.endswith(".fifo") else {}
    queue = sqs.create_queue(QueueName=name, Attributes=fifo)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
    return queue


def _delivered(aws, queue):
    _, sqs = aws
    messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in messages]


def _runner(db, clock, cue, announce="log"):
    return build_runner(Settings(cue_channel=cue, announce_channel=announce, console_url=CONSOLE), db, clock)


def _steps(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))


def test_a_cue_and_an_announcement_land_in_a_subscribed_queue_with_run_step_and_kind(db, clock, aws):
    topic = aws[0].create_topic(Name="event-notices")["TopicArn"]
    queue = _queue_on(aws, topic)
    runner = _runner(db, clock, f"sns:{topic}", f"sns:{topic}")
    try:
        run = schedule(db, clock.now(), document([[
            step("core.announce", message="The harvest begins"), step("core.cue", instruction="Light the bonfire")]]))
        tick(runner)
    finally:
        runner.close()
    announce, cue = _steps(db, run.id)
    assert announce.status is StepStatus.DONE and cue.parked
    delivered = {m["MessageAttributes"]["kind"]["Value"]: m for m in _delivered(aws, queue)}
    assert set(delivered) == {"announce", "cue"}
    for kind, posted in ((announce, "announce"), (cue, "cue")):
        assert delivered[posted]["MessageAttributes"] == {
            "run": {"Type": "Number", "Value": str(run.id)},
            "step": {"Type": "Number", "Value": str(kind.id)},
            "kind": {"Type": "String", "Value": posted},
            "idempotency_key": {"Type": "String", "Value": kind.idempotency_key},
        }
    assert delivered["announce"]["Message"] == "The harvest begins"
    assert delivered["cue"]["Message"] == (
        f"Cue: Light the bonfire\n{cue.named}: confirm it once done, or skip it.\n{CONSOLE}#/runs/{run.id}")
    assert delivered["cue"]["Subject"] == f"Cue for run {run.id}"


def test_a_publish_sns_refuses_makes_the_step_a_retry_that_delivers_with_the_same_key(db, clock, aws):
    topic = f"arn:aws:sns:{REGION}:123456789012:created-later"
    runner = _runner(db, clock, f"sns:{topic}")
    try:
        run = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire")]]))
        tick(runner)
        cue = _steps(db, run.id)[0]
        assert cue.status is StepStatus.PENDING and cue.attempts == 1
        assert cue.last_error.startswith("cue channel: SNS publish failed: An error occurred (NotFound)")
        assert aws[0].create_topic(Name="created-later")["TopicArn"] == topic
        queue = _queue_on(aws, topic)
        clock.advance(RULES.retry_seconds)
        tick(runner)
    finally:
        runner.close()
    cue = _steps(db, run.id)[0]
    assert cue.parked and cue.attempts == 2
    [message] = _delivered(aws, queue)
    assert message["MessageAttributes"]["idempotency_key"]["Value"] == cue.idempotency_key


@pytest.mark.parametrize("by_a_person", [False, True])
def test_a_fifo_topic_drops_a_repeated_try_and_delivers_a_cue_a_person_had_posted_again(db, clock, aws, by_a_person):
    """A try posted again (its acknowledgement lost) is dropped by the topic on the step's key. A cue a
    moderator retried was dropped the same way within SNS's five minutes, silently (SNS answered as if
    delivered): after a person grants new attempts the deduplication id is the key with their marker, as a
    webhook's Idempotency-Key and Discord's nonce are."""
    topic = aws[0].create_topic(Name="cues.fifo", Attributes={"FifoTopic": "true"})["TopicArn"]
    queue = _queue_on(aws, topic, "inbox.fifo")
    runner = _runner(db, clock, f"sns:{topic}")
    try:
        run = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire")]]))
        tick(runner)
        cue = _steps(db, run.id)[0]
        clock.advance(RULES.lease_seconds)  # a later tick: the notice's clock moved, its key did not (item 9)
        to_post_again(db, clock.now(), run.id, cue.id, by_a_person=by_a_person)
        tick(runner)
    finally:
        runner.close()
    assert _steps(db, run.id)[0].attempts == 2
    delivered = [m["MessageAttributes"]["idempotency_key"]["Value"] for m in _delivered(aws, queue)]
    assert delivered == ([cue.idempotency_key, f"{cue.idempotency_key}:a1"] if by_a_person else [cue.idempotency_key])


@pytest.mark.realtime  # a fresh interpreter
def test_boto3_is_imported_only_where_an_sns_channel_is_configured():
    probe = (
        "import sys\n"
        "from chalicelib.config import Settings\n"
        "from chalicelib.events.runner.compose import build_runner\n"
        "build_runner(Settings(game_bridge_url='http://127.0.0.1:9', game_bridge_secret='s',"
        " announce_channel='webhook:https://example.com/h', webhook_secret='s'), None, None)\n"
        "print(sorted(m for m in ('boto3', 'botocore.client', 'h11') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


NOTICE = Notice("cue", "Light the bonfire", 1, 2, "1-2-key", START)
TOPIC = f"arn:aws:sns:{REGION}:123456789012:cues"


def _publish_against(monkeypatch, endpoint: str, timeout: float = 1.0) -> float:
    offline_credentials(monkeypatch, REGION)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SNS", endpoint)
    channel = SnsChannel("cue", TOPIC, timeout=timeout)
    started = time.monotonic()
    with pytest.raises(ChannelError, match="SNS publish failed"):
        channel.post(NOTICE)
    return time.monotonic() - started


def test_an_sns_endpoint_answering_500_receives_exactly_one_request(monkeypatch):
    """botocore retries nothing: the step's retry is the one policy (issue 23, item 10)."""
    with loopback_aws(answer=True) as sns:
        _publish_against(monkeypatch, sns.url)
    assert sns.requests == 1


def test_an_sns_endpoint_that_never_answers_is_given_up_within_the_channels_timeout(monkeypatch):
    """The read timeout is half the channel's timeout: the publish fails inside it (issue 23, item 10)."""
    with loopback_aws(answer=False) as sns:
        took = _publish_against(monkeypatch, sns.url)
    assert sns.requests == 1 and took < 1.0


def test_an_sns_endpoint_that_never_accepts_is_given_up_within_the_channels_timeout(monkeypatch):
    """The connect timeout is half the channel's timeout: a silent network fails inside it (issue 23, item 10)."""
    with never_accepting() as url:
        took = _publish_against(monkeypatch, url)
    assert took < 1.0


def test_a_manual_phases_hold_lands_in_the_queue_with_its_run_and_link_and_no_step(db, clock, aws):
    topic = aws[0].create_topic(Name="event-holds")["TopicArn"]
    queue = _queue_on(aws, topic)
    runner = _runner(db, clock, f"sns:{topic}")
    try:
        doc = document([[step("core.announce", message="Stretch")], [step("core.announce", message="Go")]])
        doc["phases"][0].update(name="warm-up", advance={"when": "manual"})
        run = schedule(db, clock.now(), doc)
        tick(runner)
    finally:
        runner.close()
    [held] = _delivered(aws, queue)
    assert held["MessageAttributes"] == {
        "run": {"Type": "Number", "Value": str(run.id)},
        "kind": {"Type": "String", "Value": "advance"},
        "idempotency_key": {"Type": "String", "Value": f"run-{run.id}-phase-1-held"},
    }
    assert held["Message"] == f"Run {run.id} waits for a person to advance phase 1 (warm-up)\n{CONSOLE}#/runs/{run.id}"
    assert held["Subject"] == f"Run {run.id} waits to advance"
