"""P9: steps start on time. With `python -m chalicelib tick` running (a real process):

- waits: 50 runs, each `core.wait` of 1–5 s then a module step; the latency is
  from the step's due_at to its request arriving at the game bridge (an upper
  bound on the claim, which comes just before);
- confirms: 50 runs parked at a cue, each confirmed through the API (in-process
  Chalice, the same database); the latency is from the confirm's answer to the
  next step's request at the game bridge.

Both distributions are printed. Also measured here, for the cost model
(`python -m bench.costs`): the tick's wall seconds per live hour (an invocation
of the Lambda path, timed, while runs are live), and its reads while idle.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from chalice.test import Client

from chalicelib import runtime
from chalicelib.db import Database, DatabaseClock, must_exist
from chalicelib.events.runner.lambda_handler import run_invocation
from chalicelib.events.store import definitions, runs, steps
from devtools.kit.game_bridge import SECRET, GameBridge
from tests.support.api import MODERATOR, Api, hs_settings

from .harness import Figure, at_most, distribution, median, percentile, scratch_database
from .workload import make_runner

ROOT = Path(__file__).resolve().parents[1]
RUNS = 50
MEDIAN_TARGET, P99_TARGET = 0.100, 1.0
CONFIRM_P99_TARGET = 0.250  # issue 42: a person's press, in chat or on the console, moves the run at once


def _document(first: dict) -> dict:
    return {"name": "On time", "grace_seconds": 3600, "ending": [], "phases": [{"name": "main", "steps": [
        first, {"action": "world.spawn", "params": {"npc": "scarecrow"}}]}]}


_NUMBERS = itertools.count()  # definition names are unique across the benchmark's every schedule


def _schedule(db: Database, documents: list[dict], at: datetime) -> list[int]:
    ids = []
    for authored in documents:
        document = {**authored, "name": f"{authored['name']} {next(_NUMBERS)}"}
        definition = db.transaction(lambda tx: definitions.create(tx, document, actor="bench", now=at))
        run, _ = db.transaction(lambda tx: runs.insert_occurrence(
            tx, definition_id=definition.id, definition_version=1, scheduled_for=at, grace_seconds=3600, now=at))
        ids.append(must_exist(run).id)
    return ids


def tick_process(db: Database, bridge: GameBridge, launcher: Sequence[str] = ()) -> subprocess.Popen:
    """`python -m chalicelib tick` on `db` and `bridge`, started through `launcher` (a command that execs its
    arguments, e.g. into a CPU-limited cgroup: `lambda_cpu`), if any."""
    env = {**os.environ, "EVENTS_DB_URL": db.params.url(), "GAME_BRIDGE_URL": bridge.url, "GAME_BRIDGE_SECRET": SECRET,
           "EVENT_TICK_CONCURRENCY": "8"}
    return subprocess.Popen([*launcher, sys.executable, "-m", "chalicelib", "tick"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wall(monotonic_at: float, offset: float) -> datetime:
    """A bridge arrival (monotonic) as the database's UTC time."""
    return datetime(1970, 1, 1) + timedelta(seconds=monotonic_at + offset)


def _offset(db: Database) -> float:
    """Seconds to add to time.monotonic() to get the database clock (read once, both sides)."""
    before = time.monotonic()
    db_now = DatabaseClock(db).now()
    after = time.monotonic()
    return (db_now - datetime(1970, 1, 1)).total_seconds() - (before + after) / 2


def _arrivals(bridge: GameBridge, run_ids: list[int], timeout: float) -> dict[int, float]:
    wanted, deadline = set(run_ids), time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = {r.json["run_id"]: r.at for r in bridge.received("world.spawn") if r.json["run_id"] in wanted}
        if len(seen) == len(wanted):
            return seen
        time.sleep(0.05)
    raise RuntimeError(f"P9: only {len(seen)} of {len(wanted)} steps reached the game bridge")


