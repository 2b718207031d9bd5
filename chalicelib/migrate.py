"""Bring a database to the current schema with yoyo-migrations.

The SQL files ship inside the package (so the deployed Lambda has them), one
statement each since 0051 (MySQL commits a DDL statement on its own). yoyo's lock table keeps two
migrators from colliding; applied migrations are skipped, so running it twice is
a no-op. A migrator killed while it held the lock (its function timed out, its
deploy was stopped) leaves the lock row behind: `unlock` clears it once it is
older than any migrator can still be running, and never a younger one.

A migrator killed while the server ran its DDL leaves the DDL running: the server
commits it, and yoyo's record of it is never written, so every later migrate runs
it again and fails ("Duplicate key name", "Duplicate column"). `mark_applied`
records that one migration as applied, and only when the database shows exactly
its effect: it must be the next migration to apply, and the tables it changes
must be what applying every migration the database has, then it, gives on a
scratch database of the same server (built, compared, dropped). A migration that
changes rows alone cannot be told apart that way and is never marked: running it
again is what `make migrate` does.
"""

from __future__ import annotations

import secrets
import ssl
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pymysql.cursors
from yoyo import get_backend, read_migrations
from yoyo.exceptions import BadMigration

from .db import RDS_CA_BUNDLE, ConnectionParams, Database, tls_for
from .errors import MigrationFailed, NotMarked

MIGRATIONS = Path(__file__).with_name("migrations")
# The migrate function's timeout (900 s) and a margin: no migrator that may still be running has held the
# lock longer (the function is the only migrator of a deployment; `python -m chalicelib migrate` elsewhere).
STALE_LOCK_SECONDS = 930
YOYO_TABLES = ("_yoyo_log", "_yoyo_migration", "_yoyo_version", "yoyo_lock")  # yoyo's own: not the schema
SHOWN_DIFFERENCES = 5  # a refusal names this many differences at most
SAVEPOINT_GONE = 1305  # yoyo rolling a failed DDL back to a savepoint the DDL's implicit commit released
# What a migration fails with when its change is there already: a table, a column, a key or a constraint of its
# name exists (1050, 1060, 1061, 1826, MySQL's 3822), or what it drops is gone (1091)
ALREADY_THERE = (1050, 1060, 1061, 1091, 1826, 3822)
# What `mark_applied` compares of a table: kind, information_schema view, its schema's column, the columns kept
FACTS = (
    ("table", "TABLES", "TABLE_SCHEMA", "ENGINE, TABLE_COLLATION"),
    ("column", "COLUMNS", "TABLE_SCHEMA",
     "COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, COLLATION_NAME, EXTRA, GENERATION_EXPRESSION"),
    ("index", "STATISTICS", "TABLE_SCHEMA", "INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE, SUB_PART"),
    ("constraint", "TABLE_CONSTRAINTS", "CONSTRAINT_SCHEMA", "CONSTRAINT_NAME, CONSTRAINT_TYPE"),
    ("reference", "REFERENTIAL_CONSTRAINTS", "CONSTRAINT_SCHEMA", "CONSTRAINT_NAME, REFERENCED_TABLE_NAME, UPDATE_RULE, DELETE_RULE"),
)


def _yoyo_url(params: ConnectionParams, tls_ca: str | None = None) -> str:
    """yoyo's URL; its query goes to PyMySQL as keywords: verify against `tls_ca` (and the host's name),
    or no TLS at all without one (yoyo's own `ssl` options cannot check a host name)."""
    auth = quote(params.user, safe="") + (f":{quote(params.password, safe='')}" if params.password else "")
    query: dict[str, str] = {"unix_socket": params.unix_socket} if params.unix_socket else {}
    query.update({"ssl_ca": tls_ca, "ssl_verify_identity": "1"} if tls_ca else {"ssl_disabled": "1"})
    return f"mysql://{auth}@{params.host}:{params.port}/{params.database}?{urlencode(query)}"


