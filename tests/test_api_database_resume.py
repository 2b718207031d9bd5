"""A game's signal and a person's press survive an Aurora resume; a read does not wait for one; a resume is no alarm.

The API reaches the test MariaDB through a loopback door (`tests/support/db_door.py`) that refuses connections
as a paused Aurora does while it resumes, and opens when the API says it met the database shut and will try
again: the resume ends while the request waits. A signal or a control waits for it, up to
EVENT_API_DATABASE_WAIT_SECONDS (20 s, inside API Gateway's 29), whether its container never connected or holds a
connection the server closed while it paused; past that it answers 503 with Retry-After and nothing changed. A
read tries once. Every 503 for a database that could not be reached is counted (`DatabaseUnavailableAnswers`),
and the 5xx alarm subtracts the count from API Gateway's 5XXError, read here from the template itself.
"""

from __future__ import annotations

import ast
import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, timedelta

import pytest
from chalice.test import Client

from app import app
from chalicelib import observability, runtime
from chalicelib.api import signature
from chalicelib.db import Database
from chalicelib.events.lifecycle import RunStatus
from tests.support import cfn
from tests.support.api import MODERATOR, Api, hs_settings
from tests.support.db_door import DatabaseDoor
from tests.support.factory import make_run, run_row
from tests.support.runner_kit import log_of, schedule, step

GAME_KEY = "game-signal-key-0123456789abcdef"
BOSS = {"name": "Boss night", "grace_seconds": 300, "phases": [
    {"name": "gather", "steps": [step("core.announce", message="Gather at the gate")]},
    {"name": "boss fight", "advance": {"when": "signal", "name": "boss_defeated"},
     "steps": [step("core.cue", instruction="Watch the boss")]},
], "ending": []}
UNAVAILABLE = {"errors": ["the database is unavailable; try again shortly"]}


class ResumesOnRetry(logging.Handler):
    """Opens the door each time the API logs that it met the database shut and will try again."""

    def __init__(self, door: DatabaseDoor):
        super().__init__(logging.INFO)
        self.door, self.retries = door, 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("the database is not reachable"):
            self.retries += 1
            self.door.open()


@pytest.fixture
def door(db_params) -> Iterator[DatabaseDoor]:
    with DatabaseDoor(db_params) as opened:
        yield opened


@contextmanager
def _api(door: DatabaseDoor, db_params, clock, **settings) -> Iterator[tuple[Api, Database]]:
    """The API with a container of its own, reaching the database through the door only."""
    behind_door = Database(door.url(), read_timeout=runtime.API_READ_SECONDS)
    config = hs_settings(db_params, signal_secret=GAME_KEY, **settings)
    try:
        with runtime.override(database=behind_door, clock=clock, settings=config), Client(app) as client:
            yield Api(client), behind_door
    finally:
        behind_door.close()


@contextmanager
def _resumes_on_retry(door: DatabaseDoor) -> Iterator[ResumesOnRetry]:
    watcher, db_logger = ResumesOnRetry(door), logging.getLogger("chalicelib.db")
    level = db_logger.level
    db_logger.addHandler(watcher)
    db_logger.setLevel(logging.INFO)
    try:
        yield watcher
    finally:
        db_logger.removeHandler(watcher)
        db_logger.setLevel(level)


def _signed(clock, path: str) -> dict[str, str]:
    stamp = str(int(clock.now().replace(tzinfo=UTC).timestamp()))
    return {signature.TIMESTAMP: stamp, signature.SIGNATURE: signature.sign(GAME_KEY, stamp, path, b"")}


def _receipts(db, run_id):
    return db.autocommit(lambda tx: tx.all("SELECT name, received_by FROM event_run_signals WHERE run_id = %s", (run_id,)))


def _unavailable_answers_counted(captured: str) -> list[float]:
    """The DatabaseUnavailableAnswers figures of the EMF documents the requests flushed to standard output."""
    documents = [json.loads(line) for line in captured.splitlines() if line.startswith('{"_aws"')]
    figures = [d[observability.DATABASE_UNAVAILABLE_ANSWERS] for d in documents if observability.DATABASE_UNAVAILABLE_ANSWERS in d]
    return [value for figure in figures for value in (figure if isinstance(figure, list) else [figure])]


def _server_closes(db, connection_id: int) -> None:
    """The server ends a connection as Aurora's wait_timeout does before a pause; returns once it is gone."""
    db.autocommit(lambda tx: tx.execute(f"KILL {int(connection_id)}"))
    while db.autocommit(lambda tx: tx.scalar("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %s",
                                             (connection_id,))):
        pass


def test_a_games_signal_met_by_a_resuming_database_is_taken_once_it_answers(door, db, db_params, clock, capsys):
    """A signal during a resume: the game's signed signal waits for the database, is taken (202), and is no
    5xx: before, its one connection attempt answered 503 and the game's signal was lost to its retries."""
    run = schedule(db, clock.now(), BOSS, scheduled_for=clock.now() + timedelta(hours=1))
    path = f"/runs/{run.id}/signals/boss_defeated"
    door.refuse()  # paused: every connection is refused until the resume ends
    with _api(door, db_params, clock) as (api, _), _resumes_on_retry(door) as resume:
        answer = api.post(path, headers=_signed(clock, path))
    assert answer.status == 202, answer.body
    assert answer.body["effect"] == "kept_for_phase" and resume.retries >= 1
    assert _receipts(db, run.id) == [{"name": "boss_defeated", "received_by": "game"}]
    assert _unavailable_answers_counted(capsys.readouterr().out) == []


