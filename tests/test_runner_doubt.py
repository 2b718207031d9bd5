"""Steps in doubt (issue 26, item 4): an attempt whose outcome nobody knows is marked on its step's row by
the statement that ends it — the sweep's, a timeout or a lost connection after the first byte left, a proxy's
5xx — while an answer from the game (a 429, a 5xx with a JSON object) and a failure before sending are not."""

import socket

import pytest

from chalicelib.events.model import RunStatus, StepStatus
from chalicelib.events.runner.reclaim import reclaim
from chalicelib.events.store import steps
from tests.support.factory import document, make_run, materialise, specs
from tests.support.game_bridge import Answer
from tests.support.runner_kit import RULES, log_of, make_runner, schedule, step, tick


def _spawn_run(db, clock):
    return schedule(db, clock.now(), document([[step("world.spawn", npc="scarecrow")]]))


def _the_step(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[0]


def _dispatches(db, run_id):
    return [e.detail for e in log_of(db, run_id) if e.kind == "step.dispatch"]


@pytest.mark.parametrize(("answer", "in_doubt"), [
    (Answer(504, "<html>Gateway Timeout</html>"), True),
    (Answer(502, {"message": "bad gateway"}), True),  # a gateway's own status, even with a JSON body
    (Answer(503, "Service Unavailable"), True),  # a 5xx without a JSON object: a proxy answered
    (Answer(500, {"error": "database locked"}), False),  # the game itself answered: it did not act
    (Answer(429, "slow down"), False),
])
def test_a_proxys_5xx_puts_the_step_in_doubt_and_the_games_own_answer_does_not(db, clock, runner, game_bridge,
                                                                                answer, in_doubt):
    game_bridge.script("world.spawn", answer)
    run = _spawn_run(db, clock)
    tick(runner)
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.PENDING and spawn.in_doubt is in_doubt
    (dispatch,) = _dispatches(db, run.id)
    assert dispatch["outcome"] == "retry" and dispatch.get("in_doubt", False) is in_doubt


def test_the_next_attempts_answer_clears_the_mark(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(504, ""), Answer(200))
    run = _spawn_run(db, clock)
    tick(runner)
    assert _the_step(db, run.id).in_doubt
    clock.advance(RULES.retry_seconds)
    tick(runner)
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.DONE and not spawn.in_doubt


def test_a_timeout_after_sending_is_in_doubt(db, clock, game_bridge):
    quick = make_runner(db, clock, game_bridge, timeout=0.2)
    try:
        game_bridge.script("world.spawn", Answer(200, delay=5))
        run = _spawn_run(db, clock)
        tick(quick)
    finally:
        quick.close()
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.PENDING and spawn.in_doubt and spawn.last_error.startswith("timed out")
    assert _dispatches(db, run.id)[0]["in_doubt"] is True


def test_a_connection_refused_before_sending_is_not_in_doubt(db, clock):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()

    class Nowhere:
        url = f"http://127.0.0.1:{port}"

    unreachable = make_runner(db, clock, Nowhere())
    try:
        run = _spawn_run(db, clock)
        tick(unreachable)
    finally:
        unreachable.close()
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.PENDING and spawn.last_error.startswith("connection error")
    assert not spawn.in_doubt and "in_doubt" not in _dispatches(db, run.id)[0]


def test_giving_up_on_a_step_in_doubt_keeps_the_mark(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", *[Answer(504, "")] * RULES.max_attempts)
    run = _spawn_run(db, clock)
    for _ in range(RULES.max_attempts):
        tick(runner)
        clock.advance(RULES.retry_seconds)
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.FAILED and spawn.in_doubt
    failed = [e.detail for e in log_of(db, run.id) if e.kind == "step.status" and e.detail["to"] == "failed"]
    assert failed[0]["in_doubt"] is True


def test_a_lease_the_sweep_takes_back_is_in_doubt(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    (pending,) = materialise(db, run, 1, specs("world.spawn"))
    assert not pending.in_doubt
    assert db.autocommit(lambda tx: steps.claim(tx, pending, clock.now(), RULES.lease_seconds)) is not None
    clock.advance(RULES.lease_seconds + 1)
    db.transaction(lambda tx: reclaim(tx, clock.now(), RULES.max_attempts))
    swept = _the_step(db, run.id)
    assert swept.status is StepStatus.PENDING and swept.in_doubt
    taken_back = [e.detail for e in log_of(db, run.id) if e.kind == "step.status" and e.detail.get("cause") == "lease expired"]
    assert taken_back[0]["in_doubt"] is True
