"""What a definition's name, and a phase's, may hold: only what shows, so that no two names render alike.

Invariant: a saved name holds no control character, nothing invisible (a format character: zero-width
spaces and joiners, bidirectional overrides and isolates, a soft hyphen, tag characters; a line or
paragraph separator; any Unicode Default_Ignorable_Code_Point, which a renderer draws as nothing: the
variation selectors, the combining grapheme joiner, the Khmer inherent vowels U+17B4 and U+17B5, the
fillers that draw nothing) and no whitespace but single plain spaces between words (its ends are trimmed
before). A name that differs from another only by what cannot be seen, or by a doubled or an exotic space,
is refused (400, naming the character and where it stands), so the unique key (`store.definitions`,
case-insensitive) compares every saved name as it renders, whitespace collapsed, and a phase's name,
echoed into channel notices, cannot forge a line of its own. Two emoji sequences draw a glyph of their
own and are kept: a zero-width joiner between two pictographs (🏳️‍🌈), and VARIATION SELECTOR-16 asking
for a pictograph's emoji form (❤️) or a keycap's (1️⃣).
"""

from __future__ import annotations

import unicodedata

# Control, format, surrogate, line and paragraph separator: none draws a glyph of its own.
_UNSEEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


class _CodePoints:
    """Characters given as inclusive ranges of code points: `char in` them, without a set of every one."""

    def __init__(self, *ranges: tuple[int, int]) -> None:
        self.ranges = ranges

    def __contains__(self, char: object) -> bool:
        return isinstance(char, str) and len(char) == 1 and any(low <= ord(char) <= high for low, high in self.ranges)


# What draws nothing: Default_Ignorable_Code_Point as DerivedCoreProperties.txt of Unicode 14.0.0 lists it
# (the version Python 3.11's unicodedata carries, which does not expose the property), and the blank braille
# pattern U+2800, a symbol that draws nothing. The list holds some characters of category Cf (refused as
# such already), Mn (marks that show nothing: the collation ignores some, not U+17B4 and U+17B5), Lo (the
# Hangul fillers) and Cn (code points reserved as ignorable: one a later Unicode assigns there is refused already).
_BLANK = _CodePoints(
    (0x00AD, 0x00AD),    # SOFT HYPHEN
    (0x034F, 0x034F),    # COMBINING GRAPHEME JOINER
    (0x061C, 0x061C),    # ARABIC LETTER MARK
    (0x115F, 0x1160),    # HANGUL CHOSEONG FILLER, HANGUL JUNGSEONG FILLER
    (0x17B4, 0x17B5),    # KHMER VOWEL INHERENT AQ, AA
    (0x180B, 0x180F),    # MONGOLIAN FREE VARIATION SELECTORS ONE to THREE, VOWEL SEPARATOR, SELECTOR FOUR
    (0x200B, 0x200F),    # ZERO WIDTH SPACE to RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),    # LEFT-TO-RIGHT EMBEDDING to RIGHT-TO-LEFT OVERRIDE
    (0x2060, 0x206F),    # WORD JOINER, the invisible operators, the isolates, the deprecated formats (U+2065 reserved)
    (0x2800, 0x2800),    # BRAILLE PATTERN BLANK (not default-ignorable: a symbol drawn blank)
    (0x3164, 0x3164),    # HANGUL FILLER
    (0xFE00, 0xFE0F),    # VARIATION SELECTOR-1 to -16
    (0xFEFF, 0xFEFF),    # ZERO WIDTH NO-BREAK SPACE (a byte-order mark)
    (0xFFA0, 0xFFA0),    # HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),    # reserved
    (0x1BCA0, 0x1BCA3),  # SHORTHAND FORMAT LETTER OVERLAP to UP STEP
    (0x1D173, 0x1D17A),  # MUSICAL SYMBOL BEGIN BEAM to END PHRASE
    (0xE0000, 0xE0FFF),  # LANGUAGE TAG, the TAG characters, VARIATION SELECTOR-17 to -256, and reserved
)
_JOINER = "\u200d"
_EMOJI_VARIATION = "\ufe0f"  # VARIATION SELECTOR-16: the character before it drawn as an emoji
_KEYCAP = "\u20e3"  # COMBINING ENCLOSING KEYCAP: 1 + VS16 + it is the emoji 1️⃣
_PICTOGRAPH = frozenset({"So", "Sk"})  # emoji and their skin-tone modifiers


def _joins_pictographs(name: str, at: int) -> bool:
    """Whether the zero-width joiner at `at` stands between two pictographs (an emoji sequence)."""
    before = name[at - 1] if at > 0 else ""
    after = name[at + 1] if at + 1 < len(name) else ""
    return (before == _EMOJI_VARIATION or (before != "" and unicodedata.category(before) in _PICTOGRAPH)) and \
        after != "" and unicodedata.category(after) in _PICTOGRAPH


def _asks_for_an_emoji(name: str, at: int) -> bool:
    """Whether the VARIATION SELECTOR-16 at `at` changes what shows: it follows a pictograph (❤️), or makes a
    keycap (1️⃣). After anything else it draws nothing."""
    before = name[at - 1] if at > 0 else ""
    after = name[at + 1] if at + 1 < len(name) else ""
    return (before != "" and unicodedata.category(before) in _PICTOGRAPH) or after == _KEYCAP


def _shown(char: str) -> str:
    """A character as a person can read it in a message: U+202E RIGHT-TO-LEFT OVERRIDE, U+0000 (a control)."""
    named = unicodedata.name(char, "")
    if named:
        return f"U+{ord(char):04X} {named}"
    return f"U+{ord(char):04X} ({'a control character' if unicodedata.category(char) == 'Cc' else 'unassigned'})"


def name_problems(name: str, path: str) -> list[str]:
    """Why `name` (trimmed) could pass for another name: the first unseen character, the first space that is not
    a plain one, and the first doubled space, each with where it stands (character n, from 1); [] if none."""
    unseen = odd_space = doubled = None
    for at, char in enumerate(name):
        category = unicodedata.category(char)
        if char == _EMOJI_VARIATION and _asks_for_an_emoji(name, at):
            continue
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
