"""One small fixture set: a real database per test session, put back between tests to what the migrations
left in it (every table they made emptied, the rows they seeded restored), whatever the last test wrote."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pymysql
import pytest

from chalicelib import observability
from chalicelib.db import ConnectionParams, Database
from chalicelib.migrate import migrate
from devtools.kit.clock import ManualClock
from devtools.kit.mariadb import server_url
from tests.support import cfn

# The shared fixtures (api, game_bridge, runner) live beside their helpers; pytest loads them here.
pytest_plugins = ["tests.support.api", "tests.support.runner_kit", "tests.support.chat"]

# The tiers (pytest.ini's markers; docs/testing.md): a whole directory is one tier, a module
# outside these directories says its own with `pytestmark`.
TIER_OF_DIRECTORY = {"console": "browser", "torture": "torture"}
# Tests that share something costly per process run on one xdist worker (`--dist loadgroup`):
# one Chromium with its server and tick loop per browser group; one `chalice package`.
GROUP_OF_TIER = {"browser": "browser", "packaging": "packaging"}

# yoyo's own tables: which migrations ran. Emptied, the next migrate() would run them all again.
YOYO_PREFIXES = ("_yoyo", "yoyo_")
START = datetime(2026, 12, 4, 20, 0, 0)
HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.relative_to(HERE).parts if item.path.is_relative_to(HERE) else ()  # the kits' own tests
        if len(parts) > 1 and parts[0] in TIER_OF_DIRECTORY:
            item.add_marker(TIER_OF_DIRECTORY[parts[0]])
    # The browser's tests are half the first pass's time: with a worker to spare they split by module into
    # groups, each with its own Chromium, server and tick loop; the packaging tests stay one group.
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    browser_modules = sorted({item.path for item in items if item.get_closest_marker("browser")})
    groups = max(1, min(workers - 1, len(browser_modules)))
    browser_group = {module: f"-{n % groups}" for n, module in enumerate(browser_modules)}
    for item in items:
        for tier, group in GROUP_OF_TIER.items():
            if item.get_closest_marker(tier) and not item.get_closest_marker("xdist_group"):
                suffix = browser_group[item.path] if tier == "browser" else ""
                item.add_marker(pytest.mark.xdist_group(group + suffix))


def pytest_collection_finish(session: pytest.Session) -> None:
    """On an xdist worker under `--dist loadgroup`: each grouped test's id carries its group, or xdist did not
    group them (pytest 9.2 made `nodeid` read-only to xdist 3.8's suffix), and two workers would each start a
    Chromium and race `chalice package` on `.chalice/deployments`. Fail the run saying so, not one test by chance."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    ungrouped = [item.nodeid for item in session.items if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    if ungrouped:
        says = (f"--dist loadgroup did not group {len(ungrouped)} tests (e.g. {ungrouped[0]}): this pytest and "
                "pytest-xdist do not work together; pin the pair requirements-dev.txt names")
        print(says, file=sys.__stderr__, flush=True)  # a worker's error reaches the controller only as an INTERNALERROR
        raise pytest.UsageError(says)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before any fixture of the test: only a test marked packaging may build the package (tests/support/cfn.py)."""
    cfn.PACKAGING_MARKED = item.get_closest_marker("packaging") is not None


@pytest.fixture(scope="session", autouse=True)
def engine_log_handler() -> None:
    """The engine's structured log handler keeps the stream it was made with. Made here, before any test, it
    writes where the session's output goes; made inside a test that captures output (capsys), it would keep
    that test's buffer, closed after it, and fail whichever test logs next (an order xdist can produce)."""
    observability.structured_logger()


@dataclass(frozen=True)
class Migrated:
    """What the migrations leave in a new database: their tables, read from the database itself so a new
    migration's table is never forgotten, and the rows they seed (event_engine_state's one row, which the
    engine only ever updates)."""

    tables: tuple[str, ...]
    seeded: dict[str, tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]]  # table: (columns, rows)

    @classmethod
    def read(cls, conn: pymysql.connections.Connection) -> Migrated:
        with conn.cursor() as cursor:
            cursor.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() "
                           "AND table_type = 'BASE TABLE' ORDER BY table_name")
            tables = tuple(name for (name,) in cursor.fetchall() if not name.startswith(YOYO_PREFIXES))
            seeded = {}
            for table in tables:
                cursor.execute(f"SELECT * FROM `{table}`")
                rows = cursor.fetchall()
                if rows:
                    seeded[table] = (tuple(column[0] for column in cursor.description), tuple(rows))
        return cls(tables, seeded)

    def restore(self, conn: pymysql.connections.Connection) -> None:
        """Every table back to what the migrations left, in one transaction (one commit, not one per table).
        DELETE is faster than TRUNCATE here; the foreign keys are off for it so no order is needed."""
        with conn.cursor() as cursor:
            cursor.execute("SET foreign_key_checks = 0")
            cursor.execute("START TRANSACTION")
            for table in self.tables:
                cursor.execute(f"DELETE FROM `{table}`")
            for table, (columns, rows) in self.seeded.items():
                names = ", ".join(f"`{column}`" for column in columns)
                cursor.executemany(f"INSERT INTO `{table}` ({names}) VALUES ({', '.join(['%s'] * len(columns))})", rows)
            cursor.execute("COMMIT")
            cursor.execute("SET foreign_key_checks = 1")


# The migrated state of each session database, read once right after its migrations ran (by name).
MIGRATED: dict[str, Migrated] = {}


def restore_migrated(database: Database) -> None:
    """`database` back to what its migrations left (the fixtures between tests; the torture machines between examples)."""
    conn = database.connect()
    try:
        MIGRATED[database.params.database].restore(conn)
    finally:
        conn.close()


@pytest.fixture(scope="session")
def db_params() -> Iterator[ConnectionParams]:
    server = ConnectionParams.from_url(server_url().rstrip("/") + "/placeholder")
    name = f"events_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    params = ConnectionParams(server.host, server.port, server.user, server.password, name, server.unix_socket)
    migrate(params)
    conn = Database(params).connect()
    MIGRATED[name] = Migrated.read(conn)
    conn.close()
    os.environ["EVENTS_DB_URL"] = params.url()  # what subprocesses started by tests connect to
    yield params
    conn = Database(params).connect(database=False)
    with conn.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
    conn.close()


def _emptied(db_params: ConnectionParams) -> Database:
    """The test database as its migrations left it."""
    database = Database(db_params)
    restore_migrated(database)
    return database


@pytest.fixture
def db(db_params) -> Iterator[Database]:
    database = _emptied(db_params)
    yield database
    database.close()


@pytest.fixture(scope="module")
def module_db(db_params) -> Iterator[Database]:
    """One emptied database for a whole module, for modules whose tests only read or are refused: a module
    overrides `db` with it and builds its world once (module-scoped) instead of once per test. Such tests
    check that nothing changed, so one that writes fails itself rather than the tests after it."""
    database = _emptied(db_params)
    yield database
    database.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)
