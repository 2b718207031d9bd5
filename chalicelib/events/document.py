"""The definition document: its JSON schema, validation and defaults (`programme.py` reads a stored one as the runner walks it).

`validate()` reports every problem of a document at once (an author fixing a ten-step event wants the whole
list, not one error per attempt). The structure is checked against `DOCUMENT_SCHEMA` — the same schema the
OpenAPI document publishes — part by part, so one bad step does not hide the next; then each step is checked
against the action registry and its params schema, and the schedule as five-field cron in an IANA time zone.

A stored document is walked through `programme.programme_of`. It is never validated again, so a rule added
here binds what is saved and previewed from then on, and a version saved before it keeps loading and running
as stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..schema_check import SOMETHING_SHOWN, first_error, unknown_fields
from . import branching, cron, ledger
from .actions import registry
from .errors import Invalid
from .lifecycle import (
    OVERLAP_WORDS,
    CleanupOn,
    ConditionKind,
    OnDoubt,
    OnFailure,
    OnTimeout,
    Overlap,
)
from .names import name_problems
from .nearest import Nearest

DEFAULT_GRACE_SECONDS = 300
# A tick comes every few seconds to a minute; a shorter window would miss the
# run by construction. Fixed here, not a setting, so a document valid in one
# stage is valid in all.
MIN_GRACE_SECONDS = 60


def grace_seconds_of(document: dict[str, Any]) -> int:
    """The grace window a run of this document gets: versions stored before the minimum get the minimum."""
    return max(MIN_GRACE_SECONDS, int(document.get("grace_seconds", DEFAULT_GRACE_SECONDS)))


# ── validation ────────────────────────────────────────────────────────────
MAX_GRACE_SECONDS = 24 * 3600

STEP_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["action"],
    "properties": {
        "action": {"type": "string", "minLength": 1, "maxLength": 100, "title": "Action"},
        "params": {"type": "object", "title": "Params"},
        "version": {"type": "integer", "minimum": 1, "maximum": 1000, "title": "Action version"},
        "on_failure": {"type": "string", "enum": [o.value for o in OnFailure], "title": "If it fails"},
        "on_doubt": {"type": "string", "enum": [o.value for o in OnDoubt], "title": "If its outcome is unknown",
                     "description": "a step in doubt (its outcome unknown): resend it (the default), or park it"
                                    " for a person's decision (a module action or core.announce: a wait or a cue takes none)"},
        "revert": ledger.REVERT_SCHEMA,
        "name": branching.STEP_NAME_SCHEMA,
        "only_if": branching.ONLY_IF_SCHEMA,
    },
}
# What must be met before a drained phase is left (docs/contract.md, "Phases that follow the game"):
# `lifecycle.ConditionKind`, each typed as its condition (`lifecycle.condition_of`).
MAX_PHASE_SECONDS = 7 * 24 * 3600
SIGNAL_NAME = branching.NAME
_PHASE_SECONDS = {"type": "integer", "minimum": 1, "maximum": MAX_PHASE_SECONDS}
ADVANCE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["when"],
    "title": "When the phase ends",
    "properties": {
        "when": {"type": "string", "enum": [kind.value for kind in ConditionKind], "title": "Ends when",
                 "description": "steps_done (default): when its steps are done; manual: when a person advances it; "
                                "after: `seconds` after it opened; signal: when the signal `name` is received"},
        "seconds": {**_PHASE_SECONDS, "title": "Lasts (seconds)", "description": "after: how long the phase lasts, 1 s to 7 days"},
        "name": {"type": "string", "pattern": SIGNAL_NAME, "title": "Signal name", "description": "signal: the signal's name"},
        "timeout_seconds": {**_PHASE_SECONDS, "title": "Time limit (seconds)",
                            "description": "steps_done, manual, signal: a time limit, 1 s to 7 days"},
        "on_timeout": {"type": "string", "enum": [action.value for action in OnTimeout], "title": "At the time limit",
                       "description": "at the time limit: advance (default) closes the phase, pause pauses the run once"},
    },
}
# Which fields each `when` takes besides itself (the schema cannot say it; `_advance_problems` does).
_ADVANCE_FIELDS = {
    ConditionKind.STEPS_DONE: {"timeout_seconds", "on_timeout"},
    ConditionKind.MANUAL: {"timeout_seconds", "on_timeout"},
    ConditionKind.AFTER: {"seconds"},
    ConditionKind.SIGNAL: {"name", "timeout_seconds", "on_timeout"},
}
_ADVANCE_NEEDS = {ConditionKind.AFTER: "seconds", ConditionKind.SIGNAL: "name"}
PHASE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["steps"],
    "properties": {
        "name": {"type": "string", "maxLength": 200, "pattern": SOMETHING_SHOWN, "title": "Phase name",
                 "description": "what notices and the console call the phase (default: phase N); only characters"
                                " that show, single plain spaces between words, as a definition's name"},
        "advance": ADVANCE_SCHEMA,
        "only_if": branching.ONLY_IF_SCHEMA,
        "steps": {"type": "array", "minItems": 1, "maxItems": 200, "items": STEP_SCHEMA, "title": "Steps"},
    },
}
DOCUMENT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "phases"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": SOMETHING_SHOWN, "title": "Name"},
        "grace_seconds": {"type": "integer", "minimum": MIN_GRACE_SECONDS, "maximum": MAX_GRACE_SECONDS,
                          "title": "Grace before a missed start (seconds)",
                          "description": f"how late a run may still start (default {DEFAULT_GRACE_SECONDS})"},
        "phases": {"type": "array", "minItems": 1, "maxItems": 50, "items": PHASE_SCHEMA, "title": "Phases"},
        "ending": {"type": "array", "maxItems": 200, "items": STEP_SCHEMA, "title": "Ending"},
        "cleanup_on": {"type": "array", "maxItems": len(CleanupOn), "uniqueItems": True, "title": "Clean up the game world when",
                       "items": {"type": "string", "enum": [when.value for when in CleanupOn]},
                       "description": "complete: revert what the run left after its ending; fail: before an"
                                      " abort_run fails it"},
        "schedule": {
            "type": ["object", "null"], "additionalProperties": False, "required": ["cron"], "title": "Schedule",
            "properties": {
                "cron": {"type": "string", "minLength": 1, "maxLength": 120, "title": "Repeats (cron: minute hour day month weekday)"},
                "timezone": {"type": "string", "minLength": 1, "maxLength": 64, "title": "Time zone"},
                "overlap": {"type": "string", "enum": [o.value for o in Overlap], "description": OVERLAP_WORDS,
                            "title": "When a run is still live"},
            },
        },
    },
}
# A module action's params travel to the game bridge as JSON; this bounds every step's, measured as `json.dumps`
# writes them: ASCII-escaped, as the bridge's body is, so a character beyond ASCII counts 6 bytes (\u00e9) and
# one beyond U+FFFF 12 (a surrogate pair).
MAX_PARAMS_BYTES = 16 * 1024
# ── validation ─────────────────────────────────────────────────────────────
def _schema_problems(schema: dict[str, Any], value: Any, path: str) -> list[str]:
    """Every part of `value` that breaks `schema`: objects and arrays are walked, leaves checked whole."""
    if "properties" in schema and isinstance(value, dict):
        problems = unknown_fields(schema, value, path)
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


def _step_problems(step: dict[str, Any], path: str, module_actions: frozenset[str] | None, nearest: Nearest) -> list[str]:
    action = step["action"]
    spec = registry.lookup(action)
    if spec is None or registry.undeclared(action, module_actions):
        return [f"{path}.action: {_unknown_action(action, module_actions, nearest)}"]
    problems = []
    version = step.get("version", 1)
    if spec.versions and version not in spec.versions:
        problems.append(f"{path}.version: {spec.id} has no version {version} (it has {list(spec.versions)})")
    params = step.get("params", {})
    problems += [p for p in [registry.params_problem(spec, params, f"{path}.params")
                             or registry.saved_problem(spec, params, f"{path}.params")] if p]
    problems += [f"{path}.{name}: {why}" for name, why in spec.step_fields_refused.items() if name in step]
    size = len(json.dumps(params))
    if size > MAX_PARAMS_BYTES:
        problems.append(f"{path}.params: larger than {MAX_PARAMS_BYTES} bytes as JSON sent to the game ({size:,} bytes;"
                        " a character beyond ASCII counts 6 bytes, 12 beyond U+FFFF)")
    if "revert" in step and "revert" not in spec.step_fields_refused:  # else refused whole, above
        problems += _revert_problems(step["revert"], f"{path}.revert", module_actions, nearest)
    return problems


def _revert_problems(revert: Any, path: str, module_actions: frozenset[str] | None, nearest: Nearest) -> list[str]:
    """A static revert is checked as a listed one is (`ledger.revert_problem`), and its action against the
    declared module actions as a step's is: a typo'd `wrold.despawn` is refused when saved, not sent at cleanup."""
    problem = ledger.revert_problem(revert, path)
    # guard: an-undeclared-static-revert-is-saved
    if problem is None and registry.undeclared(revert["action"], module_actions):
        problem = f"{path}.action: {_unknown_action(revert['action'], module_actions, nearest)}"
    return [problem] if problem else []


def _unknown_action(action: str, module_actions: frozenset[str] | None, nearest: Nearest) -> str:
    """Why `action` is no action a step may use, with the nearest one that is (a typo'd `wrold.spawn`)."""
    meant = nearest.of(action, [*registry.CORE_ACTIONS, *sorted(module_actions or ())])
    hint = f"; did you mean `{meant}`?" if meant else ""
    shown = action if len(action) <= 60 else action[:59] + "…"
    if module_actions is not None and registry.lookup(action) is not None:
        return f"no action {shown!r}: the game bridge declares no such module action (EVENT_MODULE_ACTIONS){hint}"
    return f"no action {shown!r}{hint or ' (core.wait, core.cue, core.announce or module.name)'}"


def undeclared_warnings(document: dict[str, Any], module_actions: frozenset[str] | None) -> list[dict[str, str]]:
    """A saved document's warnings: with no module actions declared, its module actions (its steps' and its static
    reverts') go to the bridge unchecked."""
    sent = sorted({action for _, step in _authored_steps(document)
                   for action in (step["action"], *([step["revert"]["action"]] if "revert" in step else ()))
                   if action not in registry.CORE_ACTIONS})
    if module_actions is not None or not sent:
        return []
    return [{"code": "module_actions_undeclared",
             "message": f"EVENT_MODULE_ACTIONS is not set, so {', '.join(sent)} cannot be checked: each goes to the game"
                        " bridge as written; declare the actions the bridge serves to have a typo refused when saved"}]


def _schedule_problems(schedule: dict[str, Any]) -> list[str]:
    problems = []
    if isinstance(schedule.get("cron"), str):
        problems += [f"document.schedule.cron: {p}" for p in cron.cron_problems(schedule["cron"])]
    if isinstance(schedule.get("timezone"), str):
        problems += [f"document.schedule.timezone: {p}" for p in cron.timezone_problems(schedule["timezone"])]
    return problems


def _normalised_step(step: dict[str, Any]) -> dict[str, Any]:
    return {
        "action": step["action"],
        "params": step.get("params", {}),
        "version": step.get("version", 1),
        "on_failure": step.get("on_failure", OnFailure.PAUSE.value),
        **({"revert": ledger.revert_of(step["revert"]).public()} if "revert" in step else {}),
        **({"on_doubt": step["on_doubt"]} if "on_doubt" in step else {}),
        **branching.normalised(step),
    }


def _authored_steps(document: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(path, step) for every well-formed step, wherever the rest of the document is broken."""
    phases = document.get("phases")
    for i, phase in enumerate(phases if isinstance(phases, list) else []):
        phase_steps = phase.get("steps") if isinstance(phase, dict) else None
        for j, step in enumerate(phase_steps if isinstance(phase_steps, list) else []):
            yield f"document.phases[{i}].steps[{j}]", step
    ending = document.get("ending")
    for j, step in enumerate(ending if isinstance(ending, list) else []):
        yield f"document.ending[{j}]", step


def _advance_problems(document: dict[str, Any]) -> list[str]:
    """What the schema cannot say about advance conditions: which fields each `when` takes, and a signal
    name used once (a signal ends one phase). The ending takes none (written as a phase, it is named)."""
    problems: list[str] = []
    signals: dict[str, int] = {}
    ending = document.get("ending")
    if isinstance(ending, dict) and "advance" in ending:
        problems.append("document.ending: the ending takes no advance condition (it is a list of steps, run to the end)")
    phases = document.get("phases")
    for i, phase in enumerate(phases if isinstance(phases, list) else []):
        advance = phase.get("advance") if isinstance(phase, dict) else None
        if not isinstance(advance, dict):
            continue  # the schema reports it
        when = advance.get("when")
        if not isinstance(when, str) or when not in _ADVANCE_FIELDS:
            continue  # the schema reports it (a `when` of any other type too: a dict is no key)
        kind = ConditionKind(when)
        path = f"document.phases[{i}].advance"
        for unwanted in sorted(set(advance) - {"when"} - _ADVANCE_FIELDS[kind]):
            problems.append(f"{path}.{unwanted}: a phase that advances {when!r} takes no {unwanted}"
                            + (" (after is a duration already)" if unwanted == "timeout_seconds" else ""))
        needed = _ADVANCE_NEEDS.get(kind)
        if needed is not None and needed not in advance:
            problems.append(f"{path}.{needed} is required when it advances {when!r}")
        # An on_timeout the `when` takes no time limit for is refused above: no timeout_seconds would mend it.
        if "on_timeout" in advance and "timeout_seconds" not in advance and "timeout_seconds" in _ADVANCE_FIELDS[kind]:
            problems.append(f"{path}.on_timeout: it needs a timeout_seconds")
        name = advance.get("name")
        if kind is ConditionKind.SIGNAL and isinstance(name, str):
            if name in signals:
                problems.append(f"{path}.name: the signal {name!r} already ends document.phases[{signals[name]}]")
            signals.setdefault(name, i)
    return problems


def _phase_name_problems(document: dict[str, Any]) -> list[str]:
    """A phase's name is echoed in channel notices and log causes: it holds only what shows, as a definition's
    does (a newline would forge a line under the engine's text, an override turn it around)."""
    phases = document.get("phases")
    return [problem for i, phase in enumerate(phases if isinstance(phases, list) else [])
            if isinstance(phase, dict) and isinstance(phase.get("name"), str)
            for problem in name_problems(phase["name"].strip(), f"document.phases[{i}].name")]


def validate(document: Any, module_actions: frozenset[str] | None = None) -> dict[str, Any]:
    """The document with its defaults filled in, or Invalid listing every problem. `module_actions`: the module
    actions the game bridge declares (EVENT_MODULE_ACTIONS), any other refused; None: any `module.name`."""
    problems = _schema_problems(DOCUMENT_SCHEMA, document, "document")
    if isinstance(document, dict):
        if isinstance(document.get("name"), str):
            problems += name_problems(document["name"].strip(), "document.name")
        problems += _phase_name_problems(document)
        nearest = Nearest()
        problems += _advance_problems(document) + branching.problems(document, nearest)
        for path, step in _authored_steps(document):
            if first_error(STEP_SCHEMA, step, path) is None:
                problems += _step_problems(step, path, module_actions, nearest)
        schedule = document.get("schedule")
        if isinstance(schedule, dict):
            problems += _schedule_problems(schedule)
    if problems:
        raise Invalid(*problems)
    return {
        "name": document["name"].strip(),
        "grace_seconds": document.get("grace_seconds", DEFAULT_GRACE_SECONDS),
        "phases": [
            {"name": (phase.get("name") or "").strip() or f"phase {place}",
             "steps": [_normalised_step(s) for s in phase["steps"]],
             **({"advance": dict(phase["advance"])} if "advance" in phase else {}),
             **branching.normalised(phase, a_step=False)}
            for place, phase in enumerate(document["phases"], 1)
        ],
        "ending": [_normalised_step(s) for s in document.get("ending", [])],
        **({"cleanup_on": list(document["cleanup_on"])} if document.get("cleanup_on") else {}),
        "schedule": document.get("schedule") or None,  # without a timezone: UTC
    }
