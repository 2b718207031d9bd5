"""Issue 37, item 1: a lost nudge never strands work, and every sleep is bounded.

The deployment sleeps with nothing to do. ONE piece of work is then made as the
API makes it (committed, then the nudge, through the engine's own clients: moto
for EventBridge and Scheduler, a loopback stand-in for the Lambda API), and its
nudge is lost in one of the ways AWS documents. What the API left behind is read
from moto (the minute rule on, or a one-time schedule before the work's time),
then AWS fires the tick as it would (`tests.support.aws_world.World`: the rule
each minute while it is on, each schedule at its time) and the work must happen
on time: no other work comes along to nudge again.

Before the fix each of these failed: the row went back to asleep (or stayed
`waking`), the rule stayed off, and the only wake-up left was the earlier
sleep's, at the 400-day look-ahead's end.
"""

import contextlib
import json
from datetime import timedelta

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import EndpointConnectionError
from chalice.test import Client

from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.events import nudge
from chalicelib.events.adapters import aws as aws_adapter
from chalicelib.events.adapters.aws import NUDGE_SOURCE, RULE_SOURCE
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.runner import compose, lambda_handler
from chalicelib.events.runner.sleep import Sleeper
from chalicelib.events.store import engine_state, runs, steps
from devtools.kit.game_bridge import Answer
from devtools.kit.lambda_invocation import SCHEDULED_EVENT, lambda_context
from tests.support import aws_world
from tests.support.api import MODERATOR, Api, hs_settings
from tests.support.aws_faults import Faults
from tests.support.factory import document, make_definition
from tests.support.runner_kit import make_runner, schedule, step

HORIZON = timedelta(minutes=15)
SETTINGS = Settings(sleep=True, tick_rule_name=aws_world.RULE, tick_function_arn=aws_world.FUNCTION,
                    wake_role_arn=aws_world.ROLE)
HELLO = document([[step("core.announce", message="hello")]])
IN_FIVE_MINUTES = timedelta(minutes=5)
A_DAY = timedelta(days=1)


@pytest.fixture(scope="module")
def aws():
    with aws_world.engine_aws() as invokes:
        yield invokes, Faults(*(aws_adapter.aws_client(service) for service in ("events", "scheduler", "lambda")))


@pytest.fixture
def world(db, clock, aws, game_bridge):
    invokes, faults = aws
    faults.clear()
    invokes.take()
    runner = make_runner(db, clock, game_bridge, timeout=1.0)  # a step fits the tick budget the world gives (5 s)
    db.autocommit(lambda tx: tx.execute("UPDATE event_engine_state SET state = 'awake', sleeps_until = NULL, epoch = epoch + 1"))
    here = aws_world.World(db, clock, runner, invokes, HORIZON)
    here.deployment.reset()
    yield here, faults
    faults.clear()
    runner.close()


def _asleep(world: aws_world.World) -> None:
    """The minute rule's tick finds nothing due within the horizon and puts the deployment to sleep."""
    world.invoke(RULE_SOURCE)
    assert world.db.autocommit(engine_state.state) == "asleep" and world.deployment.rule() == "DISABLED", world.failed


def _lose_the_nudge(world: aws_world.World, faults: Faults, how: str, make_work) -> None:
    """`make_work()` makes the work and nudges as the API does; its nudge is lost `how`."""
    if how == "the invoke fails on both attempts":
        faults.fail("Invoke")
        make_work()
        faults.clear()
        assert faults.failed.count("Invoke") == aws_adapter.ATTEMPTS and world.invokes.take() == []
    elif how == "the invocation is accepted and never runs":  # dropped at its 60 s maximum age, or dead before the handler
        make_work()
        assert world.invokes.take() == [NUDGE_SOURCE]
    else:  # the invocation fails before it wakes: its own turning on of the rule is refused, and it fails
        make_work()
        faults.fail("EnableRule")
        world.deliver_nudges()
        faults.clear()
        assert world.failed and world.failed[-1][0] == NUDGE_SOURCE, world.failed
    faults.calls.clear()
    faults.failed.clear()