def wait_latencies(db: Database, bridge: GameBridge) -> list[float]:
    start = DatabaseClock(db).now() + timedelta(seconds=1)
    documents = [_document({"action": "core.wait", "params": {"seconds": 1 + (i % 5)}}) for i in range(RUNS)]
    run_ids = _schedule(db, documents, start)
    arrived = _arrivals(bridge, run_ids, timeout=60)
    offset = _offset(db)
    latencies = []
    for run_id in run_ids:
        spawn = db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[1]
        assert spawn.due_at is not None  # the wait before it set its due time
        latencies.append((_wall(arrived[run_id], offset) - spawn.due_at).total_seconds())
    return latencies


def confirm_latencies(db: Database, bridge: GameBridge) -> list[float]:
    run_ids = _schedule(db, [_document({"action": "core.cue", "params": {"instruction": "go"}})] * RUNS,
                        DatabaseClock(db).now())
    deadline = time.monotonic() + 60
    def parked(run_id: int) -> bool:
        first = db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[:1]
        return bool(first) and first[0].parked

    while not all(parked(r) for r in run_ids):
        if time.monotonic() > deadline:
            raise RuntimeError("P9: the cues did not all park")
        time.sleep(0.1)
    confirmed_at = {}
    settings = hs_settings(db.params)
    with runtime.override(settings=settings, database=Database(db.params), clock=DatabaseClock(db)), Client(
            __import__("app").app) as client:
        api = Api(client)
        for i, run_id in enumerate(run_ids):
            cue = db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[0]
            answer = api.post(f"/runs/{run_id}/steps/{cue.id}/confirm", {"note": "lit"}, auth=MODERATOR)
            if answer.status != 200:
                raise RuntimeError(f"P9: confirm answered {answer.status}: {answer.body}")
            confirmed_at[run_id] = time.monotonic()
            time.sleep(0.05 + (i % 10) * 0.037)  # spread over the loop's second
    arrived = _arrivals(bridge, run_ids, timeout=60)
    return [arrived[r] - confirmed_at[r] for r in run_ids]


def live_invocation_seconds(db: Database) -> float:
    """Wall seconds of one Lambda-path invocation while a run is live (one run behind a long wait)."""
    _schedule(db, [_document({"action": "core.wait", "params": {"seconds": 3600}})], DatabaseClock(db).now())
    runner = make_runner(db, concurrency=2)
    started = time.monotonic()
    try:
        run_invocation(runner, remaining_seconds=lambda: 67.0, tick_seconds=15)
    finally:
        runner.close()
    return time.monotonic() - started


def run(sizes) -> list[Figure]:
    with scratch_database("p9") as db, GameBridge() as bridge:
        process = tick_process(db, bridge)
        try:
            waits = wait_latencies(db, bridge)
            confirms = confirm_latencies(db, bridge)
        finally:
            process.terminate()
            _, err = process.communicate(timeout=30)
            if "Traceback" in err:
                print(f"P9: the tick process failed:\n{err[-3000:]}", file=sys.stderr)
        invocation = live_invocation_seconds(db) if sizes.rounds > 1 else None
    print("\nP9 (ms, sorted):\n  " + distribution("due_at -> dispatch", waits) + "\n  "
          + distribution("confirm -> next dispatch", confirms))
    if invocation is not None:
        per_hour = invocation * 60  # the minute rule starts one invocation a minute while awake
        print(f"cost inputs: --tick-wall-seconds-per-live-hour {per_hour:.0f}"
              f"  (one invocation ran {invocation:.1f} s of its minute while a run was live)")
    return [
        Figure("P9", "due_at -> dispatch, median", median(waits) * 1000, "ms", target=at_most(MEDIAN_TARGET * 1000)),
        Figure("P9", "due_at -> dispatch, p99", percentile(waits, 99) * 1000, "ms", target=at_most(P99_TARGET * 1000)),
        Figure("P9", "confirm (API) -> next dispatch, p99", percentile(confirms, 99) * 1000, "ms",
               target=at_most(CONFIRM_P99_TARGET * 1000)),
    ]
