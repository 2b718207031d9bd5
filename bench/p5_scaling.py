"""P5 scaling (1, 2, 4, 8 tick worker processes on the same backlog) and P6 claim → terminal latency under that load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from chalicelib.db import Database, must_exist

from .harness import Figure, at_least, percentile, scratch_database
from .workload import schedule_backlog

ROOT = Path(__file__).resolve().parents[1]
WORKER_COUNTS = (1, 2, 4, 8)
SCALING_TARGET = 1.5  # 4 workers vs 1


@dataclass(frozen=True)
class Drained:
    workers: int
    steps: int
    seconds: float
    latencies_ms: list[float]

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds


def drain_with_processes(db: Database, workers: int, runs: int, steps_per_run: int) -> Drained:
    """A fresh backlog drained by `workers` processes started together; wall time from the first start to the last finish."""
    schedule_backlog(db, runs, steps_per_run, label=f"p5-{workers}")
    env = {**os.environ, "EVENTS_DB_URL": db.params.url()}
    processes = [
        subprocess.Popen([sys.executable, "-m", "bench.tick_worker"], cwd=ROOT, env=env, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(workers)
    ]
    try:
        for process in processes:
            if must_exist(process.stdout).readline().strip() != "ready":
                raise RuntimeError(f"a tick worker did not start: {process.communicate()[1][-2000:]}")
        for process in processes:
            must_exist(process.stdin).write("go\n")
            must_exist(process.stdin).flush()
        outputs = [process.communicate(timeout=1800) for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    failed = [err[-2000:] for process, (_, err) in zip(processes, outputs, strict=True) if process.returncode != 0]
    if failed:
        raise RuntimeError(f"tick workers failed: {failed}")
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    dispatched = sum(r["dispatched"] for r in reports)
    if dispatched != runs * steps_per_run:
        raise RuntimeError(f"{workers} workers dispatched {dispatched} of {runs * steps_per_run} steps")
    seconds = max(r["finished"] for r in reports) - min(r["started"] for r in reports)
    return Drained(workers, dispatched, seconds, [ms for r in reports for ms in r["latencies_ms"]])


def run(sizes) -> list[Figure]:
    with scratch_database("p5") as db:
        drained = {n: drain_with_processes(db, n, sizes.scaling_runs, sizes.scaling_steps_per_run) for n in WORKER_COUNTS}
    one = drained[1]
    figures = [Figure("P5", "steps/s, 1 worker", one.steps_per_second, "steps/s")]
    for n in WORKER_COUNTS[1:]:
        figures.append(Figure("P5", f"steps/s, {n} workers", drained[n].steps_per_second, "steps/s",
                              baseline=one.steps_per_second, baseline_what="(1 worker)",
                              target=at_least(SCALING_TARGET) if n == 4 else None))
    for n in (4, 8):
        for pct in (50, 99):
            figures.append(Figure("P6", f"claim→terminal p{pct}, {n} workers", percentile(drained[n].latencies_ms, pct),
                                  "ms", baseline=percentile(one.latencies_ms, pct), baseline_what="(1 worker)"))
    return figures
