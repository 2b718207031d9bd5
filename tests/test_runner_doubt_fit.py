"""A step in doubt asked about first (GAME_BRIDGE_STATUS=on) needs two outbound deadlines, its status probe
then its delivery: 22 s with the deployed 10 s deadlines, where any other attempt needs 12 s. A tick with
less time than that leaves it, and what follows must neither spin nor say so at every tick: the loop never
ticks faster than its poll period, the step is said once, and `tick --once` takes it whatever its budget."""

import json
from itertools import pairwise

import pytest

from chalicelib.db import DatabaseClock
from chalicelib.events.lifecycle import StepStatus
from chalicelib.events.runner.loop import POLL_SECONDS, Loop
from chalicelib.events.store import steps
from devtools.kit.game_bridge import Answer, ApplyingGame
from tests.support.factory import document
from tests.support.runner_kit import RULES, make_runner, schedule, step, tick, tick_process

DEADLINE = 10.0  # the deployed outbound deadline (EVENT_STEP_LEASE_SECONDS=120: a quarter, at most 10 s)
# An invocation's end 21 s after its first tick: room for any step's 12 s, never for a step in doubt's 22 s.
FINISH_BY = 21.0
TICK_COST = 0.05  # what one tick takes, on the loop's clock
TICKS_BEFORE_GIVING_UP = 60  # a spinning loop is stopped here, so the test fails rather than runs on


class LoopTime:
    """The loop's monotonic clock: it moves when the loop sleeps and when a tick works; the engine's clock
    (the test's ManualClock) moves with it."""

    def __init__(self, clock):
        self.now, self.clock = 0.0, clock

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pass_(seconds)

    def pass_(self, seconds: float) -> None:
        self.now += seconds
        self.clock.advance(seconds)


def _the_step(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[0]


def _a_due_step_in_doubt(db, clock, game_bridge, runner):
    """A run whose one step's first attempt met a proxy's 504 (in doubt), its retry due now."""
    game_bridge.script("world.spawn", Answer(504, ""))
    run = schedule(db, clock.now(), document([[step("world.spawn", npc="scarecrow")]]))
    tick(runner)
    clock.advance(RULES.retry_seconds)
    spawn = _the_step(db, run.id)
    assert spawn.in_doubt and spawn.status is StepStatus.PENDING and spawn.due_at <= clock.now()
    return spawn


def _loop_to_its_end(runner, clock):
    """The loop of one invocation ending at FINISH_BY; (the loop, when each tick began on its clock)."""
    time = LoopTime(clock)
    loop = Loop(runner, FINISH_BY, tick_seconds=15, monotonic=time.monotonic, sleep=time.sleep)
    ticked_at = []
    runner_tick = runner.tick

    def timed_tick(budget, **kw):
        ticked_at.append(time.now)
        if len(ticked_at) >= TICKS_BEFORE_GIVING_UP:
            loop.stop.set()
        report = runner_tick(budget, **kw)
        time.pass_(TICK_COST)
        return report

    runner.tick = timed_tick
    loop.run()
    return loop, ticked_at


def test_a_step_in_doubt_that_never_fits_the_invocation_does_not_make_the_loop_spin(db, clock, game_bridge):
    """Spinning case: a due step in doubt needs 22 s, the invocation has 21 s left, so every tick leaves it for
    want of time. Before the fix the loop went straight on after each such tick (829 ticks in 25 s in the
    review, 827 doing nothing); now the ticks are one poll period apart, each followed by one wake read."""
    runner = make_runner(db, clock, game_bridge, timeout=DEADLINE, asks_status=True)
    try:
        spawn = _a_due_step_in_doubt(db, clock, game_bridge, runner)
        assert runner.doubt_worst_case_seconds > FINISH_BY > runner.step_worst_case_seconds
        loop, ticked_at = _loop_to_its_end(runner, clock)
    finally:
        runner.close()
    reports = loop.reports
    assert len(reports) < TICKS_BEFORE_GIVING_UP, f"{len(reports)} ticks: the loop spun"
    assert all(r.out_of_budget and r.dispatched == 0 for r in reports)
    assert all(later - earlier >= POLL_SECONDS - 1e-9 for earlier, later in pairwise(ticked_at))
    # The loop lasts until the last 12 s (one step's worst case) of its 21: 9 s, so ten ticks at most.
    assert 2 <= len(reports) <= 1 + (FINISH_BY - runner.step_worst_case_seconds) / POLL_SECONDS
    assert loop.wake_reads >= len(reports) - 1  # between two ticks, at least the one statement of a wait
    left = _the_step(db, spawn.run_id)
    assert (left.status, left.in_doubt, left.attempts) == (StepStatus.PENDING, True, 1) and game_bridge.probes() == []


def test_a_step_that_never_fits_its_tick_is_said_once_not_at_every_tick(db, clock, game_bridge, caplog):
    """Said-once case: the same step in doubt, left by every tick of the invocation; one WARNING names the step
    and its figures (22 s needed, 21 s in the whole tick, the lease). Before the fix nothing said why."""
    runner = make_runner(db, clock, game_bridge, timeout=DEADLINE, asks_status=True)
    try:
        spawn = _a_due_step_in_doubt(db, clock, game_bridge, runner)
        caplog.set_level("WARNING", logger="chalicelib.events.runner.tick")
        loop, _ = _loop_to_its_end(runner, clock)
    finally:
        runner.close()
    assert len(loop.reports) >= 2  # more than one tick met it
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"step {spawn.id} ")]
    assert said == [(
        f"step {spawn.id} (world.spawn, in doubt) of run {spawn.run_id} needs up to 22.0 s (20.0 s of outbound"
        f" deadlines, the rest its claim and outcome), more than a whole tick gives it here (21.0 s to the tick's"
        f" end, a {RULES.lease_seconds:.0f} s lease): it waits for a tick with more time")]


@pytest.mark.realtime  # the tick command
def test_tick_once_takes_a_step_in_doubt_whose_worst_case_is_more_than_its_budget(db, game_bridge):
    """`tick --once` case, with the dev stage's settings (EVENT_TICK_SECONDS=5, 10 s deadlines,
    GAME_BRIDGE_STATUS=on): `--budget 5` takes a due step in doubt, asking the game first. Before the fix the
    hard end left room for one deadline after the budget (5 + 12 < 22 s): out_of_budget at every try."""
    game = ApplyingGame(game_bridge)
    game_bridge.script("world.spawn", Answer(504, ""))  # a proxy's: the game never saw it
    run = schedule(db, DatabaseClock(db).now(), document([[step("world.spawn", npc="scarecrow")]]))
    settings = {"GAME_BRIDGE_STATUS": "on", "EVENT_STEP_LEASE_SECONDS": "120", "EVENT_STEP_RETRY_SECONDS": "0"}

    def tick_once(budget_seconds):
        process = tick_process(game_bridge.url, budget_seconds=budget_seconds, **settings)
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err[-2000:]
        return json.loads(out.strip().splitlines()[-1])

    assert tick_once(5)["outcomes"] == {"retry": 1}  # the 504: in doubt, due again at once
    assert _the_step(db, run.id).in_doubt
    report = tick_once(5)
    assert (report["dispatched"], report["outcomes"], report["out_of_budget"]) == (1, {"done": 1}, False)
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.DONE and game.applied == {spawn.idempotency_key: 1}
    assert [p.attempt for p in game_bridge.probes()] == [2]  # asked about first: not applied, so sent
