import multiprocessing
import uuid

import pytest

from chalicelib.db import ConnectionParams, Database
from chalicelib.migrate import MIGRATIONS, migrate

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
