"""P6 control handling: a pause or resume request handled in-process (token check, routing, the
control's transaction, the JSON answer) against the floor of its own statements sent bare.

The floor is not guessed: the statements one pause and one resume sent (the
clock read included) are recorded and replayed with the same transaction
boundaries on a bare connection.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import jwt
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.db import Database, DatabaseClock

from .harness import Figure, StatementRecorder, median, percentile, replay, scratch_database
from .workload import schedule_backlog

SECRET, ISSUER, AUDIENCE = "bench-only-secret-0123456789abcdef0123", "events-bench", "events-console"


def _token() -> str:
    now = datetime.now(UTC)
    claims = {"sub": "bench-mod", "roles": ["moderator"], "iss": ISSUER, "aud": AUDIENCE, "iat": now,
              "exp": now + timedelta(hours=1)}
    return jwt.encode(claims, SECRET, algorithm="HS256")


def _running_run(db: Database) -> int:
    run_id = schedule_backlog(db, 1, 1, label="p6")[0]
    db.autocommit(lambda tx: tx.execute(
        "UPDATE event_runs SET status = 'running', current_phase = 1 WHERE id = %s", (run_id,)))
    return run_id


def run(sizes) -> list[Figure]:
    with scratch_database("p6") as db:
        run_id = _running_run(db)
        settings = Settings(db_url=db.params.url(), jwt_secret=SECRET, jwt_issuer=ISSUER, jwt_audience=AUDIENCE)
        headers = {"Authorization": f"Bearer {_token()}", "Content-Type": "application/json"}
        with runtime.override(settings=settings, database=db, clock=DatabaseClock(db)), Client(app) as client:

            def press(control: str) -> float:
                started = time.perf_counter()
                answer = client.http.post(f"/runs/{run_id}/{control}", headers=headers, body=b"{}")
                elapsed = time.perf_counter() - started
                if answer.status_code != 200:
                    raise RuntimeError(f"{control} answered {answer.status_code}: {answer.body[:300]!r}")
                return elapsed * 1000

            press("pause"), press("resume")  # warm: imports, connection, JWT key
            recorded = {control: StatementRecorder() for control in ("pause", "resume")}
            for control, recorder in recorded.items():
                with recorder.installed():
                    press(control)
            handled = [press(control) for _ in range(sizes.control_requests) for control in ("pause", "resume")]

        conn = db.connect()
        try:
            bare = []
            for _ in range(sizes.control_requests):
                for recorder in recorded.values():
                    started = time.perf_counter()
                    replay(conn, recorder.units)
                    bare.append((time.perf_counter() - started) * 1000)
        finally:
            conn.close()
    statements = sum(len(unit.statements) for unit in recorded["pause"].units)
    return [
        Figure("P6", f"control request p50 ({statements:g} stmts each, in-process)", median(handled), "ms",
               baseline=median(bare), baseline_what="(its statements bare)"),
        Figure("P6", "control request p99 (in-process)", percentile(handled, 99), "ms",
               baseline=percentile(bare, 99), baseline_what="(its statements bare)"),
    ]
