"""What a run waits for, as a word: a run that waits for a person or the game has no status of its own.

The invariant: each wait is named here and nowhere else (`event_runs.waiting_for`
holds these words, `GET /runs?waiting=` filters on them), with the facts the
console decides by; which one a run waits for is derived from its rows
(`events/waiting.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class WaitingFor(str, Enum):
    CUE = "cue"  # its phase's head step is parked: a person does what it asks
    ADVANCE = "advance"  # its phase is drained and held by `manual`: a person advances it
    SIGNAL = "signal"  # its phase is drained and held for a signal from the game
    DECISION = "decision"  # its phase's head step is parked in doubt: a person decides whether the game applied it
    RESUME = "resume"  # it is paused: a person resumes it


# The waits a stalled run is escalated for (runner/stalls.py, `event_run_escalations`): paused, or held for a person.
STALLS = (WaitingFor.RESUME, WaitingFor.ADVANCE)


class Waited(str, Enum):
    """What a wait is a wait on."""

    RUN = "run"
    PHASE = "phase"
    STEP = "step"


@dataclass(frozen=True)
class WaitWords:
    """How the console shows a wait (`label`) and what it decides by: what it is a wait on, whether the game
    (not a person) ends it, and whether it is a decision on a step in doubt."""

    label: str
    on: Waited
    by_the_game: bool = False
    decision: bool = False


WAIT_WORDS: dict[WaitingFor, WaitWords] = {
    WaitingFor.CUE: WaitWords("cue", Waited.STEP),
    WaitingFor.ADVANCE: WaitWords("advance", Waited.PHASE),
    WaitingFor.SIGNAL: WaitWords("signal", Waited.PHASE, by_the_game=True),
    WaitingFor.DECISION: WaitWords("decision", Waited.STEP, decision=True),
    WaitingFor.RESUME: WaitWords("resume", Waited.RUN),
}

# The waits a person ends (all but the game's): while a run waits in one, the wake loop looks more often
# (runner/loop.py), so the step after a person's control starts within a fraction of a second.
PEOPLES = tuple(wait for wait, words in WAIT_WORDS.items() if not words.by_the_game)
