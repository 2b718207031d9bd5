"""Dispatch to the game bridge: the documented body, a valid signature, one key on every attempt, SPEC §6 classes."""

import json
import re

from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import Health
from chalicelib.events.store import steps
from devtools.kit.game_bridge import Answer
from tests.support.factory import document, run_row
from tests.support.runner_kit import RULES, log_of, make_runner, run_story, schedule, step, tick


def _spawn_run(db, clock, **on_failure):
    return schedule(db, clock.now(), document([[step("world.spawn", npc="scarecrow", **on_failure)]]))


def _the_step(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[0]


def _retry_until_settled(runner, clock, ticks):
    for _ in range(ticks):
        tick(runner)
        clock.advance(RULES.retry_seconds)


def test_the_bridge_gets_the_documented_body_signed_with_the_same_key_on_every_attempt(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(503), Answer(503), Answer(200))
    run = _spawn_run(db, clock)
    _retry_until_settled(runner, clock, 3)

    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.DONE and spawn.attempts == 3
    requests = game_bridge.received("world.spawn")
    assert [r.json["attempt"] for r in requests] == [1, 2, 3]
    for request in requests:
        assert request.signature_valid()
        assert request.headers["idempotency-key"] == spawn.idempotency_key
        assert request.json == {
            "run_id": run.id, "step_id": spawn.id, "phase": 1, "action": "world.spawn", "version": 1,
            "params": {"npc": "scarecrow"}, "idempotency_key": spawn.idempotency_key, "attempt": request.json["attempt"],
        }
        assert request.headers["content-type"] == "application/json"
    assert re.fullmatch(r"[0-9a-f]{40}", spawn.idempotency_key)  # one key for every attempt: the step's own
    assert not requests[0].signature_valid("another secret")

    dispatches = [e.detail for e in log_of(db, run.id) if e.kind == "step.dispatch"]
    assert [(d["attempt"], d["outcome"], d["http_status"]) for d in dispatches] == [(1, "retry", 503), (2, "retry", 503), (3, "done", 200)]
    assert all(d["idempotency_key"] == spawn.idempotency_key and d["latency_ms"] >= 0 for d in dispatches)
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_a_retry_waits_the_flat_backoff(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(503))
    run = _spawn_run(db, clock)
    tick(runner)
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.PENDING and spawn.attempts == 1 and spawn.last_error == "HTTP 503"
    assert (spawn.due_at - clock.now()).total_seconds() == RULES.retry_seconds
    clock.advance(RULES.retry_seconds - 1)
    assert tick(runner).dispatched == 0


def test_always_503_fails_at_the_ceiling_then_pauses_the_run(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", *[Answer(503)] * 5)
    run = _spawn_run(db, clock)
    _retry_until_settled(runner, clock, 5)

    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.FAILED and spawn.attempts == RULES.max_attempts
    assert spawn.last_error == "gave up after 3 attempts: HTTP 503"
    assert len(game_bridge.received()) == RULES.max_attempts
    paused = run_row(db, run.id)
    assert paused.status is RunStatus.PAUSED and paused.health is Health.DEGRADED
    assert "gave up after 3 attempts" in paused.last_error
    assert run_story(db, run.id)[-1] == ("running", "paused")


def test_422_is_refused(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(422, {"reason": "the scarecrow is already out"}))
    run = _spawn_run(db, clock, on_failure="skip")
    tick(runner)
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.REFUSED and spawn.last_error == "HTTP 422: the scarecrow is already out"


def test_an_explicit_refusal_in_a_200_is_refused(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(200, {"outcome": "refused", "reason": "event area closed"}))
    run = _spawn_run(db, clock)
    tick(runner)
    assert _the_step(db, run.id).status is StepStatus.REFUSED
    assert run_row(db, run.id).status is RunStatus.PAUSED


def test_400_is_failed_at_once(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(400, "bad npc"))
    run = _spawn_run(db, clock)
    tick(runner)
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.FAILED and spawn.attempts == 1 and spawn.last_error == "HTTP 400: bad npc"


def test_a_malformed_answer_is_failed(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(200, "<html>ok</html>"))
    run = _spawn_run(db, clock)
    tick(runner)
    assert _the_step(db, run.id).last_error == "malformed answer: not a JSON object"


def test_a_timeout_is_a_retry_with_the_same_key(db, clock, game_bridge):
    quick = make_runner(db, clock, game_bridge, timeout=0.2)
    try:
        game_bridge.script("world.spawn", Answer(200, delay=5))
        run = _spawn_run(db, clock)
        tick(quick)
        spawn = _the_step(db, run.id)
        assert spawn.status is StepStatus.PENDING and spawn.last_error.startswith("timed out")
        clock.advance(RULES.retry_seconds)
        tick(quick)
    finally:
        quick.close()
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.DONE and spawn.attempts == 2
    keys = {r.headers["idempotency-key"] for r in game_bridge.received()}
    assert keys == {spawn.idempotency_key}


def test_a_bridge_that_is_not_listening_is_a_retry(db, clock, game_bridge):
    game_bridge.stop()
    gone = make_runner(db, clock, game_bridge)
    try:
        run = _spawn_run(db, clock)
        tick(gone)
    finally:
        gone.close()
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.PENDING and spawn.last_error.startswith("connection error")


def test_module_actions_without_a_bridge_fail_visibly(db, clock):
    no_bridge = make_runner(db, clock, None)
    try:
        run = _spawn_run(db, clock)
        tick(no_bridge)
    finally:
        no_bridge.close()
    assert "GAME_BRIDGE_URL is not set" in _the_step(db, run.id).last_error
    assert run_row(db, run.id).status is RunStatus.PAUSED


def test_the_log_row_of_a_dispatch_is_json_with_the_answer_class(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(409, {"reason": "duplicate"}))
    run = _spawn_run(db, clock, on_failure="skip")
    tick(runner)
    raw = db.autocommit(lambda tx: tx.one("SELECT detail FROM event_run_log WHERE kind = 'step.dispatch' AND run_id = %s", (run.id,)))
    assert json.loads(raw["detail"])["outcome"] == "refused"
