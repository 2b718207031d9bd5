"""P10 the bulk control: N running runs paused by filter in one `POST /runs/bulk` against the same N runs paused
one press per run (`POST /runs/{id}/pause` each), both handled in-process (token check, routing, the commands,
the JSON answers): the wall time and the statements each run cost.

Both sides press the same command through `protocol.within` on each run; the bulk press saves a request, a
token check and a transaction's COMMIT per run (its runs go `bulk.BATCH` to a transaction), and adds one count
and one read of the matching ids per request.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from chalicelib.db import Database

from .harness import Figure, Moderator, StatementRecorder, as_moderator, scratch_database
from .workload import running_runs


def pressed_in_bulk(moderator: Moderator, definition_id: int, count: int) -> None:
    answer = moderator.post("/runs/bulk", {"control": "pause", "filter": {"definition": definition_id, "status": "running"},
                                           "reason": "bench", "expected_count": count})
    if len(answer["changed"]) != count:
        raise RuntimeError(f"the bulk pause changed {len(answer['changed'])} of {count} runs: {answer['refused'][:3]}")


def pressed_each(moderator: Moderator, ids: list[int]) -> None:
    for run_id in ids:
        moderator.post(f"/runs/{run_id}/pause", {"reason": "bench"})


def _timed(work: Callable[[], None]) -> float:
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1000


def measure(db: Database, count: int, rounds: int) -> tuple[float, float, float, float]:
    """(bulk ms, one-press-each ms, bulk statements per run, one-press statements per run): the best of `rounds`
    interleaved rounds for the times, the statements of the last round."""
    with as_moderator(db) as moderator:
        warm_definition, _ = running_runs(db, 2, "p10-warm")
        pressed_in_bulk(moderator, warm_definition, 2)  # imports, connection, JWT key
        bulk_times, each_times = [], []
        bulk_recorder = each_recorder = StatementRecorder()
        for round_no in range(rounds):
            definition, _ = running_runs(db, count, f"p10-bulk-{round_no}")
            _, ids = running_runs(db, count, f"p10-each-{round_no}")
            bulk_recorder, each_recorder = StatementRecorder(), StatementRecorder()
            with bulk_recorder.installed():
                bulk_times.append(_timed(lambda: pressed_in_bulk(moderator, definition, count)))
            with each_recorder.installed():
                each_times.append(_timed(lambda: pressed_each(moderator, ids)))

    def per_run(recorder: StatementRecorder) -> float:
        return sum(len(unit.statements) + unit.transactional for unit in recorder.units) / count  # + its COMMIT

    return min(bulk_times), min(each_times), per_run(bulk_recorder), per_run(each_recorder)


def run(sizes) -> list[Figure]:
    count = sizes.bulk_runs
    with scratch_database("p10") as db:
        bulk_ms, each_ms, bulk_statements, each_statements = measure(db, count, sizes.rounds)
    return [
        Figure("P10", f"{count:,} runs paused by filter, one POST /runs/bulk (in-process)", bulk_ms, "ms",
               baseline=each_ms, baseline_what="(one press per run)"),
        Figure("P10", "statements per run paused by the bulk press (COMMITs included)", bulk_statements, "",
               baseline=each_statements, baseline_what="(one press per run)"),
    ]
