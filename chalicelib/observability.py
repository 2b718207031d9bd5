"""Logs and metrics of both functions: JSON lines with a correlation id, and EMF metrics.

Every `chalicelib` logger writes through one Powertools formatter, so each line
carries the service, the invocation's correlation id (the API request id, or the
EventBridge event id of a tick) and whatever keys the invocation appended
(`run_id`, `step_id`). A tick invocation's metrics are flushed once, as one EMF
document on standard output, when it ends, and an API request's as it ends
(either only when it recorded any); the API's `NudgeFailed` is written as its own
document when it happens (`publish_now`). CloudWatch turns those into metrics
without an API call, so metrics cost no outbound route.

A count is published only when something happened: CloudWatch bills each metric
for every hour in which it is published, and every alarm on a count treats
missing data as fine (`notBreaching`, which `tests/test_infra_templates.py`
holds the template to), so a zero would buy nothing an absent figure does not.
So is `ResourcesLeft`, a level no alarm reads (its graph's gap means none is
left), and `DueLagSeconds` only when a tick found due work. The two wait ages
are published by every invocation that reached the database, 0 included: their
alarms keep their state through missing data, and an invocation cannot know
that the wait it no longer sees just ended, so only its 0 returns them to OK.
The invocation's wall time is no metric of ours: Lambda's own `Duration` is that
figure, free (and the invocation's log line carries `seconds`).
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

logger = logging.getLogger(__name__)

SERVICE = "event-run-engine"
DEFAULT_NAMESPACE = "EventRunEngine"
PACKAGE_LOGGER = "chalicelib"

_structured: Logger | None = None
_metrics: Metrics | None = None


def structured_logger() -> Logger:
    """The Powertools logger every `chalicelib` logger writes through (set up on first use)."""
    global _structured
    if _structured is None:
        _structured = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", SERVICE))
        package = logging.getLogger(PACKAGE_LOGGER)
        # One handler on the package's parent logger: its children propagate to it, and
        # Lambda's root handler (at WARNING) never sees them twice.
        package.handlers = [_structured.registered_handler]
        package.setLevel(_structured.log_level)
        package.propagate = False
    return _structured


def _namespace() -> str:
    return os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_NAMESPACE


def metrics() -> Metrics:
    global _metrics
    if _metrics is None:
        # The service dimension the alarms read, named as the logger names it: never left to whichever environment
        # the process had when it first published (the API's and the tick's metrics are one set in a process).
        _metrics = Metrics(service=os.environ.get("POWERTOOLS_SERVICE_NAME", SERVICE),
                           namespace=_namespace())
    return _metrics


def publish_now(name: str) -> None:
    """One count of `name`, written at once as an EMF document of its own (the API flushes no board)."""
    service = os.environ.get("POWERTOOLS_SERVICE_NAME", SERVICE)  # the dimension the alarms read
    with single_metric(name=name, unit=MetricUnit.Count, value=1, namespace=_namespace(),
                       default_dimensions={"service": service}):
        pass


def http_middleware(request: Any, get_response: Callable[[Any], Any]) -> Any:
    """Chalice HTTP middleware: the API Gateway request id is the correlation id of every line."""
    log = structured_logger()
    log.set_correlation_id((request.context or {}).get("requestId"))
    try:
        return get_response(request)
    finally:
        _flush_recorded()
        log.set_correlation_id(None)


def scheduled_middleware(event: Any, get_response: Callable[[Any], Any]) -> Any:
    """Chalice scheduled-event middleware: the EventBridge event id correlates a tick's lines; metrics flushed at the end."""
    log = structured_logger()
    log.set_correlation_id(getattr(event, "event_id", None))
    context = getattr(event, "context", None)
    if context is not None:
        log.append_keys(function_request_id=getattr(context, "aws_request_id", None))
    try:
        summary = get_response(event)
        if isinstance(summary, dict):
            record_tick_metrics(summary)
        return summary
    finally:
        _flush_recorded()
        log.set_correlation_id(None)


def _flush_recorded() -> None:
    """The metrics recorded so far, as one EMF document. Most API requests record none, and so does a tick
    invocation that failed (its schema behind): then no line, and no warning from Powertools about it."""
    board = metrics()
    if board.metric_set:
        board.flush_metrics()


DATABASE_UNREACHABLE = "DatabaseUnreachable"
BACKSTOP_WAKES = "BackstopWakes"
SLEEP_FAILED = "SleepFailed"  # the tick's sleeps that could not be set (its wake-ups or its rule refused)
NUDGE_FAILED = "NudgeFailed"  # the API's: a nudge whose rule or invoke failed (nudge.py)
RESOURCES_LEFT = "ResourcesLeft"  # resources whose revert failed and a person accepted or has not retried yet
DATABASE_UNAVAILABLE_ANSWERS = "DatabaseUnavailableAnswers"
# The longest waits for a person, 0 when none: published whenever read, the 0 included (the module's rule).
WAIT_AGES = {"parked_cue_age_seconds": "ParkedCueAgeSeconds", "paused_run_age_seconds": "PausedRunAgeSeconds"}


def record_database_unavailable_answer() -> None:
    """One API answer refused (503) because no connection to the database could be made in time: a resume from a
    pause, not a bug, so Api5xxAlarm subtracts these from API Gateway's 5XXError. Flushed as the request ends."""
    metrics().add_metric(name=DATABASE_UNAVAILABLE_ANSWERS, unit=MetricUnit.Count, value=1)


def record_tick_metrics(summary: dict[str, Any]) -> None:
    """Add one invocation's figures (its summary) to the metrics to be flushed: its counts that are not zero
    (`counts`, named by the engine: `events/runner/tick_metrics.py`), the wait ages it read and the longest due
    lag its ticks met (the module's rule)."""
    ticks = summary.get("ticks") or []
    counts: Counter[str] = Counter(summary.get("counts") or {})
    # 1 when the database stayed out of reach for the whole invocation: it ends normally
    # (the next minute retries), so Lambda's own Errors metric never sees the outage.
    counts[DATABASE_UNREACHABLE] = int(bool(summary.get("database_unreachable")))
    # 1 when a sleep's backstop had to wake the engine: its wake-up was spent without waking it.
    counts[BACKSTOP_WAKES] = int(bool(summary.get("backstop_woke")))
    # The sleeps this invocation could not set: it stays awake, a minute at a time, for as long as they fail.
    counts[SLEEP_FAILED] = summary.get("sleep_failed", 0)
    counts[RESOURCES_LEFT] = summary.get("resources_left") or 0
    board = metrics()
    for name, value in counts.items():
        if value:
            board.add_metric(name=name, unit=MetricUnit.Count, value=value)
    lags = [t["due_lag_seconds"] for t in ticks if t.get("due_lag_seconds") is not None]
    if lags:
        board.add_metric(name="DueLagSeconds", unit=MetricUnit.Seconds, value=max(lags))
    for key, name in WAIT_AGES.items():
        if summary.get(key) is not None:  # None: the invocation read no wait (the database out of reach)
            board.add_metric(name=name, unit=MetricUnit.Seconds, value=summary[key])