def _fallback_left(world: aws_world.World, due) -> str:
    """What the API left to wake the deployment in time for work due at `due`, as AWS holds it."""
    if world.deployment.rule() == "ENABLED":
        return "the minute rule is on"
    early = sorted(when for when in world.deployment.schedules().values() if when <= due)
    assert early, f"no wake-up before {due}: rule off, schedules {world.deployment.schedules()}"
    return f"a one-time wake-up at {early[0]}"


LOSSES = ("the invoke fails on both attempts", "the invocation is accepted and never runs",
          "the invocation fails before it wakes")


@pytest.mark.parametrize("how", LOSSES)
def test_one_run_due_in_five_minutes_whose_nudge_is_lost_starts_on_time(world, how):
    """Stranding case (issue 37, item 1): one run due in five minutes, its nudge lost — the invoke failing on
    both attempts, the invocation accepted and never run, or the invocation failing before it wakes. Before
    the fix the run stayed `scheduled` (the rule off, the only wake-up 400 days away)."""
    here, faults = world
    _asleep(here)
    now = here.clock.now()
    due = now + IN_FIVE_MINUTES
    made = []

    def make_work():
        made.append(schedule(here.db, now, HELLO, scheduled_for=due))
        nudge.after_work_created(here.db, SETTINGS, now)  # what the API does once the run committed

    _lose_the_nudge(here, faults, how, make_work)
    left = _fallback_left(here, due)
    here.run_until(due + timedelta(minutes=1))
    run = here.db.autocommit(lambda tx: runs.get(tx, made[0].id))
    assert run.status is not RunStatus.SCHEDULED and run.started_at is not None, (how, left, run, here.sources[-5:])
    assert timedelta(0) <= run.started_at - due < timedelta(minutes=1), (how, left, run.started_at, due)


class _WorkArrivesAsTheRuleGoesOff:
    """The sleeping tick's switches, with work made and nudged just before its rule goes off, and its own
    turning back on of the rule refused after."""

    def __init__(self, inner, faults: Faults, make_work):
        self.inner, self.faults, self.make_work = inner, faults, make_work

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def rule_off(self) -> None:
        self.make_work()  # the row waking, the rule on, the invocation accepted (and lost)
        self.inner.rule_off()  # the sleeping tick's step 4 turns the nudge's rule off again
        self.faults.fail("EnableRule")


def test_a_nudge_whose_rule_the_sleeping_tick_turned_off_again_still_starts_its_work_on_time(world):
    """Stranding case (issue 37, item 1): work made while the tick goes to sleep. The nudge turns the rule on,
    the sleeping tick turns it off (its step 4), sees the row moved and cannot turn the rule back on, and the
    nudge's invocation is lost. Before the fix the sleep's wake-ups stayed aimed at the work the tick had seen
    (none: a day away), so the run due in ten minutes did not start."""
    here, faults = world
    now = here.clock.now()
    due = now + timedelta(minutes=10)
    made = []

    def make_work():
        made.append(schedule(here.db, now, HELLO, scheduled_for=due))
        nudge.after_work_created(here.db, SETTINGS, now)

    sleeping = _WorkArrivesAsTheRuleGoesOff(here.switches(), faults, make_work)
    assert not Sleeper(here.db, sleeping, HORIZON).try_sleep(now)
    faults.clear()
    assert here.invokes.take() == [NUDGE_SOURCE]  # lost
    assert here.deployment.rule() == "DISABLED"
    _fallback_left(here, due)
    here.run_until(due + timedelta(minutes=1))
    run = here.db.autocommit(lambda tx: runs.get(tx, made[0].id))
    assert run.started_at is not None and timedelta(0) <= run.started_at - due < timedelta(minutes=1), run


# ── a person's control or the game's signal, made while asleep ──────────────

