"""The schema this code needs, read once per process: new code never works on an older schema.

The code needs every migration it ships (`chalicelib/migrations`); yoyo records each
one applied in `_yoyo_migration`, keyed by the SHA-256 of its id. `behind(db)` looks
them all up there (one read by primary key). Once it is found the
answer is kept for the life of the process (a schema never goes back), so a process
pays the read once; while it is missing the answer is re-read at most every
RECHECK_SECONDS, so an upgrade's migration is seen within seconds and a flood of
requests meanwhile costs no more reads. The API answers 503 (SchemaBehind) and the
tick skips its invocation with one line until then. The deploy runs the migrations
before the new functions take traffic (infra/app.yaml, MigrateSchema), so this is
the guard for a path that went wrong, not a step of the normal one.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import weakref
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pymysql

from .db import Database
from .errors import SchemaBehind

logger = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).with_name("migrations")
RECHECK_SECONDS = 5.0
NO_SUCH_TABLE = 1146
NOT_MIGRATED = "schema not migrated yet"

_lock = threading.Lock()
_current: weakref.WeakSet[Database] = weakref.WeakSet()  # the databases whose schema was found current
_last_miss: weakref.WeakKeyDictionary[Database, tuple[float, str]] = weakref.WeakKeyDictionary()


@cache
def needed() -> tuple[str, ...]:
    """The ids of every migration this code ships (file names without `.sql`), in order."""
    return tuple(sorted(path.stem for path in MIGRATIONS.glob("*.sql")))


def newest() -> str:
    return needed()[-1]


def stamp(migrations: tuple[str, ...] | None = None) -> str:
    """One value that changes whenever the shipped migrations do (one added anywhere in the order included):
    the app stack's MigrateSchema carries it, so CloudFormation runs the migrate function exactly then."""
    ids = needed() if migrations is None else migrations
    digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:12]
    return f"{ids[-1]}-of-{len(ids)}-{digest}"


def _read(db: Database) -> str | None:
    keys = {hashlib.sha256(migration.encode()).hexdigest(): migration for migration in needed()}
    marks = ", ".join(["%s"] * len(keys))
    try:
        rows = db.autocommit(lambda tx: tx.all(
            f"SELECT migration_hash FROM _yoyo_migration WHERE migration_hash IN ({marks})",  # noqa: S608 — %s marks only
            tuple(keys)))
    except pymysql.err.ProgrammingError as error:
        if error.args[0] == NO_SUCH_TABLE:
            return f"{NOT_MIGRATED}: the database has no migrations applied (this code needs up to {newest()})"
        raise
    missing = sorted(set(keys.values()) - {keys[row["migration_hash"]] for row in rows})
    # guard: the-api-answers-on-an-older-schema
    if not missing:
        return None
    return f"the schema is older than this code: migration {missing[0]} is not applied yet"


def behind(db: Database, *, log: bool = True, monotonic: Callable[[], float] = time.monotonic) -> str | None:
    """None when `db` has every migration this code ships; else why not, in one line (logged as a
    WARNING when it was read now, unless `log` is False: the caller says it in its own line)."""
    with _lock:
        if db in _current:
            return None
        missed = _last_miss.get(db)
        if missed is not None and monotonic() - missed[0] < RECHECK_SECONDS:
            return missed[1]
    reason = _read(db)
    with _lock:
        if reason is None:
            _current.add(db)
            _last_miss.pop(db, None)
        else:
            _last_miss[db] = (monotonic(), reason)
    if reason is not None and log:
        logger.warning("%s: requests that read the database answer 503 until it is", reason)
    return reason


def require(db: Database) -> None:
    """Raise SchemaBehind unless `db` has every migration this code ships."""
    reason = behind(db)
    if reason is not None:
        raise SchemaBehind(f"{reason}; try again once the deploy's migration has run")


def forget() -> None:
    """Forget every answer (tests; a process never needs it)."""
    with _lock:
        _current.clear()
        _last_miss.clear()
