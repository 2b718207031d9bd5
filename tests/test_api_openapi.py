"""The OpenAPI document covers every route and every refusal each can answer, docs/contract.md's route table names
every route, and `chalice local` keeps to the document under schemathesis."""

from __future__ import annotations

import ast
import inspect
import os
import re
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
from chalicelib.api.schemas import ERRORS, SIGNAL_NAME
from chalicelib.errors import EngineError
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


def _contract_route_table() -> set[tuple[str, str]]:
    """The (method, path) pairs of docs/contract.md's route table, each id as `{}`. A row may name several methods
    and paths, a path of one segment after another standing for that path's last segment (`/resume` after
    `/runs/{run_id}/pause`)."""
    section = (ROOT / "docs" / "contract.md").read_text().split("\n## The HTTP API\n")[1].split("\n## ")[0]
    listed = set()
    for methods, paths in re.findall(r"^\| ([A-Z, ]+) \| (.+?) \|", section, re.M):
        full: list[str] = []
        for path in re.findall(r"`(/[^`?]*)", paths):
            full.append(full[-1].rsplit("/", 1)[0] + path if full and path.count("/") == 1 else path)
        listed |= {(method.strip().lower(), re.sub(r"{\w+}", "{}", path)) for method in methods.split(",") for path in full}
    return listed


def test_contracts_route_table_names_every_route():
    served = {(method, re.sub(r"{\w+}", "{}", path)) for method, path in _routes()}
    assert ("get", "/runs/{}") in _contract_route_table(), "the table reads as it should"
    assert sorted(f"{method.upper()} {path}" for method, path in served - _contract_route_table()) == []


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


# Beyond a run's own routes, each operation that answers 409, and what for.
ANSWERS_409 = {
    ("post", "/definitions"): "a name another definition holds",
    ("put", "/definitions/{definition_id}"): "a name another definition holds",
    ("post", "/definitions/{definition_id}/runs"): "an occurrence whose run has finished, or that is skipped",
    ("get", "/definitions/{definition_id}/occurrences"): "a stored schedule that no longer reads",
    ("post", "/definitions/{definition_id}/occurrences/{scheduled_for}/skip"): "an occurrence whose run has started",
    ("post", "/definitions/{definition_id}/occurrences/{scheduled_for}/unskip"): "an occurrence due already",
    ("post", "/definitions/{definition_id}/schedule/pause"): "a schedule paused already",
    ("post", "/definitions/{definition_id}/schedule/resume"): "a schedule that is not paused",
    ("post", "/definitions/{definition_id}/rehearse"): "a version whose stored schedule no longer reads",
    ("post", "/definitions/{definition_id}/dry-runs"): "a sandbox dry run with no sandbox configured",
    ("post", "/runs/bulk"): "a count that moved",
}


def test_every_operation_that_answers_409_declares_it():
    undeclared = [f"{method.upper()} {path}: {why}" for (method, path), why in ANSWERS_409.items()
                  if "409" not in DOCUMENT["paths"][path][method]["responses"]]
    assert undeclared == []
    dry_run = DOCUMENT["paths"]["/definitions/{definition_id}/dry-runs"]["post"]["responses"]["409"]
    assert dry_run["description"].startswith("bridge sandbox"), "an operation's own words for a refusal stay"


def test_bulk_declares_no_422_as_it_never_answers_one():
    # A key its presser used for another control is that run's `refused` entry; a malformed key is a 400.
    assert "422" not in DOCUMENT["paths"]["/runs/bulk"]["post"]["responses"]
    assert "422" in DOCUMENT["paths"]["/runs/{run_id}/pause"]["post"]["responses"]


def _engine_errors(cls: type[EngineError] = EngineError) -> set[type[EngineError]]:
    return {cls}.union(*(_engine_errors(sub) for sub in cls.__subclasses__()))


def test_every_field_a_refusal_carries_in_detail_is_declared():
    """A client reads `detail`, never the message: every field of it the engine sets is in the document. The fields
    are the keyword-only ones of the refusals that name theirs (Forbidden, Conflict, Stale) and the keys of each
    `detail={…}` a refusal is made with."""
    refusals = _engine_errors()
    fields = {name for cls in refusals for name, parameter in inspect.signature(cls.__init__).parameters.items()
              if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name != "detail"}
    names = {cls.__name__ for cls in refusals}
    for source in (ROOT / "chalicelib").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
                fields |= {key.value for keyword in node.keywords if keyword.arg == "detail"
                           for literal in ast.walk(keyword.value) if isinstance(literal, ast.Dict)
                           for key in literal.keys if isinstance(key, ast.Constant)}
    assert {"run_status", "roles_needed", "count", "bridge"} <= fields, "the scan reads what it should"
    assert fields - set(ERRORS["properties"]["detail"]["properties"]) == set()


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
