"""The tick's figures as the metrics the alarms and graphs read: the engine names them, `observability` publishes.

Invariant: a verdict or a run status is spelled here only as the engine's own enum (`Verdict`, `RunStatus`), so
the metric names follow the lifecycle's words, and `observability` knows no status. `counts` turns an
invocation's tick totals (`lambda_handler.invocation_totals`) into `{metric name: count}`, every name present
(a zero included: `observability` leaves zeros out, which is its rule, not this module's).
"""

from __future__ import annotations

from typing import Any

from ..actions.outcome import Verdict
from ..lifecycle import RunStatus

# What each step dispatch came to.
VERDICT_METRICS = {
    Verdict.DONE: "StepsDone",
    Verdict.PARKED: "StepsParked",
    Verdict.RETRY: "StepsRetried",
    Verdict.REFUSED: "StepsRefused",
    Verdict.FAILED: "StepsFailed",
}
# The run statuses a tick leaves runs in that someone may need to hear of (the others are counted by no metric).
STATUS_METRICS = {
    RunStatus.COMPLETED: "RunsCompleted",
    RunStatus.PAUSED: "RunsPaused",
    RunStatus.MISSED: "RunsMissed",
    RunStatus.FAILED: "RunsFailed",
}
# The tick report's own counters (`TickReport.summary`'s keys).
COUNTER_METRICS = {
    "dispatched": "StepsDispatched",
    "requeued": "StepsReclaimed",
    "gave_up": "StepsGivenUp",
    "started": "RunsStarted",
    "errors": "RunErrors",
    "reminders": "CueReminders",
    "escalations": "Escalations",
}
NAMES = frozenset({*VERDICT_METRICS.values(), *STATUS_METRICS.values(), *COUNTER_METRICS.values()})


def counts(totals: dict[str, Any]) -> dict[str, int]:
    """An invocation's tick totals as `{metric name: count}`."""
    outcomes, statuses = totals.get("outcomes") or {}, totals.get("statuses") or {}
    named = {name: int(totals.get(key) or 0) for key, name in COUNTER_METRICS.items()}
    named |= {name: int(outcomes.get(verdict.value, 0)) for verdict, name in VERDICT_METRICS.items()}
    named |= {name: int(statuses.get(status.value, 0)) for status, name in STATUS_METRICS.items()}
    return named
