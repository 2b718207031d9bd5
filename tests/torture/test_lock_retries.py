"""R6: deadlocks and lock-wait timeouts under eight workers are re-run inside the unit of work and reach no caller.

Eight tick-worker processes work a backlog whose refused steps take the
step-then-run lock order (finish the step, then degrade its run), while a
person presses pause, resume and cancel, which take the run-then-step
order: the two meet in deadlocks. A slow console transaction holds a random
run row for 1.3 s at a time on a server whose lock-wait timeout is 1 s (the
test's own server, so the global setting touches nobody else): whoever needs
that row times out, and must be re-run, not fail. Counts are printed.
"""

import random
import threading
import time
from collections import Counter

import pymysql
import pytest

from chalicelib.api.errors import http_status
from chalicelib.db import ConnectionParams, Database, DatabaseClock
from chalicelib.events import commands
from chalicelib.events.errors import EngineError
from chalicelib.migrate import migrate
from devtools.kit.game_bridge import Answer
from devtools.kit.mariadb import PrivateMariaDB
from tests.support.torture import TickFleet, audit, document_of, module_steps, schedule_runs, sized, wait_until

WORKERS = 8
RUNS = sized(120, 1_200)
CONTENTION_SECONDS = sized(8, 60)
STEPS = module_steps(4)
STEPS[1]["on_failure"] = "skip"  # world.step1 is refused: finish the step, then degrade its run
DOCUMENT = document_of([STEPS])
DEADLOCK, LOCK_WAIT_TIMEOUT = 1213, 1205


@pytest.fixture
def short_lock_waits(tmp_path):
    server = PrivateMariaDB(tmp_path / "mariadb").start()
    params = ConnectionParams.from_url(server.url + "torture")
    migrate(params)
    root = Database(params).connect()
    with root.cursor() as cursor:
        cursor.execute("SET GLOBAL innodb_lock_wait_timeout = 1")  # for every connection made from now on
    root.close()
    yield params
    server.stop()


def _unfinished(db) -> list[int]:
    rows = db.autocommit(lambda tx: tx.all(
        "SELECT id FROM event_runs WHERE status NOT IN ('completed', 'cancelled', 'failed', 'missed')"))
    return [r["id"] for r in rows]


def _press_controls(db: Database, stop: threading.Event, leaked: list, pressed: Counter) -> None:
    """A person at the console: pause, resume, now and then cancel. Losing a race is a 409, nothing else."""
    rng = random.Random(6)
    while not stop.is_set():
        open_runs = _unfinished(db)
        if not open_runs:
            break
        run_id = rng.choice(open_runs)
        control = rng.choices(["pause", "resume", "cancel"], weights=[4, 4, 1])[0]
        try:
            getattr(commands, control)(db, run_id, actor="torture-mod", now=DatabaseClock(db).now())
            pressed[control] += 1
        except EngineError as refused:
            pressed[f"{control} refused ({http_status(refused)})"] += 1
        except Exception as error:  # what R6 forbids: a database error reaching the person
            leaked.append(repr(error))


def _hold_run_rows(params: ConnectionParams, stop: threading.Event, held: Counter) -> None:
    """A slow console transaction: lock one run a worker is about to need for 1.3 s, let go, again."""
    rng = random.Random(7)
    conn = Database(params).connect()
    try:
        while not stop.is_set():
            with conn.cursor() as cursor:
                # The runs the workers take next (the head of the wake order): whoever comes for one waits.
                cursor.execute("SELECT id FROM event_runs WHERE wake_at IS NOT NULL ORDER BY wake_at, id LIMIT 8")
                ids = [row[0] for row in cursor.fetchall()]
                if not ids:
                    break
                conn.begin()
                try:
                    cursor.execute("SELECT id FROM event_runs WHERE id = %s FOR UPDATE", (rng.choice(ids),))
                    held["holds"] += 1
                    time.sleep(1.3)
                except pymysql.err.OperationalError as error:  # the hog waited too long itself: it does not matter
                    held[f"hog error {error.args[0]}"] += 1
                finally:
                    conn.rollback()
            time.sleep(0.2)
    finally:
        conn.close()


def test_deadlocks_and_lock_wait_timeouts_are_rerun_and_never_reach_a_caller(short_lock_waits, game_bridge, tmp_path):
    params = short_lock_waits
    db = Database(params)
    game_bridge.default = Answer(delay=0.3)  # the backlog outlasts the contention window: the hog meets workers
    game_bridge.script("world.step1", *[Answer(422, {"reason": "no"})] * RUNS)  # refused under on_failure skip
    stop, leaked, pressed, held = threading.Event(), [], Counter(), Counter()
    person = threading.Thread(target=_press_controls, args=(db, stop, leaked, pressed))
    hog = threading.Thread(target=_hold_run_rows, args=(params, stop, held))
    with TickFleet(tmp_path / "fleet", params.url(), game_bridge, EVENT_STEP_LEASE_SECONDS="30",
                   EVENT_STEP_RETRY_SECONDS="1", EVENT_TICK_CONCURRENCY="4") as fleet:
        fleet.start(WORKERS)
        # The window opens once every worker ticks: on a loaded machine starting eight processes takes seconds.
        wait_until(lambda: all(fleet.tick_times()), 120, "every tick worker ticking")
        schedule_runs(db, DOCUMENT, RUNS)
        person.start()
        hog.start()
        time.sleep(CONTENTION_SECONDS)
        stop.set()
        person.join(30)
        hog.join(30)
        fleet.stop()

    workers = fleet.retries()
    total = workers + db.retries
    figures = (f"re-run: {total[DEADLOCK]} deadlocks, {total[LOCK_WAIT_TIMEOUT]} lock-wait timeouts "
               f"(workers {dict(workers)}, the person {dict(db.retries)}); controls {dict(pressed)}; hog {dict(held)}")
    print(f"\nR6: {figures}")
    assert leaked == [], figures
    assert fleet.failed_ticks() == [] and fleet.tick_errors() == 0, figures
    assert total[LOCK_WAIT_TIMEOUT] > 0, f"the slow transaction made nobody wait: {figures}"
    assert audit(db) == [], figures
    db.close()
