"""Whatever a client sends, the answer is a 4xx in the error shape and nothing is written."""

from __future__ import annotations

import pytest

from app import app
from chalicelib.api import schemas
from chalicelib.api.routes import OPERATIONS
from chalicelib.api.routes.chat import MAX_INTERACTION_BYTES, MAX_SLACK_INTERACTION_BYTES
from chalicelib.events.lifecycle import RunStatus
from tests.conftest import START
from tests.support.api import ADMIN
from tests.support.factory import make_definition
from tests.support.scenes import everything, put_step_in, run_with_steps

BODY_FIELD = {  # a field each body really has, to send with the wrong type or size
    "/runs/{run_id}/pause": "reason",
    "/runs/{run_id}/cancel": "reason",
    "/runs/{run_id}/steps/{step_id}/confirm": "note",
    "/runs/{run_id}/steps/{step_id}/skip": "reason",
    "/definitions": "name",
    "/definitions/{definition_id}": "name",
    "/definitions/{definition_id}/runs": "scheduled_for",
}
ROUTES = sorted(  # the API's routes; the console's page and assets are tested in test_console_routes.py
    (method, path) for path, methods in app.routes.items() for method in methods if not path.startswith("/console")
)
WITH_IDS = [r for r in ROUTES if "{" in r[1]]
# Signed by Discord or Slack: the signature is checked before anything is read, so an unsigned request is 401
# whatever its body or query (tests/test_chat_interactions.py sends them signed).
SIGNED = {(op.method, op.path) for op in OPERATIONS if op.platform_signed}
WITH_BODY = [r for r in ROUTES if r[0] in ("POST", "PUT") and r not in SIGNED]
# Bodies whose fields are the sender's own (a signal's payload): any field is taken, so none is unknown.
OPEN_BODIES = {op.path for op in OPERATIONS if op.body is not None and op.body.get("additionalProperties") is not False
               and op.body is not schemas.DEFINITION_BODY}


@pytest.fixture
def db(module_db):
    """Every test here is refused and checks that nothing changed: one database and one world for the module."""
    return module_db


@pytest.fixture(scope="module")
def world(module_db):
    """A live run with a step in each actionable state, another run, and a definition."""
    db = module_db
    run, (parked, failed, _pending) = run_with_steps(db, START, RunStatus.PAUSED)
    put_step_in(db, parked, "parked", START)
    put_step_in(db, failed, "failed", START)
    _other, (theirs, *_) = run_with_steps(db, START, RunStatus.PAUSED)
    definition = make_definition(db, START)
    return {"run_id": run.id, "step_id": parked.id, "definition_id": definition.id, "version": 1, "other_step_id": theirs.id,
            "name": "boss_defeated", "scheduled_for": "2026-12-11T20:00:00Z", "phase": 1}


def _path(template: str, ids: dict) -> str:
    return template.format(**ids)


def _refused(api, db, method, path, expected=400, **kw):
    before = everything(db)
    answer = api.call(method, path, auth=ADMIN, **kw)
    assert answer.status == expected, (method, path, kw, answer.status, answer.body)
    assert isinstance(answer.body["errors"], list) and answer.body["errors"] and all(isinstance(e, str) for e in answer.body["errors"])
    assert everything(db) == before
    return answer


@pytest.mark.parametrize("bad", ["abc", "-1", "0", "1.5", "1e3", "99999999999999999999", "%20", "007"])
@pytest.mark.parametrize("route", WITH_IDS, ids=lambda r: f"{r[0]} {r[1]}")
def test_ids_must_be_positive_whole_numbers(api, db, world, route, bad):
    method, template = route
    for name in ("run_id", "step_id", "definition_id", "version", "phase"):
        if "{" + name + "}" in template:
            _refused(api, db, method, _path(template, {**world, name: bad}))


@pytest.mark.parametrize("control", ["confirm", "skip", "retry"])
def test_another_runs_step_id_is_404(api, db, world, control):
    _refused(api, db, "POST", f"/runs/{world['run_id']}/steps/{world['other_step_id']}/{control}", expected=404)


@pytest.mark.parametrize("route", WITH_BODY, ids=lambda r: f"{r[0]} {r[1]}")
def test_bodies_that_are_not_what_the_route_takes(api, db, world, route):
    method, template = route
    path = _path(template, world)
    field = BODY_FIELD.get(template)
    for raw in ("{not json", "[1, 2]", '"reason"', "42", "null", b"\xff\xfe", "[" * 100_000 + "]" * 100_000,
                '{"reason": NaN}', '{"reason": 1e400}', '{"reason": "\\ud800"}'):
        _refused(api, db, method, path, raw=raw)
    if template not in OPEN_BODIES:
        _refused(api, db, method, path, body={"status": "done", "attempts": 0})  # no client sets these
    _refused(api, db, method, path, raw=b" " * (1024 * 1024 + 1))
    if field:
        for wrong in (12345, ["x"], {"x": 1}, True):
            _refused(api, db, method, path, body={field: wrong})
        if field not in ("reason", "note"):  # a reason or note of any length is kept to 500 characters
            _refused(api, db, method, path, body={field: "x" * 100_000})
    _refused(api, db, method, path, expected=415, raw="reason=x", headers={"Content-Type": "application/x-www-form-urlencoded"})


@pytest.mark.parametrize("when", [
    "tomorrow", "2026-13-01T00:00:00Z", "2026-12-04T20:00:00", "2026-12-04", "9999-12-31T23:59:59-05:00",
    "0001-01-01T00:00:00+01:00", "",
])
def test_a_scheduled_for_that_is_not_a_zoned_time_is_400(api, db, world, when):
    _refused(api, db, "POST", f"/definitions/{world['definition_id']}/runs", body={"scheduled_for": when})


