"""Two tick processes sharding one backlog (EVENT_TICK_SHARD=0/2 and 1/2) against one tick process, a 50 ms bridge.

Today one tick container works at a time, so the engine's throughput is one
process's: EVENT_TICK_CONCURRENCY runs at once, each step waiting on the bridge,
about 8 / (50 ms + the step's database time). The design's way past it is more
tick processes, each on its share of the runs by id (docs/deploy.md, "The scale
ceiling"). Each round drains a fresh backlog of runs × 2 module steps with one
process (shard 0/1: every run), then another of the same size with two
processes started together; throughput is steps over the wall time from the
first start to the last finish. The bridge counts every request by its
idempotency key: a step dispatched twice, or one never dispatched, fails the
benchmark rather than giving a figure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from functools import partial
from pathlib import Path

from chalicelib.db import Database, DatabaseClock, must_exist
from chalicelib.events.store import definitions, runs
from devtools.kit.game_bridge import SECRET, Answer, GameBridge

from .harness import Figure, at_least, scratch_database

ROOT = Path(__file__).resolve().parents[1]
BRIDGE_DELAY_SECONDS = 0.05
STEPS_PER_RUN = 2
SHARDS = 2
TARGET = 1.6  # two processes vs one


def schedule(db: Database, count: int, label: str) -> None:
    now = DatabaseClock(db).now()
    steps = [{"action": "world.spawn", "params": {"i": i}} for i in range(STEPS_PER_RUN)]
    document = {"name": f"Shards {label}", "grace_seconds": 3600, "phases": [{"name": "main", "steps": steps}]}
    definition = db.transaction(lambda tx: definitions.create(tx, document, actor="bench", now=now))
    for i in range(count):
        due = now - timedelta(microseconds=i)  # one occurrence key per run, all due
        db.transaction(partial(
            runs.insert_occurrence, definition_id=definition.id, definition_version=1, scheduled_for=due, grace_seconds=3600, now=now))


def drain_with(db: Database, bridge: GameBridge, shards: list[str]) -> float:
    """Steps per second of processes, one per shard ("index/count"), draining what is due together."""
    env = {**os.environ, "EVENTS_DB_URL": db.params.url(), "GAME_BRIDGE_URL": bridge.url, "GAME_BRIDGE_SECRET": SECRET}
    processes = [
        subprocess.Popen([sys.executable, "-m", "bench.shard_worker"], cwd=ROOT, env={**env, "EVENT_TICK_SHARD": shard},
                         text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for shard in shards
    ]
    try:
        for process in processes:
            if must_exist(process.stdout).readline().strip() != "ready":
                raise RuntimeError(f"a shard worker did not start: {process.communicate()[1][-2000:]}")
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
        raise RuntimeError(f"shard workers failed: {failed}")
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    seconds = max(r["finished"] for r in reports) - min(r["started"] for r in reports)
    return sum(r["dispatched"] for r in reports) / seconds


def no_double_dispatch(bridge: GameBridge, expected: int) -> None:
    keys = Counter(request.headers["idempotency-key"] for request in bridge.received())
    twice = [key for key, count in keys.items() if count > 1]
    if twice or len(keys) != expected:
        raise RuntimeError(f"{len(twice)} step(s) dispatched more than once, {len(keys)} of {expected} dispatched")


def run(sizes) -> list[Figure]:
    runs_count = 48 if sizes.rounds == 1 else 240
    one, sharded = [], []
    with scratch_database("shards") as db:
        for round_number in range(sizes.rounds):
            with GameBridge(default=Answer(delay=BRIDGE_DELAY_SECONDS)) as bridge:
                schedule(db, runs_count, f"one {round_number}")
                one.append(drain_with(db, bridge, ["0/1"]))
                no_double_dispatch(bridge, runs_count * STEPS_PER_RUN)
            with GameBridge(default=Answer(delay=BRIDGE_DELAY_SECONDS)) as bridge:
                schedule(db, runs_count, f"sharded {round_number}")
                sharded.append(drain_with(db, bridge, [f"{i}/{SHARDS}" for i in range(SHARDS)]))
                no_double_dispatch(bridge, runs_count * STEPS_PER_RUN)
    return [
        Figure("shards", f"steps/s, 50 ms bridge, {SHARDS} tick processes sharding one backlog (no step twice)",
               max(sharded), "steps/s", baseline=max(one), baseline_what="(one tick process, same run)",
               target=at_least(TARGET)),
    ]
