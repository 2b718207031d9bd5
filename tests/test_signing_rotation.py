"""A rotated signing key (GAME_BRIDGE_SECRET_ARN, WEBHOOK_SECRET_ARN) reaches a running tick: on the
secrets cache's age, and at once when the receiver answers 401 to a signature — the same request (a
dispatch, a webhook's post, a status probe) sent once more with the new key, the step done in one attempt."""

from __future__ import annotations

import time
from datetime import datetime

import boto3
import botocore.handlers
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from chalicelib import outbound
from chalicelib import secrets as engine_secrets
from chalicelib.config import Settings
from chalicelib.errors import DeadlineExceeded
from chalicelib.events.adapters import signing
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.store import steps
from devtools.kit.game_bridge import Answer, GameBridge, Received, StatusAsked
from tests.support.factory import document
from tests.support.runner_kit import schedule, step, tick


@pytest.fixture
def secrets(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    parameters.clear_caches()  # Powertools caches secrets across tests
    engine_secrets.forget()
    with mock_aws():
        yield boto3.client("secretsmanager", region_name="eu-west-1")
    parameters.clear_caches()
    engine_secrets.forget()


@pytest.fixture
def reads(monkeypatch, secrets) -> list[str]:
    """Every GetSecretValue call the engine's Secrets Manager client makes, by secret id."""
    seen: list[str] = []

    def count(params, **_):
        seen.append(params["SecretId"])

    monkeypatch.setattr(botocore.handlers, "BUILTIN_HANDLERS",
                        [*botocore.handlers.BUILTIN_HANDLERS, ("before-parameter-build.secrets-manager.GetSecretValue", count)])
    engine_secrets.forget()
    return seen


OLD, NEW = "bridge-key-before-rotation", "bridge-key-after-rotation"


def _checking(bridge: GameBridge, key: dict[str, str]):
    """Answer done to a request signed with key["now"], 401 to any other."""

    def answer(received: Received) -> Answer:
        return Answer() if received.signature_valid(key["now"]) else Answer(401, {"error": "bad signature"})

    return answer


def _status(db, run_id: int) -> str:
    return db.autocommit(lambda tx: tx.one("SELECT status FROM event_runs WHERE id = %s", (run_id,)))["status"]


def _the_step(db, run_id: int):
    [only] = db.autocommit(lambda tx: steps.list_for_run(tx, run_id))
    return only


def _spawn(db, clock):
    return schedule(db, clock.now(), {"name": "signed", "phases": [{"steps": [step("world.spawn", npc="x")]}]})


@pytest.mark.realtime  # the key cache's real age
def test_a_rotated_bridge_key_is_signed_with_once_the_cache_is_older_than_its_max_age(secrets, reads, db, clock, monkeypatch):
    monkeypatch.setattr(engine_secrets, "MAX_AGE_SECONDS", 1)  # short, so the test can outlive it
    arn = secrets.create_secret(Name="events/bridge", SecretString=OLD)["ARN"]
    with GameBridge(secret=OLD) as bridge:
        runner = build_runner(Settings(game_bridge_url=bridge.url, game_bridge_secret_arn=arn), db, clock)
        try:
            first = _spawn(db, clock)
            tick(runner)
            secrets.put_secret_value(SecretId=arn, SecretString=NEW)
            time.sleep(1.1)  # the cache's age passes; the game has not refused anything yet
            second = _spawn(db, clock)
            tick(runner)
        finally:
            runner.close()
        before, after = bridge.received("world.spawn")
    assert before.signature_valid(OLD) and after.signature_valid(NEW) and not after.signature_valid(OLD)
    assert _status(db, first.id) == _status(db, second.id) == RunStatus.COMPLETED.value
    assert reads == [arn, arn]


def test_a_401_to_a_signature_rereads_the_key_at_once_and_sends_the_same_request_again(secrets, reads, db, clock):
    arn = secrets.create_secret(Name="events/bridge", SecretString=OLD)["ARN"]
    key = {"now": OLD}
    with GameBridge(secret=OLD) as bridge:
        bridge.respond("world.spawn", _checking(bridge, key))
        runner = build_runner(Settings(game_bridge_url=bridge.url, game_bridge_secret_arn=arn), db, clock)
        try:
            run = _spawn(db, clock)
            # The rotation: the secret and the game change over; the tick's cache still holds the old key.
            secrets.put_secret_value(SecretId=arn, SecretString=NEW)
            key["now"] = NEW
            tick(runner)
        finally:
            runner.close()
        refused, sent_again = bridge.received("world.spawn")
    assert refused.signature_valid(OLD) and sent_again.signature_valid(NEW)
    assert sent_again.body == refused.body and sent_again.headers["idempotency-key"] == refused.headers["idempotency-key"]
    assert _status(db, run.id) == RunStatus.COMPLETED.value
    [done] = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))
    assert (done.status, done.attempts) == (StepStatus.DONE, 1)
    assert reads == [arn, arn]  # the first read, and one past the cache after the 401


