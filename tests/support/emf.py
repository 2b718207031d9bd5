"""The metrics a test reads back from what the engine prints: EMF documents (CloudWatch's embedded metric format),
each metric's name and value, and a fresh Powertools metrics object for every test that uses `fresh_metrics`."""

from __future__ import annotations

import json

import pytest

from chalicelib import observability


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def emf_documents(out: str) -> list[dict]:
    return [entry for entry in json_lines(out) if "_aws" in entry]


def metric_names(emf: dict) -> set[str]:
    """The metrics an EMF document publishes."""
    [directive] = emf["_aws"]["CloudWatchMetrics"]
    return {metric["Name"] for metric in directive["Metrics"]}


def metric_value(emf: dict, name: str) -> float:
    """One metric's value in an EMF document (Powertools writes each as a list)."""
    return emf[name][0] if isinstance(emf[name], list) else emf[name]


@pytest.fixture(autouse=True)
def fresh_metrics(monkeypatch):
    """A metrics object of this test's own, in a namespace of the tests', cleared after."""
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "EngineTest")
    monkeypatch.setattr(observability, "_metrics", None)
    yield
    observability.metrics().clear_metrics()
