"""Sleep and wake against an outage: a woken invocation whose database is out of reach, a hung AWS endpoint.

The slow half of issue 21's proofs (each waits out a real deadline), apart from
`test_runner_sleep_faults.py` so the mutations of the sleep's order run fast.
"""

import contextlib
import io
import json
import time

import pytest

from chalicelib import observability, runtime
from chalicelib.db import Database, DatabaseClock
from chalicelib.events.adapters import aws as aws_adapter
from chalicelib.events.adapters.aws import BACKSTOP_SOURCE, NUDGE_SOURCE, WAKE_SOURCE
from chalicelib.events.runner.sleep import Sleeper
from devtools.kit.lambda_invocation import SCHEDULED_EVENT, lambda_context
from tests.support.db_door import DatabaseDoor
from tests.test_runner_sleep_faults import HORIZON, RULE, SETTINGS, asleep_behind, aws, faults, row, rule_state, schedules, sleep

pytestmark = pytest.mark.realtime  # each waits out a real deadline: make test runs it, make check does not


__all__ = ["aws", "faults"]  # the fixtures, shared


@pytest.mark.parametrize("source", [WAKE_SOURCE, BACKSTOP_SOURCE, NUDGE_SOURCE])
def test_a_woken_invocation_that_cannot_reach_the_database_turns_the_rule_on_and_says_so(db, db_params, clock, aws, source):
    """Stranding case: a wake-up or nudged invocation whose database is unreachable. Before the fix it
    returned normally, logged "the next scheduled tick tries again" (there was none: the rule was off),
    and left nothing behind it."""
    from app import tick as tick_handler

    db.autocommit(lambda tx: tx.execute("UPDATE event_engine_state SET state = 'awake'"))
    sleep(db, clock, aws)
    engine_log = io.StringIO()
    handler = observability.structured_logger().registered_handler
    previous = handler.setStream(engine_log)
    try:
        with DatabaseDoor(db_params) as door:
            door.refuse()
            down = Database(door.url())
            with runtime.override(settings=SETTINGS, database=down, clock=DatabaseClock(down)):
                summary = tick_handler({**SCHEDULED_EVENT, "source": source}, lambda_context(remaining_ms=4500))
    finally:
        handler.setStream(previous)
    assert summary["database_unreachable"] is True
    assert rule_state(aws) == "ENABLED"  # the next minute's tick comes, and wakes the engine once it can
    [error] = [line for line in map(json.loads, engine_log.getvalue().splitlines()) if line["level"] == "ERROR"]
    assert error["message"].endswith("the minute rule is on: the next minute's tick tries again")
    assert Sleeper(db, aws, HORIZON).started(clock.now())  # that tick, with the database back
    assert row(db).state == "awake" and schedules(aws) == {}


def test_a_woken_invocation_that_can_reach_neither_says_what_is_left(db, db_params, clock, aws, faults):
    from app import tick as tick_handler

    db.autocommit(lambda tx: tx.execute("UPDATE event_engine_state SET state = 'awake'"))
    sleep(db, clock, aws)
    faults.fail("EnableRule")
    engine_log = io.StringIO()
    handler = observability.structured_logger().registered_handler
    previous = handler.setStream(engine_log)
    try:
        with DatabaseDoor(db_params) as door:
            door.refuse()
            down = Database(door.url())
            with runtime.override(settings=SETTINGS, database=down, clock=DatabaseClock(down)):
                tick_handler({**SCHEDULED_EVENT, "source": WAKE_SOURCE}, lambda_context(remaining_ms=4500))
    finally:
        handler.setStream(previous)
    [error] = [line for line in map(json.loads, engine_log.getvalue().splitlines()) if line["level"] == "ERROR"]
    assert error["message"].endswith("only the sleep's backstop wakes the engine")
    asleep_behind(db, aws)


def test_the_backstop_waking_the_engine_publishes_the_metric_its_alarm_reads(db, clock, aws, capsys):
    from app import tick as tick_handler

    db.autocommit(lambda tx: tx.execute("UPDATE event_engine_state SET state = 'awake'"))
    sleep(db, clock, aws)
    capsys.readouterr()
    with runtime.override(settings=SETTINGS, database=db, clock=clock):
        summary = tick_handler({**SCHEDULED_EVENT, "source": BACKSTOP_SOURCE}, lambda_context(remaining_ms=4500))
    assert summary["backstop_woke"] is True
    [emf] = [e for e in map(json.loads, filter(None, capsys.readouterr().out.splitlines())) if "_aws" in e]
    assert emf["BackstopWakes"] in (1, [1])  # what BackstopWakeAlarm reads


def test_a_hung_aws_endpoint_is_given_up_within_the_deadline(monkeypatch):
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts (the kernel does) and never answers
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{listener.getsockname()[1]}")
    monkeypatch.setattr(aws_adapter, "_clients", {})
    events = aws_adapter.aws_client("events")  # made (boto3 imported, its models read) before the clock starts
    started = time.monotonic()
    with pytest.raises(Exception, match="Read timeout"):
        events.enable_rule(Name=RULE)
    elapsed = time.monotonic() - started
    listener.setblocking(False)
    tries = 0
    with contextlib.suppress(BlockingIOError):
        while True:  # each try came on a connection of its own, which the kernel accepted: count them
            listener.accept()[0].close()
            tries += 1
    listener.close()
    attempts, read_seconds = aws_adapter.ATTEMPTS, aws_adapter.READ_SECONDS
    assert tries == attempts, tries  # no third try
    # Each try cut at its read timeout (botocore's own is 60 s): within the bound the adapter states for a call.
    assert attempts * read_seconds <= elapsed < aws_adapter.AWS_CALL_SECONDS, elapsed