def test_a_probe_refused_401_rereads_the_rotated_key_and_asks_again_so_the_step_in_doubt_is_done(secrets, reads, db, clock):
    """Issue 38: the status probe signed with the key the cache still held was answered 401 and the step, authored
    `on_doubt: park`, parked for a person for up to the cache's 300 s; it now re-reads the key as a dispatch does."""
    arn = secrets.create_secret(Name="events/bridge", SecretString=OLD)["ARN"]
    key, applied = {"now": OLD}, []

    def deliver(received: Received) -> Answer:
        applied.append(received.headers["idempotency-key"])
        return Answer(504, "")  # the game applied it; a proxy's timeout answered in its place

    def status(asked: StatusAsked) -> Answer:
        if not asked.signature_valid(key["now"]):
            return Answer(401, {"error": "bad signature"})
        return Answer(200, {"status": "applied" if asked.key in applied else "not_applied"})

    with GameBridge(secret=OLD) as bridge:
        bridge.respond("world.spawn", deliver)
        bridge.status(status)
        settings = Settings(game_bridge_url=bridge.url, game_bridge_secret_arn=arn, game_bridge_status=True)
        runner = build_runner(settings, db, clock)
        try:
            run = schedule(db, clock.now(), {"name": "asked", "phases": [
                {"steps": [{**step("world.spawn", npc="x"), "on_doubt": "park"}]}]})
            tick(runner)
            assert _the_step(db, run.id).in_doubt
            secrets.put_secret_value(SecretId=arn, SecretString=NEW)  # the rotation, the game's side with it
            key["now"] = NEW
            clock.advance(settings.step_retry_seconds)
            tick(runner)
        finally:
            runner.close()
        refused, asked_again = bridge.probes()
        assert len(bridge.received("world.spawn")) == 1  # applied once: nothing re-sent
    assert refused.signature_valid(OLD) and asked_again.signature_valid(NEW) and asked_again.target == refused.target
    spawn = _the_step(db, run.id)
    assert (spawn.status, spawn.parked, spawn.in_doubt) == (StepStatus.DONE, False, False)
    assert _status(db, run.id) == RunStatus.COMPLETED.value
    assert reads == [arn, arn]  # the first read, and one past the cache after the probe's 401


def test_a_game_that_refuses_every_signature_fails_the_step_and_costs_one_reread_per_interval(secrets, reads, db, clock):
    arn = secrets.create_secret(Name="events/bridge", SecretString=OLD)["ARN"]
    with GameBridge(secret=OLD, default=Answer(401, {"error": "bad signature"})) as bridge:
        runner = build_runner(Settings(game_bridge_url=bridge.url, game_bridge_secret_arn=arn), db, clock)
        try:
            runs = [_spawn(db, clock) for _ in range(3)]
            tick(runner)
        finally:
            runner.close()
        assert len(bridge.received("world.spawn")) == 3, "the key did not change: nothing is sent twice"
    assert [_status(db, r.id) for r in runs] == [RunStatus.PAUSED.value] * 3  # HTTP 401 is failed, as before
    assert reads == [arn, arn], f"one forced re-read within {signing.REREAD_SECONDS} s, not one per step"


