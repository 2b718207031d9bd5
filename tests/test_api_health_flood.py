"""GET /health is open to anyone: while Secrets Manager hangs, a flood of it must not hold the API's
concurrency — each answer within about a second, the failure remembered briefly, Secrets Manager asked once."""

from __future__ import annotations

import dataclasses
import time

import pytest
from aws_lambda_powertools.utilities import parameters
from chalice.test import Client

from app import app
from chalicelib import health, runtime
from chalicelib import secrets as engine_secrets
from chalicelib.events.errors import SecretUnreadable
from tests.support.api import hs_settings
from tests.support.silent_server import SilentServer

ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:events/db-AbCdEf"


@pytest.fixture
def hanging_secrets_manager(monkeypatch):
    server = SilentServer()
    monkeypatch.setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", f"http://127.0.0.1:{server.port}")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    parameters.clear_caches()
    engine_secrets.forget()
    yield server
    server.close()
    parameters.clear_caches()
    engine_secrets.forget()


def test_a_flood_of_health_while_secrets_manager_hangs_answers_503_at_once_and_asks_it_once(db_params, hanging_secrets_manager):
    settings = dataclasses.replace(hs_settings(db_params), db_url=None, db_secret_arn=ARN)
    with runtime.override(settings=settings), Client(app) as client:
        timings, answers = [], []
        for _ in range(5):
            started = time.monotonic()
            answers.append(client.http.get("/health"))
            timings.append(time.monotonic() - started)
    assert timings[0] < health.WAIT_SECONDS + 0.5, timings
    assert max(timings[1:]) < 0.2, f"the failure is remembered: {timings}"
    for answer in answers:
        assert answer.status_code == 503 and answer.headers["Retry-After"].isdigit()
        assert answer.json_body == {"errors": [health.NOT_IN_TIME]}
    assert hanging_secrets_manager.connections <= 2, "one check (botocore's two tries at most), not one per request"


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_failure_is_remembered_for_its_seconds_then_checked_again_and_success_is_not_remembered():
    clock, calls, broken = FakeClock(), [], {"now": True}

    def check() -> None:
        calls.append(clock.now)
        if broken["now"]:
            raise SecretUnreadable("the secret named by EVENTS_DB_SECRET_ARN cannot be read right now")

    checked = health.SecretsHealth(check, monotonic=clock)
    for at in (0.0, 1.0, health.FAILURE_SECONDS - 0.1):
        clock.now = at
        with pytest.raises(SecretUnreadable, match="EVENTS_DB_SECRET_ARN"):
            checked.check()
    assert calls == [0.0]
    broken["now"] = False
    clock.now = health.FAILURE_SECONDS + 0.1
    checked.check()
    checked.check()
    assert calls == [0.0, health.FAILURE_SECONDS + 0.1, health.FAILURE_SECONDS + 0.1]
