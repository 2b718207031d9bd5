"""What a handler answers, built and checked here so the engine never refuses it.

Invariant: an answer leaves this kit only in a shape the engine records whole
(docs/contract.md, "The resource ledger"): `done()` or `refused(reason)`,
optionally with the resources the action created and how each is reverted.
`checked` is the one test of that (the type, the outcome, the resources, a
JSON object of at most 1 MB); `done()` and `refused()` pass what they build
through it, and the bridge passes every handler's answer through it before
the key records it. What fails (too many entries, a kind or id out of
bounds, a revert that is not `module.name` or `core.cue`, params too large,
too deep, not valid UTF-8 or holding NaN or an infinity, a by-hand revert
whose params are not core.cue's, an answer too large) raises `BadAnswer`.
The limits are the engine's (`chalicelib/events/ledger.py` and core.cue's
schema in `chalicelib/events/actions/registry.py`; the project's tests hold
them equal).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

MAX_RESOURCES = 100
KIND_CHARS = 40
ID_CHARS = 191
MAX_REVERT_PARAMS_BYTES = 16 * 1024
MAX_JSON_DEPTH = 30
MAX_ANSWER_BYTES = 1024 * 1024  # the engine reads an answer up to 1 MB
BY_HAND = "core.cue"
MODULE_ACTION = re.compile(r"[a-z][a-z0-9_]{0,48}\.[a-z][a-z0-9_]{0,48}")
# A by-hand revert is a cue the cleanup parks on, so its params are core.cue's: the instruction a person reads,
# and optionally the cue's attention fields and answers, each within the engine's schema and rules. Anything
# else the engine refuses, and with it the whole resource list.
DAY, WEEK = 24 * 3600, 7 * 24 * 3600
CUE_TEXT_CHARS = 2000
CUE_WHOLE_NUMBERS = {"remind_after_seconds": (5, DAY), "remind_limit": (1, 20), "escalate_after_seconds": (5, WEEK),
                     "timeout_seconds": (5, WEEK)}
CUE_ON_TIMEOUT = ("continue", "pause", "confirm")
CUE_CHOICES = (2, 10)
CHOICE_VALUE_CHARS, CHOICE_LABEL_CHARS = 100, 200
CUE_FIELDS = ("instruction", *CUE_WHOLE_NUMBERS, "on_timeout", "choices", "timeout_choice")


class BadAnswer(ValueError):
    """An answer the engine would refuse: fix the handler."""


@dataclass(frozen=True)
class Revert:
    """How a cleanup undoes a resource: a module action with its params, or `core.cue` (a person, by hand)."""

    action: str
    params: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"action": self.action, "params": self.params}


@dataclass(frozen=True)
class Resource:
    """One thing the action left in the world, as the engine's ledger records it."""

    kind: str
    id: str
    revert: Revert | None = None

    def as_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"kind": self.kind, "id": self.id}
        if self.revert is not None:
            entry["revert"] = self.revert.as_json()
        return entry


@dataclass(frozen=True)
class Answer:
    """A handler's answer: its JSON body (always an object) and the HTTP status it goes out with."""

    body: dict[str, Any]
    status: int = 200

    def payload(self) -> bytes:
        try:
            # NaN and the infinities have no JSON form: allowed, they would go out as tokens no JSON parser takes
            data = json.dumps(self.body, ensure_ascii=False, allow_nan=False).encode()
        except (TypeError, ValueError) as why:  # a value JSON has no form for, or a lone surrogate
            raise BadAnswer(f"the answer is not JSON: {why}") from None
        if len(data) > MAX_ANSWER_BYTES:
            raise BadAnswer(f"the answer is {len(data)} bytes; the engine reads at most {MAX_ANSWER_BYTES}")
        return data

    @property
    def applied(self) -> bool:
        """The action took effect: a 2xx that is not a refusal, or an answer the kit refused after the handler ran
        (`"applied": true`, in the body so that a store keeping the body keeps it too)."""
        return self.body.get("applied") is True or (200 <= self.status < 300 and self.body.get("outcome") != "refused")


