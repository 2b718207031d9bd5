"""The OpenAPI document covers every route, and `chalice local` keeps to it under schemathesis."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from app import app
from chalicelib.api.openapi import document
from chalicelib.api.routes import OPERATIONS
from chalicelib.api.schemas import SIGNAL_NAME
from tests.support.api import AUDIENCE, ISSUER, SECRET, token

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = document(OPERATIONS)


def _routes() -> set[tuple[str, str]]:
    # The console (page, assets, sign-in settings) is not part of the documented API.
    return {(method.lower(), path) for path, methods in app.routes.items() for method in methods
            if not path.startswith("/console")}


def test_every_route_has_its_openapi_entry_and_every_entry_its_route():
    documented = {(method, path) for path, entry in DOCUMENT["paths"].items() for method in entry}
    assert _routes() - documented == set(), "routes without an OpenAPI entry"
    assert documented - _routes() == set(), "OpenAPI entries without a route"


def test_the_served_document_is_the_one_built_from_the_handlers(api):
    answer = api.get("/openapi.json")
    assert answer.status == 200 and answer.body == DOCUMENT


def test_bodies_and_queries_in_the_document_are_the_schemas_the_handlers_check():
    for op in OPERATIONS:
        entry = DOCUMENT["paths"][op.path][op.method.lower()]
        if op.body is not None:
            assert entry["requestBody"]["content"]["application/json"]["schema"] is op.body
        queried = {p["name"]: p["schema"] for p in entry["parameters"] if p["in"] == "query"}
        assert queried == (op.query or {"properties": {}})["properties"]


def test_the_signal_route_takes_a_name_and_a_token_or_the_game_servers_signature():
    entry = DOCUMENT["paths"]["/runs/{run_id}/signals/{name}"]["post"]
    params = {p["name"]: (p["in"], p["schema"]) for p in entry["parameters"]}
    assert params["run_id"][0] == "path" and params["run_id"][1]["type"] == "integer"
    assert params["name"] == ("path", SIGNAL_NAME)
    assert entry["security"] == [{"bearer": []}, {"signal_signature": [], "signal_timestamp": []}]
    schemes = DOCUMENT["components"]["securitySchemes"]
    assert {k: (v["type"], v.get("in"), v.get("name")) for k, v in schemes.items()} == {
        "bearer": ("http", None, None),
        "signal_signature": ("apiKey", "header", "X-Signal-Signature"),
        "signal_timestamp": ("apiKey", "header", "X-Signal-Timestamp"),
    }
    assert {"200", "202", "400", "401", "403", "404", "409", "503"} <= set(entry["responses"])
    others = [e for path, methods in DOCUMENT["paths"].items() for e in methods.values() if "/signals/" not in path]
    assert all(e.get("security") in (None, []) for e in others)  # every other route: the document's bearer, or none


# ── schemathesis against `chalice local` ──────────────────────────────────
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def local_api(db_params, tmp_path_factory):
    """`chalice local` on a free loopback port, on the test database, with our token settings."""
    port = _free_port()
    server_log = tmp_path_factory.mktemp("chalice-local") / "server.log"
    env = {
        **os.environ,
        "EVENTS_DB_URL": db_params.url(),
        "EVENTS_JWT_SECRET": SECRET,
        "EVENTS_JWT_ISSUER": ISSUER,
        "EVENTS_JWT_AUDIENCE": AUDIENCE,
    }
    # A stage that config.json does not name: only its top-level settings apply,
    # so the ones above are not overridden by the dev stage's.
    command = [str(Path(sys.executable).parent / "chalice"), "local", "--host", "127.0.0.1", "--port", str(port),
               "--stage", "schemathesis", "--no-autoreload"]
    # Its request log goes to a file: an unread pipe fills up and stalls the server.
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=server_log.open("wb"))
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            requests.get(f"{base}/health", timeout=1)
            break
        except requests.ConnectionError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RuntimeError(f"chalice local did not start: {server_log.read_text()[-2000:]}") from None
            time.sleep(0.2)
    yield base
    server.terminate()
    server.wait(timeout=10)


# TRACE and friends are answered by chalice local's own HTTP server (501), never by
# the app; API Gateway refuses them itself. Every other probe goes through.
schema = schemathesis.openapi.from_dict(
    DOCUMENT, config=schemathesis.Config.from_dict({"phases": {"coverage": {"unexpected-methods": []}}})
)


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=8,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_chalice_local_keeps_to_the_document(case, local_api):
    case.call_and_validate(
        base_url=local_api,
        headers={"Authorization": f"Bearer {token('admin', sub='schemathesis')}"},
        checks=[not_a_server_error, status_code_conformance, content_type_conformance,
                response_schema_conformance, negative_data_rejection],
        timeout=10,
    )
