import multiprocessing
import re
import uuid
from datetime import datetime, timedelta

import pytest

from chalicelib.db import ConnectionParams, Database
from chalicelib.errors import MigrationFailed, NotMarked
from chalicelib.migrate import (
    MIGRATIONS,
    STALE_LOCK_SECONDS,
    Marked,
    Unlocked,
    mark_applied,
    migrate,
    unlock,
)
from tests.support.half_migrated import INDEX_BUILD, migrate_up_to, run_as_the_server_finished_it

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


def test_a_migration_the_server_finished_after_its_migrate_was_killed_is_marked_once_its_effect_is_checked(db_params):
    """Killing a migrate (its function's timeout) does not stop the ALTER TABLE the server runs: it commits, yoyo's
    record is never written, and every later migrate ran it again and failed for good ('Duplicate key name'). The
    migration's effect found exactly in the database, `mark_applied` records it, and the next migrate goes on."""
    params = _fresh(db_params)
    try:
        migrate_up_to(params, INDEX_BUILD)
        run_as_the_server_finished_it(params, INDEX_BUILD)
        with pytest.raises(MigrationFailed) as trapped:
            migrate(params)  # the trap: every migrate fails alike
        assert str(trapped.value) == (
            f"""migration {INDEX_BUILD} failed: (1061, "Duplicate key name 'event_run_log_kind'"); its change may be in"""
            f" the database already (a killed migrate's statement that the server finished): `make mark-applied"
            f" ID={INDEX_BUILD}` checks that it is and records it")
        assert mark_applied(params, INDEX_BUILD) == Marked(INDEX_BUILD, ("event_run_log",))
        assert INDEX_BUILD not in migrate(params)  # the rest applied, this one not again
        assert migrate(params) == []
        assert _databases_like(params, f"{params.database}_mark_") == []  # the scratch schema is gone
    finally:
        _drop(params)


def test_mark_applied_refuses_a_migration_that_is_not_the_next_unknown_or_applied(db_params):
    params = _fresh(db_params)
    try:
        migrate_up_to(params, INDEX_BUILD)
        with pytest.raises(NotMarked, match=f"0080.event-chat-messages-press-edits is not the next migration to apply"
                                            f" \\({INDEX_BUILD} is\\)"):
            mark_applied(params, "0080.event-chat-messages-press-edits")
        with pytest.raises(NotMarked, match="no migration '0079' in this package"):
            mark_applied(params, "0079")
        with pytest.raises(NotMarked, match=re.escape("0078.event-runs-history-reads is applied already")):
            mark_applied(params, "0078.event-runs-history-reads")
    finally:
        _drop(params)


def test_mark_applied_refuses_a_migration_whose_effect_is_absent_or_not_exactly_its_own(db_params):
    """Not run at all (or still running on the server): `make migrate` applies it. Something else in its place (an
    index of the same name on other columns): refused, naming the difference. Nothing is marked either way."""
    params = _fresh(db_params)
    try:
        migrate_up_to(params, INDEX_BUILD)
        with pytest.raises(NotMarked, match=f"{INDEX_BUILD} has not taken effect \\(event_run_log as before it\\):"
                                            " `make migrate` applies it"):
            mark_applied(params, INDEX_BUILD)
        run_as_the_server_finished_it(params, INDEX_BUILD, "ALTER TABLE event_run_log ADD KEY event_run_log_kind (run_id, kind)")
        with pytest.raises(NotMarked, match=r"event_run_log match neither the schema before .* nor after it; nothing"
                                            r" marked. Differences .*-\('index', 'event_run_log_kind', 3, 'id'"):
            mark_applied(params, INDEX_BUILD)
        assert _applied(params) and INDEX_BUILD not in _applied(params)
    finally:
        _drop(params)


def test_mark_applied_refuses_a_migration_that_changes_rows_alone(db_params):
    """0081 renames definitions and changes no schema: there is no effect to check, and running it again is safe."""
    params = _fresh(db_params)
    rows_only = "0081.event-definitions-names-by-their-characters"
    try:
        migrate_up_to(params, rows_only)
        with pytest.raises(NotMarked, match=f"{rows_only} changes rows, not the schema"):
            mark_applied(params, rows_only)
    finally:
        _drop(params)


def _applied(params) -> set[str]:
    conn = Database(params).connect()
    with conn.cursor() as c:
        c.execute("SELECT migration_id FROM _yoyo_migration")
        ids = {row[0] for row in c.fetchall()}
    conn.close()
    return ids


def _databases_like(params, prefix: str) -> list[str]:
    conn = Database(params).connect(database=False)
    with conn.cursor() as c:
        c.execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE %s", (prefix + "%",))
        names = [row[0] for row in c.fetchall()]
    conn.close()
    return names
