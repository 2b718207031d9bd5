"""P6 control handling: a pause or resume request handled in-process (token check, routing, the
control's transaction, the JSON answer) against the floor of its own statements sent bare.

The floor is not guessed: the statements one pause and one resume sent (the
clock read included) are recorded and replayed with the same transaction
boundaries on a bare connection.
"""

from __future__ import annotations

import time

from .harness import Figure, StatementRecorder, as_moderator, median, percentile, replay, scratch_database
from .workload import running_runs


def run(sizes) -> list[Figure]:
    with scratch_database("p6") as db:
        _, [run_id] = running_runs(db, 1, "p6")
        with as_moderator(db) as moderator:

            def press(control: str) -> float:
                started = time.perf_counter()
                moderator.send(f"/runs/{run_id}/{control}", b"{}")
                return (time.perf_counter() - started) * 1000

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
