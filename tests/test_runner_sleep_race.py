"""A sleeping deployment never holds live work: a tick process going to sleep races a process creating work.

The tick process works everything off (as a tick would), tries to sleep, and,
once asleep, does nothing until the state row leaves `asleep` (what a nudged
invocation starting looks like). The other process schedules runs due now and,
after each commit, nudges as the API does. If the tick ever sleeps past work
that nobody nudged it for, it sees the row still asleep with work due: a
violation, journaled. Real processes, one real database.
"""

import json
import multiprocessing
import random
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from chalicelib.config import Settings
from chalicelib.db import Database, DatabaseClock
from chalicelib.events import nudge
from chalicelib.events.adapters import aws as aws_adapter
from chalicelib.events.runner import sleep as sleep_module
from chalicelib.events.runner.sleep import Sleeper
from chalicelib.events.store import engine_state, runs
from tests.support import aws_world
from tests.support.factory import document, make_definition
from tests.support.runner_kit import step
from tests.support.torture import sized

HORIZON = timedelta(minutes=15)
SECONDS = 8
NOTICE_SECONDS = 2.0  # a nudge left unsent this long is a violation, not a busy machine's pause
SETTINGS = Settings(sleep=True, tick_rule_name="r", tick_function_arn="arn:aws:lambda:eu-west-1:1:function:r", wake_role_arn="x")
SETTINGS_AWS = Settings(sleep=True, tick_rule_name=aws_world.RULE, tick_function_arn=aws_world.FUNCTION,
                        wake_role_arn=aws_world.ROLE)


class Switches:
    """The AWS side is not what races here: the rule and the wake-up are counted, not called."""

    def __init__(self):
        self.offs = self.ons = 0

    def rule_on(self):
        self.ons += 1

    def rule_off(self):
        self.offs += 1

    def set_wake_ups(self, sleep, wake_at, backstop_at):
        pass

    def set_backstop(self, sleep, backstop_at):
        pass

    def cancel_wake_ups(self, sleep):
        pass


def _work_due(db, now, created_before=None) -> int:
    """Runs due within the horizon (created before `created_before`, if given)."""
    return db.autocommit(lambda tx: tx.one(
        """SELECT COUNT(*) AS n FROM event_runs WHERE wake_at IS NOT NULL AND wake_at <= %s
              AND created_at <= COALESCE(%s, created_at)""", (now + HORIZON, created_before)))["n"]


def tick_side(url: str, journal: str, stop_at: float) -> None:
    db = Database(url)
    clock = DatabaseClock(db)
    sleeper = Sleeper(db, Switches(), HORIZON)
    slept = violations = 0
    while time.time() < stop_at:
        # Work everything off, as a tick would: the runs are done and wake no more.
        db.autocommit(lambda tx: tx.execute(
            "UPDATE event_runs SET status = 'completed', wake_at = NULL, finished_at = %s WHERE wake_at IS NOT NULL",
            (clock.now(),)))
        if not sleeper.try_sleep(clock.now()):
            continue
        slept += 1
        while db.autocommit(engine_state.state) == "asleep" and time.time() < stop_at:
            now = clock.now()
            if _work_due(db, now, created_before=now - timedelta(seconds=NOTICE_SECONDS)):
                violations += 1  # asleep, with work its creator committed that long ago and nobody nudged for
                break
            time.sleep(0.01)
        sleeper.started(clock.now())
    Path(journal).write_text(json.dumps({"slept": slept, "violations": violations}))


def work_side(url: str, definition_id: int, journal: str, stop_at: float) -> None:
    db = Database(url)
    clock = DatabaseClock(db)
    created = woke = 0
    while time.time() < stop_at - 1:  # stops first, so the tick side sees every run
        now = clock.now()
        db.transaction(lambda tx: runs.insert_occurrence(
            tx, definition_id=definition_id, definition_version=1, scheduled_for=now, grace_seconds=300, now=now))
        created += 1
        woke += nudge.after_work_created(db, SETTINGS, clock.now(), invoke=lambda arn: None, rule_on=lambda rule: None)
        # Uneven, so the two sides meet at every point of the protocol; now and then a pause long
        # enough for the tick side to see a run it slept through still waiting.
        time.sleep(NOTICE_SECONDS + 0.5 if created % 30 == 0 else 0.002 * (created % 7))
    Path(journal).write_text(json.dumps({"created": created, "woke": woke}))


