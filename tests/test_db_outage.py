"""One connection policy: a hung, refusing or resuming database, met by the API and by real tick processes.

The database sits behind a loopback door the test scripts (`tests/support/db_door.py`):
it refuses connections like a server that is down, or accepts and holds the
handshake like a hung server or an Aurora resuming from a pause. The API must
answer 503 with Retry-After within 10 s; a tick must wait for the database only
inside its budget, carry on when it comes back (logging that it did) and lose
nothing, or else exit with one line and a non-zero code (a tick Lambda: one
ERROR line and a normal return, the next scheduled tick being the retry).
"""

import io
import json
import threading
import time

import pytest
from chalice.test import Client

from app import app
from chalicelib import observability, runtime
from chalicelib.config import Settings
from chalicelib.db import HANDSHAKE_SECONDS, Database, DatabaseClock
from chalicelib.events.lifecycle import RunStatus
from devtools.kit.lambda_invocation import SCHEDULED_EVENT, lambda_context
from tests.support.api import ADMIN, hs_settings
from tests.support.db_door import DatabaseDoor
from tests.support.factory import document, run_row
from tests.support.runner_kit import schedule, step, tick_process

pytestmark = pytest.mark.torture

HELLO = document([[step("world.spawn", npc="scarecrow"), step("core.announce", message="hello")]])


@pytest.fixture
def door(db_params):
    with DatabaseDoor(db_params) as opened:
        yield opened


def _run_tick(game_bridge, door, budget, **env):
    started = time.monotonic()
    process = tick_process(game_bridge.url, budget_seconds=budget, EVENTS_DB_URL=door.url(), **env)
    out, err = process.communicate(timeout=budget + 60)
    return process.returncode, out, err, time.monotonic() - started


def test_r10_an_api_request_to_a_hung_database_answers_503_with_retry_after_within_10_seconds(door, db_params, clock):
    door.stall(None)  # accepts, and never says a word
    hung = Database(door.url())
    with runtime.override(database=hung, clock=clock, settings=hs_settings(db_params)), Client(app) as client:
        started = time.monotonic()
        answer = client.http.get("/runs", headers={"Authorization": f"Bearer {ADMIN}"})
        elapsed = time.monotonic() - started
    assert answer.status_code == 503 and answer.headers["Retry-After"].isdigit()
    assert answer.json_body == {"errors": ["the database is unavailable; try again shortly"]}
    assert elapsed < 10 and door.accepted == 1  # one handshake, cut at its deadline, not retried
    hung.close()


def test_r10_a_tick_against_a_hung_database_exits_inside_its_budget_with_one_line(door, game_bridge):
    door.stall(None)
    code, out, err, elapsed = _run_tick(game_bridge, door, budget=4)
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("database unavailable: the database did not finish its handshake within")
    # Interpreter start-up, then attempts only while the budget lasts (the last one may take its handshake).
    assert elapsed < 4 + HANDSHAKE_SECONDS + 5


def _resumes(db, game_bridge, door, reopen_once_refused=False, budget=25):
    now = DatabaseClock(db).now()  # the tick process reads the database's clock
    runs = [schedule(db, now, HELLO) for _ in range(3)]
    # At INFO the tick says each time it meets the database shut: the door opens on the first such line, however
    # long the process took to start (a timer raced a slow start on a loaded machine).
    process = tick_process(game_bridge.url, budget_seconds=budget, info=True, EVENTS_DB_URL=door.url(), EVENT_TICK_CONCURRENCY="2")
    said: dict[str, list[str]] = {"out": [], "err": []}

    def read(name: str, stream) -> None:
        for line in stream:
            said[name].append(line)
            if reopen_once_refused and "the database is not reachable" in line:
                door.open()

    readers = [threading.Thread(target=read, args=(name, stream), daemon=True)
               for name, stream in (("out", process.stdout), ("err", process.stderr))]
    for reader in readers:
        reader.start()
    process.wait(timeout=budget + 60)
    for reader in readers:
        reader.join(timeout=10)
    code, err = process.returncode, "".join(said["out"] + said["err"])
    assert code == 0, err
    assert "the database is reachable again after" in err
    assert [run_row(db, r.id).status for r in runs] == [RunStatus.COMPLETED] * 3
    steps = [(r.json["step_id"], r.json["attempt"]) for r in game_bridge.received()]
    assert len(steps) == len(set(steps)) == 3  # each run's module step once: nothing lost, nothing twice


def test_a_tick_waits_for_a_database_that_refuses_connections_and_carries_on_when_it_returns(db, game_bridge, door):
    door.refuse()
    _resumes(db, game_bridge, door, reopen_once_refused=True)


def test_a_tick_waits_for_a_resuming_database_whose_handshake_stalls_then_accepts(db, game_bridge, door):
    # Longer than one handshake deadline: the first attempt is cut, a later one gets through.
    door.stall(HANDSHAKE_SECONDS + 2)
    _resumes(db, game_bridge, door)
    assert door.accepted >= 2


def test_a_lambda_tick_whose_database_refuses_for_its_whole_budget_logs_one_error_and_returns(door, capsys):
    """In Lambda the next scheduled tick is the retry: a traceback would only fail the invocation."""
    from app import tick as tick_handler  # the function Lambda calls, middleware and all

    door.refuse()
    down = Database(door.url())
    engine_log = io.StringIO()
    handler = observability.structured_logger().registered_handler
    previous = handler.setStream(engine_log)
    remaining_seconds = 8.0  # 5 s to take work in once the 3 s kept for returning are set aside
    try:
        with runtime.override(settings=Settings(), database=down, clock=DatabaseClock(down)):
            started = time.monotonic()
            summary = tick_handler(SCHEDULED_EVENT, lambda_context(remaining_ms=int(remaining_seconds * 1000)))
            elapsed = time.monotonic() - started
    finally:
        handler.setStream(previous)
    lines = [json.loads(line) for line in engine_log.getvalue().splitlines()]
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert error["message"].startswith("the database was unreachable for this tick invocation's")
    assert error["message"].endswith("the next scheduled tick tries again") and "127.0.0.1" in error["message"]
    captured = capsys.readouterr()
    assert "Traceback" not in engine_log.getvalue() + captured.err
    assert all(line["level"] == "INFO" for line in lines if line is not error)  # the waits, one line each
    assert summary["database_unreachable"] is True and summary["ticks"] == []
    [emf] = [entry for entry in map(json.loads, filter(None, captured.out.splitlines())) if "_aws" in entry]
    assert emf["DatabaseUnreachable"] in (1, [1])  # what DatabaseUnreachableAlarm reads: Lambda's Errors stays 0
    assert 1.0 < elapsed < remaining_seconds  # it waited for the database inside its budget, then gave up
