"""Secrets Manager and the database in trouble: bounded waits, bounded calls, and a 503 the API Gateway passes on.

Secrets Manager stands in as a loopback endpoint (`AWS_ENDPOINT_URL_SECRETS_MANAGER`)
that answers 500, never answers, or never accepts; the database as a port that
refuses connections. moto serves the secret where a test needs one that reads.
"""

import dataclasses
import json
import socket
import time

import boto3
import botocore.handlers
import pytest
from aws_lambda_powertools.utilities import parameters
from chalice.test import Client
from moto import mock_aws

from app import app
from chalicelib import runtime
from chalicelib import secrets as engine_secrets
from chalicelib.events.errors import SecretUnreadable
from tests.support.api import ADMIN, hs_settings
from tests.support.loopback_aws import loopback_aws, never_accepting, offline_credentials

REGION = "eu-west-1"
ARN = f"arn:aws:secretsmanager:{REGION}:123456789012:secret:events/db-AbCdEf"
API_GATEWAY_LIMIT = 29.0  # seconds: past it the caller gets a 504, whatever the Lambda answers later


@pytest.fixture(autouse=True)
def fresh_secrets():
    parameters.clear_caches()  # Powertools caches secrets across tests
    engine_secrets.forget()
    yield
    parameters.clear_caches()
    engine_secrets.forget()


@pytest.fixture
def secrets_at(monkeypatch):
    """Point the engine's Secrets Manager client at `url`."""
    def point(url: str) -> None:
        offline_credentials(monkeypatch, REGION)
        monkeypatch.setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", url)
        engine_secrets.forget()
    return point


def _settings(db_params, arn: str = ARN):
    return dataclasses.replace(hs_settings(db_params), db_url=None, db_secret_arn=arn)


def _get_runs(db_params, clock, arn: str = ARN, requests: int = 1):
    with runtime.override(settings=_settings(db_params, arn), clock=clock), Client(app) as client:
        return [client.http.get("/runs", headers={"Authorization": f"Bearer {ADMIN}"}) for _ in range(requests)]


def test_a_secrets_manager_answering_500_is_asked_twice_then_named_unreadable(secrets_at):
    """The client's retry limit: two tries in all, not botocore's default five (issue 23, item 10)."""
    with loopback_aws(answer=True) as endpoint:
        secrets_at(endpoint.url)
        with pytest.raises(SecretUnreadable, match="EVENTS_DB_SECRET_ARN"):
            engine_secrets.database_params(ARN)
    assert endpoint.requests == 2


@pytest.mark.realtime
def test_a_secrets_manager_that_never_accepts_is_given_up_within_two_connect_timeouts(secrets_at):
    """The client's connect timeout (1 s a try), not botocore's 60 s (issue 23, item 10)."""
    with never_accepting() as url:
        secrets_at(url)
        started = time.monotonic()
        with pytest.raises(SecretUnreadable):
            engine_secrets.database_params(ARN)
        took = time.monotonic() - started
    assert took < 5


@pytest.mark.realtime
def test_a_hung_secrets_manager_answers_503_with_retry_after_well_inside_api_gateways_limit(secrets_at, db_params, clock):
    """The client's read timeout bounds an API request that needs the secret (issue 23, item 12): a 503 the
    caller can retry, not the 504 API Gateway would send after 29 s."""
    with loopback_aws(answer=False) as endpoint:
        secrets_at(endpoint.url)
        started = time.monotonic()
        [answer] = _get_runs(db_params, clock)
        took = time.monotonic() - started
    assert answer.status_code == 503 and answer.headers["Retry-After"].isdigit()
    assert answer.json_body == {"errors": ["the secret named by EVENTS_DB_SECRET_ARN cannot be read right now"]}
    assert endpoint.requests == 2
    assert took < API_GATEWAY_LIMIT / 3


def test_a_database_that_is_down_does_not_make_requests_read_the_secret_again(monkeypatch, db_params, clock):
    """Only a credentials refusal (1045) re-reads the secret (issue 23, item 11): an outage costs no
    Secrets Manager calls beyond the cached read, however many requests meet it."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    reads: list[str] = []

    def count(params, **_):
        reads.append(params["SecretId"])

    monkeypatch.setattr(botocore.handlers, "BUILTIN_HANDLERS",
                        [*botocore.handlers.BUILTIN_HANDLERS, ("before-parameter-build.secrets-manager.GetSecretValue", count)])
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: connections are refused, as by a database that is down
    with mock_aws():
        arn = boto3.client("secretsmanager", region_name=REGION).create_secret(Name="events/db", SecretString=json.dumps({
            "engine": "mysql", "host": "127.0.0.1", "port": port, "username": db_params.user,
            "password": db_params.password, "dbname": db_params.database}))["ARN"]
        answers = _get_runs(db_params, clock, arn, requests=3)
    assert [a.status_code for a in answers] == [503] * 3
    assert answers[0].json_body == {"errors": ["the database is unavailable; try again shortly"]}
    assert reads == [arn]
