"""Under `make dev`, /console/config.json carries one-click logins: it is served only to a request for
127.0.0.1 or localhost, so a DNS-rebinding page on another name that resolves here cannot read them."""

from __future__ import annotations

from contextlib import ExitStack

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from tests.support.api import Api, hs_settings

DEV_LOGINS = (("admin", "t-admin"), ("gm", "t-gm"))


@pytest.fixture
def dev_api(db, clock, db_params):
    with ExitStack() as stack:
        stack.enter_context(runtime.override(database=db, clock=clock,
                                             settings=hs_settings(db_params, console_dev_logins=DEV_LOGINS)))
        yield Api(stack.enter_context(Client(app)))


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "localhost", "LOCALHOST:8000", "[::1]:8000"])
def test_the_dev_logins_are_served_to_a_loopback_host(dev_api, host):
    answer = dev_api.get("/console/config.json", headers={"Host": host})
    assert answer.status == 200 and [d["role"] for d in answer.body["dev_logins"]] == ["admin", "gm"]


@pytest.mark.parametrize("host", ["rebind.attacker.example:8000", "127.0.0.1.nip.io:8000", "localhost.attacker.example",
                                  "10.0.0.5:8000", "[::1", ""])
def test_any_other_host_is_403_and_gets_no_login(dev_api, host):
    answer = dev_api.get("/console/config.json", headers={"Host": host})
    assert answer.status == 403 and "t-admin" not in str(answer.body)
    assert answer.body == {"errors": [("with development logins (make dev) the console's settings are served only to "
                                       "http://127.0.0.1 or http://localhost")]}


def test_without_dev_logins_any_host_gets_the_public_settings(api):
    answer = api.get("/console/config.json", headers={"Host": "events.example.com"})
    assert answer.status == 200 and answer.body == {"oidc": None, "dev_logins": []}
