"""The nearest known name to one a definition's author got wrong ("did you mean `world.spawn`?"), for the first
few of a document only.

Invariant: one document's check asks at most MAX_SUGGESTED times. Each ask compares the name with every known
one (difflib), so a document of thousands of wrong names against thousands of known ones would cost millions
of comparisons: a save or a rehearsal past API Gateway's 29 s. The problems past them say what is wrong
without a suggestion.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

MAX_SUGGESTED = 10  # the API lists 50 problems; a typo or two is what a suggestion is for


class Nearest:
    """One document's suggestions."""

    def __init__(self) -> None:
        self._left = MAX_SUGGESTED

    def of(self, asked: str, known: Iterable[str]) -> str | None:
        """The known name nearest to `asked`; None when none is near, or this document's asks are spent."""
        if self._left <= 0:
            return None
        self._left -= 1
        found = difflib.get_close_matches(asked, list(known), n=1, cutoff=0.6)
        return found[0] if found else None
