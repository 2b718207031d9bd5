"""What a step may do: action ids, their versions and params schemas.

`core.*` actions run inside the engine and are listed here one by one. Every
other id of the form `module.name` is dispatched to the game bridge, whose
params the game side validates; the engine only requires an object.

An action's params schema is the one check of its params: definitions are
validated with it when saved, and the step is checked with it again before its
handler runs (`params_problem`), so a step that validated runs as written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ...config import MODULE_ACTION_ID as MODULE_ACTION_ID  # matched whole (fullmatch)
from ...schema_check import checker, unknown_fields
from ..lifecycle import CueOnTimeout
from .notice import Limit, shorten


@dataclass(frozen=True)
class ActionSpec:
    id: str
    description: str
    params_schema: dict[str, Any]
    versions: tuple[int, ...] = (1,)
    core: bool = True
    outcomes: tuple[str, ...] = field(default=("done",))
    # What the schema cannot say (one field against another): the first problem, named from the step.
    params_rule: Callable[[dict[str, Any], str], str | None] | None = field(default=None, compare=False)
    # What a definition is refused for when saved, though a stored step still runs with it (how it reads, not what
    # it does: a rule added later must not fail a step saved before it).
    saved_rule: Callable[[dict[str, Any], str], str | None] | None = field(default=None, compare=False)
    # A step's fields this action has no use for, each with why: refused at save (a stored version keeps them),
    # and not offered by the console's editor.
    step_fields_refused: dict[str, str] = field(default_factory=dict, compare=False)

    @cached_property
    def params_check(self) -> Callable[[Any, str], str | None]:
        """The params schema, compiled once: every dispatch checks its step's params with it."""
        return checker(self.params_schema)

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "description": self.description,
            "core": self.core,
            "versions": list(self.versions),
            "params_schema": self.params_schema,
            "outcomes": list(self.outcomes),
            "step_fields_refused": sorted(self.step_fields_refused),
        }


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


# Text a person reads: something besides whitespace.
_TEXT = {"type": "string", "minLength": 1, "maxLength": 2000, "pattern": r"\S"}
DAY, WEEK = 24 * 3600, 7 * 24 * 3600
_WAIT_SECONDS = {"type": "integer", "minimum": 0, "maximum": WEEK, "title": "Wait (seconds)",
                 "description": "how long the phase's next step is held; a wait that ends its phase holds nothing"}


def _seconds(lowest: int, highest: int, title: str, description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": lowest, "maximum": highest, "title": title, "description": description}


# A cue's attention fields (docs/definitions.md, "A cue that is seen"): reminders to the cue channel, one
# escalation, and what happens when nobody answers.
REMIND_LIMIT_DEFAULT = 3
_CUE_ATTENTION = {
    "remind_after_seconds": _seconds(5, DAY, "Remind after (seconds)", "Post a reminder this long after the cue, and"
                                     " again every as long, until someone acknowledges, confirms or skips it."),
    "remind_limit": {"type": "integer", "minimum": 1, "maximum": 20, "title": "Reminders at most",
                     "description": f"At most this many reminders (default {REMIND_LIMIT_DEFAULT})."},
    "escalate_after_seconds": _seconds(5, WEEK, "Escalate after (seconds)", "Escalate to the escalation channel this"
                                       " long after the cue, once, unless someone has acknowledged it (default:"
                                       " EVENT_ESCALATE_AFTER_SECONDS)."),
    "timeout_seconds": _seconds(5, WEEK, "Give up after (seconds)", "Stop waiting this long after the cue, as on_timeout says."),
    "on_timeout": {"type": "string", "enum": [action.value for action in CueOnTimeout], "title": "When nobody answers",
                   "description": "continue (the default): the cue is cancelled and the phase goes on; pause: the run pauses with "
                                  "the cue still waiting; confirm: the engine assumes it done. Each degrades the run."},
}


# A cue that asks (docs/definitions.md, "Cues that ask"): the answers a person picks from, a button each.
MAX_CHOICES = 10
# The most of an answer's label a chat button shows (Slack's 75; Discord shows 80): a longer one is shortened
# there with an ellipsis, so two labels must differ within it or their buttons read the same.
BUTTON_LABEL_CHARS = 75
CHOICE_VALUE = {"type": "string", "minLength": 1, "maxLength": 100, "pattern": r"\S",
                "description": "what the confirm carries and an only_if compares (exactly, case and all)"}
_CUE_CHOICES = {
    "choices": {"type": "array", "minItems": 2, "maxItems": MAX_CHOICES, "title": "Answers to choose from",
                "description": f"2 to {MAX_CHOICES} answers, each a value and the label of its button; a confirm must"
                               " carry one of the values",
                "items": {"type": "object", "additionalProperties": False, "required": ["value", "label"],
                          "properties": {"value": CHOICE_VALUE,
                                         "label": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"\S"}}}},
    "timeout_choice": {**CHOICE_VALUE, "title": "Answer assumed at the time limit",
                       "description": "with on_timeout confirm: the answer the engine chooses at the timeout (and a dry"
                                      " run's engine when it confirms)"},
}