def done(*resources: Resource, **extra: Any) -> Answer:
    """The action was applied; `resources` are what it created."""
    return checked(Answer(_with_resources({"outcome": "done", **extra}, resources)))


def refused(reason: str, *resources: Resource) -> Answer:
    """The game declines the action (the step fails as refused); nothing was applied except `resources`."""
    return checked(Answer(_with_resources({"outcome": "refused", "reason": reason}, resources)))


def _with_resources(body: dict[str, Any], resources: tuple[Resource, ...]) -> dict[str, Any]:
    if resources:
        body["resources"] = [r.as_json() if isinstance(r, Resource) else r for r in resources]
    return body


def checked(answer: object) -> Answer:
    """`answer` when the engine takes it whole and the kit can send it, else BadAnswer saying what is wrong."""
    if not isinstance(answer, Answer):
        raise BadAnswer(f"a handler returns done(...) or refused(...), not a {type(answer).__name__}")
    problem = _answer_problem(answer)
    if problem:
        raise BadAnswer(problem)
    answer.payload()  # JSON, and at most MAX_ANSWER_BYTES
    return answer


def _answer_problem(answer: Answer) -> str | None:
    body, status = answer.body, answer.status
    if not isinstance(body, dict):
        return "the answer's body: a JSON object"
    if not isinstance(status, int) or not 200 <= status <= 599:
        return "the answer's status: an HTTP status from 200 to 599"
    outcome = body.get("outcome", "done")
    if 200 <= status < 300 and outcome not in ("done", "refused"):
        return f"outcome: done or refused, not {str(outcome)[:40]!r}"
    if outcome == "refused" and not (isinstance(body.get("reason"), str) and body["reason"].strip()):
        return "a refusal names its reason"
    return resources_problem(body["resources"]) if "resources" in body else None


def resources_problem(raw: Any) -> str | None:
    """Why the engine would refuse `raw` as an answer's `resources` list, or None (the engine's rules)."""
    if not isinstance(raw, list):
        return "resources: a list"
    if len(raw) > MAX_RESOURCES:
        return f"resources: at most {MAX_RESOURCES} entries, not {len(raw)}"
    for i, entry in enumerate(raw):
        problem = _entry_problem(entry, f"resources[{i}]")
        if problem:
            return problem
    return None


def _entry_problem(entry: Any, path: str) -> str | None:
    if not isinstance(entry, dict) or set(entry) - {"kind", "id", "revert"}:
        return f"{path}: an object with kind, id and revert? only"
    for name, most in (("kind", KIND_CHARS), ("id", ID_CHARS)):
        value = entry.get(name)
        if not isinstance(value, str) or not 1 <= len(value) <= most or not _utf8(value):
            return f"{path}.{name}: a string of 1 to {most} characters of valid UTF-8"
    if "revert" not in entry:
        return None
    revert = entry["revert"]
    if not isinstance(revert, dict) or set(revert) - {"action", "params"}:
        return f"{path}.revert: an object with action and params? only"
    action, params = revert.get("action"), revert.get("params", {})
    if not isinstance(action, str) or not (action == BY_HAND or (MODULE_ACTION.fullmatch(action) and not action.startswith("core."))):
        return f"{path}.revert.action: a module action (module.name) or {BY_HAND}"
    if not isinstance(params, dict):
        return f"{path}.revert.params: an object"
    if _depth(params) > MAX_JSON_DEPTH:
        return f"{path}.revert.params: nests deeper than {MAX_JSON_DEPTH} levels"
    try:
        text = json.dumps(params, allow_nan=False)
    except (TypeError, ValueError) as why:  # NaN or an infinity, or a value JSON has no form for
        return f"{path}.revert.params: not JSON ({why})"
    if len(text) > MAX_REVERT_PARAMS_BYTES or not _utf8(json.dumps(params, ensure_ascii=False)):
        return f"{path}.revert.params: at most {MAX_REVERT_PARAMS_BYTES} bytes of valid UTF-8"
    return _cue_problem(params, f"{path}.revert.params") if action == BY_HAND else None


