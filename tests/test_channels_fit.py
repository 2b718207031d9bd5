"""Every notice fits its channel, whatever its kind and whatever an author wrote: the longest valid text of each
kind (and one far past any limit) through every channel, each webhook body checked against Discord's own
published schema for execute_webhook, Slack's text and SNS's subject and message against their limits, the run,
step and console link kept and only the text shortened."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import boto3
import pytest
from jsonschema import Draft202012Validator
from moto import mock_aws
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from chalicelib.config import Settings
from chalicelib.events.actions.notice import ELLIPSIS, Notice
from chalicelib.events.adapters.channels import channel_for
from chalicelib.events.adapters.rehearsal import RehearsalChannel
from chalicelib.events.adapters.sns_channel import SNS_MESSAGE, SNS_SUBJECT
from chalicelib.events.adapters.webhook_channel import DISCORD_CONTENT, SLACK_TEXT, slack_text
from chalicelib.events.lifecycle import OnFailure, ParkReason, StepStatus, WaitingFor
from chalicelib.events.model import Step
from chalicelib.events.runner.compose import build_runner
from tests.conftest import START
from tests.support.factory import document
from tests.support.runner_kit import ROOT, schedule, step, tick

SECRET = "webhook-secret"
CONSOLE = "https://events.example.com" + "/console-path" * 12  # a long console address, kept whole
# ../shared beside the repository: the main checkout's, for a worktree of it
_MAIN = Path(subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip() or ROOT / ".git").parent
SHARED_DISCORD = _MAIN.parent / "shared" / "reference" / "discord"
DISCORD = Path(__file__).parent / "reference" / "discord"
INSTRUCTION_CHARS = 2000  # registry._TEXT: a cue's instruction, an announcement's message
PHASE_NAME_CHARS = 200  # document.PHASE_SCHEMA
ACTION_CHARS = 100  # document.STEP_SCHEMA
BY_HAND_REVERT_CHARS = 16 * 1024 - 40  # a by-hand revert's instruction fills its params' 16 KiB
# Every measure at its worst: Slack's entities (5 characters for "&"), Discord's broken broadcasts, 4-byte UTF-8.
HOSTILE = "&<> @everyone 🔥 "
BIG_ID = 2**63 - 1


def _text(chars: int) -> str:
    return (HOSTILE * (chars // len(HOSTILE) + 1))[:chars]


def _step(instruction: str, park_reason: ParkReason = ParkReason.CUE, action_id: str = "core.cue") -> Step:
    return Step(
        id=BIG_ID - 1, run_id=BIG_ID, phase=50, seq=199, action_id=action_id, params={"instruction": instruction},
        action_version=1, on_failure=OnFailure.PAUSE, idempotency_key="k" * 64, status=StepStatus.RUNNING,
        attempts=1, claimed_by=None, claim_expires_at=None, due_at=None, started_at=START, finished_at=None,
        last_error=None, park_reason=park_reason)


def _every_notice(chars: int) -> list[Notice]:
    """One notice of every kind, its authored part `chars` long."""
    text, long_wait = _text(chars), int(timedelta(days=7).total_seconds())
    cue, in_doubt = _step(text), _step(text, ParkReason.DOUBT, "world." + "x" * (ACTION_CHARS - 6))
    return [
        Notice.of(cue, "cue", text, START, CONSOLE),
        Notice.of(cue, "announce", text, START, CONSOLE),
        Notice.reminder(cue, 20, 20, long_wait, START, CONSOLE),
        Notice.escalation(cue, long_wait, START, CONSOLE),
        Notice.escalation(in_doubt, long_wait, START, CONSOLE),
        Notice.stall(BIG_ID, 99, WaitingFor.RESUME, long_wait, START, CONSOLE),
        Notice.stall(BIG_ID, 99, WaitingFor.ADVANCE, long_wait, START, CONSOLE),
        Notice.of_hold(BIG_ID, 50, _text(PHASE_NAME_CHARS), START, CONSOLE),
    ]


LONGEST = _every_notice(INSTRUCTION_CHARS)
# What an author can write today, and far past it: a by-hand revert's instruction, and a text no limit allows.
LENGTHS = (INSTRUCTION_CHARS, BY_HAND_REVERT_CHARS, 300_000)


def _kept(notice: Notice, message: str) -> None:
    """The run, the step (a cue names it; the others are about a run) and the link are whole in `message` (an
    announcement is its text alone)."""
    if notice.kind == "announce":
        return
    assert f"un {notice.run_id}" in message
    if notice.kind == "cue":
        # The step's name whole: its place as written, its brackets as the channel escapes authored words.
        place = str(notice.step_named).split(" (", 1)[0]
        assert f"\n{place} (" in message and "): confirm it once done, or skip it." in message
    assert message.endswith(f"\n{CONSOLE}#/runs/{notice.run_id}")


@pytest.fixture(scope="module")
def execute_webhook() -> Draft202012Validator:
    """Discord's execute_webhook request body, its $refs resolved inside the published document."""
    spec = json.loads((DISCORD / "openapi-subset.json").read_text())
    registry = Registry().with_resource("urn:discord", DRAFT202012.create_resource(spec))
    return Draft202012Validator({"$ref": "urn:discord#/components/schemas/IncomingWebhookRequestPartial"},
                                registry=registry)


def test_the_schema_copied_into_tests_is_discords_published_one():
    if not SHARED_DISCORD.exists():
        pytest.skip("a clean clone: the shared reference is not beside the repository")
    for name in ("openapi-subset.json", "LICENSE"):
        assert (DISCORD / name).read_bytes() == (SHARED_DISCORD / name).read_bytes(), name