@pytest.mark.realtime
def test_a_deployment_never_sleeps_through_work_created_while_it_went_to_sleep(db, db_params, tmp_path):
    db.autocommit(lambda tx: tx.execute("UPDATE event_engine_state SET state = 'awake'"))
    definition = make_definition(db, DatabaseClock(db).now(), document([[step("core.announce", message="hi")]]))
    stop_at = time.time() + SECONDS
    context = multiprocessing.get_context("spawn")
    tick = context.Process(target=tick_side, args=(db_params.url(), str(tmp_path / "tick.json"), stop_at))
    work = context.Process(target=work_side, args=(db_params.url(), definition.id, str(tmp_path / "work.json"), stop_at))
    tick.start()
    work.start()
    for process in (tick, work):
        process.join(SECONDS + 60)
        assert process.exitcode == 0
    ticked = json.loads((tmp_path / "tick.json").read_text())
    worked = json.loads((tmp_path / "work.json").read_text())
    print(f"\nsleep race: {ticked} {worked}")
    assert ticked["violations"] == 0, (ticked, worked)
    assert ticked["slept"] > 5 and worked["woke"] > 5  # the race was run, many times over
    state = db.autocommit(engine_state.state)
    assert state != "asleep" or _work_due(db, DatabaseClock(db).now()) == 0


def _create_and_nudge(db, definition_id):
    now = DatabaseClock(db).now()
    db.transaction(lambda tx: runs.insert_occurrence(
        tx, definition_id=definition_id, definition_version=1, scheduled_for=now, grace_seconds=300, now=now))
    return nudge.after_work_created(db, SETTINGS, now, invoke=lambda arn: None, rule_on=lambda rule: None)


def test_work_created_between_the_look_and_the_sleep_is_seen_by_the_second_look(db, monkeypatch):
    db.autocommit(lambda tx: tx.execute("UPDATE event_engine_state SET state = 'awake'"))
    definition = make_definition(db, DatabaseClock(db).now(), document([[step("core.announce", message="hi")]]))
    real = engine_state.fall_asleep
    nudged = []

    def work_arrives_first(tx, now, until):  # the API commits and finds the row awake: no nudge
        nudged.append(_create_and_nudge(db, definition.id))
        return real(tx, now, until)

    monkeypatch.setattr(engine_state, "fall_asleep", work_arrives_first)
    switches = Switches()
    assert not Sleeper(db, switches, HORIZON).try_sleep(DatabaseClock(db).now())
    assert nudged == [False] and db.autocommit(engine_state.state) == "awake" and switches.offs == 0


def test_work_created_while_the_rule_goes_off_turns_it_back_on(db):
    db.autocommit(lambda tx: tx.execute("UPDATE event_engine_state SET state = 'awake'"))
    definition = make_definition(db, DatabaseClock(db).now(), document([[step("core.announce", message="hi")]]))
    nudged = []

    class WorkArrivesNow(Switches):
        def rule_off(self):
            super().rule_off()
            nudged.append(_create_and_nudge(db, definition.id))  # the row is asleep: this caller nudges

    switches = WorkArrivesNow()
    assert not Sleeper(db, switches, HORIZON).try_sleep(DatabaseClock(db).now())
    assert nudged == [True] and switches.ons == 1  # the rule is back on, whoever's invocation comes first
    assert db.autocommit(engine_state.state) == "awake"


# ── a tick going to sleep and a woken tick, real processes, real AWS calls (moto) ──

EPISODES = sized(200, 2_000)
JITTER = {"sleeping": 0.004, "woken": 0.030, "creating": 0.030}  # seconds: every point of the sleep is met
WOKEN_SOURCES = (aws_adapter.WAKE_SOURCE, aws_adapter.BACKSTOP_SOURCE, aws_adapter.NUDGE_SOURCE,
                 aws_adapter.RULE_SOURCE)


def episode_side(role, url, barrier, nudged, episodes, seed, definition_id, journal):
    """One process of the race: at each episode's start, after a random pause, it does its one move."""
    random.seed(seed)
    db = Database(url)
    clock = DatabaseClock(db)
    sleeper = sleep_module.Sleeper(db, aws_adapter.aws_switches(aws_world.RULE, aws_world.FUNCTION, aws_world.ROLE),
                                   HORIZON)
    moves = Counter()
    for _ in range(episodes):
        barrier.wait(60)
        time.sleep(random.random() * JITTER[role])
        if role == "sleeping":
            moves["slept" if sleeper.try_sleep(clock.now()) else "stayed up"] += 1
        elif role == "woken":  # a stale wake-up, backstop, nudge or minute-rule invocation starting
            moves["woke it" if sleeper.started(clock.now(), random.choice(WOKEN_SOURCES)) else "found it awake"] += 1
        elif random.random() < 0.5:  # creating: a run due now, then the API's nudge
            now = clock.now()
            db.transaction(lambda tx, now=now: runs.insert_occurrence(
                tx, definition_id=definition_id, definition_version=1, scheduled_for=now, grace_seconds=300, now=now))
            moves["nudged" if nudge.after_work_created(db, SETTINGS_AWS, now, invoke=lambda arn: nudged.set()) else "created"] += 1
        barrier.wait(60)
    Path(journal).write_text(json.dumps(moves))