CUE = document([[step("core.cue", instruction="Light the bonfire"), step("core.announce", message="lit")]])
SPAWN = document([[step("world.spawn", npc="scarecrow"), step("core.announce", message="spawned")]])


def _signal_phase() -> dict:
    doc = document([[step("core.announce", message="Watch the boss")], [step("core.announce", message="Loot!")]])
    doc["phases"][0]["advance"] = {"when": "signal", "name": "boss_defeated"}
    return doc


@contextlib.contextmanager
def _api(world: aws_world.World, db_params):
    """The API of a deployment that sleeps: its nudge through the engine's clients (moto, the loopback Lambda API)."""
    from app import app

    settings = hs_settings(db_params, sleep=True, tick_rule_name=aws_world.RULE, tick_function_arn=aws_world.FUNCTION,
                           wake_role_arn=aws_world.ROLE)
    with runtime.override(database=world.db, clock=world.clock, settings=settings), Client(app) as client:
        yield Api(client)


def _step(world: aws_world.World, run_id: int, action: str):
    return next(s for s in world.db.autocommit(lambda tx: steps.list_for_run(tx, run_id)) if s.action_id == action)


def _press(world: aws_world.World, db_params, control: str, run_id: int) -> None:
    with _api(world, db_params) as api:
        if control == "confirm":
            answer = api.post(f"/runs/{run_id}/steps/{_step(world, run_id, 'core.cue').id}/confirm", {"note": "lit"},
                              auth=MODERATOR)
        elif control == "retry":
            answer = api.post(f"/runs/{run_id}/steps/{_step(world, run_id, 'world.spawn').id}/retry", auth=MODERATOR)
        elif control == "resume":
            answer = api.post(f"/runs/{run_id}/resume", auth=MODERATOR)
        else:
            answer = api.post(f"/runs/{run_id}/signals/boss_defeated", {"hp": 0}, auth=MODERATOR)
    assert answer.status in (200, 202), answer.body


def _waiting_for(world: aws_world.World, db_params, control: str) -> int:
    """A run that only `control` can move, ticked until it waits for it, and the deployment asleep: its id."""
    doc = {"confirm": CUE, "retry": SPAWN, "resume": CUE, "signal": _signal_phase()}[control]
    run = schedule(world.db, world.clock.now(), doc)
    world.invoke(RULE_SOURCE)  # its first tick: the cue parks, the spawn fails (the run pauses), the phase holds
    if control == "resume":  # paused with its cue answered: only the resume moves it on
        with _api(world, db_params) as api:
            assert api.post(f"/runs/{run.id}/pause", {"reason": "hold on"}, auth=MODERATOR).status == 200
            cue = _step(world, run.id, "core.cue")
            assert api.post(f"/runs/{run.id}/steps/{cue.id}/confirm", {"note": "lit"}, auth=MODERATOR).status == 200
        world.deliver_nudges()  # the confirm's: the paused run has nothing to do, and the tick sleeps again
    if world.db.autocommit(engine_state.state) != "asleep":
        _asleep(world)
    return run.id


@pytest.mark.parametrize("how", LOSSES)
@pytest.mark.parametrize("control", ["confirm", "resume", "retry", "signal"])
def test_a_control_or_signal_made_while_asleep_with_its_nudge_lost_still_moves_its_run(world, db_params, game_bridge,
                                                                                        control, how):
    """Stranding case (issue 37, item 1): a confirm, resume, retry or signal made while the deployment sleeps,
    whose nudge is lost. Before the fix its run did not move: nothing woke the tick."""
    here, faults = world
    if control == "retry":
        game_bridge.script("world.spawn", Answer(400, {"error": "no such npc"}))  # failed at once; then the default: done
    run_id = _waiting_for(here, db_params, control)
    assert here.db.autocommit(lambda tx: runs.get(tx, run_id)).status is not RunStatus.COMPLETED
    _lose_the_nudge(here, faults, how, lambda: _press(here, db_params, control, run_id))
    _fallback_left(here, here.clock.now() + timedelta(minutes=1))
    here.run_until(here.clock.now() + timedelta(minutes=2))
    run = here.db.autocommit(lambda tx: runs.get(tx, run_id))
    assert run.status is RunStatus.COMPLETED, (control, how, run, here.sources[-5:], here.failed[-3:])
    assert all(s.status in (StepStatus.DONE, StepStatus.SKIPPED)
               for s in here.db.autocommit(lambda tx: steps.list_for_run(tx, run_id)))


