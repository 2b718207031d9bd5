"""One small fixture set: a real database per test session, cleaned between tests."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import datetime

import pytest

from chalicelib.db import ConnectionParams, Database
from chalicelib.migrate import migrate
from tests.support.clock import ManualClock
from tests.support.mariadb import server_url

# The shared fixtures (api, game_bridge, runner) live beside their helpers; pytest loads them here.
pytest_plugins = ["tests.support.api", "tests.support.runner_kit"]

# Deleted child-first between tests (faster than TRUNCATE, and the FKs allow it).
TABLES = ("event_run_log", "event_run_phases", "event_run_steps", "event_runs", "event_definition_versions", "event_definitions")
START = datetime(2026, 12, 4, 20, 0, 0)


@pytest.fixture(scope="session")
def db_params() -> Iterator[ConnectionParams]:
    server = ConnectionParams.from_url(server_url().rstrip("/") + "/placeholder")
    name = f"events_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    params = ConnectionParams(server.host, server.port, server.user, server.password, name, server.unix_socket)
    migrate(params)
    os.environ["EVENTS_DB_URL"] = params.url()  # what subprocesses started by tests connect to
    yield params
    conn = Database(params).connect(database=False)
    with conn.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
    conn.close()


@pytest.fixture
def db(db_params) -> Iterator[Database]:
    database = Database(db_params)
    conn = database.connect()
    with conn.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"DELETE FROM {table}")
    conn.close()
    yield database
    database.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)