def test_the_validator_refuses_what_discord_refuses(execute_webhook):
    assert execute_webhook.is_valid({"content": "x" * 2000, "allowed_mentions": {"parse": []}})
    assert not execute_webhook.is_valid({"content": "x" * 2001})
    assert not execute_webhook.is_valid({"content": "x", "allowed_mentions": {"parse": ["nobody"]}})


@pytest.mark.parametrize("chars", LENGTHS)
@pytest.mark.parametrize("mention_role", [None, "123456789012345678"])
@pytest.mark.parametrize("rehearsal", [False, True])
def test_every_webhook_body_is_a_valid_execute_webhook_and_slack_text(
        game_bridge, execute_webhook, chars, mention_role, rehearsal):
    hook = channel_for(f"webhook:{game_bridge.url}/hooks/fit", "cue", timeout=5.0, webhook_secret=SECRET,
                       mention_role=mention_role)
    channel = RehearsalChannel(hook) if rehearsal else hook
    notices = _every_notice(chars)
    for notice in notices:
        channel.post(notice)
    bodies = [r.json for r in game_bridge.received("fit")]
    assert len(bodies) == len(notices)
    for notice, body in zip(notices, bodies, strict=True):
        errors = [e.message for e in execute_webhook.iter_errors(body)]
        assert errors == [], (notice.kind, errors)
        content, text = body["content"], body["text"]
        assert len(content) <= DISCORD_CONTENT.most and len(text) <= SLACK_TEXT.most
        assert content.startswith((f"<@&{mention_role}> " if mention_role else "") + ("[REHEARSAL] " if rehearsal else ""))
        _kept(notice, content)
        _kept(notice, text)
        assert body["event"] == {"kind": notice.kind, "run_id": notice.run_id, "step_id": notice.step_id,
                                 "step_named": notice.step_named, "idempotency_key": notice.idempotency_key}
        if len(notice.message()) > DISCORD_CONTENT.most:
            assert ELLIPSIS in content  # shortened, not refused
        whole = slack_text(replace(notice, rehearsal=rehearsal).message())
        assert (text != whole) is (len(notice.message()) > SLACK_TEXT.most)  # shortened only past its limit


def test_a_long_text_fills_discords_content_to_its_limit():
    """A cue, its reminder and its escalation carry the whole instruction: at its longest they are shortened to
    exactly Discord's limit (the case Discord answered 400), the rest fit as written."""
    too_long = [n for n in LONGEST if len(n.message()) > DISCORD_CONTENT.most]
    assert [n.kind for n in too_long] == ["cue", "reminder", "escalation"]
    for notice in LONGEST:
        message = notice.message(DISCORD_CONTENT)
        assert len(message) == DISCORD_CONTENT.most if notice in too_long else message == notice.message()
        _kept(notice, message)


@pytest.mark.parametrize("chars", LENGTHS)
def test_every_sns_publish_fits_its_subject_and_message_limits(monkeypatch, chars):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        sns, sqs = boto3.client("sns"), boto3.client("sqs")
        topic = sns.create_topic(Name="notices")["TopicArn"]
        queue = sqs.create_queue(QueueName="inbox")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
        channel = RehearsalChannel(channel_for(f"sns:{topic}", "cue", timeout=5.0))
        for notice in _every_notice(chars):
            channel.post(notice)
            [received] = sqs.receive_message(QueueUrl=queue)["Messages"]
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=received["ReceiptHandle"])
            published = json.loads(received["Body"])
            subject, message = published["Subject"], published["Message"]
            assert len(subject) <= SNS_SUBJECT.most and "\n" not in subject and subject.startswith("[REHEARSAL] ")
            assert len(message.encode()) <= SNS_MESSAGE.most and message.startswith("[REHEARSAL] ")
            _kept(notice, message)


def test_a_reminder_and_an_escalation_of_a_cue_at_its_longest_reach_discord_whole(
        db, clock, game_bridge, execute_webhook):
    """The case Discord answered 400: a cue's 2,000-character instruction in its reminder and its escalation."""
    runner = build_runner(Settings(
        cue_channel=f"webhook:{game_bridge.url}/hooks/cue",
        escalation_channel=f"webhook:{game_bridge.url}/hooks/escalation", escalation_mention="123456789012345678",
        webhook_secret=SECRET, console_url=CONSOLE, escalate_after_seconds=60), db, clock)
    try:
        run = schedule(db, clock.now(), document([[step("core.cue", instruction=_text(INSTRUCTION_CHARS),
                                                        remind_after_seconds=30, remind_limit=1)]]))
        tick(runner)
        clock.advance(30)
        tick(runner)
        clock.advance(30)
        tick(runner)
    finally:
        runner.close()
    posted = [r.json for r in game_bridge.received("cue")] + [r.json for r in game_bridge.received("escalation")]
    assert [b["event"]["kind"] for b in posted] == ["cue", "reminder", "escalation"]
    for body in posted:
        assert [e.message for e in execute_webhook.iter_errors(body)] == []
        assert len(body["content"]) <= DISCORD_CONTENT.most
        assert body["content"].endswith(f"\n{CONSOLE}#/runs/{run.id}") and ELLIPSIS in body["content"]
    assert f"Run {run.id} · Phase 1 · step 1 (" in posted[0]["content"] and "): confirm it" in posted[0]["content"]
