"""What the database can store of JSON from outside — an API body, or an answer of the game — in one place.

The invariant: every value written comes through these rules, whoever sent it.
MariaDB keeps JSON nested at most 31 objects and arrays deep (deeper fails the
JSON_VALID check), so nothing deeper than MAX_JSON_DEPTH is accepted; and text
must encode as UTF-8, which a lone surrogate (valid as a JSON escape, `"\\ud800"`)
does not; nor is NaN or Infinity JSON (a number the JSON_VALID check refuses).
The API refuses such a body (`api.errors.json_body`); the bridge cleans
the game's free text (`cleaned`: a lone surrogate becomes U+FFFD) and the ledger
refuses what names or reverts a thing (an id changed would name another thing).
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_JSON_DEPTH = 30
REPLACEMENT = "\ufffd"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # a pair was joined into one code point by the JSON parser


def nesting(value: Any) -> int:
    """How many objects and arrays deep `value` goes, walked without recursion; stops past the limit."""
    deepest, pending = 0, [(value, 1)]
    while pending and deepest <= MAX_JSON_DEPTH:
        node, level = pending.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is not None:
            deepest = max(deepest, level)
            pending.extend((child, level + 1) for child in children)
    return deepest


def too_deep(value: Any) -> bool:
    return nesting(value) > MAX_JSON_DEPTH


def encodable(value: Any) -> bool:
    """Whether `value`, written as JSON text, encodes as UTF-8 (no lone surrogate in a string or a key)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def finite(value: Any) -> bool:
    """Whether every number in `value` is one JSON can write (no NaN, no Infinity: a parser that allows them, as
    Python's does, reads `NaN`, `Infinity` and `1e999` from the game's text)."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


def cleaned(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD: storable, and shown as the unreadable character it is."""
    return _LONE_SURROGATE.sub(REPLACEMENT, text)
