"""The ways a tick is started: the scheduled Lambda, `tick --once`, and the `tick` loop's clean Ctrl-C."""

import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from chalice.test import Client

from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.db import DatabaseClock
from chalicelib.events import commands
from chalicelib.events.lifecycle import RunStatus, WaitingFor
from chalicelib.events.runner.lambda_handler import run_invocation
from chalicelib.events.runner.loop import PEOPLE_POLL_SECONDS, POLL_SECONDS
from chalicelib.events.store import runs, steps
from tests.support.factory import document, run_row
from tests.support.runner_kit import make_runner, schedule, step, tick_process

ROOT = Path(__file__).resolve().parents[1]
WAIT_THEN_ANNOUNCE = document([[step("core.wait", seconds=20), step("core.announce", message="go")]])


class FakeTime:
    """Monotonic time that only sleeping moves; the test's ManualClock moves with it. `ticked_at`: when each
    tick of an `_invocation` began."""

    def __init__(self, clock):
        self.now, self.clock, self.sleeps, self.ticked_at = 0.0, clock, [], []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        self.clock.advance(seconds)


CUE_THEN_ANNOUNCE = document([[step("core.cue", instruction="go"), step("core.announce", message="on")]])


def _invocation(db, clock, game_bridge, fake, *, sleep=None, tick=None):
    """One invocation of 20 s on `fake` time, each tick's start kept in `fake.ticked_at`: `sleep` the loop's sleep
    (default: fake's), `tick(runner_tick, budget, **kw)` in place of the runner's tick; the loop, run."""
    runner = make_runner(db, clock, game_bridge)
    runner_tick = runner.tick

    def recorded(budget, **kw):
        fake.ticked_at.append(fake.now)
        return tick(runner_tick, budget, **kw) if tick else runner_tick(budget, **kw)

    runner.tick = recorded
    try:
        return run_invocation(runner, remaining_seconds=lambda: 20.0, tick_seconds=15, monotonic=fake.monotonic,
                              sleep=sleep or fake.sleep)
    finally:
        runner.close()


def _confirm(db, run_id, now):
    cue = db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[0]
    commands.confirm(db, run_id, cue.id, actor="gm", now=now)


def test_one_invocation_ticks_when_a_wait_ends_and_looks_once_a_second_in_between(db, clock, game_bridge):
    run = schedule(db, clock.now(), WAIT_THEN_ANNOUNCE)
    later = schedule(db, clock.now(), WAIT_THEN_ANNOUNCE, scheduled_for=clock.now() + timedelta(seconds=30.25))
    fake = FakeTime(clock)
    runner = make_runner(db, clock, game_bridge)
    ticked_at = []
    runner_tick = runner.tick
    runner.tick = lambda budget, **kw: (ticked_at.append(fake.now), runner_tick(budget, **kw))[1]
    try:
        reports = run_invocation(
            runner, remaining_seconds=lambda: 69.0, tick_seconds=15, monotonic=fake.monotonic, sleep=fake.sleep).reports
    finally:
        runner.close()
    # Ticks exactly when something is due: the first wait at 0, its announce at 20, the later run at 30.25
    # and its announce at 50.25; in between the loop sleeps at most a second at a time.
    assert ticked_at == [0, 20, 30.25, 50.25]
    assert [r.dispatched for r in reports] == [1, 1, 1, 1]
    # a wake read every 0.9 s until 60 s less the worst case
    assert max(fake.sleeps) == pytest.approx(POLL_SECONDS) and len(fake.sleeps) >= 50
    assert run_row(db, run.id).status is RunStatus.COMPLETED is run_row(db, later.id).status


