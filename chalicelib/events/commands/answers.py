"""Which controls answer a wait, and which waits a caller can act on: the inbox's row controls and its count.

Invariant: a wait's answers are declared controls (`CONTROLS`), most likely first: a cue is confirmed or had
("I have it"), a decision confirmed or re-sent, a run stopped at a failed step retried, a paused run resumed, a
held phase advanced; a signal is the game's to send (a person may send it from the run's page, no control).
The waits a caller can act on (`answerable`) are those one of whose answers their roles may press (a cue's by its
cue roles too), so a gm's inbox holds the cues and nothing a gm cannot act on; which answers a row offers is
what the run's page offers the caller (`declared.Standing.offer`), judged on the row's run.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..lifecycle import WaitingFor
from .declared import CONTROLS, Control
from .run_controls import Advance, Resume
from .step_controls import Acknowledge, Confirm, Resend, Retry

# What answers each wait a person ends, most likely first (a signal: none, the game sends it).
_ANSWERS: dict[WaitingFor, tuple[type, ...]] = {
    WaitingFor.CUE: (Confirm, Acknowledge),
    WaitingFor.DECISION: (Confirm, Resend),
    WaitingFor.RESUME: (Resume,),
    WaitingFor.ADVANCE: (Advance,),
    WaitingFor.SIGNAL: (),
}
_BY_COMMAND = {c.command: c for c in CONTROLS.values()}
RETRY = _BY_COMMAND[Retry]  # a run stopped at a failed step: what it needs
# Who may send a signal by hand: whoever may resume (the signals route's gate, api/auth.CONTROLLERS).
_SIGNALLERS = _BY_COMMAND[Resume].roles


def answers(kind: WaitingFor, *, failed: bool = False) -> tuple[Control, ...]:
    """The controls that answer a `kind` wait, most likely first; `failed`: the paused run is stopped at a failed
    step, so Retry comes before Resume."""
    found = tuple(_BY_COMMAND[command] for command in _ANSWERS[kind])
    return (RETRY, *found) if failed else found


def answerable(roles: frozenset[str]) -> tuple[WaitingFor, ...]:
    """The waits a caller with `roles` can act on: one of its answers theirs (a cue's by its cue roles too), a
    signal's if they may send it by hand."""
    def theirs(kind: WaitingFor, controls: Iterable[Control]) -> bool:
        if kind is WaitingFor.SIGNAL:
            return bool(roles & _SIGNALLERS)
        return any(roles & (c.gate if kind is WaitingFor.CUE else c.roles) for c in controls)

    return tuple(kind for kind in WaitingFor if theirs(kind, answers(kind)))
