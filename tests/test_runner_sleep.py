"""Sleep when idle: the minute rule off and a one-time wake-up (moto), connections closed; work wakes it again.

The nudge goes to a loopback HTTP server standing in for the Lambda API, which
records each Invoke as boto3 sends it.
"""

import json
from datetime import timedelta

from chalice.test import Client

from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.db import Database
from chalicelib.events import nudge
from chalicelib.events.runner.loop import Loop
from chalicelib.events.runner.sleep import WARM_UP, Sleeper
from chalicelib.events.store import steps
from tests.support import sleep_world
from tests.support.api import MODERATOR
from tests.support.aws_world import FUNCTION, ROLE, RULE
from tests.support.factory import document, make_definition
from tests.support.runner_kit import make_runner, schedule, step
from tests.support.sleep_world import HORIZON, asleep, nudging_api, reset_state, rule_state, state, wake_up
from tests.support.torture import wait_until

SETTINGS = Settings(sleep=True, tick_rule_name=RULE, tick_function_arn=FUNCTION, wake_role_arn=ROLE)
CUE = document([[step("core.cue", instruction="Light the bonfire"), step("core.announce", message="lit")]])
LONG_WAIT = document([[step("core.wait", seconds=7200), step("core.announce", message="two hours later")]])
aws, lambda_api = sleep_world.aws, sleep_world.lambda_api  # the sleep world's fixtures: moto's AWS, the Lambda API


