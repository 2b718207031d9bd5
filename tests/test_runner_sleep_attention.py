"""A human wait under a sleeping deployment (moto server, real database): the deployment sleeps between a
cue's timers and wakes for each — every reminder, the escalation, the timeout — and for a paused run's
escalation; after the last timer it sleeps on until a person answers."""

from datetime import timedelta

import pytest

from chalicelib.events.actions.perform import Actions
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.runner import Runner
from chalicelib.events.store import engine_state, runs, steps
from tests.support import aws_world
from tests.support.factory import document
from tests.support.runner_kit import RULES, RecordingChannel, schedule, step

HORIZON = timedelta(minutes=15)
ESCALATE_AFTER = timedelta(hours=1)


@pytest.fixture(scope="module")
def aws():
    with aws_world.engine_aws() as invokes:
        yield invokes


@pytest.fixture
def world(db, clock, aws):
    aws.take()
    cue_channel, escalations = RecordingChannel("cue"), RecordingChannel("escalation")
    actions = Actions(bridge=None, cue_channel=cue_channel, announce_channel=RecordingChannel("announce"),
                      escalation_channel=escalations, escalate_after_seconds=int(ESCALATE_AFTER.total_seconds()))
    runner = Runner(db, clock, actions, RULES, concurrency=1)
    db.autocommit(lambda tx: tx.execute("UPDATE event_engine_state SET state = 'awake', sleeps_until = NULL, epoch = epoch + 1"))
    here = aws_world.World(db, clock, runner, aws, HORIZON, escalate_after=ESCALATE_AFTER)
    here.deployment.reset()
    yield here, cue_channel, escalations
    runner.close()


def _woken_at(world, notices, until):
    """Run AWS until `until`; the minutes at which a notice was posted, and how often the engine was asleep."""
    posted, asleep_minutes = [], 0
    while world.clock.now() < until:
        before = len(notices.notices)
        world.run_until(world.clock.now() + timedelta(minutes=1))
        if len(notices.notices) > before:
            posted.append(world.clock.now())
        asleep_minutes += world.db.autocommit(engine_state.state) == "asleep"
    return posted, asleep_minutes


@pytest.mark.realtime
def test_the_deployment_sleeps_between_a_cues_timers_and_wakes_for_each(db, clock, world):
    here, cue_channel, escalations = world
    start = clock.now()
    cue = step("core.cue", instruction="Light the bonfire", remind_after_seconds=3600, remind_limit=2,
               escalate_after_seconds=9000, timeout_seconds=12600)
    run = schedule(db, start, document([[cue, step("core.announce", message="on")]]))
    here.invoke("aws.events")
    assert db.autocommit(engine_state.state) == "asleep"  # the cue's first timer is an hour off
    posted, asleep = _woken_at(here, cue_channel, start + timedelta(hours=3, minutes=40))
    reminders = [n for n in cue_channel.notices if n.kind == "reminder"]
    assert [n.idempotency_key.rsplit(":", 1)[1] for n in reminders] == ["r1", "r2"]
    # Each timer fired within the minute after its moment, the engine asleep most of the time between.
    minutes = [(moment - start) // timedelta(minutes=1) for moment in posted]
    assert len(minutes) == 2 and 60 <= minutes[0] <= 61 and 120 <= minutes[1] <= 121, minutes
    (escalation,) = escalations.notices
    assert escalation.kind == "escalation" and escalation.at - start < timedelta(seconds=9000 + 60)
    assert asleep > 180
    timed_out = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]
    assert timed_out.status is StepStatus.CANCELLED  # the timeout woke it too, and the phase went on
    assert db.autocommit(lambda tx: runs.get(tx, run.id)).status is RunStatus.COMPLETED


def test_after_a_cues_last_timer_the_deployment_sleeps_until_a_person_answers(db, clock, world):
    here, cue_channel, _ = world
    start = clock.now()
    run = schedule(db, start, document([[step("core.cue", instruction="Light the bonfire", remind_after_seconds=600,
                                              remind_limit=1, escalate_after_seconds=900)]]))
    here.run_until(start + timedelta(minutes=30))
    assert [n.kind for n in cue_channel.notices] == ["cue", "reminder"]
    assert db.autocommit(engine_state.state) == "asleep"
    assert db.autocommit(lambda tx: runs.get(tx, run.id)).wake_at is None  # nothing left: only a person moves it


def test_a_paused_run_wakes_the_deployment_for_its_escalation(db, clock, world):
    from chalicelib.events import commands

    here, _, escalations = world
    start = clock.now()
    run = schedule(db, start, document([[step("core.cue", instruction="Light the bonfire")]]))
    here.invoke("aws.events")
    commands.pause(db, run.id, actor="mod-mia", now=clock.now(), reason="boss bugged")
    here.invoke("aws.events")
    assert db.autocommit(engine_state.state) == "asleep"
    here.run_until(start + ESCALATE_AFTER + timedelta(minutes=3))
    assert [n.idempotency_key for n in escalations.notices if n.kind == "stall"] == [f"{run.id}:stall:1"]
