"""Asking the game before re-sending a step in doubt (GAME_BRIDGE_STATUS=on), against a loopback game that
applies every delivery it receives and never de-duplicates on the key: a duplicate would show as two
applications. The status endpoint's answer decides: applied is done with nothing re-sent, not_applied is
sent once in the same attempt, in_progress waits (still in doubt), anything else is the step's on_doubt."""

import signal
import socket
import threading
import time
from dataclasses import replace
from datetime import UTC

import pytest

from chalicelib import outbound
from chalicelib.db import DatabaseClock
from chalicelib.events.actions.context import ActionContext
from chalicelib.events.actions.outcome import Status, Verdict
from chalicelib.events.actions.perform import Actions
from chalicelib.events.adapters.bridge import BridgeClient, read_status
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.runner import Rules
from chalicelib.events.store import resources, steps
from devtools import demo_bridge
from devtools.kit.game_bridge import SECRET, Answer, ApplyingGame
from tests.support.factory import document, make_run, materialise, run_row, specs
from tests.support.runner_kit import RULES, RecordingChannel, log_of, make_runner, schedule, step, tick, tick_process


def _spawn_run(db, clock, **authored):
    return schedule(db, clock.now(), document([[{**step("world.spawn", npc="scarecrow"), **authored}]]))


def _the_step(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[0]


def _dispatches(db, run_id):
    return [e.detail for e in log_of(db, run_id) if e.kind == "step.dispatch"]


@pytest.mark.realtime  # a tick process, killed
def test_a_worker_killed_after_sending_is_asked_about_and_the_game_applied_it_once(db, game_bridge):
    answered = threading.Event()  # never set: the killed worker never hears its answer
    game = ApplyingGame(game_bridge, hold=answered)
    run = _spawn_run(db, DatabaseClock(db))
    worker = tick_process(game_bridge.url, GAME_BRIDGE_STATUS="on")
    try:
        game_bridge.wait_for(1, timeout=30)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    lapses = _the_step(db, run.id).claim_expires_at
    while DatabaseClock(db).now() <= lapses:
        time.sleep(0.2)
    answered.set()
    second = tick_process(game_bridge.url, GAME_BRIDGE_STATUS="on")
    _, err = second.communicate(timeout=60)
    assert second.returncode == 0, err[-2000:]

    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.DONE and not spawn.in_doubt and spawn.attempts == 2
    assert game.applied == {spawn.idempotency_key: 1}
    assert [r.json["attempt"] for r in game_bridge.received("world.spawn")] == [1]
    (asked,) = game_bridge.probes()
    assert (asked.action_id, asked.key, asked.attempt) == ("world.spawn", spawn.idempotency_key, 2)
    assert asked.signature_valid() and not asked.signature_valid("another secret")
    assert _dispatches(db, run.id)[-1] | {"latency_ms": 0} == {
        "action": "world.spawn", "attempt": 2, "idempotency_key": spawn.idempotency_key, "outcome": "done",
        "http_status": 200, "latency_ms": 0, "error": None, "probe": "applied"}
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_not_applied_is_sent_once_more_in_the_same_attempt(db, clock, game_bridge):
    game = ApplyingGame(game_bridge)
    game_bridge.script("world.spawn", Answer(504, ""))  # a proxy's: the game never saw it
    probing = make_runner(db, clock, game_bridge, asks_status=True)
    try:
        run = _spawn_run(db, clock)
        tick(probing)
        assert _the_step(db, run.id).in_doubt
        clock.advance(RULES.retry_seconds)
        tick(probing)
    finally:
        probing.close()
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.DONE and game.applied == {spawn.idempotency_key: 1}
    assert [r.json["attempt"] for r in game_bridge.received("world.spawn")] == [1, 2]
    assert [p.attempt for p in game_bridge.probes()] == [2]
    assert [(d["attempt"], d["outcome"], d.get("probe")) for d in _dispatches(db, run.id)] == [
        (1, "retry", None), (2, "done", "not_applied")]


def test_in_progress_waits_and_a_late_first_delivery_leaves_nothing_to_resend(db, clock, game_bridge):
    applying = threading.Event()
    game = ApplyingGame(game_bridge, slow=applying)
    quick = make_runner(db, clock, game_bridge, timeout=0.3, asks_status=True)
    try:
        run = _spawn_run(db, clock)
        tick(quick)  # the delivery arrives and is being applied; the answer does not come in time
        assert _the_step(db, run.id).in_doubt
        clock.advance(RULES.retry_seconds)
        tick(quick)  # asked: in progress
        waiting = _the_step(db, run.id)
        assert waiting.status is StepStatus.PENDING and waiting.in_doubt and waiting.attempts == 2
        applying.set()  # the late first delivery lands
        deadline = time.monotonic() + 10
        while not game.applied and time.monotonic() < deadline:
            time.sleep(0.02)
        clock.advance(RULES.retry_seconds)
        tick(quick)  # asked: applied
    finally:
        applying.set()
        quick.close()
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.DONE and game.applied == {spawn.idempotency_key: 1}
    assert [r.json["attempt"] for r in game_bridge.received("world.spawn")] == [1]  # the re-send: 0 applications
    assert [p.attempt for p in game_bridge.probes()] == [2, 3]
    assert [(d["attempt"], d["outcome"], d.get("probe")) for d in _dispatches(db, run.id)] == [
        (1, "retry", None), (2, "retry", "in_progress"), (3, "done", "applied")]


def _asked_about_after_a_504(db, clock, game_bridge, status: dict):
    """A spawn whose first answer is a gateway's 504 (in doubt), asked about on its retry: the status endpoint
    answers `status`. The run."""
    game_bridge.script("world.spawn", Answer(504, ""))
    game_bridge.status(lambda asked: Answer(200, status))
    probing = make_runner(db, clock, game_bridge, asks_status=True)
    try:
        run = _spawn_run(db, clock)
        tick(probing)
        clock.advance(RULES.retry_seconds)
        tick(probing)
    finally:
        probing.close()
    return run


def test_applied_records_the_resources_its_answer_lists(db, clock, game_bridge):
    made = [{"kind": "npc", "id": "scarecrow-7", "revert": {"action": "world.undo"}}]
    run = _asked_about_after_a_504(db, clock, game_bridge, {"status": "applied", "resources": made})
    assert _the_step(db, run.id).status is StepStatus.DONE
    ledger = db.autocommit(lambda tx: resources.page_for_run(tx, run.id, None, 10))[0]
    assert [(r.kind, r.resource_id) for r in ledger] == [("npc", "scarecrow-7")]
    assert len(game_bridge.received("world.spawn")) == 1


def test_applied_with_a_refusal_as_its_answer_is_refused_not_done(db, clock, game_bridge):
    """The game declined the step (its answer, a refusal, was recorded under the key) and that answer was lost:
    asked about, the game says the key is applied with its refusal, and the step is refused with the game's
    reason, as the lost answer would have made it, never done."""
    run = _asked_about_after_a_504(db, clock, game_bridge, {"status": "applied", "outcome": "refused",
                                                           "reason": "the square is full"})
    spawn = _the_step(db, run.id)
    assert (spawn.status, spawn.last_error) == (StepStatus.REFUSED, "refused: the square is full")
    assert len(game_bridge.received("world.spawn")) == 1


def test_a_status_endpoint_that_does_not_answer_leaves_it_to_on_doubt(db, clock, game_bridge):
    game_bridge.script("world.spawn", Answer(504, ""), Answer(504, ""))  # no status responder: a 404
    probing = make_runner(db, clock, game_bridge, asks_status=True)
    try:
        resent = _spawn_run(db, clock)
        parked = _spawn_run(db, clock, on_doubt="park")
        tick(probing)
        clock.advance(RULES.retry_seconds)
        tick(probing)
    finally:
        probing.close()
    assert _the_step(db, resent.id).status is StepStatus.DONE  # resend: sent again
    assert _the_step(db, parked.id).parked_in_doubt  # park: waits for a decision
    probes = {d.get("probe") for run in (resent, parked) for d in _dispatches(db, run.id)[1:]}
    assert probes == {"unknown: HTTP 404: no such"}  # with the game's own reason
    assert len(game_bridge.received("world.spawn")) == 3


def test_a_step_in_doubt_asked_about_first_counts_two_outbound_deadlines(db, clock, game_bridge):
    client = BridgeClient(game_bridge.url, SECRET, timeout=4.0, asks_status=True)
    actions = Actions(bridge=client, cue_channel=RecordingChannel("cue"), announce_channel=RecordingChannel("announce"))
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    spawn, announce = materialise(db, run, 1, specs("world.spawn", "core.announce"))
    assert actions.dispatch_seconds(spawn) == 4.0
    assert actions.dispatch_seconds(replace(spawn, in_doubt=True)) == 8.0  # the status GET, then the delivery
    assert actions.dispatch_seconds(replace(announce, in_doubt=True)) == 4.0  # a core action is never asked about


def test_the_demo_bridge_of_make_dev_answers_status_and_keeps_the_attempt_fence(db, clock):
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()
    # the kit checks the timestamp window against its clock: the test's clock, as the engine signs with it
    server = demo_bridge.listen_demo_bridge(url, SECRET, demo_bridge.DemoScript("calm"),
                                            clock=lambda: clock.now().replace(tzinfo=UTC).timestamp())
    assert server is not None
    try:
        run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
        delivered, fenced = materialise(db, run, 1, specs("world.spawn", "world.spawn"))
        client = BridgeClient(url, SECRET, timeout=5.0, asks_status=True)
        at = lambda s, attempt: ActionContext.of(s, attempt, clock.now())  # noqa: E731 — a context per attempt
        assert client.dispatch(at(delivered, 1)).verdict is Verdict.DONE
        assert client.probe(at(delivered, 2)).status is Status.APPLIED
        assert client.probe(at(fenced, 2)).status is Status.NOT_APPLIED
        late = client.dispatch(at(fenced, 1))  # behind the fence: a status was answered for attempt 2
        assert (late.verdict, late.http_status) == (Verdict.REFUSED, 409)
        assert client.dispatch(at(fenced, 2)).verdict is Verdict.DONE
        forged = BridgeClient(url, "another secret", timeout=5.0, asks_status=True).probe(at(fenced, 3))
        assert (forged.status, forged.http_status) == (Status.UNKNOWN, 401)
    finally:
        server.shutdown()
        server.server_close()


def test_a_step_in_doubt_is_not_claimed_unless_both_its_calls_end_before_its_lease(db, clock, game_bridge):
    game_bridge.script("world.spawn", Answer(504, ""))
    ApplyingGame(game_bridge)
    short = Rules(lease_seconds=6, max_attempts=3, retry_seconds=30)  # one 4 s deadline fits a 6 s lease; two do not
    run = _spawn_run(db, clock)
    probing = make_runner(db, clock, game_bridge, rules=short, timeout=4.0, asks_status=True)
    try:
        assert tick(probing).dispatched == 1  # the 504: in doubt
        clock.advance(short.retry_seconds)
        assert tick(probing).dispatched == 0
    finally:
        probing.close()
    assert _the_step(db, run.id).status is StepStatus.PENDING and game_bridge.probes() == []
    trusting = make_runner(db, clock, game_bridge, rules=short, timeout=4.0)
    try:
        assert tick(trusting).dispatched == 1  # not asked about: one deadline, sent
    finally:
        trusting.close()


@pytest.mark.parametrize(("status", "body", "read"), [
    (200, b'{"status": "applied", "resources": []}', Status.APPLIED),
    (200, b'{"status": "not_applied"}', Status.NOT_APPLIED),
    (200, b'{"status": "in_progress"}', Status.IN_PROGRESS),
    (500, b'{"status": "applied"}', Status.UNKNOWN),  # only a 200 is an answer
    (404, b'{"reason": "no such key"}', Status.UNKNOWN),
    (200, b'{"status": "maybe"}', Status.UNKNOWN),
    (200, b"applied", Status.UNKNOWN),
])
def test_only_a_200_naming_a_known_status_is_an_answer(status, body, read):
    assert read_status(outbound.Answer(status, body, truncated=False)).status is read