@pytest.mark.torture
def test_a_sleeping_and_a_woken_tick_never_leave_the_engine_asleep_without_a_wake_up(db, db_params, tmp_path):
    """Issue 21: whatever the interleaving of a tick going to sleep, a tick woken meanwhile (by a wake-up,
    a backstop, a nudge or the rule's last firing) and work created with its nudge, the engine ends
    awake with its rule on, or asleep with its rule off behind the wake-up and backstop of its sleep,
    and never asleep with work due. Real processes, one database, one moto server for the AWS calls."""
    definition = make_definition(db, DatabaseClock(db).now(), document([[step("core.announce", message="hi")]]))
    with aws_world.moto_server():
        deployment = aws_world.Deployment.here()
        deployment.reset()
        context = multiprocessing.get_context("spawn")
        barrier, nudged = context.Barrier(4), context.Event()
        sides = [context.Process(target=episode_side, args=(
            role, db_params.url(), barrier, nudged, EPISODES, seed, definition.id, str(tmp_path / f"{role}.json")))
            for seed, role in enumerate(("sleeping", "woken", "creating"))]
        for process in sides:
            process.start()
        ends, violations = Counter(), []
        left = ("ENABLED", set())  # the rule and the schedules the last episode left: what reset undoes
        try:
            for episode in range(EPISODES):
                db.autocommit(lambda tx: tx.execute(
                    "UPDATE event_runs SET status = 'completed', wake_at = NULL, finished_at = UTC_TIMESTAMP(6)"
                    " WHERE wake_at IS NOT NULL"))
                db.autocommit(lambda tx: tx.execute(
                    "UPDATE event_engine_state SET state = 'awake', sleeps_until = NULL, epoch = epoch + 1"))
                if left[0] != "ENABLED":
                    deployment.events.enable_rule(Name=aws_world.RULE)
                for name in left[1]:
                    deployment.scheduler.delete_schedule(Name=name)
                nudged.clear()
                barrier.wait(60)  # go
                barrier.wait(60)  # every side made its move
                if nudged.is_set():  # the nudged invocation starts
                    sleep_module.Sleeper(db, aws_adapter.aws_switches(
                        aws_world.RULE, aws_world.FUNCTION, aws_world.ROLE), HORIZON).started(
                        DatabaseClock(db).now(), aws_adapter.NUDGE_SOURCE)
                end, left = _judge(db, deployment)
                ends[end] += 1
                if end.startswith("VIOLATION"):
                    violations.append((episode, end))
        finally:
            barrier.abort()
            for process in sides:
                process.join(30)
    moves = {role: json.loads((tmp_path / f"{role}.json").read_text()) for role in ("sleeping", "woken", "creating")}
    print(f"\nsleep and wake race, {EPISODES} episodes: ends {dict(ends)}; moves {moves}")
    assert violations == [], violations[:5]
    assert all(process.exitcode == 0 for process in sides)
    assert moves["sleeping"].get("slept", 0) > EPISODES / 10 and moves["woken"].get("woke it", 0) > EPISODES / 20
    assert ends["asleep behind its wake-ups"] > 0 and ends["awake, rule on"] > 0


def _judge(db, deployment) -> tuple[str, tuple[str, set[str]]]:
    """How the episode ended, and the rule and schedules it left."""
    seen = db.autocommit(engine_state.read)
    rule, standing = deployment.rule(), deployment.schedule_names()
    return _verdict(db, seen, rule, standing), (rule, standing)


def _verdict(db, seen, rule, standing) -> str:
    if seen.state == "awake":
        return "awake, rule on" if rule == "ENABLED" else f"VIOLATION: awake with the rule off ({seen})"
    if seen.state == "waking":
        return f"VIOLATION: waking after its nudge was delivered ({seen})"
    wake_ups = {f"{aws_world.RULE}-wake-{seen.wake_ups}", f"{aws_world.RULE}-backstop-{seen.wake_ups}"}
    if not wake_ups <= set(standing):
        return f"VIOLATION: asleep without its wake-ups ({seen}, rule {rule}, {sorted(standing)})"
    due = _work_due(db, DatabaseClock(db).now())
    if due:
        return f"VIOLATION: asleep with {due} run(s) due ({seen}, rule {rule})"
    return "asleep behind its wake-ups" if rule == "DISABLED" else "asleep behind its wake-ups, rule still on"
