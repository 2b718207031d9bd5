"""Secrets Manager (moto): the database and the game bridge key come from secret ARNs, read at most
once per max age, read again when the database refuses a rotated password, and a secret that cannot
be read is a 503 naming it."""

import dataclasses
import json
import socket
import time
import uuid
from datetime import UTC

import boto3
import botocore.handlers
import pytest
from aws_lambda_powertools.utilities import parameters
from chalice.test import Client
from moto import mock_aws

from app import app
from chalicelib import health, runtime
from chalicelib import secrets as engine_secrets
from chalicelib.config import Settings
from chalicelib.db import Database
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.runner.compose import build_runner
from devtools.kit.clock import ManualClock
from devtools.kit.game_bridge import GameBridge
from tests.conftest import START
from tests.support.api import ADMIN, hs_settings
from tests.support.factory import make_run
from tests.support.runner_kit import schedule, step, tick


@pytest.fixture
def secrets(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    # These tests judge what /health says, not how long it may wait (tests/test_api_health_flood.py does):
    # moto's first call in a process, on a loaded machine, can take longer than the one second it allows.
    monkeypatch.setattr(health, "WAIT_SECONDS", 30.0)
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

    # Handlers every new botocore session registers: the engine's client is made after this.
    monkeypatch.setattr(botocore.handlers, "BUILTIN_HANDLERS",
                        [*botocore.handlers.BUILTIN_HANDLERS, ("before-parameter-build.secrets-manager.GetSecretValue", count)])
    engine_secrets.forget()
    return seen


def _rds_secret(params, **changes) -> str:
    return json.dumps({"engine": "mysql", "host": params.host, "port": params.port, "username": params.user,
                       "password": params.password, "dbname": params.database, **changes})


@pytest.fixture
def app_user(db_params):
    """A real MariaDB user the engine connects as, whose password a test rotates with ALTER USER."""
    name, password = f"rot_{uuid.uuid4().hex[:8]}", "first-password"
    admin = Database(db_params)
    admin.autocommit(lambda tx: tx.execute("CREATE USER %s@'%%' IDENTIFIED BY %s", (name, password)))
    admin.autocommit(lambda tx: tx.execute(f"GRANT ALL ON `{db_params.database}`.* TO %s@'%%'", (name,)))
    yield name, password, admin
    admin.autocommit(lambda tx: tx.execute("DROP USER IF EXISTS %s@'%%'", (name,)))
    admin.close()


def _from_secret(db_params, arn: str) -> Settings:
    """The API's test settings, with the database named by a secret instead of a URL."""
    return dataclasses.replace(hs_settings(db_params), db_url=None, db_secret_arn=arn)


def _whoami(tx) -> str:
    return tx.one("SELECT CURRENT_USER() AS me")["me"].split("@")[0]


def test_the_database_comes_from_an_rds_style_secret(secrets, db_params, db):
    arn = secrets.create_secret(Name="events/db", SecretString=json.dumps({
        "engine": "mysql", "host": db_params.host, "port": db_params.port, "username": db_params.user,
        "password": db_params.password, "dbname": db_params.database,
    }))["ARN"]
    params = runtime.db_params(Settings(db_secret_arn=arn))
    assert (params.host, params.port, params.user, params.database) == (
        db_params.host, db_params.port, db_params.user, db_params.database)
    from_secret = Database(params)
    assert from_secret.autocommit(lambda tx: tx.one("SELECT DATABASE() AS name"))["name"] == db_params.database
    from_secret.close()


def test_the_runner_signs_with_the_bridge_secret_from_its_arn(secrets, db):
    arn = secrets.create_secret(Name="events/bridge", SecretString="secret-from-secrets-manager")["ARN"]
    clock = ManualClock(START)
    with GameBridge(secret="secret-from-secrets-manager") as bridge:
        runner = build_runner(Settings(game_bridge_url=bridge.url, game_bridge_secret_arn=arn), db, clock)
        try:
            run = schedule(db, clock.now(), {"name": "signed", "phases": [{"steps": [step("world.spawn", npc="x")]}]})
            tick(runner)
        finally:
            runner.close()
        (request,) = bridge.received("world.spawn")
        assert request.signature_valid("secret-from-secrets-manager")
        assert not request.signature_valid("some-other-secret")
    assert db.autocommit(lambda tx: tx.one("SELECT status FROM event_runs WHERE id = %s", (run.id,)))["status"] == RunStatus.COMPLETED.value


@pytest.mark.realtime
def test_a_secret_is_read_once_per_max_age(secrets, reads, db_params, monkeypatch):
    monkeypatch.setattr(engine_secrets, "MAX_AGE_SECONDS", 2)  # short, so the test can outlive it
    arn = secrets.create_secret(Name="events/db", SecretString=_rds_secret(db_params))["ARN"]
    first = engine_secrets.database_params(arn)
    assert engine_secrets.database_params(arn) == first
    assert reads == [arn]  # the second read, within the max age, asked nothing
    time.sleep(2.1)
    engine_secrets.database_params(arn)
    assert reads == [arn, arn]  # older than the max age: read again


def test_a_rotated_password_is_read_again_once_and_the_engine_reconnects(secrets, reads, db_params, app_user):
    name, password, admin = app_user
    arn = secrets.create_secret(Name="events/app", SecretString=_rds_secret(db_params, username=name, password=password))["ARN"]
    with runtime.override(settings=Settings(db_secret_arn=arn)):
        engine = runtime.database()
        assert engine.autocommit(_whoami) == name
        # Rotation: the password changes, then the secret; the engine still holds the old one, cached.
        admin.autocommit(lambda tx: tx.execute("ALTER USER %s@'%%' IDENTIFIED BY 'second-password'", (name,)))
        secrets.put_secret_value(SecretId=arn, SecretString=_rds_secret(db_params, username=name, password="second-password"))
        engine.close()  # a new connection (a dropped one, or another thread's) meets the new password
        assert engine.autocommit(_whoami) == name
        assert reads == [arn, arn]  # the first read, and one forced re-read after the 1045
        assert engine.params.password == "second-password"
        engine.close()


def test_a_password_rotated_without_its_secret_answers_503_after_one_reread(secrets, reads, db_params, app_user, clock):
    name, password, admin = app_user
    arn = secrets.create_secret(Name="events/app", SecretString=_rds_secret(db_params, username=name, password=password))["ARN"]
    settings = _from_secret(db_params, arn)
    with runtime.override(settings=settings, clock=clock), Client(app) as client:
        assert client.http.get("/runs", headers={"Authorization": f"Bearer {ADMIN}"}).status_code == 200
        admin.autocommit(lambda tx: tx.execute("ALTER USER %s@'%%' IDENTIFIED BY 'changed-behind-its-back'", (name,)))
        runtime.database().close()
        answer = client.http.get("/runs", headers={"Authorization": f"Bearer {ADMIN}"})
        runtime.database().close()
    assert answer.status_code == 503 and answer.headers["Retry-After"].isdigit()
    assert answer.json_body == {"errors": ["the database is unavailable; try again shortly"]}
    assert reads == [arn, arn]  # one re-read, then failing: not a loop


UNREADABLE = {"errors": ["the secret named by EVENTS_DB_SECRET_ARN cannot be read right now"]}


@pytest.mark.parametrize("stored", [None, "not json", json.dumps({"host": "db.internal"})],
                         ids=["missing", "not-json", "no-credentials"])
def test_an_unreadable_database_secret_answers_503_on_an_authenticated_route(secrets, db_params, clock, stored):
    arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:events/never-made-AbCdEf"
    if stored is not None:
        arn = secrets.create_secret(Name="events/broken", SecretString=stored)["ARN"]
    settings = _from_secret(db_params, arn)
    with runtime.override(settings=settings, clock=clock), Client(app) as client:
        answer = client.http.get("/runs", headers={"Authorization": f"Bearer {ADMIN}"})
    assert answer.status_code == 503 and answer.headers["Retry-After"].isdigit()
    assert answer.json_body == UNREADABLE


def test_health_names_the_secret_it_cannot_read(secrets, db_params):
    settings = _from_secret(db_params, "arn:aws:secretsmanager:eu-west-1:123456789012:secret:gone-AbCdEf")
    with runtime.override(settings=settings), Client(app) as client:
        answer = client.http.get("/health")
    assert answer.status_code == 503 and answer.headers["Retry-After"].isdigit()
    assert answer.json_body == UNREADABLE


def test_health_reads_the_secret_but_never_asks_the_database(secrets, reads, db_params):
    # The secret is fine; the database it names is a socket that never answers (as a paused Aurora would
    # have to wake). The kernel completes any connection to it, so a connection attempt is counted without
    # a clock: it waits in the listening backlog.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        nowhere = _rds_secret(db_params, host="127.0.0.1", port=silent.getsockname()[1])
        arn = secrets.create_secret(Name="events/db", SecretString=nowhere)["ARN"]
        with runtime.override(settings=_from_secret(db_params, arn)), Client(app) as client:
            answers = [client.http.get("/health") for _ in range(3)]
        silent.setblocking(False)
        with pytest.raises(BlockingIOError):
            silent.accept()  # no connection attempt reached the database
    assert [(a.status_code, a.json_body) for a in answers] == [(200, {"ok": True})] * 3
    assert reads == [arn]  # cached across requests


def _signed(clock, path: str, key: str) -> dict[str, str]:
    from chalicelib.api import signature

    stamp = str(int(clock.now().replace(tzinfo=UTC).timestamp()))
    return {"Content-Type": "application/json", signature.TIMESTAMP: stamp,
            signature.SIGNATURE: signature.sign(key, stamp, path, b"")}


def test_a_signal_is_checked_with_the_key_its_arn_names_and_a_rotated_key_is_taken_at_once(secrets, reads, db, db_params, clock):
    arn = secrets.create_secret(Name="events/signal", SecretString="game-key-one")["ARN"]
    doc = {"name": "Boss night", "phases": [{"name": "boss", "advance": {"when": "signal", "name": "boss_defeated"},
                                             "steps": [step("core.announce", message="Fight!")]}]}
    first, second, third = (make_run(db, clock.now(), doc=doc) for _ in range(3))
    settings = hs_settings(db_params, signal_secret_arn=arn)
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        def signal(run, key):
            path = f"/runs/{run.id}/signals/boss_defeated"
            return client.http.post(path, headers=_signed(clock, path, key), body=b"").status_code

        assert signal(first, "game-key-one") == 202
        assert reads == [arn]
        secrets.put_secret_value(SecretId=arn, SecretString="game-key-two")
        assert signal(second, "game-key-two") == 202  # refused by the cached key: the secret is read again at once
        assert reads == [arn, arn]
        assert signal(third, "game-key-one") == 401  # the old key no longer signs
        assert client.http.get("/health").status_code == 200


def test_health_names_the_signal_secret_it_cannot_read(secrets, db_params):
    settings = hs_settings(db_params, signal_secret_arn="arn:aws:secretsmanager:eu-west-1:123456789012:secret:no-signal-AbCdEf")
    with runtime.override(settings=settings), Client(app) as client:
        answer = client.http.get("/health")
    assert answer.status_code == 503
    assert answer.json_body == {"errors": ["the secret named by EVENTS_SIGNAL_SECRET_ARN cannot be read right now"]}


# ── keys sharing one secret: `<secret arn>:<json key>` (docs/operations.md, "Secrets") ──

BOSS_NIGHT = {"name": "Boss night", "phases": [{"name": "boss", "advance": {"when": "signal", "name": "boss_defeated"},
                                                "steps": [step("core.announce", message="Fight!")]}]}


def _shared_settings(db_params, arn: str) -> Settings:
    """The API's settings as infra/app.yaml gives them: the database, the signal key and a webhook key from one secret."""
    return dataclasses.replace(hs_settings(db_params), db_url=None, db_secret_arn=arn, signal_secret_arn=f"{arn}:signal_key",
                               webhook_secret_arn=f"{arn}:webhook_key")


def test_two_keys_of_one_json_secret_are_each_read_by_their_own_reference_in_one_call(secrets, reads, db_params):
    """A shared secret: its signal key and its webhook key, each read by `<arn>:<json key>`, beside the database's
    credentials in the same JSON; one GetSecretValue serves all three, and /health finds each readable."""
    arn = secrets.create_secret(Name="events/app", SecretString=_rds_secret(
        db_params, signal_key="signal-key-one", webhook_key="webhook-key-one"))["ARN"]
    settings = Settings.from_env({"EVENTS_DB_SECRET_ARN": arn, "EVENTS_SIGNAL_SECRET_ARN": f"{arn}:signal_key",
                                  "WEBHOOK_SECRET_ARN": f"{arn}:webhook_key"})
    assert engine_secrets.plain_secret(settings.signal_secret_arn, "EVENTS_SIGNAL_SECRET_ARN") == "signal-key-one"
    assert engine_secrets.plain_secret(settings.webhook_secret_arn, "WEBHOOK_SECRET_ARN") == "webhook-key-one"
    assert engine_secrets.database_params(arn).user == db_params.user
    runtime.check_secrets(settings)
    assert reads == [arn]


def test_a_key_the_shared_secret_lacks_is_a_configuration_error_naming_the_reference_not_a_key_error(secrets, db_params, caplog):
    """A setting naming `<arn>:webhook_key` where the secret has no such key: SecretUnreadable naming the setting and
    the key (the log names the whole reference), and /health answers 503 listing it while the other key reads."""
    arn = secrets.create_secret(Name="events/app", SecretString=_rds_secret(db_params, signal_key="signal-key-one"))["ARN"]
    with pytest.raises(engine_secrets.SecretUnreadable) as refused:
        engine_secrets.plain_secret(f"{arn}:webhook_key", "WEBHOOK_SECRET_ARN")
    assert str(refused.value) == ("the secret named by WEBHOOK_SECRET_ARN has no key 'webhook_key': a configuration error"
                                  " (add the key to the secret, or point WEBHOOK_SECRET_ARN at a key it has)")
    assert f"WEBHOOK_SECRET_ARN names {arn}:webhook_key, and that secret has no key 'webhook_key'" in caplog.text
    with runtime.override(settings=_shared_settings(db_params, arn)), Client(app) as client:
        answer = client.http.get("/health")
    assert answer.status_code == 503
    assert answer.json_body == {"errors": [str(refused.value)]}


def test_rotating_one_key_of_the_shared_secret_leaves_the_other_and_the_database_untouched(secrets, reads, db, db_params, clock):
    """The signal key is put anew in the shared secret, the rest of its JSON as it was: the API takes the new key
    at the first signature the old one does not verify, and the webhook key and the database's credentials read
    past the cache are the ones from before."""
    arn = secrets.create_secret(Name="events/app", SecretString=_rds_secret(
        db_params, signal_key="signal-key-one", webhook_key="webhook-key-one"))["ARN"]
    first, second = (make_run(db, clock.now(), doc=BOSS_NIGHT) for _ in range(2))
    with runtime.override(database=db, clock=clock, settings=_shared_settings(db_params, arn)), Client(app) as client:
        def signal(run, key):
            path = f"/runs/{run.id}/signals/boss_defeated"
            return client.http.post(path, headers=_signed(clock, path, key), body=b"").status_code

        assert signal(first, "signal-key-one") == 202
        rotated = {**json.loads(_rds_secret(db_params, webhook_key="webhook-key-one")), "signal_key": "signal-key-two"}
        secrets.put_secret_value(SecretId=arn, SecretString=json.dumps(rotated))
        assert signal(second, "signal-key-two") == 202
        assert signal(second, "webhook-key-one") == 401  # each purpose its own key, though they share a secret
    assert engine_secrets.plain_secret(f"{arn}:webhook_key", "WEBHOOK_SECRET_ARN", force_fetch=True) == "webhook-key-one"
    assert engine_secrets.database_params(arn, force_fetch=True) == engine_secrets.database_params(arn)
    assert engine_secrets.database_params(arn).password == db_params.password
