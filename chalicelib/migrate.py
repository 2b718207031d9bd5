"""Bring a database to the current schema with yoyo-migrations.

The SQL files ship inside the package (so the deployed Lambda has them), one DDL
statement each because MySQL commits DDL on its own. yoyo's lock table keeps two
migrators from colliding; applied migrations are skipped, so running it twice is
a no-op. A migrator killed while it held the lock (its function timed out, its
deploy was stopped) leaves the lock row behind: `unlock` clears it once it is
older than any migrator can still be running, and never a younger one.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote, urlencode

from yoyo import get_backend, read_migrations

from .db import RDS_CA_BUNDLE, ConnectionParams, Database, tls_for

MIGRATIONS = Path(__file__).with_name("migrations")
# The migrate function's timeout (300 s) and a margin: no migrator that may still be running has held the
# lock longer (the function is the only migrator of a deployment; `python -m chalicelib migrate` elsewhere).
STALE_LOCK_SECONDS = 330


def _yoyo_url(params: ConnectionParams, tls_ca: str | None = None) -> str:
    """yoyo's URL; its query goes to PyMySQL as keywords: verify against `tls_ca` (and the host's name),
    or no TLS at all without one (yoyo's own `ssl` options cannot check a host name)."""
    auth = quote(params.user, safe="") + (f":{quote(params.password, safe='')}" if params.password else "")
    query: dict[str, str] = {"unix_socket": params.unix_socket} if params.unix_socket else {}
    query.update({"ssl_ca": tls_ca, "ssl_verify_identity": "1"} if tls_ca else {"ssl_disabled": "1"})
    return f"mysql://{auth}@{params.host}:{params.port}/{params.database}?{urlencode(query)}"


def create_database(params: ConnectionParams, tls: ssl.SSLContext | None = None) -> None:
    if not params.database.replace("_", "").isalnum():
        raise ValueError(f"refusing to create a database named {params.database!r}")
    conn = Database(params, tls=tls).connect(database=False)
    try:
        with conn.cursor() as cursor:
            cursor.execute(
                f"CREATE DATABASE IF NOT EXISTS `{params.database}` "
                "CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
            )
    finally:
        conn.close()


def migrate(params: ConnectionParams, *, create: bool = True, tls_mode: str | None = None,
            tls_ca: str | None = None) -> list[str]:
    """Apply what is missing; return the ids of the migrations applied now. TLS as the engine's
    connections choose it (`db.tls_for`: EVENTS_DB_TLS and EVENTS_DB_TLS_CA)."""
    tls = tls_for(params, tls_mode, tls_ca)
    if create:
        create_database(params, tls)
    backend = get_backend(_yoyo_url(params, (tls_ca or str(RDS_CA_BUNDLE)) if tls else None))
    migrations = read_migrations(str(MIGRATIONS))
    try:
        with backend.lock():
            pending = backend.to_apply(migrations)
            backend.apply_migrations(pending)
            return [m.id for m in pending]
    finally:
        backend.connection.close()


@dataclass(frozen=True)
class Unlocked:
    """What `unlock` did: the lock rows it cleared, and the lock it left (when it was taken, by which process)."""

    cleared: int
    left_since: datetime | None = None
    left_by: int | None = None


def unlock(params: ConnectionParams, *, now: datetime | None = None, stale_after: float = STALE_LOCK_SECONDS,
           tls_mode: str | None = None, tls_ca: str | None = None) -> Unlocked:
    """Clear yoyo's lock row when it was taken more than `stale_after` seconds before `now` (UTC, yoyo's own
    clock; default: now): its migrator died holding it. A younger lock is a migrator that may still be running,
    and is left, with when and by whom it was taken."""
    tls = tls_for(params, tls_mode, tls_ca)
    backend = get_backend(_yoyo_url(params, (tls_ca or str(RDS_CA_BUNDLE)) if tls else None))
    before = (now or datetime.now(UTC).replace(tzinfo=None)) - timedelta(seconds=stale_after)
    try:
        backend.create_lock_table()  # a database never migrated has none yet: nothing is locked
        with backend.transaction():
            # guard: unlock-clears-a-lock-a-live-migrator-holds
            cleared = backend.execute(f"DELETE FROM {backend.lock_table_quoted} WHERE ctime < :before",  # noqa: S608 — yoyo's own table name; the time is a parameter
                                      {"before": before}).rowcount
        left = backend.execute(f"SELECT ctime, pid FROM {backend.lock_table_quoted}").fetchone()  # noqa: S608 — yoyo's own table name
    finally:
        backend.connection.close()
    return Unlocked(cleared, *(left or (None, None)))