@pytest.mark.parametrize("container", ["new", "warm"])
def test_a_persons_press_met_by_a_resuming_database_takes_once_it_answers(door, db, db_params, clock, container):
    """A control during a resume, from a new container or from a warm one whose connection the server closed
    before it paused (wait_timeout): the pause waits for the database and takes. Before, the new container's one
    connection attempt, or the warm one's one re-connection, answered 503."""
    run = make_run(db, clock.now(), doc=BOSS, status=RunStatus.STARTING)
    with _api(door, db_params, clock) as (api, behind_door):
        if container == "warm":
            assert api.get(f"/runs/{run.id}", auth=MODERATOR).status == 200
            door.refuse()
            _server_closes(db, behind_door.connection().thread_id())
        else:
            door.refuse()
        with _resumes_on_retry(door) as resume:
            answer = api.post(f"/runs/{run.id}/pause", {"reason": "rain"}, auth=MODERATOR)
    assert answer.status == 200, answer.body
    assert resume.retries >= 1 and run_row(db, run.id).status is RunStatus.PAUSED


@pytest.mark.realtime  # waits out the API's deadline for the database (1 s here, by configuration)
@pytest.mark.parametrize("request_kind", ["signal", "control"])
def test_past_the_deadline_a_resume_answers_503_with_retry_after_and_nothing_changes(
        door, db, db_params, clock, capsys, request_kind):
    """A resume longer than the wait: 503 with Retry-After, no receipt, no status, no log row, and the refusal
    counted as a resume (DatabaseUnavailableAnswers), not as a server error."""
    run = make_run(db, clock.now(), doc=BOSS, status=RunStatus.STARTING)
    log_before = log_of(db, run.id)
    door.refuse()  # and never opens
    with _api(door, db_params, clock, api_database_wait_seconds=1) as (api, _):
        if request_kind == "signal":
            path = f"/runs/{run.id}/signals/boss_defeated"
            answer = api.post(path, headers=_signed(clock, path))
        else:
            answer = api.post(f"/runs/{run.id}/pause", {"reason": "rain"}, auth=MODERATOR)
    assert (answer.status, answer.body) == (503, UNAVAILABLE)
    assert answer.headers["Retry-After"].isdigit()
    assert _receipts(db, run.id) == [] and run_row(db, run.id).status is RunStatus.STARTING
    assert log_of(db, run.id) == log_before
    assert _unavailable_answers_counted(capsys.readouterr().out) == [1]


def test_a_read_met_by_a_resuming_database_fails_fast_and_is_counted_as_a_resume(door, db, db_params, clock, capsys):
    """A read during a resume tries once (a console's poll must not hold a Lambda 20 s): 503 with Retry-After
    though the door would have opened on a retry, counted as a resume. Before, it was counted as a server error."""
    run = make_run(db, clock.now(), doc=BOSS)
    door.refuse()
    with _api(door, db_params, clock) as (api, _), _resumes_on_retry(door) as resume:
        answer = api.get(f"/runs/{run.id}", auth=MODERATOR)
    assert (answer.status, answer.body, resume.retries) == (503, UNAVAILABLE, 0)
    assert answer.headers["Retry-After"].isdigit()
    assert _unavailable_answers_counted(capsys.readouterr().out) == [1]


# ── the alarm, read from the template ──

def _alarm_queries() -> tuple[dict[str, dict], str]:
    """Api5xxAlarm's metrics by id, and the expression it alarms on."""
    properties = cfn.load(cfn.APP_TEMPLATE)["Resources"]["Api5xxAlarm"]["Properties"]
    queries = properties.get("Metrics", [])
    metrics = {q["Id"]: q["MetricStat"]["Metric"] for q in queries if "MetricStat" in q}
    [returned] = [q for q in queries if q.get("ReturnData", True)]
    return metrics, returned["Expression"]


def _evaluate(expression: str, figures: dict[str, float]) -> float:
    """CloudWatch's FILL(id, value), sums and differences of one period's figures (what this alarm's expression uses)."""
    filled = re.sub(r"FILL\((\w+), (\d+(?:\.\d+)?)\)", lambda m: repr(figures.get(m[1], float(m[2]))), expression)

    def value(node: ast.expr) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            left, right = value(node.left), value(node.right)
            return left + right if isinstance(node.op, ast.Add) else left - right
        raise ValueError(f"not an expression this test reads: {expression!r}")

    return value(ast.parse(filled, mode="eval").body)


def test_the_5xx_alarm_counts_server_errors_not_a_resume():
    """The 5xx alarm and a resume: its expression is API Gateway's 5XXError less the DatabaseUnavailableAnswers the
    API publishes (under the engine's namespace and service), so a period of resumes alone is 0 and a real error
    beside them still reaches the threshold. Before, it alarmed on 5XXError itself: on every resume a request met."""
    metrics, expression = _alarm_queries()
    by_name = {m["MetricName"]: query_id for query_id, m in metrics.items()}
    answered, unavailable = by_name["5XXError"], by_name[observability.DATABASE_UNAVAILABLE_ANSWERS]
    assert metrics[answered]["Namespace"] == "AWS/ApiGateway"
    assert metrics[unavailable]["Namespace"] == {"Ref": "MetricsNamespace"}
    assert metrics[unavailable]["Dimensions"] == [{"Name": "service", "Value": observability.SERVICE}]
    alarm = cfn.load(cfn.APP_TEMPLATE)["Resources"]["Api5xxAlarm"]["Properties"]
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
    for five_xx, resumes, expected in ((3, 3, 0), (1, 1, 0), (0, None, 0), (1, None, 1), (4, 3, 1), (None, None, 0)):
        figures = {k: v for k, v in ((answered, five_xx), (unavailable, resumes)) if v is not None}
        assert _evaluate(expression, figures) == expected, figures
