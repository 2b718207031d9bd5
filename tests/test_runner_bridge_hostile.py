"""A hostile game side: answers that drip, never end, come after interim 1xx answers, or nest without end.

Each dispatch has one overall deadline (the bridge timeout) and reads at most
the answer cap, so none of these can hold a tick, a lease or the memory of the
process; each ends in the outcome its answer deserves.
"""

import time
import tracemalloc

import pytest

from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.runner import Rules
from chalicelib.events.store import steps
from chalicelib.outbound import MAX_ANSWER_BYTES
from devtools.kit.game_bridge import Answer, deep, dripping, huge
from tests.support.factory import document, run_row
from tests.support.runner_kit import RULES, make_runner, schedule, step, tick

TIMEOUT = 1.0
SLACK = 4.0  # the tick's own database work and a loaded machine's scheduling: still far under the ~25 s a drip lasts


def _spawn(db, clock, **on_failure):
    run = schedule(db, clock.now(), document([[step("world.spawn", npc="scarecrow", **on_failure)]]))
    return run.id


def _the_step(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[0]


def _runner(db, clock, game_bridge):
    return make_runner(db, clock, game_bridge, timeout=TIMEOUT)


def test_an_answer_dripping_a_byte_at_a_time_is_cut_at_the_deadline_and_retried_with_the_same_key(db, clock, game_bridge):
    game_bridge.script("world.spawn", dripping(every=0.3))  # ~25 s of body if read to the end
    runner = _runner(db, clock, game_bridge)
    try:
        run_id = _spawn(db, clock)
        started = time.monotonic()
        tick(runner)
        took = time.monotonic() - started
        spawn = _the_step(db, run_id)
        assert spawn.status is StepStatus.PENDING and spawn.attempts == 1
        assert spawn.last_error == f"timed out: no complete answer within {TIMEOUT:g}s"
        assert took < TIMEOUT + SLACK
        first = game_bridge.received()[0]
        assert first.closed_at is not None and first.closed_at - first.at < TIMEOUT + SLACK  # the socket was closed
        clock.advance(RULES.retry_seconds)
        tick(runner)
    finally:
        runner.close()
    spawn = _the_step(db, run_id)
    assert spawn.status is StepStatus.DONE and spawn.attempts == 2
    assert {r.headers["idempotency-key"] for r in game_bridge.received()} == {spawn.idempotency_key}
    assert game_bridge.overlapping_attempts() == []


def test_a_huge_answer_without_a_length_is_failed_at_the_cap_and_memory_stays_bounded(db, clock, game_bridge):
    game_bridge.script("world.spawn", huge(200))
    runner = _runner(db, clock, game_bridge)
    run_id = _spawn(db, clock, on_failure="skip")
    tracemalloc.start()
    try:
        tick(runner)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        runner.close()
    spawn = _the_step(db, run_id)
    assert spawn.status is StepStatus.FAILED and spawn.attempts == 1
    assert spawn.last_error == f"malformed answer: larger than the {MAX_ANSWER_BYTES:,}-byte answer cap"
    assert peak < 4 * MAX_ANSWER_BYTES
    assert len(game_bridge.received()) == 1 and game_bridge.received()[0].closed_at is not None


def test_a_declared_huge_answer_is_failed_without_reading_it(db, clock, game_bridge):
    game_bridge.script("world.spawn", huge(600, declared=True))
    runner = _runner(db, clock, game_bridge)
    try:
        run_id = _spawn(db, clock, on_failure="skip")
        started = time.monotonic()
        tick(runner)
        took = time.monotonic() - started
    finally:
        runner.close()
    spawn = _the_step(db, run_id)
    assert spawn.status is StepStatus.FAILED and "answer cap" in spawn.last_error
    assert took < TIMEOUT


def test_interim_answers_are_skipped_and_the_final_answer_classified(db, clock, game_bridge):
    game_bridge.script("world.spawn", Answer(200, {"outcome": "done"}, interim=(103,)))
    game_bridge.script("world.reward", Answer(503, interim=(100, 103)), Answer(200, interim=(103, 103)))
    runner = _runner(db, clock, game_bridge)
    try:
        run = schedule(db, clock.now(), document([[step("world.spawn"), step("world.reward")]]))
        tick(runner)
        spawn, reward = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))
        assert spawn.status is StepStatus.DONE and spawn.attempts == 1
        assert reward.status is StepStatus.PENDING and reward.last_error == "HTTP 503"
        clock.advance(RULES.retry_seconds)
        tick(runner)
    finally:
        runner.close()
    assert _the_step(db, run.id).status is StepStatus.DONE
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_a_deeply_nested_answer_is_failed_and_never_sent_again(db, clock, game_bridge):
    game_bridge.script("world.spawn", deep())
    runner = _runner(db, clock, game_bridge)
    try:
        run_id = _spawn(db, clock)
        for _ in range(RULES.max_attempts):
            tick(runner)
            clock.advance(RULES.retry_seconds)
    finally:
        runner.close()
    spawn = _the_step(db, run_id)
    assert spawn.status is StepStatus.FAILED and spawn.attempts == 1
    assert spawn.last_error == "malformed answer: JSON nested too deeply"
    assert len(game_bridge.received()) == 1
    assert run_row(db, run_id).status is RunStatus.PAUSED


@pytest.mark.realtime
def test_no_step_starts_so_late_in_a_tick_that_its_lease_would_lapse_while_it_is_open(db, clock, game_bridge):
    """A claim's lease counts from the tick's one clock read: a step claimed late in a long tick has less of it."""
    lease = 4
    slow = [step(f"world.step{i}") for i in range(6)]
    for i in range(6):
        game_bridge.script(f"world.step{i}", Answer(200, delay=0.9))  # six answers: 5.4 s in one tick
    runner = make_runner(db, clock, game_bridge, rules=Rules(lease_seconds=lease, max_attempts=3, retry_seconds=30),
                         timeout=TIMEOUT)
    try:
        run = schedule(db, clock.now(), document([slow]))
        started = time.monotonic()
        first = tick(runner, seconds=30)
        assert all(r.closed_at - started < lease for r in game_bridge.received())
        assert first.out_of_budget and 0 < first.dispatched < 6
        tick(runner, seconds=30)  # the next tick, with leases of its own, goes on
    finally:
        runner.close()
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert len(game_bridge.received()) == 6
