"""Crash recovery with a real process killed mid-dispatch, and a zombie dispatcher fenced out."""

import signal
import threading
from datetime import timedelta

import pytest

from chalicelib.db import DatabaseClock
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import Health, StepSpec
from chalicelib.events.runner import Rules
from chalicelib.events.store import runs, steps
from devtools.kit.clock import ManualClock
from devtools.kit.game_bridge import Answer
from tests.support.factory import document, run_row
from tests.support.runner_kit import LEASE, log_of, make_runner, run_story, schedule, step, tick, tick_process

SPAWN = document([[step("world.spawn", npc="scarecrow"), step("world.reward")]])


def _crash_mid_dispatch(db, game_bridge):
    """A run due now (database time) whose first dispatch is in flight when its tick process is SIGKILLed."""
    db_now = DatabaseClock(db).now()
    run = schedule(db, db_now, SPAWN)
    game_bridge.script("world.spawn", Answer(200, gate=threading.Event()))  # never answered
    process = tick_process(game_bridge.url)
    try:
        game_bridge.wait_for(1, timeout=30)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    assert process.returncode == -signal.SIGKILL
    spawn = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]
    assert spawn.status is StepStatus.RUNNING and spawn.attempts == 1 and spawn.claim_expires_at is not None
    return run, spawn, db_now


@pytest.mark.realtime  # a tick process, killed
def test_a_tick_killed_mid_dispatch_is_re_dispatched_with_the_same_key_and_the_next_attempt(db, game_bridge):
    run, spawn, _ = _crash_mid_dispatch(db, game_bridge)
    later = ManualClock(spawn.claim_expires_at - timedelta(seconds=1))  # the lease the dead process took
    runner = make_runner(db, later, game_bridge, rules=Rules(lease_seconds=LEASE, max_attempts=3, retry_seconds=30))
    try:
        assert tick(runner).dispatched == 0  # the dead process's leases still stand
        later.set(spawn.claim_expires_at + timedelta(seconds=1))
        report = tick(runner)
    finally:
        runner.close()
    assert report.requeued == 1
    first, second = game_bridge.received("world.spawn")
    assert (first.json["attempt"], second.json["attempt"]) == (1, 2)
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"] == spawn.idempotency_key
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    requeued = [e.detail for e in log_of(db, run.id) if e.kind == "step.status" and e.detail["to"] == "pending"]
    assert requeued == [{"action": "world.spawn", "from": "running", "to": "pending", "cause": "lease expired", "attempts": 1,
                         "in_doubt": True}]


@pytest.mark.realtime  # a tick process, killed
def test_a_step_killed_at_the_attempt_ceiling_fails_and_its_on_failure_applies(db, game_bridge):
    run, spawn, _ = _crash_mid_dispatch(db, game_bridge)
    later = ManualClock(spawn.claim_expires_at + timedelta(seconds=1))
    runner = make_runner(db, later, game_bridge, rules=Rules(lease_seconds=LEASE, max_attempts=1, retry_seconds=30))
    try:
        report = tick(runner)
    finally:
        runner.close()
    assert (report.gave_up, report.requeued, report.dispatched) == (1, 0, 0)
    failed = db.autocommit(lambda tx: steps.get(tx, spawn.id))
    assert failed.status is StepStatus.FAILED and failed.attempts == 1 and failed.last_error == steps.GAVE_UP
    paused = run_row(db, run.id)
    assert paused.status is RunStatus.PAUSED and paused.health is Health.DEGRADED and steps.GAVE_UP in paused.last_error
    assert run_story(db, run.id)[-1] == ("running", "paused")
    assert len(game_bridge.received()) == 1


def test_a_zombie_dispatcher_cannot_overwrite_the_result_of_the_tick_that_took_over(db, clock, game_bridge):
    start = clock.now()
    run = schedule(db, start, document([[step("world.spawn")]]))
    zombie_answer = threading.Event()
    game_bridge.script("world.spawn", Answer(400, "too late", gate=zombie_answer), Answer(200))
    zombie = make_runner(db, ManualClock(start), game_bridge)
    reports = []
    zombie_tick = threading.Thread(target=lambda: reports.append(tick(zombie)))
    zombie_tick.start()
    game_bridge.wait_for(1)  # the zombie's dispatch is in flight; its leases run out

    clock.set(start + timedelta(seconds=121))
    successor = make_runner(db, clock, game_bridge)
    try:
        assert tick(successor).requeued == 1
        assert run_row(db, run.id).status is RunStatus.COMPLETED
        zombie_answer.set()
        zombie_tick.join(timeout=30)
    finally:
        zombie.close()
        successor.close()

    spawn = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]
    assert spawn.status is StepStatus.DONE and spawn.attempts == 2 and spawn.last_error is None
    final = run_row(db, run.id)
    assert final.status is RunStatus.COMPLETED and final.health is Health.OK
    dispatches = [e.detail for e in log_of(db, run.id) if e.kind == "step.dispatch"]
    assert [(d["attempt"], d["outcome"], d.get("fenced_out", False)) for d in dispatches] == [
        (2, "done", False), (1, "failed", True)  # the zombie's answer is recorded, and changed nothing
    ]
    assert [e.detail["to"] for e in log_of(db, run.id) if e.kind == "step.status"] == ["pending", "done"]
    assert reports[0].dispatched == 1


@pytest.mark.parametrize("write", ["finish", "park", "reschedule"])
def test_every_write_of_a_superseded_claim_matches_no_row(db, clock, write):
    run = schedule(db, clock.now(), document([[step("world.spawn")]]))
    db.transaction(lambda tx: runs.transition(tx, run.id, [RunStatus.SCHEDULED], RunStatus.RUNNING, clock.now(), current_phase=1))
    (spawn,) = db.transaction(lambda tx: steps.materialise_phase(tx, run.id, 1, [StepSpec("world.spawn")]))
    old = db.autocommit(lambda tx: steps.claim(tx, spawn, clock.now(), 1))
    clock.advance(2)
    db.transaction(lambda tx: steps.reclaim_stale(tx, clock.now(), 3))
    current = db.autocommit(lambda tx: steps.claim(tx, steps.get(tx, spawn.id), clock.now(), 60))
    fenced = {
        "finish": lambda tx: steps.finish(tx, old, StepStatus.FAILED, clock.now(), "zombie"),
        "park": lambda tx: steps.park(tx, old, "zombie"),
        "reschedule": lambda tx: steps.reschedule(tx, old, clock.now(), "zombie"),
    }[write]
    assert db.transaction(fenced) is False
    after = db.autocommit(lambda tx: steps.get(tx, spawn.id))
    assert (after.status, after.attempts, after.claimed_by, after.last_error) == (StepStatus.RUNNING, 2, current.token, None)
