"""The `log` channel in a Lambda: the tick handler, fed a real EventBridge event, logs a cue where Lambda keeps it.

Lambda's Python runtime leaves the root logger at WARNING, and a deployment may
set its log level to WARNING to cut log volume: a cue logged at INFO would
reach nobody. The cue is a WARNING line, kept at either level.
"""

import functools
import io
import json
import logging
from types import SimpleNamespace

from chalicelib import observability, runtime
from chalicelib.config import Settings
from chalicelib.events.runner import schedule as schedule_module
from tests.support.factory import document
from tests.support.runner_kit import schedule, step

CONSOLE = "https://events.example.com/api/console"
SCHEDULED_EVENT = {
    "version": "0",
    "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-12-04T20:00:00Z",
    "region": "eu-west-1",
    "resources": ["arn:aws:events:eu-west-1:123456789012:rule/event-run-engine-prod-tick"],
    "detail": {},
}


class InjectedTime:
    """The invocation's monotonic time, moved only by its sleeps (and the run clock with it)."""

    def __init__(self, clock):
        self.now, self.clock = 0.0, clock

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.clock.advance(seconds)


def test_a_cue_on_the_log_channel_reaches_a_lambda_log_that_keeps_warning_and_above(db, clock, monkeypatch):
    import app

    time = InjectedTime(clock)
    monkeypatch.setattr(schedule_module, "run_invocation", functools.partial(
        schedule_module.run_invocation, monotonic=time.monotonic, sleep=time.sleep))
    monkeypatch.setattr(logging.getLogger(), "level", logging.WARNING)  # as Lambda's runtime leaves it
    handler = observability.structured_logger().registered_handler
    monkeypatch.setattr(logging.getLogger(observability.PACKAGE_LOGGER), "level", logging.WARNING)  # a quiet stage
    lambda_log = io.StringIO()
    previous = handler.setStream(lambda_log)
    run = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire")]]))
    context = SimpleNamespace(
        get_remaining_time_in_millis=lambda: 70_000, aws_request_id="c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
        function_name="event-run-engine-prod-tick", invoked_function_arn="arn:aws:lambda:eu-west-1:123456789012:function:tick",
    )
    try:
        with runtime.override(settings=Settings(console_url=CONSOLE), database=db, clock=clock):
            summary = app.tick(SCHEDULED_EVENT, context)
    finally:
        handler.setStream(previous)
    assert len(summary["ticks"]) == 1  # the cue parks at the first tick, and nothing wakes the run again
    cue = db.autocommit(lambda tx: tx.one("SELECT id, idempotency_key FROM event_run_steps WHERE run_id = %s", (run.id,)))
    [line] = [json.loads(text) for text in lambda_log.getvalue().splitlines() if '"channel"' in text]
    assert line["message"] == (
        f"cue channel: Cue: Light the bonfire\nRun {run.id}, step {cue['id']}: confirm it once done, or skip it.\n"
        f"{CONSOLE}#/runs/{run.id}"
    )
    assert line["level"] == "WARNING" and line["correlation_id"] == SCHEDULED_EVENT["id"]
    assert (line["run_id"], line["step_id"], line["kind"], line["idempotency_key"]) == (
        run.id, cue["id"], "cue", cue["idempotency_key"])
