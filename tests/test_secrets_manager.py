"""Secrets Manager (moto): the database and the game bridge key come from secret ARNs."""

import json

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.db import Database, ManualClock
from chalicelib.events.model import RunStatus
from chalicelib.events.runner.schedule import build_runner
from tests.conftest import START
from tests.support.game_bridge import GameBridge
from tests.support.runner_kit import schedule, step, tick


@pytest.fixture
def secrets(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    parameters.clear_caches()  # Powertools caches secrets across tests
    with mock_aws():
        yield boto3.client("secretsmanager", region_name="eu-west-1")
    parameters.clear_caches()


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
