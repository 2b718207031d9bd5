"""The values a typed row holds, as the store keeps them and the API shows them: notes, whole numbers,
times, JSON columns.

The invariant: a note is kept at most MAX_NOTE characters, a time is shown in one
ISO form (UTC, `Z`, no zero microseconds), a row's fields are shown by one
function, so every row answers the same way, and a word a row holds is read as
one this version knows or refused as a newer version's (`known`), never guessed.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from ..errors import NewerRow

MAX_NOTE = 500
Word = TypeVar("Word", bound=Enum)


def clean_note(raw: Any) -> str | None:
    """A reason or note as a person's control keeps it: trimmed, at most MAX_NOTE characters, empty -> None."""
    text = raw.strip() if isinstance(raw, str) else ""
    return text[:MAX_NOTE] or None


def kept_note(text: object | None) -> str | None:
    """A note, error or reason as stored: at most MAX_NOTE characters."""
    return None if text is None else str(text)[:MAX_NOTE]


def is_whole_number(value: object, *, at_least: int) -> bool:
    """An int (a bool is not one) of at least `at_least`."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= at_least


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%S.%fZ").replace(".000000Z", "Z")


def json_column(raw: Any, default: Any) -> Any:
    """A JSON column's value: parsed when it comes as text, `default` when it is NULL."""
    if raw is None:
        return default
    return json.loads(raw) if isinstance(raw, (str, bytes)) else raw


def public_fields(obj: Any) -> dict[str, Any]:
    """A row's fields as the API shows them: times in ISO form, enums by their value."""
    return {k: iso(v) if isinstance(v, datetime) else (v.value if isinstance(v, Enum) else v) for k, v in asdict(obj).items()}


def known(word: type[Word], value: Any, holder: str) -> Word:
    """`value` as the word of `word` it names; NewerRow, naming `holder` (e.g. "run 7's status"), when this
    version does not know it: a newer version wrote the row, and this one must not read it as another word."""
    try:
        return word(value)
    except ValueError:
        raise newer_word(holder, value) from None


def newer_word(holder: str, value: Any) -> NewerRow:
    """The refusal of a word this version does not know, `holder` holding `value`."""
    return NewerRow(f"{holder} is {value!r}, which this version of the engine does not know: a newer version wrote it,"
                    " and this one leaves the run as it stands (finish it under that version, or roll forward;"
                    " docs/operations.md, \"Rolling back\")")