# ── every sleep is bounded ──────────────────────────────────────────────────


@pytest.mark.parametrize("work", ["nothing", "a run in thirty days", "a yearly schedule"])
def test_every_sleep_leaves_a_backstop_at_most_a_day_ahead(world, work):
    """Stranding bound (issue 37, item 1): whatever the next work is, a sleep's backstop fires within a day, so
    a nudge lost every way waits at most that long. Before the fix the wake-up was at the next work (up to the
    400-day look-ahead) and its backstop five minutes after it."""
    here, _ = world
    now = here.clock.now()
    if work == "a run in thirty days":
        schedule(here.db, now, HELLO, scheduled_for=now + timedelta(days=30))
    elif work == "a yearly schedule":
        make_definition(here.db, now, document([[step("core.announce", message="anniversary")]],
                                               schedule={"cron": "0 20 1 1 *"}))
    _asleep(here)
    seen = here.db.autocommit(engine_state.read)
    standing = here.deployment.schedules()
    backstop = standing[f"{aws_world.RULE}-backstop-{seen.wake_ups}"]
    wake_up = standing[f"{aws_world.RULE}-wake-{seen.wake_ups}"]
    assert wake_up < backstop <= now + A_DAY, (work, wake_up, backstop)


def test_work_three_days_away_starts_on_time_through_a_sleep_bounded_to_a_day(world):
    """The bound costs a wake a day and nothing else: each wakes, finds nothing due, and sleeps again; the
    run three days away still starts at its time."""
    here, _ = world
    now = here.clock.now()
    due = now + timedelta(days=3)
    run = schedule(here.db, now, HELLO, scheduled_for=due)
    _asleep(here)
    here.run_until(due + timedelta(minutes=1))
    seen = here.db.autocommit(lambda tx: runs.get(tx, run.id))
    assert seen.started_at is not None and timedelta(0) <= seen.started_at - due < timedelta(minutes=1)
    assert here.sources.count("events.wake") >= 3 and not here.failed  # at least a wake a day, each one clean


# ── the metrics their alarms read ───────────────────────────────────────────


def test_a_nudge_that_finds_the_row_waking_turns_the_rule_on_for_a_nudge_that_died_half_way(world):
    """An API Lambda killed between its nudge's compare-and-set (the row waking) and turning the rule on left
    nothing coming but the sleep's wake-up: the next nudge, within WAKING_STALE, found the row waking and did
    nothing. Now it turns the rule on (idempotent), so the rule's tick comes within the minute."""
    here, _ = world
    _asleep(here)
    now = here.clock.now()
    schedule(here.db, now, HELLO, scheduled_for=now + IN_FIVE_MINUTES)
    assert here.db.transaction(lambda tx: engine_state.wake(tx, now, now - nudge.WAKING_STALE)) is not None  # then killed
    assert here.deployment.rule() == "DISABLED"
    schedule(here.db, now, HELLO, scheduled_for=now + IN_FIVE_MINUTES)
    assert nudge.after_work_created(here.db, SETTINGS, now) is False  # the row is not this nudge's to move
    assert here.deployment.rule() == "ENABLED" and here.db.autocommit(engine_state.state) == "waking"


def test_a_nudge_of_an_awake_deployment_calls_nothing(world, capsys):
    """Awake: an invocation is running or due. The nudge reads the row and calls no AWS API (each refused here:
    a call would publish NudgeFailed)."""
    here, faults = world
    faults.fail("EnableRule")
    faults.fail("Invoke")
    capsys.readouterr()
    assert nudge.after_work_created(here.db, SETTINGS, here.clock.now()) is False
    faults.clear()
    assert _emf(capsys.readouterr().out) == [] and here.db.autocommit(engine_state.state) == "awake"