def test_a_confirm_is_seen_within_a_second_and_a_wake_already_tried_waits_a_second(db, clock, game_bridge):
    run = schedule(db, clock.now(), document([[step("core.cue", instruction="go"), step("core.announce", message="on")]]))
    fake = FakeTime(clock)
    runner = make_runner(db, clock, game_bridge)
    ticked_at = []
    runner_tick = runner.tick

    def tick(budget, **kw):
        ticked_at.append(fake.now)
        if fake.now == 0:  # a second process holds another run that is due: the loop must not spin on it
            held = schedule(db, clock.now(), WAIT_THEN_ANNOUNCE)
            db.autocommit(lambda tx: runs.take_lease(tx, held.id, "other", clock.now(), 120))
            db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET wake_at = %s WHERE id = %s", (clock.now(), held.id)))
        return runner_tick(budget, **kw)

    def sleep(seconds):
        fake.sleep(seconds)
        if 5 <= fake.now < 5 + seconds:  # a person confirms the cue at about 5 s
            cue = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]
            commands.confirm(db, run.id, cue.id, actor="gm", now=clock.now())
            confirmed_at.append(fake.now)

    confirmed_at = []
    runner.tick = tick
    try:
        reports = run_invocation(runner, remaining_seconds=lambda: 20.0, tick_seconds=15, monotonic=fake.monotonic, sleep=sleep).reports
    finally:
        runner.close()
    # The held run's stale wake is tried every 0.9 s after the last tick began, no sooner.
    assert ticked_at[:4] == pytest.approx([0, POLL_SECONDS, 2 * POLL_SECONDS, 3 * POLL_SECONDS])
    [dispatched_at] = [at for at, report in zip(ticked_at, reports, strict=True) if report.dispatched and at > 0]  # after the cue
    # The held run's stale wake is the earliest: it hides the confirm's until its own next try.
    assert confirmed_at[0] <= dispatched_at <= confirmed_at[0] + POLL_SECONDS
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_the_step_after_a_persons_confirm_starts_within_a_tenth_of_a_second(db, clock, game_bridge):
    run = schedule(db, clock.now(), CUE_THEN_ANNOUNCE)
    fake, confirmed_at = FakeTime(clock), []

    def sleep(seconds):
        fake.sleep(seconds)
        if 5 <= fake.now < 5 + seconds:  # a person confirms the cue at about 5 s
            _confirm(db, run.id, clock.now())
            confirmed_at.append(fake.now)

    loop = _invocation(db, clock, game_bridge, fake, sleep=sleep)
    # While the cue waits the loop looks ten times a second, and ticks only when something is due.
    assert fake.sleeps[:40] == pytest.approx([PEOPLE_POLL_SECONDS] * 40)
    assert fake.ticked_at[:2] == [0, pytest.approx(confirmed_at[0])]
    assert [r.dispatched for r in loop.reports[:2]] == [1, 1]
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def _dispatched_after(fake, loop, at):
    return [began for began, report in zip(fake.ticked_at, loop.reports, strict=True) if report.dispatched and began >= at]


