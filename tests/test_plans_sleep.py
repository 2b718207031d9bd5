"""Plans change while the deployment sleeps (moto's EventBridge and Scheduler, the nudge to a loopback Lambda API):
a postpone, an extend and a resume through the API wake it, and the sleep it falls into next aims its wake-up at
the new time; a paused schedule's occurrence is not waited for, so the next sleep is re-timed past it."""

from datetime import timedelta

from chalicelib.events import schedules
from chalicelib.events.adapters.aws import WAKE_SOURCE
from chalicelib.events.model import iso
from chalicelib.events.runner import Budget
from chalicelib.events.runner.sleep import BACKSTOP_AFTER, LONGEST_SLEEP, WARM_UP, Sleeper
from tests.support import sleep_world
from tests.support.api import MODERATOR
from tests.support.factory import document, make_definition
from tests.support.runner_kit import make_runner, schedule, step
from tests.support.sleep_world import HORIZON, asleep, nudging_api, reset_state, state, wake_up

HELLO = [[step("core.announce", message="hi")]]
aws, lambda_api = sleep_world.aws, sleep_world.lambda_api  # the sleep world's fixtures: moto's AWS, the Lambda API


def _at(when):
    return f"at({when:%Y-%m-%dT%H:%M:%S})"


def _woken_and_asleep_again(db, clock, aws):
    """The nudged invocation: awake, a tick, and asleep again behind a new wake-up."""
    assert state(db) == "waking"
    Sleeper(db, aws, HORIZON).started(clock.now(), WAKE_SOURCE)
    asleep(db, clock, aws)


def test_a_postpone_wakes_the_deployment_and_its_next_sleep_aims_at_the_new_time(db, clock, db_params, aws, lambda_api,
                                                                                  monkeypatch):
    reset_state(db)
    run = schedule(db, clock.now(), document(HELLO), scheduled_for=clock.now() + timedelta(hours=3))
    asleep(db, clock, aws)
    assert wake_up(aws)["ScheduleExpression"] == _at(run.scheduled_for - WARM_UP)
    sooner = clock.now() + timedelta(minutes=40)
    with nudging_api(db, clock, db_params, lambda_api, monkeypatch) as api:
        assert api.post(f"/runs/{run.id}/postpone", {"to": iso(sooner)}, auth=MODERATOR).status == 200
    assert len(lambda_api.calls) == 1
    _woken_and_asleep_again(db, clock, aws)
    assert wake_up(aws)["ScheduleExpression"] == _at(sooner - WARM_UP)


def test_an_extend_wakes_the_deployment_and_its_next_sleep_aims_at_the_new_deadline(db, clock, db_params, aws, lambda_api,
                                                                                     monkeypatch):
    reset_state(db)
    market = document([[step("core.announce", message="open")], [step("core.announce", message="closed")]])
    market["phases"][0]["advance"] = {"when": "after", "seconds": 7200}
    run = schedule(db, clock.now(), market)
    asleep(db, clock, aws)
    assert wake_up(aws)["ScheduleExpression"] == _at(clock.now() + timedelta(hours=2) - WARM_UP)
    with nudging_api(db, clock, db_params, lambda_api, monkeypatch) as api:
        assert api.post(f"/runs/{run.id}/phases/1/extend", {"seconds": -3600}, auth=MODERATOR).status == 200
    assert len(lambda_api.calls) == 1
    _woken_and_asleep_again(db, clock, aws)
    assert wake_up(aws)["ScheduleExpression"] == _at(clock.now() + timedelta(hours=1) - WARM_UP)


def test_a_paused_schedules_occurrence_is_not_waited_for_and_a_resume_wakes_the_deployment_for_it(
    db, clock, db_params, aws, lambda_api, monkeypatch
):
    reset_state(db)
    definition = make_definition(db, clock.now(), document(HELLO, schedule={"cron": "0 23 * * *"}))
    asleep(db, clock, aws)
    occurrence = clock.now().replace(hour=23)
    assert wake_up(aws)["ScheduleExpression"] == _at(occurrence - HORIZON - WARM_UP)
    schedules.pause(db, definition.id, reason="holiday", actor="mod", now=clock.now())
    clock.set(occurrence - HORIZON - WARM_UP)  # the wake-up fires, early now: nothing is due, and it sleeps again
    Sleeper(db, aws, HORIZON).started(clock.now(), WAKE_SOURCE)
    asleep(db, clock, aws)
    assert wake_up(aws)["ScheduleExpression"] == _at(clock.now() + LONGEST_SLEEP - BACKSTOP_AFTER)  # re-timed
    with nudging_api(db, clock, db_params, lambda_api, monkeypatch) as api:
        assert api.post(f"/definitions/{definition.id}/schedule/resume", {}, auth=MODERATOR).status == 200
    assert len(lambda_api.calls) == 1
    clock.advance(15 * 60)  # 22:59: the occurrence is inside the horizon, so the woken tick plans it and stays up
    Sleeper(db, aws, HORIZON).started(clock.now(), WAKE_SOURCE)
    runner = make_runner(db, clock, None)
    try:
        runner.tick(Budget.for_seconds(30))
    finally:
        runner.close()
    assert not Sleeper(db, aws, HORIZON).try_sleep(clock.now())
    assert db.autocommit(lambda tx: tx.one("SELECT scheduled_for FROM event_runs WHERE definition_id = %s",
                                           (definition.id,)))["scheduled_for"] == occurrence