def _emf(out: str) -> list[dict]:
    return [e for e in (json.loads(line) for line in out.splitlines() if line.startswith("{")) if "_aws" in e]


@pytest.mark.parametrize("refused", ["Invoke", "EnableRule"])
def test_a_nudge_whose_invoke_or_rule_fails_publishes_nudge_failed(world, capsys, refused):
    """NudgeFailedAlarm's metric (issue 37, item 1): a nudge whose invoke failed on both attempts, or whose
    minute rule EventBridge refused, publishes NudgeFailed = 1 as the API's own EMF document."""
    here, faults = world
    _asleep(here)
    capsys.readouterr()
    now = here.clock.now()
    schedule(here.db, now, HELLO, scheduled_for=now + IN_FIVE_MINUTES)
    faults.fail(refused)
    nudge.after_work_created(here.db, SETTINGS, now)
    faults.clear()
    [emf] = _emf(capsys.readouterr().out)
    assert emf["NudgeFailed"] in (1, [1]) and emf["service"] == "event-run-engine"
    assert emf["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]


def test_a_nudge_that_goes_through_publishes_nothing(world, capsys):
    here, _ = world
    _asleep(here)
    capsys.readouterr()
    nudge.after_work_created(here.db, SETTINGS, here.clock.now())
    assert _emf(capsys.readouterr().out) == []


def _refusing(refusal: str):
    """A botocore hook (its stage and handler) that meets a Scheduler call as AWS does when it cannot be used."""
    if refusal == "not offered in the region":  # no endpoint answers: the connection itself fails

        def answer(request, **kwargs):
            raise EndpointConnectionError(endpoint_url=request.url)

        return "before-send", answer
    code, message = {
        "denied": ("AccessDeniedException", "explicitly denied by a service control policy"),
        "name too long": ("ValidationException", "Value at 'name' failed to satisfy constraint: length <= 64"),
    }[refusal]

    def refuse(**kwargs):
        return AWSResponse("https://scheduler", 400, {}, None), {
            "Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 400}}

    return "before-call", refuse


@pytest.mark.parametrize("refusal", ["denied", "not offered in the region", "name too long"])
def test_a_sleep_that_cannot_be_set_stays_awake_and_publishes_sleep_failed(world, capsys, refusal):
    """SleepFailedAlarm's metric (issue 37, item 2): EventBridge Scheduler denied by a policy, not offered in
    the region, or a schedule name too long for a long stack name. The tick stays awake with its rule on, and
    its invocation publishes SleepFailed = 1, so an engine awake for good is seen. Before the fix it only
    logged an ERROR line a minute."""
    from app import tick as tick_handler

    here, _ = world
    scheduler = aws_adapter.aws_client("scheduler")
    stage, hook = _refusing(refusal)
    event = f"{stage}.scheduler.CreateSchedule"
    scheduler.meta.events.register_first(event, hook)
    try:
        with runtime.override(settings=SETTINGS, database=here.db, clock=here.clock):
            worst = compose.process_runner().step_worst_case_seconds
            capsys.readouterr()
            # Room for one tick and one try at sleeping, then the invocation ends.
            remaining_ms = int((lambda_handler.SAFETY_SECONDS + worst + 1.0) * 1000)
            summary = tick_handler(SCHEDULED_EVENT, lambda_context(remaining_ms=remaining_ms))
    finally:
        scheduler.meta.events.unregister(event, hook)
    assert summary["sleep_failed"] == 1 and summary["asleep"] is False
    assert here.db.autocommit(engine_state.state) == "awake" and here.deployment.rule() == "ENABLED"
    [emf] = _emf(capsys.readouterr().out)
    assert emf["SleepFailed"] in (1, [1])
