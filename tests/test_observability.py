"""Logs are JSON lines carrying the invocation's correlation id; a tick's metrics leave as one EMF document,
its counts only when not zero."""

from __future__ import annotations

import io
import logging
from datetime import timedelta
from types import SimpleNamespace

import pytest
from chalice.app import CloudWatchEvent

from chalicelib import observability, runtime
from chalicelib.config import Settings
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.runner.lambda_handler import invocation_totals
from chalicelib.events.runner.tick_metrics import counts
from devtools.kit.lambda_invocation import SCHEDULED_EVENT, InjectedTime, lambda_context
from tests.support.emf import emf_documents, fresh_metrics, json_lines, metric_names, metric_value  # noqa: F401 — fresh_metrics: autouse
from tests.support.factory import document, run_row
from tests.support.runner_kit import schedule, step


@pytest.fixture
def log_stream():
    """What the engine's log handler writes (in Lambda, standard output)."""
    stream = io.StringIO()
    handler = observability.structured_logger().registered_handler
    previous = handler.setStream(stream)
    yield stream
    handler.setStream(previous)


def test_an_engine_info_line_is_json_with_the_api_request_id_even_with_the_root_logger_at_warning(log_stream):
    logging.getLogger().setLevel(logging.WARNING)  # as Lambda leaves it
    request = SimpleNamespace(context={"requestId": "req-42"})

    def answer(_request):
        logging.getLogger("chalicelib.events.adapters.channels").info("cue for run 7", extra={"run_id": 7})
        return "ok"

    assert observability.http_middleware(request, answer) == "ok"
    [line] = [entry for entry in json_lines(log_stream.getvalue()) if entry.get("message") == "cue for run 7"]
    assert line["level"] == "INFO" and line["correlation_id"] == "req-42" and line["run_id"] == 7
    assert line["service"] == "event-run-engine"