def test_required_bodies_must_be_sent(api, db, world):
    for method, path in [("POST", "/definitions"), ("PUT", f"/definitions/{world['definition_id']}"),
                         ("POST", f"/definitions/{world['definition_id']}/runs")]:
        _refused(api, db, method, path)
        _refused(api, db, method, path, body={})


@pytest.mark.parametrize("query", [
    "limit=0", "limit=201", "limit=-1", "limit=abc", "limit=", "status=exploded", "cursor=0", "cursor=x",
    "definition_id=-3", "unknown=1", "limit=99999999999999999999999",
])
def test_bad_run_list_queries_are_400(api, db, query):
    _refused(api, db, "GET", f"/runs?{query}")


@pytest.mark.parametrize("query", ["limit=0", "limit=201", "limit=x", "cursor=0", "cursor=-1", "cursor=x", "status=done"])
def test_bad_definition_list_queries_are_400(api, db, query):
    _refused(api, db, "GET", f"/definitions?{query}")


@pytest.mark.parametrize("query", ["after_id=-1", "after_id=x", "limit=0", "limit=1001", "run_id=2"])
def test_bad_log_queries_are_400(api, db, world, query):
    _refused(api, db, "GET", f"/runs/{world['run_id']}/log?{query}")


def test_unknown_query_parameters_are_refused_everywhere(api, db, world):
    for method, template in ROUTES:
        form = "slack" in template  # Slack posts a form
        _refused(api, db, method, _path(template, world) + "?status_override=done",
                 **({"raw": "payload=%7B%7D", "headers": {"Content-Type": "application/x-www-form-urlencoded"}} if form else {}))


@pytest.mark.parametrize("route", sorted(SIGNED), ids=lambda r: f"{r[0]} {r[1]}")
def test_an_unsigned_interaction_is_401_whatever_its_body_and_nothing_changes(api, db, route):
    """Nothing of an unsigned press is read: 401 whatever it holds; one past the interaction cap is 400 unread."""
    method, path = route
    kind = {"Content-Type": "application/x-www-form-urlencoded" if "slack" in path else "application/json"}
    for raw in ("{not json", "[1, 2]", "null", b"\xff\xfe", "[" * 30_000 + "]" * 30_000, "payload=%7B%7D",
                '{"type": 3, "data": {"custom_id": "ev:1:1:confirm"}}'):
        _refused(api, db, method, path, expected=401, raw=raw, headers=kind)
    cap = MAX_SLACK_INTERACTION_BYTES if "slack" in path else MAX_INTERACTION_BYTES  # a Slack press carries its message twice
    assert f"at most {cap} bytes" in _refused(api, db, method, path, raw=b" " * (cap + 1), headers=kind).body["errors"][0]


def test_a_module_step_whose_params_cannot_be_stored_is_400(api, db):
    before = everything(db)
    for params in ('{"npc": NaN}', '{"npc": Infinity}', '{"hp": 1e999}', '{"npc": "\\udfff"}'):
        raw = f'{{"name": "x", "phases": [{{"steps": [{{"action": "world.spawn", "params": {params}}}]}}]}}'
        assert api.post("/definitions", raw=raw, auth=ADMIN).status == 400, params
    assert everything(db) == before


# ── an unknown field is named, with the nearest known one, on every route (schema_check.unknown_field) ──
def _typo(name: str) -> str:
    return name[:2] + name[3:]  # reason -> reson, scheduled_for -> scheuled_for


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.body is not None and op.body is not schemas.DEFINITION_BODY
                                and op.path not in OPEN_BODIES], ids=lambda op: f"{op.method} {op.path}")
def test_an_unknown_body_field_is_named_with_the_nearest_known_one(api, db, world, op):
    known = list(op.body["properties"])
    if known:
        sent, expected = _typo(known[0]), f"`{_typo(known[0])}` is not a field of {op.name}; did you mean `{known[0]}`?"
    else:
        sent, expected = "reason", f"`reason` is not a field of {op.name} (it takes none)"
    answer = _refused(api, db, op.method, _path(op.path, world), body={sent: "x"})
    assert answer.body["errors"] == [expected]


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.roles is not None], ids=lambda op: f"{op.method} {op.path}")
def test_an_unknown_query_parameter_is_named_with_the_nearest_known_one(api, db, world, op):
    known = list((op.query or schemas.NO_FIELDS)["properties"])
    if known:
        sent = _typo(known[0])
        expected = f"`{sent}` is not a query parameter of {op.name}; did you mean `{known[0]}`?"
    else:
        sent, expected = "limit", f"`limit` is not a query parameter of {op.name} (it takes none)"
    body = {"name": "x", "phases": [{"steps": [{"action": "core.wait", "params": {"seconds": 1}}]}]}
    answer = _refused(api, db, op.method, f"{_path(op.path, world)}?{sent}=1", body=body if op.body else None)
    assert answer.body["errors"] == [expected]


def test_the_pause_of_the_issue_reads_as_written(api, db, world):
    answer = _refused(api, db, "POST", f"/runs/{world['run_id']}/pause", body={"reson": "boss bugged"})
    assert answer.body == {"errors": ["`reson` is not a field of pause; did you mean `reason`?"]}


def test_a_form_body_is_told_to_send_json(api, db, world):
    answer = _refused(api, db, "POST", f"/runs/{world['run_id']}/pause", expected=415, raw="reason=x",
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
    said = "send the body as application/json, not application/x-www-form-urlencoded (with curl: -H 'Content-Type: application/json')"
    assert answer.body == {"errors": [said]}
    # Chalice answers it before the route's own code: as private as the route's own refusals
    headers = {name.lower(): value for name, value in answer.headers.items()}
    assert (headers["cache-control"], headers["x-content-type-options"]) == ("no-store", "nosniff")