def create_database(params: ConnectionParams, tls: ssl.SSLContext | None = None, *, charset: str = "utf8mb4",
                    collation: str = "utf8mb4_unicode_ci") -> None:
    if not all(name.replace("_", "").isalnum() for name in (params.database, charset, collation)):
        raise ValueError(f"refusing to create a database named {params.database!r} ({charset}, {collation})")
    conn = Database(params, tls=tls).connect(database=False)
    try:
        with conn.cursor() as cursor:
            cursor.execute(
                f"CREATE DATABASE IF NOT EXISTS `{params.database}` "
                f"CHARACTER SET {charset} COLLATE {collation}"
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
            for migration in pending:
                try:
                    backend.apply_one(migration)
                except BadMigration:
                    continue  # as yoyo's own apply_migrations: a file it cannot read is passed over
                except Exception as error:
                    raise _failed(migration.id, error) from error
            backend.run_post_apply(pending)
            return [m.id for m in pending]
    finally:
        backend.connection.close()


def _failed(migration: str, error: Exception) -> MigrationFailed:
    """The migration's failure, said with the server's own error (not yoyo's failed rollback to its savepoint,
    which a DDL's implicit commit has already dropped) and, when its change may be there already, the way out."""
    cause = error.__context__ if _is(error, SAVEPOINT_GONE) and error.__context__ is not None else error
    said = f"migration {migration} failed: {cause}"
    if _is(cause, *ALREADY_THERE):
        said += (f"; its change may be in the database already (a killed migrate's statement that the server"
                 f" finished): `make mark-applied ID={migration}` checks that it is and records it")
    return MigrationFailed(migration, said)


def _is(error: BaseException, *codes: int) -> bool:
    return isinstance(error, pymysql.err.MySQLError) and bool(error.args) and error.args[0] in codes


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


@dataclass(frozen=True)
class Marked:
    """What `mark_applied` recorded: the migration, and the tables whose schema showed its effect."""

    migration: str
    tables: tuple[str, ...]


Schema = dict[str, frozenset[tuple[Any, ...]]]  # each table's columns, indexes and constraints, as facts


def mark_applied(params: ConnectionParams, migration_id: str, *, tls_mode: str | None = None,
                 tls_ca: str | None = None) -> Marked:
    """Record `migration_id` as applied without running it, under yoyo's lock, when it is the next migration to
    apply and the tables it changes are exactly what it makes of them (NotMarked, saying why, otherwise)."""
    tls = tls_for(params, tls_mode, tls_ca)
    ca = (tls_ca or str(RDS_CA_BUNDLE)) if tls else None
    backend = get_backend(_yoyo_url(params, ca))
    migrations = read_migrations(str(MIGRATIONS))
    try:
        with backend.lock():
            by_id = {m.id: m for m in migrations}
            if migration_id not in by_id:
                raise NotMarked(f"no migration {migration_id!r} in this package (its ids are the names of"
                                f" chalicelib/migrations/*.sql without .sql, the newest {max(by_id)})")
            pending = [m.id for m in backend.to_apply(migrations)]
            if migration_id not in pending:
                raise NotMarked(f"{migration_id} is applied already: nothing to mark")
            # guard: mark-applied-takes-a-migration-not-next
            if pending[0] != migration_id:
                raise NotMarked(f"{migration_id} is not the next migration to apply ({pending[0]} is): only the one a"
                                " killed migrate was running can have taken effect unrecorded; `make migrate` applies"
                                " the rest")
            target = by_id[migration_id]
            before, after = _schemas_around(params, tls, ca, [m for m in migrations if m.id not in pending], target)
            touched = sorted(t for t in {*before, *after} if before.get(t) != after.get(t))
            if not touched:
                raise NotMarked(f"{migration_id} changes rows, not the schema, so its effect cannot be checked; its rows"
                                " and its record are written apart, and running it again is what `make migrate` does")
            live = _schema(Database(params, tls=tls), params.database, touched)
            # guard: mark-applied-records-an-effect-not-present
            if all(live.get(t) == after.get(t) for t in touched):
                backend.mark_migrations([target])
                return Marked(migration_id, tuple(touched))
            running = _ddl_running(Database(params, tls=tls), params.database)
            if all(live.get(t) == before.get(t) for t in touched):
                raise NotMarked(f"{migration_id} has not taken effect ({', '.join(touched)} as before it){running}:"
                                " `make migrate` applies it")
            differences = [f"{t}: {sorted(_shown(live.get(t), after.get(t)))}" for t in touched
                           if live.get(t) != after.get(t)][:SHOWN_DIFFERENCES]
            raise NotMarked(f"{', '.join(touched)} match neither the schema before {migration_id} nor after it{running};"
                            f" nothing marked. Differences from after it (- missing, + extra): {'; '.join(differences)}")
    finally:
        backend.connection.close()


def _shown(live: frozenset[tuple[Any, ...]] | None, after: frozenset[tuple[Any, ...]] | None) -> set[str]:
    live, after = live or frozenset(), after or frozenset()
    return {f"-{fact}" for fact in after - live} | {f"+{fact}" for fact in live - after}


def _schemas_around(params: ConnectionParams, tls: ssl.SSLContext | None, ca: str | None, applied: list[Any],
                    target: Any) -> tuple[Schema, Schema]:
    """The schema every migration in `applied` gives, and the schema `target` then makes of it, on a scratch
    database of the same server and character set (dropped after): the server words both as it words the live one."""
    scratch = replace(params, database=f"{params.database[:40]}_mark_{secrets.token_hex(4)}")
    live = Database(params, tls=tls).connect()
    try:
        with live.cursor() as cursor:
            cursor.execute("SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA"
                           " WHERE SCHEMA_NAME = %s", (params.database,))
            charset, collation = cursor.fetchone() or ("utf8mb4", "utf8mb4_unicode_ci")
    finally:
        live.close()
    create_database(scratch, tls, charset=charset, collation=collation)
    try:
        backend = get_backend(_yoyo_url(scratch, ca))
        try:
            backend.apply_migrations(backend.to_apply(read_migrations(str(MIGRATIONS)).__class__(applied)))
            before = _schema(Database(scratch, tls=tls), scratch.database)
            backend.apply_migrations(backend.to_apply(read_migrations(str(MIGRATIONS)).__class__([target])))
            after = _schema(Database(scratch, tls=tls), scratch.database)
        finally:
            backend.connection.close()
    finally:
        conn = Database(scratch, tls=tls).connect(database=False)
        try:
            with conn.cursor() as cursor:
                cursor.execute(f"DROP DATABASE IF EXISTS `{scratch.database}`")
        finally:
            conn.close()
    return before, after


def _schema(db: Database, database: str, tables: list[str] | None = None) -> Schema:
    """Each table's schema as the server reports it (information_schema): its engine and collation, its columns,
    its indexes' columns, its constraints and their checks and references; yoyo's own tables left out."""
    found: dict[str, set[tuple[Any, ...]]] = {}
    conn = db.connect(database=False)
    try:
        with conn.cursor() as cursor:
            for kind, view, schema_column, columns in FACTS:
                cursor.execute(f"SELECT TABLE_NAME, {columns} FROM information_schema.{view} WHERE {schema_column} = %s",  # noqa: S608 — constant names
                               (database,))
                for table, *fact in cursor.fetchall():
                    found.setdefault(table, set()).add((kind, *fact))
            # CHECK_CONSTRAINTS names its table on MariaDB only; a check's name is its table's constraint's on both
            checks_of = {name: table for table, facts in found.items() for kind, name, *kinds in facts
                         if kind == "constraint" and kinds == ["CHECK"]}
        with conn.cursor(pymysql.cursors.DictCursor) as cursor:
            cursor.execute("SELECT * FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = %s", (database,))
            for row in cursor.fetchall():
                table = row.get("TABLE_NAME") or checks_of.get(row["CONSTRAINT_NAME"])
                if table is not None:
                    found.setdefault(table, set()).add(("check", row["CONSTRAINT_NAME"], row["CHECK_CLAUSE"]))
    finally:
        conn.close()
    wanted = set(found) - set(YOYO_TABLES) if tables is None else set(tables)
    return {table: frozenset(found[table]) for table in wanted if table in found}


def _ddl_running(db: Database, database: str) -> str:
    """', while the server still runs <statement> (N s)' when a schema change is running on `database` (a killed
    migrate's statement outlives its client until it commits), else ''."""
    conn = db.connect(database=False)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT TIME, LEFT(INFO, 120) FROM information_schema.PROCESSLIST WHERE DB = %s"
                           " AND ID <> CONNECTION_ID() AND (INFO LIKE 'ALTER%%' OR INFO LIKE 'CREATE%%'"
                           " OR INFO LIKE 'DROP%%')", (database,))
            row = cursor.fetchone()
    finally:
        conn.close()
    return "" if row is None else (f", while the server still runs `{row[1]}` ({row[0]} s so far: wait until it has"
                                   " ended, then mark it again)")
