"""R4: the database server SIGKILLed five times under a working fleet, and restarted each time.

The server is a private mariadbd this test owns (its own folder and port). The
workers journal the log rows of every transaction whose COMMIT answered; after
the last restart the fleet finishes the work, and then every one of those rows
must be in the log (nothing a worker saw committed was lost), every tick that
failed must have failed on the lost connection and nothing else, and no step
may be left running under an expired lease. The attempt ceiling is raised:
an outage interrupts claims, and this test is about losing nothing, not about
giving up (R7's subject).
"""

import random
import time
from collections import Counter

import pytest

from chalicelib.db import ConnectionParams, Database
from chalicelib.migrate import migrate
from devtools.kit.game_bridge import Answer
from devtools.kit.mariadb import PrivateMariaDB
from tests.support.torture import (
    TickFleet,
    audit,
    document_of,
    log_keys,
    module_steps,
    schedule_runs,
    sized,
    unfinished_runs,
    wait_until,
)

CRASHES = sized(5, 20)
BATCH_RUNS = 40
DOCUMENT = document_of([module_steps(4)])
# What a tick may die of while the server is down or restarting: the connection, and nothing else.
CONNECTION_ERRORS = {"OperationalError", "InterfaceError"}


@pytest.fixture
def private_server(tmp_path):
    server = PrivateMariaDB(tmp_path / "mariadb").start()
    params = ConnectionParams.from_url(server.url + "torture")
    migrate(params)
    yield server, params
    server.stop()


def test_a_crashing_database_loses_no_committed_transition(private_server, game_bridge, tmp_path):
    server, params = private_server
    db = Database(params)
    game_bridge.default = Answer(delay=0.1)
    rng = random.Random(4)
    schedule_runs(db, DOCUMENT, BATCH_RUNS)
    with TickFleet(tmp_path / "fleet", params.url(), game_bridge, journal_commits=True, EVENT_STEP_LEASE_SECONDS="3",
                   EVENT_STEP_MAX_ATTEMPTS="20", EVENT_STEP_RETRY_SECONDS="1", EVENT_TICK_CONCURRENCY="4") as fleet:
        fleet.start(4)
        for _ in range(CRASHES):
            if unfinished_runs(db) < BATCH_RUNS // 2:
                schedule_runs(db, DOCUMENT, BATCH_RUNS)
            delivered = len(game_bridge.received())
            wait_until(lambda: len(game_bridge.received()) > delivered + 20, timeout=60, what="the fleet at work")
            time.sleep(rng.uniform(0, 0.5))
            server.kill()
            time.sleep(rng.uniform(2, 3))  # longer than the retries of one unit of work: ticks fail meanwhile
            server.start()
        wait_until(lambda: unfinished_runs(db) == 0, timeout=sized(120, 600), what="every run completed after the crashes")
        fleet.stop()

    failures = Counter(entry["failed_tick"] for entry in fleet.failed_ticks())
    assert set(failures) <= CONNECTION_ERRORS, failures
    assert sum(failures.values()) + fleet.tick_errors() > 0, "no tick noticed an outage"
    lost = fleet.committed_log_keys() - log_keys(db)
    assert not lost, f"{sum(lost.values())} log rows a worker saw committed are gone: {list(lost)[:3]}"
    steps = db.autocommit(lambda tx: tx.all("SELECT status, claim_expires_at FROM event_run_steps"))
    assert {s["status"] for s in steps} == {"done"} and {s["claim_expires_at"] for s in steps} == {None}
    assert db.autocommit(lambda tx: tx.all("SELECT DISTINCT status FROM event_runs")) == [{"status": "completed"}]
    assert audit(db) == []
    committed = sum(fleet.committed_log_keys().values())
    print(f"\nR4: {CRASHES} server crashes, {sum(failures.values())} whole ticks and "
          f"{fleet.tick_errors()} runs inside ticks failed on the connection, {committed} committed log rows all kept,"
          f" {len(steps)} steps done")
    db.close()
