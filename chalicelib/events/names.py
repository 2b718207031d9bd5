"""What a definition's name may hold: only what shows, so that no two names render alike.

Invariant: a saved name holds no control character, nothing invisible (a format character: zero-width
spaces and joiners, bidirectional overrides and isolates, a soft hyphen, tag characters; a line or
paragraph separator; a filler that draws nothing) and no whitespace but single plain spaces between
words (its ends are trimmed before). A name that differs from another only by what cannot be seen, or by
a doubled or an exotic space, is refused (400, naming the character and where it stands), so the unique
key (`store.definitions`, case-insensitive) compares every saved name as it renders, whitespace
collapsed. A zero-width joiner between two pictographs (an emoji sequence: 🏳️‍🌈) draws one glyph of its
own, and is kept.
"""

from __future__ import annotations

import unicodedata

# Control, format, surrogate, line and paragraph separator: none draws a glyph of its own.
_UNSEEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Letters and symbols that draw nothing: the Hangul fillers and the blank braille pattern.
_BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_JOINER = "\u200d"
_EMOJI_VARIATION = "\ufe0f"
_PICTOGRAPH = frozenset({"So", "Sk"})  # emoji and their skin-tone modifiers


def _joins_pictographs(name: str, at: int) -> bool:
    """Whether the zero-width joiner at `at` stands between two pictographs (an emoji sequence)."""
    before = name[at - 1] if at > 0 else ""
    after = name[at + 1] if at + 1 < len(name) else ""
    return (before == _EMOJI_VARIATION or (before != "" and unicodedata.category(before) in _PICTOGRAPH)) and \
        after != "" and unicodedata.category(after) in _PICTOGRAPH


def _shown(char: str) -> str:
    """A character as a person can read it in a message: U+202E RIGHT-TO-LEFT OVERRIDE, U+0000 (a control)."""
    named = unicodedata.name(char, "")
    return f"U+{ord(char):04X} {named}" if named else f"U+{ord(char):04X} (a control character)"


def name_problems(name: str, path: str) -> list[str]:
    """Why `name` (trimmed) could pass for another name: the first unseen character, the first space that is not
    a plain one, and the first doubled space, each with where it stands (character n, from 1); [] if none."""
    unseen = odd_space = doubled = None
    for at, char in enumerate(name):
        category = unicodedata.category(char)
        # guard: a-name-may-hold-what-does-not-show
        if (category in _UNSEEN or char in _BLANK) and not (char == _JOINER and _joins_pictographs(name, at)):
            unseen = unseen or (f"{path}: {_shown(char)} at character {at + 1} cannot be seen, so the name could pass"
                                " for another: a name holds only characters that show")
        # guard: a-name-may-hold-a-space-that-is-not-plain
        elif category == "Zs" and char != " ":
            odd_space = odd_space or (f"{path}: {_shown(char)} at character {at + 1} looks like a plain space, so the"
                                      " name could pass for another: write a plain space")
        # guard: a-name-may-hold-a-doubled-space
        elif char == " " and at > 0 and name[at - 1] == " ":
            doubled = doubled or (f"{path}: two spaces at character {at} show as one, so the name could pass for"
                                  " another: write single spaces between words")
    return [problem for problem in (unseen, odd_space, doubled) if problem is not None]
