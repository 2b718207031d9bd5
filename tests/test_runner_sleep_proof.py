"""Issue 21's proof: a fault at every AWS call of both transitions, and the engine is never stranded.

The real sleep and wake code runs against the real database and a moto server
(reached through `AWS_ENDPOINT_URL`, by the engine's own clients and their
deadlines; the Lambda API is a loopback stand-in through `AWS_ENDPOINT_URL_LAMBDA`).
AWS fires the tick as it would (`tests.support.aws_world.World`: the minute rule
each minute while it is on, each one-time schedule at its time, each nudge at once).

For each transition — going to sleep, a wake-up's invocation, its backstop's, and
a nudge with the invocation it starts — its AWS calls are listed from a run
without faults; then, for each of those calls, the transition runs again with
that call failing (the connection dropped) or timing out, once (botocore's retry
goes through) or on every attempt (the call fails to the engine). After each:

- the engine is awake with its rule on, or asleep (or being woken) behind the
  wake-up and backstop of its sleep, with its rule off or on: never asleep
  without a wake-up;
- a run scheduled after the fault (as the API does: the run, then the nudge)
  starts within the minute of its time.
"""

from datetime import timedelta

import pytest

from chalicelib.config import Settings
from chalicelib.events import nudge
from chalicelib.events.adapters import aws as aws_adapter
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.store import engine_state, runs
from tests.support import aws_world
from tests.support.aws_faults import Faults
from tests.support.factory import document
from tests.support.runner_kit import make_runner, schedule, step

HORIZON = timedelta(minutes=15)
SETTINGS = Settings(sleep=True, tick_rule_name=aws_world.RULE, tick_function_arn=aws_world.FUNCTION,
                    wake_role_arn=aws_world.ROLE)
HELLO = document([[step("core.announce", message="hello")]])
TRANSITIONS = ("sleep", "wake-up", "backstop", "nudge")
KINDS = (("error", 1), ("timeout", 1), ("error", float("inf")), ("timeout", float("inf")))


@pytest.fixture(scope="module")
def aws():
    with aws_world.engine_aws() as invokes:
        clients = [aws_adapter.aws_client(service) for service in ("events", "scheduler", "lambda")]
        yield invokes, Faults(*clients)
    invokes.close()


@pytest.fixture
def world(db, clock, aws):
    invokes, faults = aws
    faults.clear()
    invokes.take()
    runner = make_runner(db, clock, None)
    db.autocommit(lambda tx: tx.execute("UPDATE event_engine_state SET state = 'awake', sleeps_until = NULL, epoch = epoch + 1"))
    here = aws_world.World(db, clock, runner, invokes, HORIZON)
    here.deployment.reset()
    yield here, faults
    runner.close()


def _transition(world: aws_world.World, which: str, faults: Faults, fault: tuple | None) -> None:
    """Bring the engine to the transition's start, then run it with `fault` ((nth call, kind, attempts))."""
    if which != "sleep":
        world.invoke("aws.events")  # idle: it goes to sleep
        assert world.db.autocommit(engine_state.state) == "asleep"
    faults.calls.clear()
    if fault is not None:
        nth, kind, attempts = fault
        faults.fail(None, kind=kind, attempts=attempts, nth=nth)
    if which == "sleep":
        world.invoke("aws.events")
    elif which == "wake-up":
        world.invoke("events.wake")
    elif which == "backstop":
        world.invoke("events.backstop")
    else:  # work created through the API: the run, then the nudge, then the invocation it starts
        now = world.clock.now()
        schedule(world.db, now, HELLO, scheduled_for=now + timedelta(hours=3))
        nudge.after_work_created(world.db, SETTINGS, now)
        world.deliver_nudges()
    faults.clear()


def _never_stranded(world: aws_world.World) -> str:
    seen = world.db.autocommit(engine_state.read)
    rule, standing = world.deployment.rule(), world.deployment.schedule_names()
    if seen.state == "awake":
        assert rule == "ENABLED", f"awake with the rule off: {seen}"
        return "awake"
    assert {f"{aws_world.RULE}-wake-{seen.wake_ups}", f"{aws_world.RULE}-backstop-{seen.wake_ups}"} <= standing, (
        f"{seen.state} without its wake-ups: {seen}, rule {rule}, {sorted(standing)}")
    return f"{seen.state} behind its wake-ups, rule {rule}"


def _a_run_scheduled_now_starts_on_time(world: aws_world.World) -> None:
    """A run due past the horizon (so the engine may sleep before it), scheduled as the API does."""
    now = world.clock.now()
    due = now + HORIZON + timedelta(minutes=5)
    run = schedule(world.db, now, HELLO, scheduled_for=due)
    nudge.after_work_created(world.db, SETTINGS, now)  # what the API does once the run committed
    world.deliver_nudges()
    world.run_until(due + timedelta(minutes=1))
    seen = world.db.autocommit(lambda tx: runs.get(tx, run.id))
    assert seen.status is not RunStatus.SCHEDULED and seen.started_at is not None, (seen, world.sources[-5:], world.failed)
    assert timedelta(0) <= seen.started_at - due < timedelta(minutes=1), (seen.started_at, due)


def _calls(world, faults, which) -> list[str]:
    _transition(world, which, faults, None)
    return list(faults.calls)


@pytest.mark.torture
@pytest.mark.parametrize("which", TRANSITIONS)
def test_a_fault_at_any_aws_call_of_a_transition_never_strands_the_engine(world, which):
    here, faults = world
    calls = _calls(here, faults, which)
    assert calls, which
    ends = {}
    for nth, operation in enumerate(calls, start=1):
        for kind, attempts in KINDS:
            here.db.autocommit(lambda tx: tx.execute(
                "UPDATE event_runs SET status = 'cancelled', wake_at = NULL, finished_at = %s WHERE finished_at IS NULL",
                (here.clock.now(),)))
            here.db.autocommit(lambda tx: tx.execute(
                "UPDATE event_engine_state SET state = 'awake', sleeps_until = NULL, epoch = epoch + 1"))
            here.deployment.reset()
            here.invokes.take()
            _transition(here, which, faults, (nth, kind, attempts))
            label = f"call {nth} ({operation}) {kind} {'once' if attempts == 1 else 'always'}"
            ends[label] = _never_stranded(here)
            _a_run_scheduled_now_starts_on_time(here)
    print(f"\n{which}: {calls}\n" + "\n".join(f"  {label}: {end}" for label, end in ends.items()))
    assert any(label.endswith("always") and not end.startswith("awake") for label, end in ends.items()) or which == "sleep"