def test_a_tick_invocation_flushes_its_figures_as_named_emf_metrics_with_the_event_id_as_correlation(log_stream, capsys):
    event = CloudWatchEvent(SCHEDULED_EVENT, SimpleNamespace(aws_request_id="lambda-req-1"))
    tick = {
        "dispatched": 5, "requeued": 1, "gave_up": 0, "started": 2, "errors": 1,
        "outcomes": {"done": 3, "parked": 1, "retry": 1}, "statuses": {"paused": 1, "completed": 1},
        "due_lag_seconds": 0.4,
    }

    ticks = [tick, dict(tick, due_lag_seconds=1.5)]

    def run_ticks(_event):
        logging.getLogger("chalicelib.events.runner").warning("a run failed inside the tick")
        return {"ticks": ticks, "counts": counts(invocation_totals(ticks)), "seconds": 58.0,
                "parked_cue_age_seconds": 600.0, "paused_run_age_seconds": 0.0, "resources_left": 2,
                "backstop_woke": True, "sleep_failed": 1}

    observability.scheduled_middleware(event, run_ticks)
    [warning] = [entry for entry in json_lines(log_stream.getvalue()) if entry.get("message") == "a run failed inside the tick"]
    assert warning["correlation_id"] == SCHEDULED_EVENT["id"]
    [emf] = emf_documents(capsys.readouterr().out)
    assert emf["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "EngineTest"
    # Its non-zero counts and its gauges; no zero (StepsGivenUp, DatabaseUnreachable), no wall time (Lambda's Duration)
    assert metric_names(emf) == {"StepsDispatched", "StepsReclaimed", "RunsStarted", "RunErrors", "StepsDone", "StepsParked",
                           "StepsRetried", "RunsPaused", "RunsCompleted", "DueLagSeconds", "ParkedCueAgeSeconds",
                           "PausedRunAgeSeconds", "ResourcesLeft", "BackstopWakes", "SleepFailed"}
    assert metric_value(emf, "StepsDispatched") == 10 and metric_value(emf, "RunsPaused") == 2 and metric_value(emf, "RunErrors") == 2
    assert metric_value(emf, "DueLagSeconds") == 1.5 and metric_value(emf, "ParkedCueAgeSeconds") == 600.0
    assert metric_value(emf, "PausedRunAgeSeconds") == 0 and metric_value(emf, "ResourcesLeft") == 2
    assert metric_value(emf, "BackstopWakes") == 1 and metric_value(emf, "SleepFailed") == 1


def test_an_invocation_with_nothing_to_do_publishes_only_the_two_wait_ages_at_zero(db, clock, monkeypatch, capsys):
    """CloudWatch bills a metric for every hour it is published: an idle wake publishes the two figures whose
    alarms need a 0 to return to OK, and no count at 0."""
    import app

    InjectedTime(clock).install(monkeypatch)
    with runtime.override(settings=Settings(), database=db, clock=clock):
        summary = app.tick(SCHEDULED_EVENT, lambda_context())
    assert not any(tick["dispatched"] or tick["started"] for tick in summary["ticks"])
    [emf] = emf_documents(capsys.readouterr().out)
    assert metric_names(emf) == {"ParkedCueAgeSeconds", "PausedRunAgeSeconds"}
    assert metric_value(emf, "ParkedCueAgeSeconds") == metric_value(emf, "PausedRunAgeSeconds") == 0


def test_an_invocation_that_never_reached_the_database_publishes_that_alone(capsys):
    """It read no wait, so it publishes no wait's age (the alarms keep their state); the outage's count is what
    DatabaseUnreachableAlarm reads."""
    from chalicelib.events.runner.lambda_handler import NOTHING_TICKED

    event = CloudWatchEvent(SCHEDULED_EVENT, SimpleNamespace(aws_request_id="lambda-req-2"))
    observability.scheduled_middleware(event, lambda _event: {**NOTHING_TICKED, "seconds": 55.0, "database_unreachable": True})
    [emf] = emf_documents(capsys.readouterr().out)
    assert metric_names(emf) == {"DatabaseUnreachable"} and metric_value(emf, "DatabaseUnreachable") == 1


def test_a_real_tick_invocation_reports_started_runs_due_lag_and_the_oldest_parked_cue(db, clock, monkeypatch, capsys):
    import app

    InjectedTime(clock).install(monkeypatch)
    parked = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire")]]))
    with runtime.override(settings=Settings(), database=db, clock=clock):
        app.tick(SCHEDULED_EVENT, lambda_context())  # the cue parks; the next invocation finds it waiting
        clock.advance(600)
        late = schedule(db, clock.now() - timedelta(seconds=20), document([[step("core.announce", message="Gates open")]]))
        capsys.readouterr()
        summary = app.tick(SCHEDULED_EVENT, lambda_context())
    assert run_row(db, late.id).status is RunStatus.COMPLETED and run_row(db, parked.id).status is RunStatus.RUNNING
    [emf] = emf_documents(capsys.readouterr().out)
    assert metric_value(emf, "RunsStarted") == 1 and metric_value(emf, "RunsCompleted") == 1 and metric_value(emf, "StepsDone") == 1
    assert metric_value(emf, "DueLagSeconds") >= 20  # it was due 20 s before this invocation's first tick
    assert 600 <= metric_value(emf, "ParkedCueAgeSeconds") < 700
    assert summary["resources_left"] == 0 and "ResourcesLeft" not in metric_names(emf)  # nothing any cleanup left behind
    assert summary["seconds"] >= 0


def test_an_invocations_log_line_sums_its_ticks_so_it_does_not_grow_with_them(db, clock, monkeypatch, log_stream):
    import app

    InjectedTime(clock).install(monkeypatch)
    for offset in range(4):  # four runs due a second apart: four ticks
        schedule(db, clock.now() + timedelta(seconds=offset), document([[step("core.announce", message="Gates open")]]))
    with runtime.override(settings=Settings(), database=db, clock=clock):
        summary = app.tick(SCHEDULED_EVENT, lambda_context())
    assert len(summary["ticks"]) >= 4  # the handler still answers every tick's summary
    [line] = [entry for entry in json_lines(log_stream.getvalue()) if entry.get("message") == "tick invocation finished"]
    assert line["ticks"]["count"] == len(summary["ticks"])
    assert line["ticks"]["dispatched"] == line["ticks"]["started"] == 4
    assert line["ticks"]["outcomes"] == {"done": 4} and line["ticks"]["statuses"] == {"completed": 4}
    assert line["ticks"]["due_lag_seconds"] == max(t["due_lag_seconds"] or 0 for t in summary["ticks"])
    assert "now" not in line["ticks"]


def _alarm_state(alarm: dict, value: float, parameters: dict) -> str:
    """What CloudWatch makes of one published figure under the alarm's own threshold and comparison."""
    properties = alarm["Properties"]
    threshold = parameters[properties["Threshold"]["Ref"]]["Default"]
    compare = {"GreaterThanThreshold": float.__gt__, "GreaterThanOrEqualToThreshold": float.__ge__}[properties["ComparisonOperator"]]
    return "ALARM" if compare(float(value), float(threshold)) else "OK"


def test_the_wait_alarms_return_to_ok_once_the_wait_ends(db, clock, monkeypatch, capsys):
    """A cue confirmed and a paused run resumed: the next invocation publishes ParkedCueAgeSeconds and
    PausedRunAgeSeconds as 0, so their alarms (which ignore missing data) go back to OK instead of keeping
    the last figure's ALARM for good."""
    import app
    from chalicelib.events import commands
    from chalicelib.events.store import steps
    from tests.support import cfn

    InjectedTime(clock).install(monkeypatch)
    cue_run = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire")]]))
    paused = schedule(db, clock.now(), document([[step("core.cue", instruction="Open the gates")]]))
    figures = []
    with runtime.override(settings=Settings(), database=db, clock=clock):
        app.tick(SCHEDULED_EVENT, lambda_context())  # both cues park
        commands.pause(db, paused.id, actor="mod", now=clock.now())
        clock.advance(900)
        for ends_the_waits in (False, True):
            if ends_the_waits:
                commands.resume(db, paused.id, actor="mod", now=clock.now())
                for run in (cue_run, paused):
                    cue = db.autocommit(lambda tx, run=run: steps.list_for_run(tx, run.id))[0]
                    commands.confirm(db, run.id, cue.id, actor="gm", now=clock.now())
            capsys.readouterr()
            app.tick(SCHEDULED_EVENT, lambda_context())
            [emf] = emf_documents(capsys.readouterr().out)
            figures.append(emf)
    template = cfn.load(cfn.APP_TEMPLATE)
    for alarm_name, metric in (("ParkedCueAlarm", "ParkedCueAgeSeconds"), ("PausedRunAlarm", "PausedRunAgeSeconds")):
        alarm = template["Resources"][alarm_name]
        waiting, over = (metric_value(emf, metric) for emf in figures)
        assert _alarm_state(alarm, waiting, template["Parameters"]) == "ALARM", (metric, waiting)
        assert over == 0 and _alarm_state(alarm, over, template["Parameters"]) == "OK", metric
