"""The lifecycle's words as the console shows them: what `GET /vocabulary` answers besides the controls.

The invariant: every word the console shows or decides by comes from here, in
its enum's order, with the label and facts declared beside it; the console keeps
no list of its own, and switches on facts, never on a word.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from enum import Enum
from typing import Any, TypeVar

from .phases import CLOSED_WORDS, CONDITION_WORDS, EFFECT_WORDS, TIMEOUT_WORDS
from .runs import RUN_FACTS
from .steps import PARK_WORDS, STEP_FACTS
from .waits import WAIT_WORDS
from .words import Facts

Word = TypeVar("Word", bound=Enum)


def _statuses(facts: Mapping[Word, Facts]) -> list[dict[str, Any]]:
    return [{"status": s.value, "label": f.label, "mark": f.mark, "terminal": f.terminal} for s, f in facts.items()]


def _words(words: Mapping[Word, Any]) -> list[dict[str, Any]]:
    """Each word as `{"value", "label", …its facts}`, an enum among the facts as its value."""
    listed = []
    for word, said in words.items():
        facts = {"label": said} if isinstance(said, str) else asdict(said)
        listed.append({"value": word.value, **{k: v.value if isinstance(v, Enum) else v for k, v in facts.items()}})
    return listed


_WORDS: dict[str, Mapping[Any, Any]] = {
    "phase_conditions": CONDITION_WORDS,
    "on_timeout": TIMEOUT_WORDS,
    "closed_by": CLOSED_WORDS,
    "waiting_for": WAIT_WORDS,
    "signal_effects": EFFECT_WORDS,
    "park_reasons": PARK_WORDS,
}
VOCABULARY_WORDS = tuple(_WORDS)  # the sets of words GET /vocabulary answers besides the statuses


def vocabulary() -> dict[str, list[dict[str, Any]]]:
    """The statuses (label, mark, terminal, in table order) and every other word the console shows, each with
    its label and facts (GET /vocabulary)."""
    return {"run_statuses": _statuses(RUN_FACTS), "step_statuses": _statuses(STEP_FACTS),
            **{name: _words(words) for name, words in _WORDS.items()}}
