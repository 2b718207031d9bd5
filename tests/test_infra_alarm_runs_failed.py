"""A run that ends failed raises RunsFailedAlarm: the tick Lambda's invocation publishes RunsFailed, the metric the
packaged template's alarm reads (its namespace, dimension and threshold).

Invariant: a run the tick leaves `failed` (a document it cannot walk here; a step failing under on_failure:
abort_run or giving up at its attempt ceiling alike) is counted in the invocation's EMF document, and an alarm on
that count notifies the alarm topic. Before it, RunsPausedOrMissedAlarm read paused and missed runs alone, and a
failed one (over, nothing waiting for a person) was silent.
"""


import pytest

from chalicelib import observability, runtime
from chalicelib.config import Settings
from chalicelib.events.lifecycle import RunStatus
from devtools.kit.lambda_invocation import SCHEDULED_EVENT, InjectedTime, lambda_context
from tests.support import cfn
from tests.support.emf import emf_documents, fresh_metrics, metric_names, metric_value  # noqa: F401 — fresh_metrics: autouse
from tests.support.factory import run_row
from tests.support.runner_kit import schedule


def published(out: str) -> dict[str, float]:
    [emf] = emf_documents(out)
    return {name: metric_value(emf, name) for name in metric_names(emf)}


def test_a_run_that_ends_failed_publishes_the_count_its_alarm_reads(db, clock, monkeypatch, capsys):
    import app

    InjectedTime(clock).install(monkeypatch)
    broken = schedule(db, clock.now(), {"name": "broken", "phases": [{"name": "p", "steps": [{"params": {}}]}]})
    with runtime.override(settings=Settings(), database=db, clock=clock):
        capsys.readouterr()
        app.tick(SCHEDULED_EVENT, lambda_context())
    assert run_row(db, broken.id).status is RunStatus.FAILED
    assert published(capsys.readouterr().out)["RunsFailed"] == 1


@pytest.mark.packaging
def test_runs_failed_alarm_reads_that_count_and_notifies_the_alarm_topic():
    alarm = cfn.packaged_app()["Resources"]["RunsFailedAlarm"]["Properties"]
    assert (alarm["Namespace"], alarm["MetricName"]) == ({"Ref": "MetricsNamespace"}, "RunsFailed")
    assert alarm["Dimensions"] == [{"Name": "service", "Value": observability.SERVICE}]
    assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == ("Sum", 1, "GreaterThanOrEqualToThreshold")
    assert alarm["TreatMissingData"] == "notBreaching" and alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]