def test_a_confirm_committed_while_a_tick_ran_is_not_taken_for_a_wake_that_tick_tried(db, clock, game_bridge):
    """A control reads its time (the run's new wake time) before it commits; a tick that began in between cannot see
    it, and the wake time it leaves is older than that tick. It is due at once, not 0.9 s later (P9's outlier)."""
    run = schedule(db, clock.now(), CUE_THEN_ANNOUNCE)
    schedule(db, clock.now(), document([[step("core.announce", message="x")]]), scheduled_for=clock.now() + timedelta(seconds=5))
    fake, confirmed_at = FakeTime(clock), []

    def tick(runner_tick, budget, **kw):  # the tick at 5 s (another run's) begins inside the confirm's transaction
        began = clock.now()
        report = runner_tick(budget, **kw)
        if fake.now >= 5 and not confirmed_at:  # the confirm's transaction read its time before this tick began
            _confirm(db, run.id, began - timedelta(milliseconds=3))
            confirmed_at.append(fake.now)
        return report

    loop = _invocation(db, clock, game_bridge, fake, tick=tick)
    assert _dispatched_after(fake, loop, confirmed_at[0] + 1e-9)[0] == pytest.approx(confirmed_at[0] + PEOPLE_POLL_SECONDS)
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_the_last_awaited_persons_press_is_followed_at_once_though_a_tick_just_began(db, clock, game_bridge):
    """Once the last cue is confirmed nobody is awaited, and the loop's pace falls back to a second: the look that
    finds the press keeps the people's pace, so a tick that began just before it does not hold the next step back."""
    run = schedule(db, clock.now(), CUE_THEN_ANNOUNCE)
    schedule(db, clock.now(), document([[step("core.announce", message="x")]]), scheduled_for=clock.now() + timedelta(seconds=4.95))
    fake, confirmed_at = FakeTime(clock), []

    def sleep(seconds):
        fake.sleep(seconds)
        if fake.ticked_at[-1] >= 4.9 and not confirmed_at:  # the first look after the other run's tick at 4.95 s
            _confirm(db, run.id, clock.now())
            confirmed_at.append(fake.now)

    loop = _invocation(db, clock, game_bridge, fake, sleep=sleep)
    before = max(at for at in fake.ticked_at if at < confirmed_at[0])
    assert confirmed_at[0] - before < POLL_SECONDS  # the other run's tick began less than a second before
    assert _dispatched_after(fake, loop, confirmed_at[0])[0] <= confirmed_at[0] + PEOPLE_POLL_SECONDS + 1e-9
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_a_run_another_process_held_before_the_invocation_is_tried_once_more_then_every_second(db, clock, game_bridge):
    """The first tick of an invocation cannot know a held run's wake time was there before it (it may have been a
    control committed while the tick ran): it tries once more a tenth of a second later, then every 0.9 s."""
    run = schedule(db, clock.now(), CUE_THEN_ANNOUNCE)
    held = schedule(db, clock.now(), WAIT_THEN_ANNOUNCE)
    db.autocommit(lambda tx: runs.take_lease(tx, held.id, "other", clock.now(), 120))
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET wake_at = %s WHERE id = %s", (clock.now(), held.id)))
    clock.advance(1)
    fake = FakeTime(clock)
    _invocation(db, clock, game_bridge, fake)
    first = PEOPLE_POLL_SECONDS
    assert fake.ticked_at[:5] == pytest.approx([0, first, first + POLL_SECONDS, first + 2 * POLL_SECONDS, first + 3 * POLL_SECONDS])
    assert db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0].parked


def test_a_run_held_for_the_games_signal_is_looked_at_once_a_second(db, clock, game_bridge):
    """Nobody's press can come: the loop keeps its one read every 0.9 s (the idle figure), not ten a second."""
    held = {"name": "arena", "steps": [step("core.announce", message="fight")], "advance": {"when": "signal", "name": "boss_down"}}
    run = schedule(db, clock.now(), {**document(), "phases": [held]})
    fake = FakeTime(clock)
    runner = make_runner(db, clock, game_bridge)
    try:
        loop = run_invocation(runner, remaining_seconds=lambda: 20.0, tick_seconds=15, monotonic=fake.monotonic, sleep=fake.sleep)
    finally:
        runner.close()
    assert run_row(db, run.id).waiting_for is WaitingFor.SIGNAL
    assert fake.sleeps[:-1] == pytest.approx([POLL_SECONDS] * (len(fake.sleeps) - 1))  # the last: the invocation's end
    assert loop.wake_reads <= 20 / POLL_SECONDS + 1


def test_an_invocation_with_little_time_left_ticks_only_what_fits(db, clock, game_bridge):
    fake = FakeTime(clock)
    runner = make_runner(db, clock, game_bridge, timeout=5)
    try:
        enough_for_one = run_invocation(
            runner, remaining_seconds=lambda: 11.0, tick_seconds=15, monotonic=fake.monotonic, sleep=fake.sleep).reports
        none = run_invocation(runner, remaining_seconds=lambda: 5.0, tick_seconds=15, monotonic=fake.monotonic, sleep=fake.sleep).reports
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
    assert response.payload["ticks"] == [] and response.payload["wake_reads"] == 0
    assert response.payload["asleep"] is False and response.payload["parked_cue_age_seconds"] == 0  # nothing waits
    assert run_row(db, run.id).status is RunStatus.SCHEDULED


@pytest.mark.realtime  # the tick command
def test_tick_once_advances_due_runs_and_prints_its_report(db, game_bridge):
    run = schedule(db, DatabaseClock(db).now(), document([[step("core.announce", message="hi"), step("world.spawn")]]))
    process = tick_process(game_bridge.url)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert (report["runs_advanced"], report["dispatched"], report["outcomes"]) == (1, 2, {"done": 2})
    assert run_row(db, run.id).status is RunStatus.COMPLETED


@pytest.mark.realtime  # the tick loop
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
