"""Ticks sharded by run id (EVENT_TICK_SHARD): each advances only its share, and together they advance every run once."""

import threading

from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.runner import Runner
from tests.support.factory import document, run_row
from tests.support.runner_kit import make_runner, schedule, step, tick

TWO_SPAWNS = document([[step("world.spawn", npc="crow"), step("world.spawn", npc="owl")]])


def sharded(runner: Runner, shard: tuple[int, int]) -> Runner:
    return Runner(runner.db, runner.clock, runner.actions, runner.rules, concurrency=2, shard=shard)


def test_a_sharded_tick_leaves_the_other_shards_runs_as_they_were(db, clock, game_bridge):
    made = [schedule(db, clock.now(), TWO_SPAWNS) for _ in range(4)]
    runner = sharded(make_runner(db, clock, game_bridge), (0, 2))
    try:
        tick(runner)
    finally:
        runner.close()
    mine = [r for r in made if r.id % 2 == 0]
    assert len(mine) == 2
    for run in made:
        assert run_row(db, run.id).status is (RunStatus.COMPLETED if run in mine else RunStatus.SCHEDULED)
    assert len(game_bridge.received("world.spawn")) == 2 * len(mine)


def test_two_shards_ticking_at_once_dispatch_every_step_of_the_backlog_exactly_once(db, clock, game_bridge):
    made = [schedule(db, clock.now(), TWO_SPAWNS) for _ in range(12)]
    base = make_runner(db, clock, game_bridge)
    shards = [sharded(base, (i, 2)) for i in range(2)]
    reports = {}
    try:
        threads = [threading.Thread(target=lambda i=i, r=r: reports.update({i: tick(r)})) for i, r in enumerate(shards)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        for runner in (*shards, base):
            runner.close()
    for index, report in reports.items():  # each shard did its own share, all of it
        assert report.dispatched == 2 * len([r for r in made if r.id % 2 == index]) > 0
    keys = [r.json["idempotency_key"] for r in game_bridge.received("world.spawn")]
    assert len(keys) == len(set(keys)) == 2 * len(made)
    assert all(run_row(db, run.id).status is RunStatus.COMPLETED for run in made)