def _cue_problem(params: dict[str, Any], name: str) -> str | None:
    """What the cue's schema cannot say: its timers against its timeout, its choices against each other."""
    return _cue_timers_problem(params, name) or _cue_choices_problem(params, name)


def _cue_choices_problem(params: dict[str, Any], name: str) -> str | None:
    """Values are unique; a timeout that confirms a cue with choices names which one, and only then."""
    values = [str(c["value"]) for c in params.get("choices") or ()]  # the schema's checked: each a {value, label}
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        return f"{name}.choices: the value {twice[0]!r} is offered twice (each choice's value is its own)"
    chosen = params.get("timeout_choice")
    confirms = params.get("on_timeout") == CueOnTimeout.CONFIRM
    if chosen is None:
        needed = confirms and values
        return f"{name}: on_timeout confirm of a cue with choices needs timeout_choice (which answer to assume)" if needed else None
    if not values:
        return f"{name}.timeout_choice: the cue offers no choices"
    if not confirms:
        return f"{name}.timeout_choice: it is chosen only by on_timeout confirm"
    return None if chosen in values else f"{name}.timeout_choice: {chosen!r} is not one of the choices ({', '.join(values)})"


def _cue_labels_problem(params: dict[str, Any], name: str) -> str | None:
    """Two answers whose labels a chat button shows the same (`shown_on_a_button`): nobody could tell them apart."""
    shown: dict[str, str] = {}
    for choice in params.get("choices") or ():
        label = str(choice["label"])
        if (same := shown.setdefault(shown_on_a_button(label), label)) != label:
            return (f"{name}.choices: the labels {same!r} and {label!r} read the same on a chat button, which shows"
                    f" a label's first {BUTTON_LABEL_CHARS} characters: make them differ sooner")
    return None


def shown_on_a_button(label: str) -> str:
    """An answer's label as a chat button shows it: whole, or its beginning and an ellipsis."""
    return shorten(label, Limit(BUTTON_LABEL_CHARS))


def _cue_timers_problem(params: dict[str, Any], name: str) -> str | None:
    """A reminder or an escalation must come before the timeout: after it, nobody would read it."""
    timeout = params.get("timeout_seconds")
    if timeout is None:
        return f"{name}: on_timeout needs timeout_seconds" if "on_timeout" in params else None
    for field_name in ("remind_after_seconds", "escalate_after_seconds"):
        value = params.get(field_name)
        if value is not None and value >= timeout:
            return f"{name}: {field_name} ({value}) must be shorter than timeout_seconds ({timeout})"
    return None


