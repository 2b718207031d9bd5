"""The API's documented limits: what a client may send, and how much it gets back."""

from __future__ import annotations

import socket
from datetime import timedelta

import pymysql
import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.api.errors import from_exception
from chalicelib.db import Database
from chalicelib.events.document import MIN_GRACE_SECONDS
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.occurrences import MAX_SCHEDULE_AHEAD
from chalicelib.events.runner.planner import plan_occurrences
from chalicelib.events.store import runs
from chalicelib.storable import MAX_JSON_DEPTH
from tests.support.api import ADMIN, Api, hs_settings
from tests.support.factory import document as factory_document
from tests.support.factory import make_definition
from tests.support.scenes import everything, log_rows, put_step_in, run_with_steps, table_counts

STACK_TRACE = "Traceback (most recent call last):\n" + "  File \"boss.py\", line 1, in fight\n" * 300


@pytest.mark.parametrize("control, field", [("pause", "reason"), ("cancel", "reason")])
def test_a_run_control_takes_a_reason_of_any_length_and_keeps_its_first_500_characters(api, db, clock, control, field):
    run, _ = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    answer = api.post(f"/runs/{run.id}/{control}", {field: "  " + STACK_TRACE}, auth=ADMIN)
    assert answer.status == 200, answer.body
    [entry] = [e for e in log_rows(db, run.id) if e["detail"].get("control") == control]
    assert entry["detail"][field] == STACK_TRACE.strip()[:500]


@pytest.mark.parametrize("control, field, state", [("confirm", "note", "parked"), ("skip", "reason", "pending")])
def test_a_step_control_takes_a_note_of_any_length_and_keeps_its_first_500_characters(api, db, clock, control, field, state):
    run, (first, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, first, state, clock.now())
    answer = api.post(f"/runs/{run.id}/steps/{first.id}/{control}", {field: STACK_TRACE * 3}, auth=ADMIN)
    assert answer.status == 200, answer.body
    [entry] = [e for e in log_rows(db, run.id) if e["detail"].get("control") == control]
    assert entry["detail"][field] == STACK_TRACE.strip()[:500]


def test_a_document_with_80000_problems_answers_the_first_50_and_how_many_more(api, db):
    unknown = {f"k{i:05}": 0 for i in range(80_000)}
    answer = api.post("/definitions", {"name": "x", "phases": [{"steps": [{"action": "a.b"}]}], **unknown}, auth=ADMIN)
    assert answer.status == 400
    *problems, more = answer.body["errors"]
    known = "(it has `name`, `grace_seconds`, `phases`, `ending`, `cleanup_on`, `schedule`)"
    assert problems == [f"`k{i:05}` is not a field of document {known}" for i in range(50)]
    assert more == "… and 79950 more problems"


def _nested(levels: int) -> str:
    """A definition whose JSON nests `levels` deep: the document, phases, a phase, steps, a step, then params."""
    params = '{"a": ' * (levels - 6) + "{}" + "}" * (levels - 6)
    return f'{{"name": "deep", "phases": [{{"steps": [{{"action": "world.spawn", "params": {params}}}]}}]}}'


@pytest.fixture
def unreachable_database_api(db_params, clock):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    unreachable = Database(f"mysql://root@127.0.0.1:{port}/events", connect_timeout=1)
    with runtime.override(database=unreachable, clock=clock, settings=hs_settings(db_params)), Client(app) as client:
        yield Api(client)


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, 40, 950, 960, 5000])
def test_json_nested_deeper_than_the_limit_is_400_naming_it_before_the_database_is_asked(unreachable_database_api, levels):
    answer = unreachable_database_api.post("/definitions", raw=_nested(levels), auth=ADMIN)
    assert answer.status == 400
    assert answer.body == {"errors": [f"the body nests deeper than {MAX_JSON_DEPTH} levels of objects and arrays"]}


def test_a_definition_nested_exactly_to_the_limit_is_stored(api, db):
    answer = api.post("/definitions", raw=_nested(MAX_JSON_DEPTH), auth=ADMIN)
    assert answer.status == 201, answer.body
    assert table_counts(db)["event_definition_versions"] == 1


def test_only_a_database_that_cannot_be_reached_answers_503(db, clock, unreachable_database_api):
    assert unreachable_database_api.get("/runs", auth=ADMIN).status == 503
    definition = make_definition(db, clock.now())
    too_deep = "[" * 40 + "]" * 40
    with pytest.raises(pymysql.err.OperationalError) as refused:  # the database's JSON CHECK: an error, not an outage
        db.autocommit(lambda tx: tx.execute(
            "INSERT INTO event_definition_versions (definition_id, version, document, created_at) VALUES (%s, 2, %s, %s)",
            (definition.id, too_deep, clock.now()),
        ))
    assert from_exception(refused.value).status_code == 500


def _iso(when) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _schedule(api, definition_id: int, when: str):
    return api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": when}, auth=ADMIN)


def test_a_run_further_ahead_than_the_scheduling_horizon_is_400_and_nothing_is_written(api, db, clock):
    definition = make_definition(db, clock.now())
    before = everything(db)
    for when in ("9999-12-31T23:59:59Z", _iso(clock.now() + MAX_SCHEDULE_AHEAD + timedelta(seconds=1))):
        answer = _schedule(api, definition.id, when)
        assert answer.status == 400, answer.body
        assert answer.body["errors"] == [
            f"scheduled_for is more than {MAX_SCHEDULE_AHEAD.days} days ahead; a run may be scheduled at most that far"
        ]
    assert everything(db) == before
    assert _schedule(api, definition.id, _iso(clock.now() + MAX_SCHEDULE_AHEAD)).status == 201


@pytest.mark.parametrize("grace", [0, 1, MIN_GRACE_SECONDS - 1])
def test_a_grace_window_below_the_minimum_is_400_naming_it(api, db, grace):
    document = {"name": "x", "grace_seconds": grace, "phases": [{"steps": [{"action": "world.spawn"}]}]}
    answer = api.post("/definitions", document, auth=ADMIN)
    assert answer.status == 400
    assert answer.body["errors"] == [f"document.grace_seconds must be bigger than or equal to {MIN_GRACE_SECONDS}"]
    assert table_counts(db)["event_definitions"] == 0
    document["grace_seconds"] = MIN_GRACE_SECONDS
    assert api.post("/definitions", document, auth=ADMIN).status == 201


def test_a_stored_version_with_a_shorter_grace_gets_the_minimum_when_its_runs_are_made(api, db, clock):
    definition = make_definition(db, clock.now(), factory_document(grace_seconds=0, schedule={"cron": "* * * * *"}))
    answer = _schedule(api, definition.id, _iso(clock.now() - timedelta(seconds=MIN_GRACE_SECONDS - 1)))
    assert answer.status == 201 and answer.body["run"]["grace_seconds"] == MIN_GRACE_SECONDS
    plan_occurrences(db, clock.now(), horizon=timedelta(minutes=5))  # the planner makes the next minutes' runs
    planned = [r for r in db.autocommit(lambda tx: runs.list_page(tx, limit=10)[0]) if r.id != answer.body["run"]["id"]]
    assert planned and {r.grace_seconds for r in planned} == {MIN_GRACE_SECONDS}
