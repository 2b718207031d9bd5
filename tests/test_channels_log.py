"""The `log` channel in a Lambda: the tick handler, fed a real EventBridge event, logs a cue where Lambda keeps it.

Lambda's Python runtime leaves the root logger at WARNING, and a deployment may
set its log level to WARNING to cut log volume: a cue logged at INFO would
reach nobody. The cue is a WARNING line, kept at either level.
"""

import io
import json
import logging

from chalicelib import observability, runtime
from chalicelib.config import Settings
from devtools.kit.lambda_invocation import SCHEDULED_EVENT, InjectedTime, lambda_context
from tests.support.factory import document
from tests.support.runner_kit import schedule, step

CONSOLE = "https://events.example.com/api/console"


def test_a_cue_on_the_log_channel_reaches_a_lambda_log_that_keeps_warning_and_above(db, clock, monkeypatch):
    import app

    InjectedTime(clock).install(monkeypatch)
    monkeypatch.setattr(logging.getLogger(), "level", logging.WARNING)  # as Lambda's runtime leaves it
    handler = observability.structured_logger().registered_handler
    monkeypatch.setattr(logging.getLogger(observability.PACKAGE_LOGGER), "level", logging.WARNING)  # a quiet stage
    lambda_log = io.StringIO()
    previous = handler.setStream(lambda_log)
    run = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire")]]))
    context = lambda_context()
    try:
        with runtime.override(settings=Settings(console_url=CONSOLE), database=db, clock=clock):
            summary = app.tick(SCHEDULED_EVENT, context)
    finally:
        handler.setStream(previous)
    assert len(summary["ticks"]) == 1  # the cue parks at the first tick, and nothing wakes the run again
    cue = db.autocommit(lambda tx: tx.one("SELECT id, idempotency_key FROM event_run_steps WHERE run_id = %s", (run.id,)))
    [line] = [json.loads(text) for text in lambda_log.getvalue().splitlines() if '"channel"' in text]
    assert line["message"] == (
        f"cue channel: Cue: Light the bonfire\nRun {run.id} · Phase 1 · step 1 (Light the bonfire): confirm it once done, or"
        " skip it.\n"
        f"{CONSOLE}#/runs/{run.id}"
    )
    assert line["level"] == "WARNING" and line["correlation_id"] == SCHEDULED_EVENT["id"]
    assert (line["run_id"], line["step_id"], line["kind"], line["idempotency_key"]) == (
        run.id, cue["id"], "cue", cue["idempotency_key"])