# Why a core step takes no static revert or on_doubt. A static revert is recorded only when a dispatch answers
# done, and the engine's own steps leave nothing in the game world (a cue is done by a person's confirm, which
# records nothing). A wait sends nothing anywhere, and a cue in doubt is posted again and waits for a person
# still: neither has anything a person could decide about the game. An announcement in doubt may have been
# posted: `on_doubt: park` lets a person decide rather than post twice, so it keeps on_doubt.
_NO_REVERT = "{action} leaves nothing in the game world, so a cleanup has nothing to revert: leave revert out"
_WAIT_REFUSES = {
    "revert": _NO_REVERT.format(action="core.wait"),
    "on_doubt": ("core.wait sends nothing anywhere: run again it holds the same moment, so it has nothing to be in"
                 " doubt about: leave on_doubt out"),
}
_CUE_REFUSES = {
    "revert": ("a cue is done by a person's confirm, which records nothing to revert, so a cleanup would never"
               " send it: leave revert out, and give it to the module action that makes the thing (a core.cue"
               " revert there asks a person to undo it by hand)"),
    "on_doubt": ("a cue in doubt is posted again and waits for a person as before; park would hold it as a"
                 " decision about the game instead, without its reminders and timeout: leave on_doubt out"),
}
_ANNOUNCE_REFUSES = {"revert": _NO_REVERT.format(action="core.announce")}

CORE_ACTIONS: dict[str, ActionSpec] = {
    spec.id: spec
    for spec in (
        ActionSpec(
            "core.wait",
            "Hold the next step of the phase for a number of seconds.",
            _object({"seconds": _WAIT_SECONDS}, ["seconds"]),
            outcomes=("done",),
            step_fields_refused=_WAIT_REFUSES,
        ),
        ActionSpec(
            "core.cue",
            "Post an instruction to the game masters' channel and wait for a person to confirm or skip it (with"
            " choices: to confirm it with one of its answers).",
            _object({"instruction": {**_TEXT, "title": "Instruction to the game masters"}, **_CUE_ATTENTION,
                     **_CUE_CHOICES}, ["instruction"]),
            outcomes=("parked",),
            params_rule=_cue_problem,
            saved_rule=_cue_labels_problem,
            step_fields_refused=_CUE_REFUSES,
        ),
        ActionSpec(
            "core.announce",
            "Post a message to the announcement channel.",
            _object({"message": {**_TEXT, "title": "Message"}}, ["message"]),
            outcomes=("done", "retry", "failed"),
            step_fields_refused=_ANNOUNCE_REFUSES,
        ),
    )
}

MODULE_ACTION = ActionSpec(
    "module.action",
    "Any other `module.name`: a signed POST to the game bridge; the game side validates params.",
    {"type": "object"},
    versions=(),
    core=False,
    outcomes=("done", "retry", "refused", "failed"),
)


def lookup(action_id: str) -> ActionSpec | None:
    """The spec for an action id, or None if no step may use it."""
    if not isinstance(action_id, str):
        return None
    if action_id in CORE_ACTIONS:
        return CORE_ACTIONS[action_id]
    if action_id.startswith("core.") or not MODULE_ACTION_ID.fullmatch(action_id):
        return None
    return MODULE_ACTION


def undeclared(action_id: str, module_actions: frozenset[str] | None) -> bool:
    """A module action the game bridge does not declare (EVENT_MODULE_ACTIONS), whether a step's or a revert's;
    with none declared (None), none is: any `module.name` goes to the bridge as written."""
    return module_actions is not None and action_id not in CORE_ACTIONS and action_id not in module_actions


def params_problem(spec: ActionSpec, params: Any, name: str) -> str | None:
    """The first way `params` break the action's schema, named from `name`; None if the action can take them."""
    unknown = unknown_fields(spec.params_schema, params, f"{name} ({spec.id})")
    if unknown:
        return unknown[0]
    problem = spec.params_check(params, name)
    if problem is None and spec.params_rule is not None and isinstance(params, dict):
        problem = spec.params_rule(params, name)
    return problem


def saved_problem(spec: ActionSpec, params: Any, name: str) -> str | None:
    """The first way params the action can take are still refused in a definition saved now; None if none."""
    return spec.saved_rule(params, name) if spec.saved_rule is not None and isinstance(params, dict) else None


def catalogue() -> list[dict[str, Any]]:
    return [spec.public() for spec in (*CORE_ACTIONS.values(), MODULE_ACTION)]
