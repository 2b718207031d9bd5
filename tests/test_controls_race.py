"""Controls pressed while real `tick --once` processes work the same runs (real database, real bridge).

A control either takes (200) or loses (409 naming the status); it is never
overwritten by the tick afterwards, and a pause pressed mid-dispatch stops the
next dispatch.
"""

import random
import threading
import time

import pytest

from chalicelib.db import DatabaseClock
from chalicelib.events import commands
from chalicelib.events.errors import Conflict
from chalicelib.events.lifecycle import RunStatus, StepStatus
from devtools.kit.game_bridge import Answer
from tests.support.factory import document, run_row
from tests.support.runner_kit import log_of, schedule, step, tick_process

pytestmark = pytest.mark.realtime  # real tick processes

THREE_STEPS = document([[step("world.spawn"), step("world.reward"), step("world.fireworks")]])


def _steps_of(db, run_id):
    return db.autocommit(lambda tx: tx.all("SELECT id, status FROM event_run_steps WHERE run_id = %s ORDER BY seq", (run_id,)))


def test_a_pause_pressed_mid_dispatch_stops_the_next_dispatch(db, game_bridge):
    clock = DatabaseClock(db)
    run = schedule(db, clock.now(), THREE_STEPS)
    gate = threading.Event()
    game_bridge.script("world.spawn", Answer(200, gate=gate))
    process = tick_process(game_bridge.url)
    try:
        game_bridge.wait_for(1, timeout=30)  # the tick is inside its first dispatch
        paused = commands.pause(db, run.id, actor="mod-mia", now=clock.now(), reason="mid-tick")
    finally:
        gate.set()
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err[-2000:]

    assert paused.status is RunStatus.PAUSED
    assert [r.action_id for r in game_bridge.received()] == ["world.spawn"]
    final = run_row(db, run.id)
    assert final.status is RunStatus.PAUSED and final.claimed_by is None
    # The step in hand finishes (nothing recalls a sent command); nothing after it was claimed.
    assert [s["status"] for s in _steps_of(db, run.id)] == ["done", "pending", "pending"]
    statuses = [(e.detail.get("control"), e.actor, e.detail["to"]) for e in log_of(db, run.id) if e.kind == "run.status"]
    assert statuses[-1] == ("pause", "mod-mia", "paused")


def test_controls_racing_two_tick_processes_either_take_or_lose_and_are_never_undone(db, game_bridge):
    clock = DatabaseClock(db)
    game_bridge.default = Answer(200, delay=0.02)
    runs = [schedule(db, clock.now(), THREE_STEPS) for _ in range(24)]
    processes = [tick_process(game_bridge.url) for _ in range(2)]
    outcomes: dict[int, tuple[str, str]] = {}
    order = random.Random(7).sample(runs, len(runs))
    for i, run in enumerate(order):
        control = commands.pause if i % 2 else commands.cancel
        try:
            control(db, run.id, actor="mod-mia", now=clock.now())
            outcomes[run.id] = (control.__name__, "took")
        except Conflict as lost:
            outcomes[run.id] = (control.__name__, str(lost))
        time.sleep(0.03)
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err[-2000:]

    attempts = [(r.json["step_id"], r.json["attempt"]) for r in game_bridge.received()]
    assert len(attempts) == len(set(attempts)), "a step attempt was dispatched twice"
    for run in runs:
        control, result = outcomes[run.id]
        final = run_row(db, run.id)
        changes = [e for e in log_of(db, run.id) if e.kind == "run.status"]
        pressed = [e for e in changes if e.detail.get("control") == control]
        if result == "took":
            # The control's change is the last status change: no tick overwrote it.
            assert final.status is (RunStatus.PAUSED if control == "pause" else RunStatus.CANCELLED)
            assert changes[-1] is pressed[0] and pressed[0].actor == "mod-mia"
            if control == "cancel":
                assert all(StepStatus(s["status"]).terminal for s in _steps_of(db, run.id))
        else:
            # Lost: it names a status the control may not act from, and wrote nothing.
            [named] = [st for st in RunStatus if f"is {st.value}" in result or f"already {st.value}" in result]
            assert named not in (commands.PAUSABLE if control == "pause" else commands.CANCELLABLE), result
            assert pressed == []
            if named.terminal:
                assert final.status is named