def test_a_rotated_webhook_key_is_reread_after_a_401_and_the_notice_delivered(secrets, reads, db, clock, game_bridge):
    arn = secrets.create_secret(Name="events/webhook", SecretString=OLD)["ARN"]
    key = {"now": OLD}
    game_bridge.respond("cue", _checking(game_bridge, key))
    runner = build_runner(Settings(cue_channel=f"webhook:{game_bridge.url}/hooks/cue", webhook_secret_arn=arn), db, clock)
    try:
        run = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire")]]))
        secrets.put_secret_value(SecretId=arn, SecretString=NEW)
        key["now"] = NEW
        tick(runner)
    finally:
        runner.close()
    refused, delivered = game_bridge.received("cue")
    assert refused.signature_valid(OLD) and delivered.signature_valid(NEW) and delivered.body == refused.body
    [cue] = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))
    assert cue.parked and cue.attempts == 1


class FakeMonotonic:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("failing", ["current", "reread"])
def test_a_key_that_cannot_be_read_again_keeps_signing_with_the_last_one_read(failing):
    from chalicelib.events.errors import SecretUnreadable

    calls = []

    def read(force: bool) -> str:
        calls.append(force)
        if len(calls) > 1 and (force if failing == "reread" else not force):
            raise SecretUnreadable("the secret named by GAME_BRIDGE_SECRET_ARN cannot be read right now")
        return OLD

    clock = FakeMonotonic()
    key = signing.SigningKey(read, monotonic=clock)
    assert key.current() == OLD
    if failing == "current":
        assert key.current() == OLD
        assert key.current() == OLD and calls == [False, False], "a failed read is not tried again at once"
        clock.now = signing.UNREADABLE_SECONDS + 1
        assert key.current() == OLD and calls == [False, False, False]
    else:
        assert key.reread(OLD) is None  # no other key to send with: the 401 stands


class _SlowSecret:
    """A signing key's secret whose every read takes `seconds` (a Secrets Manager slow to answer), counted."""

    def __init__(self, seconds: float, keys: tuple[str, ...] = (OLD, NEW)):
        self.seconds, self.keys, self.reads = seconds, keys, 0

    def __call__(self, force: bool) -> str:
        time.sleep(self.seconds)
        self.reads += 1
        return self.keys[min(self.reads, len(self.keys)) - 1]


def _post(bridge: GameBridge, key: signing.SigningKey, timeout: float):
    return signing.post_signed(outbound.Endpoint.parse(bridge.url), "/actions/world.spawn", b"{}",
                               {"Idempotency-Key": "k1"}, key, datetime(2026, 12, 7, 20, 0), timeout=timeout)


@pytest.mark.realtime  # a secret read that sleeps past (or into) the deadline
def test_a_read_of_the_key_that_takes_the_whole_deadline_sends_nothing():
    """The key's read came after the deadline was set, and the send was still given the whole timeout: the
    request ran past its overall deadline by the read (the tick's lease allows only a little more)."""
    slow = _SlowSecret(1.2)
    with GameBridge(secret=OLD) as bridge:
        with pytest.raises(DeadlineExceeded, match="nothing was sent: reading the signing key took the whole 1 s"):
            _post(bridge, signing.SigningKey(slow, read_worst_seconds=6.0), timeout=1.0)
        assert bridge.received("world.spawn") == []


@pytest.mark.realtime  # a secret read that sleeps past (or into) the deadline
def test_a_401_is_not_followed_by_a_reread_that_cannot_fit_in_what_is_left_of_the_deadline():
    """After a 401 the key was read again past the cache whatever time was left, so a slow read ran the request
    past its deadline; now the re-read is made only while a whole read and a send still fit."""
    slow = _SlowSecret(0.6)
    with GameBridge(secret=NEW, default=Answer(401, {"error": "bad signature"})) as bridge:
        answer = _post(bridge, signing.SigningKey(slow, read_worst_seconds=6.0), timeout=1.0)
        assert answer.status == 401 and len(bridge.received("world.spawn")) == 1
    assert slow.reads == 1  # the first read alone: 0.4 s left could not hold a 6 s read
