"""Definitions as authored: validating a document, saving versions, scheduling a run.

`validate()` reports every problem of a document at once (an author fixing a
ten-step event wants the whole list, not one error per attempt). The structure
is checked against `DOCUMENT_SCHEMA` — the same schema the OpenAPI document
publishes — part by part, so one bad step does not hide the next; then each step
is checked against the action registry and its action's params schema, and the
schedule as standard five-field cron in an IANA time zone (`cron`).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from ..db import Database, Tx, must_exist
from ..schema_check import first_error
from . import cron
from .actions import registry
from .errors import Conflict, Invalid, NotFound
from .model import Definition, OnFailure, Run
from .occurrences import DEFAULT_GRACE_SECONDS, MIN_GRACE_SECONDS, grace_seconds_of, schedule_occurrence
from .store import definitions as store

MAX_GRACE_SECONDS = 24 * 3600
# How far ahead a person may schedule a run: a year, leap years included. Far
# enough for any event calendar, and far from where date arithmetic overflows.
MAX_SCHEDULE_AHEAD = timedelta(days=366)

STEP_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["action"],
    "properties": {
        "action": {"type": "string", "minLength": 1, "maxLength": 100},
        "params": {"type": "object"},
        "version": {"type": "integer", "minimum": 1, "maximum": 1000},
        "on_failure": {"type": "string", "enum": [o.value for o in OnFailure]},
    },
}
PHASE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["steps"],
    "properties": {
        "name": {"type": "string", "maxLength": 200},
        "steps": {"type": "array", "minItems": 1, "maxItems": 200, "items": STEP_SCHEMA},
    },
}
DOCUMENT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "phases"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"\S"},
        "grace_seconds": {
            "type": "integer", "minimum": MIN_GRACE_SECONDS, "maximum": MAX_GRACE_SECONDS,
            "description": f"how late a run may still start (default {DEFAULT_GRACE_SECONDS})",
        },
        "phases": {"type": "array", "minItems": 1, "maxItems": 50, "items": PHASE_SCHEMA},
        "ending": {"type": "array", "maxItems": 200, "items": STEP_SCHEMA},
        "schedule": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "required": ["cron"],
            "properties": {
                "cron": {"type": "string", "minLength": 1, "maxLength": 120},
                "timezone": {"type": "string", "minLength": 1, "maxLength": 64},
            },
        },
    },
}
# The params of a module action travel to the game bridge as JSON; this bounds them.
MAX_PARAMS_BYTES = 16 * 1024


# ── validation ─────────────────────────────────────────────────────────────
def _schema_problems(schema: dict, value: Any, path: str) -> list[str]:
    """Every part of `value` that breaks `schema`: objects and arrays are walked, leaves checked whole."""
    if "properties" in schema and isinstance(value, dict):
        problems = [f"{path}.{key} is not a known field" for key in value if key not in schema["properties"]]
        problems += [f"{path}.{key} is required" for key in schema.get("required", ()) if key not in value]
        for key, sub in schema["properties"].items():
            if key in value:
                problems += _schema_problems(sub, value[key], f"{path}.{key}")
        return problems
    if "items" in schema and isinstance(value, list):
        shell = {k: v for k, v in schema.items() if k != "items"}
        problems = [p for p in [first_error(shell, value, path)] if p]
        for i, item in enumerate(value):
            problems += _schema_problems(schema["items"], item, f"{path}[{i}]")
        return problems
    return [p for p in [first_error(schema, value, path)] if p]


def _step_problems(step: dict, path: str) -> list[str]:
    spec = registry.lookup(step["action"])
    if spec is None:
        return [f"{path}.action: no action {step['action']!r} (core.wait, core.cue, core.announce or module.name)"]
    problems = []
    version = step.get("version", 1)
    if spec.versions and version not in spec.versions:
        problems.append(f"{path}.version: {spec.id} has no version {version} (it has {list(spec.versions)})")
    params = step.get("params", {})
    problems += [p for p in [registry.params_problem(spec, params, f"{path}.params")] if p]
    if len(json.dumps(params)) > MAX_PARAMS_BYTES:
        problems.append(f"{path}.params: larger than {MAX_PARAMS_BYTES} bytes")
    return problems


def _schedule_problems(schedule: dict) -> list[str]:
    problems = []
    if isinstance(schedule.get("cron"), str):
        problems += [f"document.schedule.cron: {p}" for p in cron.cron_problems(schedule["cron"])]
    if isinstance(schedule.get("timezone"), str):
        problems += [f"document.schedule.timezone: {p}" for p in cron.timezone_problems(schedule["timezone"])]
    return problems


def _normalised_step(step: dict) -> dict:
    return {
        "action": step["action"],
        "params": step.get("params", {}),
        "version": step.get("version", 1),
        "on_failure": step.get("on_failure", OnFailure.PAUSE.value),
    }


def _authored_steps(document: dict):
    """(path, step) for every well-formed step, wherever the rest of the document is broken."""
    phases = document.get("phases")
    for i, phase in enumerate(phases if isinstance(phases, list) else []):
        phase_steps = phase.get("steps") if isinstance(phase, dict) else None
        for j, step in enumerate(phase_steps if isinstance(phase_steps, list) else []):
            yield f"document.phases[{i}].steps[{j}]", step
    ending = document.get("ending")
    for j, step in enumerate(ending if isinstance(ending, list) else []):
        yield f"document.ending[{j}]", step


def validate(document: Any) -> dict:
    """The document with its defaults filled in, or Invalid listing every problem."""
    problems = _schema_problems(DOCUMENT_SCHEMA, document, "document")
    if isinstance(document, dict):
        for path, step in _authored_steps(document):
            if first_error(STEP_SCHEMA, step, path) is None:
                problems += _step_problems(step, path)
        schedule = document.get("schedule")
        if isinstance(schedule, dict):
            problems += _schedule_problems(schedule)
    if problems:
        raise Invalid(*problems)
    return {
        "name": document["name"].strip(),
        "grace_seconds": document.get("grace_seconds", DEFAULT_GRACE_SECONDS),
        "phases": [
            {"name": phase.get("name") or f"phase {i + 1}", "steps": [_normalised_step(s) for s in phase["steps"]]}
            for i, phase in enumerate(document["phases"])
        ],
        "ending": [_normalised_step(s) for s in document.get("ending", [])],
        "schedule": document.get("schedule") or None,  # without a timezone: UTC
    }


# ── writes ─────────────────────────────────────────────────────────────────
def create(db: Database, document: Any, *, actor: str, now: datetime) -> Definition:
    """A new definition at version 1, from a document that passes `validate`."""
    valid = validate(document)
    return db.transaction(lambda tx: store.create(tx, valid, actor=actor, now=now))


def add_version(db: Database, definition_id: int, document: Any, *, actor: str, now: datetime) -> Definition:
    """The definition's next version; NotFound if there is no such definition."""
    valid = validate(document)
    definition = db.transaction(lambda tx: store.add_version(tx, definition_id, valid, actor=actor, now=now))
    if definition is None:
        raise NotFound(f"no definition {definition_id}")
    return definition