def _cue_problem(params: dict[str, Any], path: str) -> str | None:
    """Why the engine would refuse `params` as a by-hand revert's (core.cue's schema, then its rules), or None."""
    unknown = sorted(set(params) - set(CUE_FIELDS))
    if unknown:
        return f"{path}.{unknown[0]}: a by-hand revert ({BY_HAND}) takes only {', '.join(CUE_FIELDS)}"
    if not _text(params.get("instruction"), CUE_TEXT_CHARS):
        return f"{path}.instruction: what a person is to do by hand, {CUE_TEXT_CHARS} characters at most, not blank"
    for name, (least, most) in CUE_WHOLE_NUMBERS.items():
        value = params.get(name, least)
        # the engine's integers are strict: neither True nor 5.0
        if not isinstance(value, int) or isinstance(value, bool) or not least <= value <= most:
            return f"{path}.{name}: a whole number from {least} to {most}"
    if params.get("on_timeout", CUE_ON_TIMEOUT[0]) not in CUE_ON_TIMEOUT:
        return f"{path}.on_timeout: one of {', '.join(CUE_ON_TIMEOUT)}"
    choices = params.get("choices", [])
    if "choices" in params and not (isinstance(choices, list) and CUE_CHOICES[0] <= len(choices) <= CUE_CHOICES[1]):
        return f"{path}.choices: a list of {CUE_CHOICES[0]} to {CUE_CHOICES[1]} answers"
    for i, choice in enumerate(choices):
        if not (isinstance(choice, dict) and set(choice) == {"value", "label"} and _text(choice["value"], CHOICE_VALUE_CHARS)
                and _text(choice["label"], CHOICE_LABEL_CHARS)):
            return (f"{path}.choices[{i}]: {{\"value\", \"label\"}}, texts of at most {CHOICE_VALUE_CHARS} and"
                    f" {CHOICE_LABEL_CHARS} characters, not blank")
    if "timeout_choice" in params and not _text(params["timeout_choice"], CHOICE_VALUE_CHARS):
        return f"{path}.timeout_choice: one of the choices' values"
    return _cue_timers_problem(params, path) or _cue_choices_problem(params, path)


def _cue_timers_problem(params: dict[str, Any], path: str) -> str | None:
    """The engine's rule: a reminder or an escalation comes before the timeout, and on_timeout needs one."""
    timeout = params.get("timeout_seconds")
    if timeout is None:
        return f"{path}: on_timeout needs timeout_seconds" if "on_timeout" in params else None
    for name in ("remind_after_seconds", "escalate_after_seconds"):
        if params.get(name, timeout - 1) >= timeout:
            return f"{path}.{name}: shorter than timeout_seconds ({timeout})"
    return None


def _cue_choices_problem(params: dict[str, Any], path: str) -> str | None:
    """The engine's rule: each answer's value is its own; a timeout that confirms a cue with answers names one."""
    values = [choice["value"] for choice in params.get("choices", [])]
    if len(set(values)) < len(values):
        return f"{path}.choices: each answer's value is its own"
    chosen, confirms = params.get("timeout_choice"), params.get("on_timeout") == "confirm"
    if chosen is None:
        return f"{path}: on_timeout confirm of a cue with choices needs timeout_choice" if confirms and values else None
    if not confirms or chosen not in values:
        return f"{path}.timeout_choice: one of the choices' values, and only with on_timeout confirm"
    return None


def _text(value: Any, most: int) -> bool:
    """Text a person reads, as core.cue's schema has it: 1 to `most` characters, something besides whitespace."""
    return isinstance(value, str) and 1 <= len(value) <= most and re.search(r"\S", value) is not None


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0
