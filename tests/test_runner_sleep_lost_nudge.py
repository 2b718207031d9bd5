"""Issue 37, item 1: every sleep is bounded, so no lost wake-up path strands work for more than a day.

The real sleep code runs against the real database and a moto server reached
through the engine's own clients; AWS fires the tick as it would
(`tests.support.aws_world.World`: the rule each minute while it is on, each
one-time schedule at its time).
"""

from datetime import timedelta

import pytest

from chalicelib.events.adapters import aws as aws_adapter
from chalicelib.events.adapters.aws import RULE_SOURCE
from chalicelib.events.store import engine_state, runs
from tests.support import aws_world
from tests.support.aws_faults import Faults
from tests.support.factory import document, make_definition
from tests.support.runner_kit import make_runner, schedule, step

HORIZON = timedelta(minutes=15)
HELLO = document([[step("core.announce", message="hello")]])
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
