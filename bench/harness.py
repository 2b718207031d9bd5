"""What every benchmark shares: a scratch database, the app pressed in-process, the figures it reports, the table,
a statement recorder."""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pymysql
from chalice.test import Client

import chalicelib.db
from app import app
from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.db import ConnectionParams, Database, DatabaseClock, Tx
from chalicelib.migrate import migrate
from devtools.kit.mariadb import server_url


# ── databases ─────────────────────────────────────────────────────────────
def server_params() -> ConnectionParams:
    """The server the tests use, with a placeholder database name."""
    return ConnectionParams.from_url(server_url().rstrip("/") + "/placeholder")


@contextmanager
def migrated_database(params: ConnectionParams) -> Iterator[Database]:
    """`params`' database migrated, and a benchmark's connection to it (long reads), closed at the end."""
    migrate(params)
    db = Database(params, read_timeout=600)
    try:
        yield db
    finally:
        db.close()


@contextmanager
def scratch_database(label: str) -> Iterator[Database]:
    """A migrated database of our own on the tests' server, dropped at the end whatever happens."""
    name = f"events_bench_{label}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    params = dataclasses.replace(server_params(), database=name)
    try:
        with migrated_database(params) as db:
            yield db
    finally:
        drop_database(params)


def drop_database(params: ConnectionParams) -> None:
    conn = Database(params).connect(database=False)
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{params.database}`")
    finally:
        conn.close()


# ── the app in-process, pressed as a moderator ────────────────────────────
SECRET, ISSUER, AUDIENCE = "bench-only-secret-0123456789abcdef0123", "events-bench", "events-console"


def _token() -> str:
    now = datetime.now(UTC)
    claims = {"sub": "bench-mod", "roles": ["moderator"], "iss": ISSUER, "aud": AUDIENCE, "iat": now,
              "exp": now + timedelta(hours=1)}
    return jwt.encode(claims, SECRET, algorithm="HS256")


class Moderator:
    """Requests to the app in-process (token check, routing, the handler, the JSON answer), as a moderator."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {_token()}", "Content-Type": "application/json"}

    def send(self, path: str, body: bytes) -> Any:
        """`body` posted to `path`: the answer, a 200 (anything else stops the benchmark)."""
        answer = self.client.http.post(path, headers=self.headers, body=body)
        if answer.status_code != 200:
            raise RuntimeError(f"{path} answered {answer.status_code}: {answer.body[:300]!r}")
        return answer

    def post(self, path: str, body: dict) -> dict:
        return json.loads(self.send(path, json.dumps(body).encode()).body)


@contextmanager
def as_moderator(db: Database) -> Iterator[Moderator]:
    """The app in this process on `db`, its clock the database's, pressed as a moderator."""
    settings = Settings(db_url=db.params.url(), jwt_secret=SECRET, jwt_issuer=ISSUER, jwt_audience=AUDIENCE)
    with runtime.override(settings=settings, database=db, clock=DatabaseClock(db)), Client(app) as client:
        yield Moderator(client)


# ── figures and the table ─────────────────────────────────────────────────
@dataclass(frozen=True)
class Target:
    """What a figure must be: `at_least` or `at_most` `value`, applied to the ratio or to the figure itself."""

    value: float
    at_least: bool
    on_ratio: bool

    def met(self, figure: float, ratio: float | None) -> bool:
        measured = ratio if self.on_ratio else figure
        if measured is None:
            return False  # no baseline measured in this run: nothing to hold the figure against
        return measured >= self.value if self.at_least else measured <= self.value

    def __str__(self) -> str:
        sign = "≥" if self.at_least else "≤"
        return f"{sign} {self.value:g}" + ("×" if self.on_ratio else "")


def at_least(value: float, *, ratio: bool = True) -> Target:
    return Target(value, True, ratio)


def at_most(value: float, *, ratio: bool = False) -> Target:
    return Target(value, False, ratio)


@dataclass(frozen=True)
class Figure:
    benchmark: str
    what: str
    figure: float
    unit: str
    baseline: float | None = None  # measured in the same run
    baseline_what: str = ""
    target: Target | None = None  # None: reported, no target set by the issue

    @property
    def ratio(self) -> float | None:
        return None if not self.baseline else self.figure / self.baseline

    @property
    def verdict(self) -> str:
        if self.target is None:
            return "report"
        return "met" if self.target.met(self.figure, self.ratio) else "MISSED"


def _number(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if value < 10 else f"{value:.1f}"


def table(figures: Sequence[Figure]) -> str:
    rows = [("benchmark", "figure", "baseline (same run)", "ratio", "target", "")]
    for f in figures:
        baseline = " ".join(filter(None, (_number(f.baseline), f.unit, f.baseline_what))) if f.baseline is not None else "—"
        rows.append((
            f"{f.benchmark} {f.what}",
            " ".join(filter(None, (_number(f.figure), f.unit))),
            baseline,
            f"{f.ratio:.2f}×" if f.ratio is not None else "—",
            str(f.target) if f.target else "—",
            f.verdict,
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def percentile(values: Sequence[float], pct: float) -> float:
    """The `pct` percentile (nearest rank) of `values`."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    rank = max(1, round(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def distribution(name: str, seconds: Sequence[float]) -> str:
    """`seconds` as a line of milliseconds (n, min, median, p90, p99, max), then every value sorted."""
    ms = sorted(v * 1000 for v in seconds)
    return (f"{name}: n={len(ms)} min {ms[0]:.0f} ms, median {median(ms):.0f}, p90 {percentile(ms, 90):.0f},"
            f" p99 {percentile(ms, 99):.0f}, max {ms[-1]:.0f}\n    " + " ".join(f"{v:.0f}" for v in ms))


# ── what the engine sends ────────────────────────────────────────────────
@dataclass(frozen=True)
class Statement:
    sql: str
    args: Any
    many: bool = False  # executemany: args is the list of rows

    @property
    def shape(self) -> str:
        return " ".join(self.sql.split())


@dataclass
class Unit:
    """One unit of work as `Database.transaction()` or `.autocommit()` ran it."""

    transactional: bool
    statements: list[Statement] = field(default_factory=list)


class StatementRecorder:
    """Records every statement the engine sends through `chalicelib.db.Tx` in this process.

    `Database` builds a `Tx` per unit of work and tells it whether the unit is a
    transaction (its first statement begins it). The engine is not changed for
    this: the class it instantiates is swapped for a recording subclass while
    `installed()` is active.
    """

    def __init__(self) -> None:
        self.units: list[Unit] = []
        self._lock = threading.Lock()

    @contextmanager
    def installed(self) -> Iterator[StatementRecorder]:
        recorder = self

        class RecordingTx(Tx):
            def __init__(self, connection: pymysql.connections.Connection, *, transactional: bool = False):
                super().__init__(connection, transactional=transactional)
                self._unit = Unit(transactional)
                with recorder._lock:
                    recorder.units.append(self._unit)

            def execute(self, sql, args=None):
                self._unit.statements.append(Statement(sql, args))
                return super().execute(sql, args)

            def executemany(self, sql, rows):
                rows = list(rows)
                self._unit.statements.append(Statement(sql, rows, many=True))
                return super().executemany(sql, rows)

            def send_ahead(self, sql, args=None):
                if self._transactional:  # else it is sent now, through `execute`
                    self._unit.statements.append(Statement(sql, args))
                return super().send_ahead(sql, args)

            def one(self, sql, args=None):
                self._unit.statements.append(Statement(sql, args))
                return super().one(sql, args)

            def all(self, sql, args=None):
                self._unit.statements.append(Statement(sql, args))
                return super().all(sql, args)

        original = chalicelib.db.Tx
        chalicelib.db.Tx = RecordingTx  # type: ignore[misc]  # the Database builds whatever Tx is at call time
        try:
            yield self
        finally:
            chalicelib.db.Tx = original  # type: ignore[misc]  # put back


class RoundTripCounter:
    """Counts the requests this process sends its database (each one answer's wait), on every connection.

    One request is one round trip, however many statements its text holds: a
    transaction's BEGIN riding with its first statement costs none of its own.
    """

    def __init__(self) -> None:
        self.count = 0

    @contextmanager
    def installed(self) -> Iterator[RoundTripCounter]:
        connection_class: Any = pymysql.connections.Connection  # its stubs omit the private method counted here
        original = connection_class._execute_command
        counter = self

        def counted(connection, command, sql):
            counter.count += 1
            return original(connection, command, sql)

        connection_class._execute_command = counted
        try:
            yield self
        finally:
            connection_class._execute_command = original


def replay(conn: pymysql.connections.Connection, units: Sequence[Unit]) -> None:
    """Send recorded units bare: the same statements and transaction boundaries, no engine around them."""
    with conn.cursor() as cursor:
        for unit in units:
            if unit.transactional:
                conn.begin()
            for statement in unit.statements:
                if statement.many:
                    cursor.executemany(statement.sql, statement.args)
                else:
                    cursor.execute(statement.sql, statement.args)
                    cursor.fetchall()
            if unit.transactional:
                conn.commit()