def _open_connections(db) -> set[int]:
    return {row["ID"] for row in db.autocommit(lambda tx: tx.all(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()"))}


def test_an_idle_tick_turns_its_rule_off_sets_its_wake_up_and_closes_its_connections(db, clock, aws, game_bridge):
    reset_state(db)
    parked = schedule(db, clock.now(), CUE)
    waiting = schedule(db, clock.now(), LONG_WAIT)
    own_db = Database(db.params)  # the tick's own connections, to count them
    # Connections open before the tick are not its own (another test's process-wide runner may keep some).
    others = _open_connections(db)
    runner = make_runner(own_db, clock, game_bridge, concurrency=3)
    try:
        now = clock.now()
        loop = Loop(runner, finish_by=60, tick_seconds=15, monotonic=lambda: 0.0, sleep=lambda s: None,
                    sleeper=Sleeper(own_db, aws, HORIZON))
        loop.run()
        assert loop.slept and len(loop.reports) == 1  # the runs parked and held; then nothing within the horizon
        runner.close_connections()
        # The server ends a connection's thread just after its client quits: give it a moment.
        wait_until(lambda: not _open_connections(db) - others, 5, "the tick's connections closed")
    finally:
        runner.close()
    assert state(db) == "asleep" and rule_state(aws) == "DISABLED"
    standing = wake_up(aws)
    due = now + timedelta(seconds=7200) - WARM_UP
    assert standing["ScheduleExpression"] == f"at({due:%Y-%m-%dT%H:%M:%S})"
    assert standing["Target"]["Arn"] == FUNCTION and standing["Target"]["RoleArn"] == ROLE
    assert standing["ActionAfterCompletion"] == "DELETE"
    assert parked.id != waiting.id


def test_a_tick_stays_awake_while_anything_is_due_within_the_horizon(db, clock, aws):
    reset_state(db)
    sleeper = Sleeper(db, aws, HORIZON)
    soon = schedule(db, clock.now(), CUE, scheduled_for=clock.now() + timedelta(minutes=10))
    assert not sleeper.try_sleep(clock.now())
    assert state(db) == "awake" and rule_state(aws) == "ENABLED"
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET wake_at = NULL WHERE id = %s", (soon.id,)))
    make_definition(db, clock.now(), document([[step("core.announce", message="hi")]], schedule={"cron": "10 20 * * *"}))
    assert not sleeper.try_sleep(clock.now())  # an occurrence in ten minutes: the planner must take it
    assert sleeper.try_sleep(clock.now() + timedelta(minutes=20))  # the next one is a day away
    assert wake_up(aws) is not None


def test_work_created_while_asleep_nudges_the_tick_once_and_the_tick_turns_its_rule_back_on(db, clock, aws, lambda_api):
    reset_state(db)
    run = schedule(db, clock.now(), CUE)
    runner_view = Sleeper(db, aws, HORIZON)
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET wake_at = NULL WHERE id = %s", (run.id,)))
    assert runner_view.try_sleep(clock.now()) and rule_state(aws) == "DISABLED"
    # Nothing new: no nudge. A schedule-for-now: one nudge, however many controls follow it.
    assert not nudge.after_work_created(db, Settings(), clock.now(), invoke=lambda_api.invoke)  # EVENTS_SLEEP off
    later = schedule(db, clock.now(), CUE)
    assert nudge.after_work_created(db, SETTINGS, clock.now(), invoke=lambda_api.invoke)
    clock.advance(1)
    assert not nudge.after_work_created(db, SETTINGS, clock.now(), invoke=lambda_api.invoke)  # already woken
    assert [(call.path.split("/")[3], call.kind) for call in lambda_api.calls] == [(FUNCTION.replace(":", "%3A"), "Event")]
    assert state(db) == "waking"
    runner_view.started(clock.now())  # the nudged invocation begins
    assert state(db) == "awake" and rule_state(aws) == "ENABLED" and wake_up(aws) is None
    assert later.id != run.id


def test_a_confirm_through_the_api_wakes_a_sleeping_deployment(db, clock, db_params, aws, lambda_api, monkeypatch):
    run = _asleep_behind(db, clock, aws, CUE)
    cue = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]
    with nudging_api(db, clock, db_params, lambda_api, monkeypatch) as api:
        answer = api.post(f"/runs/{run.id}/steps/{cue.id}/confirm", {"note": "lit"}, auth=MODERATOR)
    assert answer.status == 200, answer.body
    assert len(lambda_api.calls) == 1 and state(db) == "waking"


def test_a_tick_does_not_sleep_over_a_nudge_in_flight(db, clock, aws):
    db.autocommit(lambda tx: tx.execute("UPDATE event_engine_state SET state = 'waking'"))
    assert not Sleeper(db, aws, HORIZON).try_sleep(clock.now())  # nothing due, but someone woke it
    assert state(db) == "waking" and rule_state(aws) == "ENABLED"


def test_the_nudge_and_the_wake_up_reach_the_tick_handler_as_its_minute_rule_does(db, clock, aws, lambda_api):
    from app import app

    reset_state(db)
    lambda_api.invoke(FUNCTION)
    nudged = lambda_api.calls[0].payload
    Sleeper(db, aws, HORIZON).switches.set_wake_ups(1, clock.now() + timedelta(hours=1), clock.now() + timedelta(hours=2))
    woken = json.loads(wake_up(aws)["Target"]["Input"])
    with runtime.override(settings=Settings(), database=db, clock=clock), Client(app) as client:
        for event in (nudged, woken):
            assert client.lambda_.invoke("tick", event).payload["ticks"] == []  # read, and ticked (3 s left: none)


def _asleep_behind(db, clock, aws, doc):
    """A run of `doc` ticked until its phase waits for someone (no timer left), and the deployment asleep."""
    reset_state(db)
    run = schedule(db, clock.now(), doc)
    asleep(db, clock, aws)
    return run


def test_a_held_manual_phase_lets_the_deployment_sleep_and_an_advance_through_the_api_wakes_it(
    db, clock, db_params, aws, lambda_api, monkeypatch
):
    held = document([[step("core.announce", message="Stretch")], [step("core.announce", message="Go")]])
    held["phases"][0]["advance"] = {"when": "manual"}
    run = _asleep_behind(db, clock, aws, held)  # phase 1 is done and holds: no timer is left
    with nudging_api(db, clock, db_params, lambda_api, monkeypatch) as api:
        answer = api.post(f"/runs/{run.id}/advance", {"phase": 1, "reason": "go"}, auth=MODERATOR)
    assert answer.status == 200, answer.body
    assert len(lambda_api.calls) == 1 and state(db) == "waking"


def test_a_phase_waiting_for_the_game_lets_the_deployment_sleep_and_a_signal_through_the_api_wakes_it(
    db, clock, db_params, aws, lambda_api, monkeypatch
):
    boss = document([[step("core.cue", instruction="Watch the boss")], [step("core.announce", message="Loot!")]])
    boss["phases"][0]["advance"] = {"when": "signal", "name": "boss_defeated"}
    run = _asleep_behind(db, clock, aws, boss)  # the cue parks: the phase waits for the game, no timer is left
    with nudging_api(db, clock, db_params, lambda_api, monkeypatch) as api:
        answer = api.post(f"/runs/{run.id}/signals/boss_defeated", {"hp": 0}, auth=MODERATOR)
        assert (answer.status, answer.body["effect"]) == (202, "ends_phase")
        assert len(lambda_api.calls) == 1 and state(db) == "waking"
        assert api.post(f"/runs/{run.id}/signals/boss_defeated", auth=MODERATOR).status == 200
    assert len(lambda_api.calls) == 1  # a repeat makes no work, and nudges nothing


def test_a_finished_runs_clean_up_through_the_api_wakes_a_sleeping_deployment(
    db, clock, db_params, aws, lambda_api, monkeypatch, game_bridge
):
    from devtools.kit.game_bridge import Answer

    reset_state(db)
    game_bridge.script("world.spawn", Answer(200, {"resources": [{"kind": "npc", "id": "crow", "revert": {"action": "world.undo"}}]}))
    run = schedule(db, clock.now(), document([[step("world.spawn")]]))
    asleep(db, clock, aws, game_bridge)  # completed: nothing is due
    with nudging_api(db, clock, db_params, lambda_api, monkeypatch) as api:
        answer = api.post(f"/runs/{run.id}/cleanup", {"reason": "the crow stays"}, auth=MODERATOR)
    assert answer.status == 200, answer.body
    assert answer.body["run"]["status"] == "completed" and answer.body["run"]["wake_at"] is not None
    assert len(lambda_api.calls) == 1 and state(db) == "waking"
