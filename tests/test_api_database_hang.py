"""A database that hangs after the handshake: an API request answers 503 within ~10 s, well inside
API Gateway's 29 s, and the statement that timed out is not re-run."""

import dataclasses
import time

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from tests.support.api import ADMIN, hs_settings
from tests.support.db_door import DatabaseDoor

pytestmark = pytest.mark.realtime  # each waits out a real deadline: make test runs it, make check does not



@pytest.fixture
def door(db_params):
    with DatabaseDoor(db_params) as opened:
        yield opened


def test_a_request_to_a_database_that_hangs_after_connecting_answers_503_within_10_seconds(door, db_params, clock):
    settings = dataclasses.replace(hs_settings(db_params), db_url=door.url())
    with runtime.override(settings=settings, clock=clock), Client(app) as client:
        assert client.http.get("/runs", headers={"Authorization": f"Bearer {ADMIN}"}).status_code == 200
        door.hang()  # connected and authenticated; from now on the server says nothing
        started = time.monotonic()
        answer = client.http.get("/runs", headers={"Authorization": f"Bearer {ADMIN}"})
        elapsed = time.monotonic() - started
        runtime.database().close()
    assert answer.status_code == 503 and answer.headers["Retry-After"].isdigit()
    assert answer.json_body == {"errors": ["the database is unavailable; try again shortly"]}
    assert runtime.API_READ_SECONDS * 0.9 <= elapsed < 10  # the API's read timeout, not the tick's minute
    assert door.accepted == 1  # the timed-out statement was not re-run on a new connection
