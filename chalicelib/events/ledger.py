"""What an answer says it left in the game world: its `resources` list, checked whole, and how each is reverted.

The invariant: a list is recorded whole or not at all. `listed()` reads an
answer's `resources` and either accepts every entry or names the first problem
and accepts none; the runner then records nothing, leaves the step's outcome as
it would have been without the list, and degrades the run (docs/contract.md,
"The resource ledger"). A revert (listed, or a step's static `revert` in the
document) is a module action or `core.cue` (a person undoes it by hand) with
params the action takes, at most 16 KiB of them, storable as they are
(`chalicelib.storable`: no lone surrogate in the kind, id or params, params at
most 30 levels deep). A revert naming a module action the game bridge does not
declare (EVENT_MODULE_ACTIONS) is no problem of the list: its resource is kept
(the world has it), marked why its revert is never sent (`declared_reverts`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from .. import storable
from .actions import registry
from .lifecycle import undeclared_revert
from .model import Revert

MAX_RESOURCES = 100
# A run records at most this many resources, all its answers together: an answer whose list would take it
# past them records none of it (as a bad list: the run degraded, naming the step, the count and the cap; the
# outcome kept; store/resources.record's guard). It bounds what a cleanup reverts (a step each, as many as a
# definition's 10,200 steps at most) and what the ledger holds of one run (about 160 MB at 16 KiB a revert).
MAX_RUN_RESOURCES = 10_000
KIND_CHARS = 40
ID_CHARS = 191  # the column's width, and an index key's
MAX_REVERT_PARAMS_BYTES = 16 * 1024
# A thing's kind and id, and its revert's params, are stored exactly as the game gave them or refused:
# cleaned, an id would name another thing.
UNSTORABLE_TEXT = "not storable text (a lone surrogate)"
NOT_A_JSON_NUMBER = "NaN or Infinity, which are not JSON numbers"
BY_HAND = "core.cue"  # the one core action a revert may be: a person undoes the thing

REVERT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["action"],
    "title": "How to undo it",
    "description": "how the thing this step creates is undone by a cleanup: a module action, or core.cue (by hand)",
    "properties": {
        "action": {"type": "string", "minLength": 1, "maxLength": 100, "title": "Undo action"},
        "params": {"type": "object", "title": "Undo params"},
    },
}
_ENTRY_FIELDS = {"kind", "id", "revert"}


@dataclass(frozen=True)
class Listed:
    """One thing an answer (or a static revert) says the step left in the world."""

    kind: str
    resource_id: str
    revert: Revert | None
    revert_refused: str | None = None  # why its revert is never sent (`declared_reverts`); None: a cleanup sends it


def revert_problem(value: Any, path: str) -> str | None:
    """Why `value` is not a revert (an object of a module action or core.cue and its params), or None."""
    if not isinstance(value, dict):
        return f"{path}: a revert is an object {{\"action\", \"params\"}}"
    unknown = sorted(set(value) - {"action", "params"})
    if unknown:
        return f"{path}.{unknown[0]}: a revert takes only action and params"
    action, params = value.get("action"), value.get("params", {})
    spec = registry.lookup(action) if isinstance(action, str) else None
    if spec is None or (spec.core and action != BY_HAND):
        return f"{path}.action: {str(action)[:100]!r} is neither a module action (module.name) nor {BY_HAND}"
    if not isinstance(params, dict):
        return f"{path}.params: an object, not {type(params).__name__}"
    # guard: unstorable-revert-params-are-recorded
    if storable.too_deep(params):
        return f"{path}.params: nests deeper than {storable.MAX_JSON_DEPTH} levels"
    if not storable.encodable(params):
        return f"{path}.params: {UNSTORABLE_TEXT}"
    # guard: a-revert-param-that-is-not-a-json-number-is-recorded
    if not storable.finite(params):
        return f"{path}.params: {NOT_A_JSON_NUMBER}"
    if len(json.dumps(params)) > MAX_REVERT_PARAMS_BYTES:
        return f"{path}.params: larger than {MAX_REVERT_PARAMS_BYTES} bytes"
    return registry.params_problem(spec, params, f"{path}.params")


def revert_of(value: dict[str, Any]) -> Revert:
    """A checked revert as the ledger keeps it."""
    return Revert(str(value["action"]), dict(value.get("params") or {}))


def _entry_problem(entry: Any, path: str) -> str | None:
    if not isinstance(entry, dict):
        return f"{path}: an object {{\"kind\", \"id\", \"revert\"?}}, not {type(entry).__name__}"
    unknown = sorted(set(entry) - _ENTRY_FIELDS)
    if unknown:
        return f"{path}.{unknown[0]}: a resource takes only kind, id and revert"
    for field, most in (("kind", KIND_CHARS), ("id", ID_CHARS)):
        value = entry.get(field)
        if not isinstance(value, str) or not 1 <= len(value) <= most:
            return f"{path}.{field}: a string of 1 to {most} characters"
        # guard: an-unstorable-kind-or-id-is-recorded
        if not storable.encodable(value):
            return f"{path}.{field}: {UNSTORABLE_TEXT}"
    return revert_problem(entry["revert"], f"{path}.revert") if "revert" in entry else None


def past_the_cap(held: int, listed: int) -> str:
    """Why an answer's list is refused whole at the run's cap: the run holds `held`, the list `listed` more."""
    return (f"resources: a run records at most {MAX_RUN_RESOURCES:,}; it holds {held:,} and these {listed:,}"
            f" would make {held + listed:,}")


def listed(result: dict[str, Any] | None) -> tuple[tuple[Listed, ...], str | None]:
    """The answer's resources, checked whole: (every entry, None), or ((), the first problem)."""
    if result is None or "resources" not in result:
        return (), None
    raw = result["resources"]
    if not isinstance(raw, list):
        return (), f"resources: a list, not {type(raw).__name__}"
    # guard: the-documented-maximum-of-resources-is-refused
    if len(raw) > MAX_RESOURCES:
        return (), f"resources: at most {MAX_RESOURCES} entries, not {len(raw)}"
    for i, entry in enumerate(raw):
        problem = _entry_problem(entry, f"resources[{i}]")
        # guard: a-bad-resource-list-is-half-recorded
        if problem is not None:
            return (), storable.cleaned(problem)  # it quotes what the game sent
    return tuple(Listed(e["kind"], e["id"], revert_of(e["revert"]) if "revert" in e else None) for e in raw), None


def declared_reverts(entries: Iterable[Listed], module_actions: frozenset[str] | None) -> tuple[Listed, ...]:
    """The entries, each whose revert is a module action the game bridge does not declare marked so (kept: the
    world has it; its revert never sent). With none declared (None), every revert may be sent, as a step is."""
    # guard: an-undeclared-revert-is-sent
    return tuple(replace(entry, revert_refused=undeclared_revert(entry.revert.action))
                 if entry.revert is not None and registry.undeclared(entry.revert.action, module_actions) else entry
                 for entry in entries)


def refused_words(entries: tuple[Listed, ...]) -> str | None:
    """How many of `entries` have a revert that is never sent, and why (at most three reasons); None: none has."""
    refused = [entry for entry in entries if entry.revert_refused is not None]
    if not refused:
        return None
    reasons = sorted({entry.revert_refused for entry in refused if entry.revert_refused is not None})
    shown = "; ".join(reasons[:3]) + ("; …" if len(reasons) > 3 else "")
    return f"{len(refused)} of {len(entries)} resources with a revert that is never sent ({shown})"
