"""The game bridge answering after 50 ms: one tick with the default pool vs the same tick with a pool of 1.

Module steps spend their time waiting on the game side, so a tick is only as
fast as the number of runs it waits on at once. The runs are independent (two
serial steps each); the pool works different runs concurrently.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from functools import partial

from chalicelib.config import Settings
from chalicelib.db import Database, DatabaseClock
from chalicelib.events.actions.perform import Actions
from chalicelib.events.adapters.bridge import BridgeClient
from chalicelib.events.adapters.channels import LogChannel
from chalicelib.events.runner import Runner
from chalicelib.events.store import definitions, runs
from devtools.kit.game_bridge import SECRET, Answer, GameBridge

from .harness import Figure, at_least, scratch_database
from .workload import RULES, drained_steps_per_second

BRIDGE_DELAY_SECONDS = 0.05
STEPS_PER_RUN = 2
POOL_TARGET = 6.0
DEFAULT_POOL = Settings().tick_concurrency


def _schedule(db: Database, count: int) -> None:
    now = DatabaseClock(db).now()
    steps = [{"action": "world.spawn", "params": {"i": i}} for i in range(STEPS_PER_RUN)]
    # Definition names are unique, and every round schedules its own.
    document = {"name": f"Bridge benchmark {uuid.uuid4().hex[:8]}", "grace_seconds": 3600, "phases": [{"name": "main", "steps": steps}]}
    definition = db.transaction(lambda tx: definitions.create(tx, document, actor="bench", now=now))
    for i in range(count):
        due = now - timedelta(microseconds=i)  # one occurrence key per run, all due
        db.transaction(partial(
            runs.insert_occurrence, definition_id=definition.id, definition_version=1, scheduled_for=due, grace_seconds=3600, now=now))


def steps_per_second(db: Database, bridge: GameBridge, runs_count: int, concurrency: int) -> float:
    _schedule(db, runs_count)
    actions = Actions(bridge=BridgeClient(bridge.url, SECRET, timeout=5),
                      cue_channel=LogChannel("cue"), announce_channel=LogChannel("announce"))
    report, per_second = drained_steps_per_second(Runner(db, DatabaseClock(db), actions, RULES, concurrency=concurrency))
    if report.dispatched != runs_count * STEPS_PER_RUN:
        raise RuntimeError(f"the bridge benchmark tick did not dispatch every step: {report.summary()}")
    return per_second


def run(sizes) -> list[Figure]:
    runs_count = 24 if sizes.rounds == 1 else 64
    pooled, single = [], []
    with scratch_database("bridge") as db, GameBridge(default=Answer(delay=BRIDGE_DELAY_SECONDS)) as bridge:
        for _ in range(sizes.rounds):
            single.append(steps_per_second(db, bridge, runs_count, concurrency=1))
            pooled.append(steps_per_second(db, bridge, runs_count, concurrency=DEFAULT_POOL))
    return [
        Figure("bridge", f"steps/s, 50 ms bridge, pool of {DEFAULT_POOL}", max(pooled), "steps/s",
               baseline=max(single), baseline_what="(same tick, pool of 1)", target=at_least(POOL_TARGET)),
    ]
