"""The ways a tick is started: the scheduled Lambda, `tick --once`, and the `tick` loop's clean Ctrl-C."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from chalice.test import Client

from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.db import DatabaseClock
from chalicelib.events.model import RunStatus
from chalicelib.events.runner.schedule import run_invocation
from tests.support.factory import document, run_row
from tests.support.runner_kit import make_runner, schedule, step, tick_process

ROOT = Path(__file__).resolve().parents[1]
WAIT_THEN_ANNOUNCE = document([[step("core.wait", seconds=20), step("core.announce", message="go")]])


class FakeTime:
    """Monotonic time that only sleeping moves; the test's ManualClock moves with it."""

    def __init__(self, clock):
        self.now, self.clock, self.sleeps = 0.0, clock, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        self.clock.advance(seconds)


def test_one_invocation_ticks_every_interval_for_the_minute(db, clock, game_bridge):
    run = schedule(db, clock.now(), WAIT_THEN_ANNOUNCE)
    fake = FakeTime(clock)
    runner = make_runner(db, clock, game_bridge)
    try:
        reports = run_invocation(runner, remaining_seconds=lambda: 69.0, tick_seconds=15, monotonic=fake.monotonic, sleep=fake.sleep)
    finally:
        runner.close()
    assert len(reports) == 4 and fake.sleeps == [15, 15, 15]  # at 0, 15, 30, 45: the next invocation comes at 60
    assert [r.dispatched for r in reports] == [1, 0, 1, 0]  # the wait at 0, the announce once due at 30
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_an_invocation_with_little_time_left_ticks_only_what_fits(db, clock, game_bridge):
    fake = FakeTime(clock)
    runner = make_runner(db, clock, game_bridge, timeout=5)
    try:
        enough_for_one = run_invocation(runner, remaining_seconds=lambda: 20.0, tick_seconds=15, monotonic=fake.monotonic, sleep=fake.sleep)
        none = run_invocation(runner, remaining_seconds=lambda: 5.0, tick_seconds=15, monotonic=fake.monotonic, sleep=fake.sleep)
    finally:
        runner.close()
    assert len(enough_for_one) == 1 and none == []


def test_the_scheduled_lambda_runs_through_app_py_with_the_runtime_it_is_given(db, clock, game_bridge):
    from app import app

    run = schedule(db, clock.now(), document([[step("core.announce", message="hi")]]))
    settings = Settings(game_bridge_url=game_bridge.url, game_bridge_secret="s")
    with runtime.override(settings=settings, database=db, clock=clock), Client(app) as client:
        event = client.events.generate_cw_event(source="aws.events", detail_type="Scheduled Event", detail={}, resources=[])
        # chalice's test context claims 3 s remaining: too little for a tick, so none starts.
        response = client.lambda_.invoke("tick", event)
    assert response.payload == {"ticks": []}
    assert run_row(db, run.id).status is RunStatus.SCHEDULED


def test_tick_once_advances_due_runs_and_prints_its_report(db, game_bridge):
    run = schedule(db, DatabaseClock(db).now(), document([[step("core.announce", message="hi"), step("world.spawn")]]))
    process = tick_process(game_bridge.url)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert (report["runs_advanced"], report["dispatched"], report["outcomes"]) == (1, 2, {"done": 2})
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_the_tick_loop_stops_cleanly_on_ctrl_c(db, game_bridge):
    run = schedule(db, DatabaseClock(db).now(), document([[step("core.announce", message="hi")]]))
    env = {**os.environ, "GAME_BRIDGE_URL": game_bridge.url, "GAME_BRIDGE_SECRET": "s", "EVENT_TICK_SECONDS": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "chalicelib", "tick"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        first = json.loads(process.stdout.readline())  # the first tick has run
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert err.strip().endswith("stopped") and "Traceback" not in err
    assert first["dispatched"] == 1 and run_row(db, run.id).status is RunStatus.COMPLETED
