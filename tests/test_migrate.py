import multiprocessing
import uuid
from datetime import datetime, timedelta

import pytest

from chalicelib.db import ConnectionParams, Database
from chalicelib.migrate import MIGRATIONS, STALE_LOCK_SECONDS, Unlocked, migrate, unlock

EXPECTED = {"event_definitions", "event_definition_versions", "event_runs", "event_run_steps", "event_run_log"}


def _tables(params):
    conn = Database(params).connect()
    with conn.cursor() as c:
        c.execute("SHOW TABLES")
        names = {r[0] for r in c.fetchall()}
    conn.close()
    return names


def _drop(params):
    conn = Database(params).connect(database=False)
    with conn.cursor() as c:
        c.execute(f"DROP DATABASE IF EXISTS `{params.database}`")
    conn.close()


def _fresh(db_params) -> ConnectionParams:
    name = f"events_migrate_{uuid.uuid4().hex[:8]}"
    p = db_params
    return ConnectionParams(p.host, p.port, p.user, p.password, name, p.unix_socket)


def test_migrate_creates_every_table_and_a_second_run_applies_nothing(db_params):
    params = _fresh(db_params)
    try:
        assert len(migrate(params)) == len(list(MIGRATIONS.glob("*.sql")))
        assert _tables(params) >= EXPECTED
        assert migrate(params) == []
    finally:
        _drop(params)


def _migrate_in_child(params, results):
    results.put(len(migrate(params)))


@pytest.mark.realtime  # two migrating processes
def test_two_migrations_at_once_apply_each_file_once(db_params):
    params = _fresh(db_params)
    try:
        ctx = multiprocessing.get_context("spawn")
        results = ctx.Queue()
        workers = [ctx.Process(target=_migrate_in_child, args=(params, results)) for _ in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(60)
            assert w.exitcode == 0
        assert sorted(results.get(timeout=5) for _ in workers) == [0, len(list(MIGRATIONS.glob("*.sql")))]
        assert _tables(params) >= EXPECTED
    finally:
        _drop(params)


def _lock(params, taken_at: datetime, pid: int = 4242) -> None:
    """yoyo's lock row as a migrator killed while it held it leaves it."""
    conn = Database(params).connect()
    with conn.cursor() as c:
        c.execute("INSERT INTO yoyo_lock (locked, ctime, pid) VALUES (1, %s, %s)", (taken_at, pid))
    conn.commit()
    conn.close()


def _locks(params) -> list[tuple]:
    conn = Database(params).connect()
    with conn.cursor() as c:
        c.execute("SELECT ctime, pid FROM yoyo_lock")
        rows = list(c.fetchall())
    conn.close()
    return rows


def test_unlock_clears_the_lock_a_killed_migrate_left_and_never_a_live_ones(db_params):
    """A migration killed mid-way left yoyo's lock row, and every later migrate failed on it with no way to clear
    it from a private VPC. A lock older than any migrate can run is cleared; a younger one is named and kept."""
    params, now = _fresh(db_params), datetime(2026, 12, 4, 20, 0, 0)
    try:
        migrate(params)
        _lock(params, now - timedelta(seconds=STALE_LOCK_SECONDS - 1))  # a migrate that may still be running
        assert unlock(params, now=now) == Unlocked(0, now - timedelta(seconds=STALE_LOCK_SECONDS - 1), 4242)
        assert len(_locks(params)) == 1
        later = now + timedelta(seconds=2)  # the same lock, now older than any migrate runs: its migrator died
        assert unlock(params, now=later) == Unlocked(1)
        assert _locks(params) == []
        assert migrate(params) == []  # the next migrate takes the lock again, and finds nothing to apply
        assert unlock(params, now=later) == Unlocked(0)  # nothing locked: nothing to clear
    finally:
        _drop(params)