def schedule_run(
    db: Database, definition_id: int, scheduled_for: datetime, *, actor: str, now: datetime
) -> tuple[Run, bool]:
    """The run of one occurrence of the definition's current version: (run, created).

    The same occurrence twice is the same run (its key is unique) while that run
    is live; once it has finished it can never run again, so asking again is a
    Conflict that says so. A time in the past but inside the grace window is
    accepted — the next tick starts it — and one beyond it is refused, since the
    tick would only mark it missed. One further ahead than MAX_SCHEDULE_AHEAD is
    refused before the database is asked.
    """
    if scheduled_for - now > MAX_SCHEDULE_AHEAD:
        raise Invalid(
            f"scheduled_for is more than {MAX_SCHEDULE_AHEAD.days} days ahead; a run may be scheduled at most that far"
        )

    def work(tx: Tx) -> tuple[Run, bool]:
        definition = store.get(tx, definition_id)
        if definition is None:
            raise NotFound(f"no definition {definition_id}")
        version = must_exist(store.get_version(tx, definition.id, definition.current_version))
        grace = grace_seconds_of(version.document)
        if scheduled_for + timedelta(seconds=grace) < now:
            raise Invalid(
                f"scheduled_for is more than the definition's grace window ({grace} s) in the past;"
                " the run could only be missed"
            )
        run, created = schedule_occurrence(tx, version, scheduled_for, actor=actor, cause=f"scheduled by {actor}", now=now)
        if run.status.terminal:
            raise Conflict(
                f"the run of this occurrence (run {run.id}) is {run.status.value} and will not run again;"
                " a run at another time is a new occurrence"
            )
        return run, created

    return db.transaction(work)
