"""A database as a killed migrate leaves it: every migration before one applied and recorded, and that one's DDL
committed by the server after its client died, with no record of it (yoyo writes its record after the DDL)."""

from __future__ import annotations

from yoyo import get_backend, read_migrations

from chalicelib.db import ConnectionParams, Database
from chalicelib.migrate import MIGRATIONS, _yoyo_url, create_database

INDEX_BUILD = "0079.event-run-log-kind"  # the review's case: an index build on the run log, the largest table


def migrate_up_to(params: ConnectionParams, before: str) -> None:
    """Every migration yoyo would apply before `before`, recorded; `before` and the rest left pending."""
    create_database(params)
    backend = get_backend(_yoyo_url(params))
    try:
        with backend.lock():
            pending = backend.to_apply(read_migrations(str(MIGRATIONS)))
            ids = [m.id for m in pending]
            backend.apply_migrations(pending.__class__(pending[:ids.index(before)]))
    finally:
        backend.connection.close()


def run_as_the_server_finished_it(params: ConnectionParams, migration: str, sql: str | None = None) -> None:
    """The DDL a killed migrate sent (`migration`'s file, or `sql`), committed with no yoyo record of it."""
    text = sql or (MIGRATIONS / f"{migration}.sql").read_text()
    conn = Database(params).connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute("\n".join(line for line in text.splitlines() if not line.startswith("--")))
    finally:
        conn.close()
