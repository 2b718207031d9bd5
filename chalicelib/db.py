"""Database access: one connection per thread, units of work, retries, the clock.

Every store function takes a `Tx` — a thin cursor wrapper — so the same SQL runs
inside `Database.transaction()` (BEGIN … COMMIT, retried whole on deadlock or
lock-wait) or `Database.autocommit()` (single guarded statements, such as a
claim, that need no transaction). Nothing here sends a `SET`: RDS Proxy pins a
connection on session state, and time is a parameter from the clock anyway.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, Protocol, Sequence, TypeVar
from urllib.parse import parse_qs, unquote, urlparse

import pymysql
import pymysql.cursors
import tenacity

log = logging.getLogger(__name__)

T = TypeVar("T")

# Errors after which re-running the whole unit of work is correct: the server
# rolled the transaction back (deadlock, lock wait) or never saw it (gone away
# before COMMIT was sent).
DEADLOCK = 1213
LOCK_WAIT_TIMEOUT = 1205
RETRYABLE_SERVER_ERRORS = {DEADLOCK, LOCK_WAIT_TIMEOUT}
CONNECTION_LOST = {2006, 2013, 2003, 2055}
MAX_TRIES = 6


@dataclass(frozen=True)
class ConnectionParams:
    host: str
    port: int
    user: str
    password: str
    database: str
    unix_socket: str | None = None

    @classmethod
    def from_url(cls, url: str) -> "ConnectionParams":
        """Parse `mysql://user:pass@host:port/db[?unix_socket=/path]`."""
        parsed = urlparse(url)
        if parsed.scheme not in ("mysql", "mysql+pymysql") or not parsed.path.strip("/"):
            raise ValueError("database URL must look like mysql://user:pass@host:port/database")
        query = parse_qs(parsed.query)
        return cls(
            host=parsed.hostname or "127.0.0.1",
            port=parsed.port or 3306,
            user=unquote(parsed.username or "root"),
            password=unquote(parsed.password or ""),
            database=parsed.path.strip("/"),
            unix_socket=(query.get("unix_socket") or [None])[0],
        )

    @classmethod
    def from_secret(cls, secret: dict) -> "ConnectionParams":
        """The JSON of an RDS-generated Secrets Manager secret."""
        return cls(
            host=secret["host"],
            port=int(secret.get("port", 3306)),
            user=secret["username"],
            password=secret["password"],
            database=secret.get("dbname") or secret.get("database") or "events",
        )

    def url(self) -> str:
        auth = self.user + (f":{self.password}" if self.password else "")
        suffix = f"?unix_socket={self.unix_socket}" if self.unix_socket else ""
        return f"mysql://{auth}@{self.host}:{self.port}/{self.database}{suffix}"


class Tx:
    """The statements of one unit of work, on one connection."""

    def __init__(self, connection: pymysql.connections.Connection):
        self._cursor = connection.cursor(pymysql.cursors.DictCursor)

    def execute(self, sql: str, args: Sequence[Any] | dict | None = None) -> int:
        """Run a statement; return the number of rows it changed."""
        return self._cursor.execute(sql, args)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> int:
        return self._cursor.executemany(sql, list(rows))

    def one(self, sql: str, args: Sequence[Any] | dict | None = None) -> dict | None:
        self._cursor.execute(sql, args)
        return self._cursor.fetchone()

    def all(self, sql: str, args: Sequence[Any] | dict | None = None) -> list[dict]:
        self._cursor.execute(sql, args)
        return list(self._cursor.fetchall())

    @property
    def last_insert_id(self) -> int:
        return self._cursor.lastrowid


def _error_code(error: BaseException | None) -> int | None:
    if isinstance(error, pymysql.err.MySQLError) and error.args and isinstance(error.args[0], int):
        return error.args[0]
    return None


def lost_connection(error: BaseException) -> bool:
    """The server could not be reached or the connection dropped: an outage, not the statement's fault."""
    return _error_code(error) in CONNECTION_LOST


def _safe_to_rerun(error: BaseException) -> bool:
    if _error_code(error) in RETRYABLE_SERVER_ERRORS:
        return True
    return lost_connection(error) and not getattr(error, "at_commit", False)


