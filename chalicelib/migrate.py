"""Bring a database to the current schema with yoyo-migrations.

The SQL files ship inside the package (so the deployed Lambda has them), one DDL
statement each because MySQL commits DDL on its own. yoyo's lock table keeps two
migrators from colliding; applied migrations are skipped, so running it twice is
a no-op.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from yoyo import get_backend, read_migrations

from .db import ConnectionParams, Database

MIGRATIONS = Path(__file__).with_name("migrations")


def _yoyo_url(params: ConnectionParams) -> str:
    auth = quote(params.user, safe="") + (f":{quote(params.password, safe='')}" if params.password else "")
    suffix = f"?unix_socket={params.unix_socket}" if params.unix_socket else ""
    return f"mysql://{auth}@{params.host}:{params.port}/{params.database}{suffix}"


def create_database(params: ConnectionParams) -> None:
    if not params.database.replace("_", "").isalnum():
        raise ValueError(f"refusing to create a database named {params.database!r}")
    conn = Database(params).connect(database=False)
    try:
        with conn.cursor() as cursor:
            cursor.execute(
                f"CREATE DATABASE IF NOT EXISTS `{params.database}` "
                "CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
            )
    finally:
        conn.close()


def migrate(params: ConnectionParams, *, create: bool = True) -> list[str]:
    """Apply what is missing; return the ids of the migrations applied now."""
    if create:
        create_database(params)
    backend = get_backend(_yoyo_url(params))
    migrations = read_migrations(str(MIGRATIONS))
    try:
        with backend.lock():
            pending = backend.to_apply(migrations)
            backend.apply_migrations(pending)
            return [m.id for m in pending]
    finally:
        backend.connection.close()
