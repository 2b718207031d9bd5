"""Branches of a definition: named steps, and the `only_if` that runs a phase or a step only for some answers.

The invariant: an `only_if` reads only what is settled before its phase or step can begin — the answer of a
cue with choices that comes earlier in the walk, or a field of the payload of a signal that ends an earlier
phase — so its answer at the moment it is read is the one it will ever have (a finished cue's choice is
never written again, a signal's first receipt is the only one kept, and one that came after its phase ended
has no value). `problems` refuses any other at save,
naming what is wrong; the runner reads the rows at the phase's opening or the step's turn
(`runner/branches.py`), and the projected timeline shows each branch (`timeline.py`).

    "name": "arena"                                      a step's name, unique in its definition
    "only_if": {"choice": "arena", "in": ["north"]}      the cue named arena was answered north
    "only_if": {"signal": "boss_defeated", "field": "outcome", "in": ["won"]}
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..schema_check import first_error
from .model import OnlyIf
from .nearest import Nearest

# A step's name, and a signal's: what an only_if calls them by.
NAME = r"^[a-z][a-z0-9_]{0,63}$"
MAX_VALUES = 20
MAX_NAMES_LISTED = 20  # an unknown reference lists the names there are; a document may hold thousands
STEP_NAME_SCHEMA = {"type": "string", "pattern": NAME, "title": "Step name (for only if)",
                    "description": "what an only_if calls this step by (a cue with choices); unique in the definition"}
ONLY_IF_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["in"],
    "title": "Only if",
    "description": "run only when the answer of an earlier cue (choice), or a field of the payload of the signal"
                   " that ended an earlier phase (signal, field), is one of `in`; else it is skipped",
    "properties": {
        "choice": {"type": "string", "pattern": NAME, "title": "The cue's name", "description": "the name of an earlier cue with choices"},
        "signal": {"type": "string", "pattern": NAME, "title": "The signal", "description": "the signal that ends an earlier phase"},
        "field": {"type": "string", "minLength": 1, "maxLength": 64, "title": "The payload's field",
                  "description": "with signal: the payload's field"},
        "in": {"type": "array", "minItems": 1, "maxItems": MAX_VALUES, "uniqueItems": True, "title": "Is one of",
               "items": {"type": ["string", "integer", "boolean"], "maxLength": 100},
               "description": "the answers (values) for which it runs"},
    },
}


@dataclass(frozen=True)
class _Authored:
    """One phase or step of a document as written, at its place in the walk: (phase index, step index),
    the ending's phase index being after every phase's, and a phase itself at step index -1."""

    path: str
    at: tuple[int, int]
    written: dict[str, Any]

    def before(self, other: _Authored) -> bool:
        """Whether this step is over before `other` can begin: it is in an earlier phase, or earlier in the
        phase of the step `other` (a phase's own only_if is read as it opens, before any of its steps)."""
        return self.at[0] < other.at[0] if other.at[1] < 0 else self.at < other.at


def _walk(document: dict[str, Any]) -> Iterator[_Authored]:
    """Every phase and step written as an object, in the walk's order (the ending last)."""
    phases = document.get("phases")
    phases = phases if isinstance(phases, list) else []
    for i, phase in enumerate(phases):
        if not isinstance(phase, dict):
            continue
        yield _Authored(f"document.phases[{i}]", (i, -1), phase)
        steps = phase.get("steps")
        for j, step in enumerate(steps if isinstance(steps, list) else []):
            if isinstance(step, dict):
                yield _Authored(f"document.phases[{i}].steps[{j}]", (i, j), step)
    ending = document.get("ending")
    for j, step in enumerate(ending if isinstance(ending, list) else []):
        if isinstance(step, dict):
            yield _Authored(f"document.ending[{j}]", (len(phases), j), step)


def _choices(step: dict[str, Any]) -> list[Any] | None:
    """A cue's choices' values (None: not a cue with choices)."""
    params = step.get("params")
    choices = params.get("choices") if step.get("action") == "core.cue" and isinstance(params, dict) else None
    if not isinstance(choices, list) or not choices:
        return None
    return [c.get("value") for c in choices if isinstance(c, dict)]


def _listed(values: list[Any]) -> str:
    return ", ".join(str(v) for v in values)


def problems(document: dict[str, Any], nearest: Nearest) -> list[str]:
    """What is wrong with a document's step names and `only_if`s (their shapes are the schema's to report):
    a name used twice; an only_if that names no earlier cue with choices or signal, or values it never answers."""
    walked = list(_walk(document))
    found: list[str] = []
    named: dict[str, _Authored] = {}
    for item in walked:
        name = item.written.get("name") if item.at[1] >= 0 else None
        if not isinstance(name, str):
            continue
        if name in named:
            found.append(f"{item.path}.name: the name {name!r} is taken by {named[name].path} (a step's name is"
                         " unique in its definition)")
        named.setdefault(name, item)
    ends: dict[str, _Authored] = {}
    for item in walked:
        advance = item.written.get("advance") if item.at[1] < 0 else None
        if isinstance(advance, dict) and advance.get("when") == "signal" and isinstance(advance.get("name"), str):
            ends.setdefault(advance["name"], item)
    for item in walked:
        only_if = item.written.get("only_if")
        if only_if is None or first_error(ONLY_IF_SCHEMA, only_if, "only_if") is not None:
            continue  # none, or the schema reports it
        found += _reference_problems(item, only_if, named, ends, nearest)
    return found


def _reference_problems(item: _Authored, only_if: dict[str, Any], named: dict[str, _Authored],
                        ends: dict[str, _Authored], nearest: Nearest) -> list[str]:
    path = f"{item.path}.only_if"
    if ("choice" in only_if) == ("signal" in only_if):
        return [f"{path}: it reads a cue's answer (choice) or a signal's value (signal and field): one of the two"]
    if "choice" in only_if:
        if "field" in only_if:
            return [f"{path}.field: a cue's answer has no field (field goes with signal)"]
        return _choice_problems(item, path, only_if, named, nearest)
    if "field" not in only_if:
        return [f"{path}.field is required with signal: which field of its payload to read"]
    signal = only_if["signal"]
    ended = ends.get(signal)
    if ended is None:
        return [f"{path}.signal: no phase ends on the signal {signal!r} ({_known('signals', list(ends), signal, nearest)})"]
    # guard: an-only-if-reads-a-signal-of-a-later-phase
    if ended.at[0] >= item.at[0]:
        late = f"the signal {signal!r} ends {ended.path}, which does not come before this, so its value cannot be read yet"
        return [f"{path}.signal: {late}"]
    return []


def _choice_problems(item: _Authored, path: str, only_if: dict[str, Any], named: dict[str, _Authored],
                     nearest: Nearest) -> list[str]:
    name = only_if["choice"]
    cue = named.get(name)
    if cue is None:
        return [f"{path}.choice: no step is named {name!r} ({_known('named steps', list(named), name, nearest)})"]
    values = _choices(cue.written)
    if values is None:
        return [f"{path}.choice: {name!r} is {cue.path} ({cue.written.get('action')}), not a cue with choices"]
    # guard: an-only-if-reads-a-later-cue
    if not cue.before(item):
        where = "is this step itself" if cue is item else "comes after this"
        return [f"{path}.choice: the cue {name!r} ({cue.path}) {where}, so it cannot have been answered yet"]
    return [f"{path}.in: {value!r} is not one of the choices of the cue {name!r} ({_listed(values)})"
            for value in only_if["in"] if value not in values or not isinstance(value, str)]


def _known(what: str, names: list[str], asked: str, nearest: Nearest) -> str:
    """The nearest known name, else those there are (the first MAX_NAMES_LISTED): what an unknown reference meant."""
    meant = nearest.of(asked, names)
    if meant:
        return f"did you mean `{meant}`?"
    if not names:
        return f"the definition has no {what}"
    more = f", … ({len(names)} in all)" if len(names) > MAX_NAMES_LISTED else ""
    return f"the {what}: {', '.join(names[:MAX_NAMES_LISTED])}{more}"


def normalised(written: dict[str, Any], *, a_step: bool = True) -> dict[str, Any]:
    """A validated step's `name` and `only_if` (a phase's `only_if`: its `name` is its title), as the stored
    document keeps them; nothing for those it has not."""
    return {**({"name": written["name"]} if a_step and "name" in written else {}),
            **({"only_if": OnlyIf.of(written["only_if"]).public()} if "only_if" in written else {})}