class Database:
    """Lazily connected, one connection per thread, reused across invocations."""

    def __init__(self, params: ConnectionParams | str, *, connect_timeout: int = 5, read_timeout: int = 60):
        self.params = ConnectionParams.from_url(params) if isinstance(params, str) else params
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._local = threading.local()
        self.retries: Counter[int] = Counter()  # error code -> transactions re-run

    # ── connections ──────────────────────────────────────────────────────
    def connect(self, *, database: bool = True) -> pymysql.connections.Connection:
        """A new connection (autocommit on). Most callers want `connection()`."""
        p = self.params
        return pymysql.connect(
            host=p.host,
            port=p.port,
            user=p.user,
            password=p.password,
            database=p.database if database else None,
            unix_socket=p.unix_socket,
            charset="utf8mb4",
            autocommit=True,
            connect_timeout=self._connect_timeout,
            read_timeout=self._read_timeout,
            write_timeout=self._read_timeout,
        )

    def connection(self) -> pymysql.connections.Connection:
        conn = getattr(self._local, "connection", None)
        if conn is None or not conn.open:
            conn = self.connect()
            self._local.connection = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection; the next unit of work opens a new one."""
        conn = getattr(self._local, "connection", None)
        self._local.connection = None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # already broken: nothing to release
                pass


    # ── units of work ────────────────────────────────────────────────────
    def transaction(self, work: Callable[[Tx], T]) -> T:
        """Run `work` between BEGIN and COMMIT; re-run it whole on deadlock or lock wait.

        `work` must be safe to repeat: it is, when every write in it is guarded.
        An exception from `work` rolls back and propagates.
        """
        return self._with_retries(work, transactional=True)

    def autocommit(self, work: Callable[[Tx], T]) -> T:
        """Run `work` with each statement committing on its own."""
        return self._with_retries(work, transactional=False)

    def _with_retries(self, work: Callable[[Tx], T], *, transactional: bool) -> T:
        # The first try runs bare: almost every unit of work succeeds at once, and
        # building a tenacity.Retrying per call costs more than the statement it wraps.
        try:
            return self._run_once(work, transactional)
        except pymysql.err.MySQLError as error:
            if not _safe_to_rerun(error):
                raise
            self.retries[_error_code(error)] += 1
            log.info("re-running unit of work after MySQL error %s (try 1)", _error_code(error))
            time.sleep(random.uniform(0.005, 0.02))  # let the other side of a deadlock finish first
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(_safe_to_rerun),
            stop=tenacity.stop_after_attempt(MAX_TRIES - 1),
            wait=tenacity.wait_random_exponential(multiplier=0.01, max=0.5),
            before_sleep=self._count_retry,
            reraise=True,
        )
        return retrying(self._run_once, work, transactional)

    def _count_retry(self, state: tenacity.RetryCallState) -> None:
        code = _error_code(state.outcome.exception())
        self.retries[code] += 1
        log.info("re-running unit of work after MySQL error %s (try %d)", code, state.attempt_number)

    def _run_once(self, work: Callable[[Tx], T], transactional: bool) -> T:
        try:
            conn = self.connection()
        except pymysql.err.OperationalError:
            self.close()
            raise
        try:
            if not transactional:
                return work(Tx(conn))
            conn.begin()
            try:
                result = work(Tx(conn))
            except BaseException:
                conn.rollback()
                raise
            try:
                conn.commit()
            except pymysql.err.MySQLError as error:
                # The outcome of a COMMIT whose answer was lost is unknown: never re-run it.
                error.at_commit = True
                raise
            return result
        except pymysql.err.MySQLError as error:
            if lost_connection(error):
                self.close()
            raise


# ── the clock ───────────────────────────────────────────────────────────
class Clock(Protocol):
    def now(self) -> datetime:
        """The current UTC time, naive, microsecond precision."""


class DatabaseClock:
    """Production time: the database's, so Lambdas with skewed clocks agree."""

    def __init__(self, db: Database):
        self._db = db

    def now(self) -> datetime:
        return self._db.autocommit(lambda tx: tx.one("SELECT UTC_TIMESTAMP(6) AS now")["now"])


class ManualClock:
    """Test time: stands still until told to move."""

    def __init__(self, start: datetime):
        self._now = start.replace(tzinfo=None)

    def now(self) -> datetime:
        return self._now

    def set(self, when: datetime) -> None:
        self._now = when.replace(tzinfo=None)

    def advance(self, seconds: float) -> datetime:
        self._now += timedelta(seconds=seconds)
        return self._now
