"""A database that cannot be reached is the server's trouble: 503 in the error shape, not a 500."""

import socket

from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.db import Database
from tests.support.api import ADMIN, hs_settings


def test_an_unreachable_database_answers_503(db_params, clock):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    unreachable = Database(f"mysql://root@127.0.0.1:{port}/events", connect_timeout=1)
    with runtime.override(database=unreachable, clock=clock, settings=hs_settings(db_params)), Client(app) as client:
        answer = client.http.get("/runs", headers={"Authorization": f"Bearer {ADMIN}"})
    assert answer.status_code == 503
    assert answer.json_body == {"errors": ["the database is unavailable; try again shortly"]}
