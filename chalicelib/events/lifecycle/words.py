"""How the lifecycle's words are shown: a status's facts (label, mark, and what the engine decides by).

The invariant: what the console shows for a word, and what it decides by, is
declared beside the word, here or in the module of its vocabulary, and reaches
the console only through `GET /vocabulary` (`vocabulary.py`): the console keeps
no word, label or list of its own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Facts:
    """What the engine and the console know about one status."""

    label: str  # how the console names it
    mark: str  # the glyph beside the label (nothing depends on colour)
    terminal: bool = False  # nothing moves it out again
    due: bool = False  # (runs) a tick picks the run up when its wake time comes
    runnable: bool = False  # (runs) the runner may claim its steps
    open: bool = False  # (steps) pending or running: the phase is not over while one is
