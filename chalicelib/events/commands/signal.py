"""A game's signal to a run (`POST /runs/{id}/signals/{name}`), the one command no person presses.

Invariant: the first receipt of each (run, name) is the only one that writes. It runs on the commands'
template, so the run's row is locked first and the signals and controls of one run take turns; then the
receipt is recorded only if it is the first and the run is not over (`signals.record_first`), and the
phase that waits for the name has its condition met by one guarded UPDATE (`signals.meet`). A repeat finds
the receipt taken, writes nothing and answers the first receipt; a finished run records nothing (409).
The receipt, the phase's condition, the wake time and the `run.signal` log row commit together. What the
receipt did, kept on it as its effect:

    ends_phase      the run is running at that phase (open or held): met, and the run
                    wakes now; the tick closes the phase
    acts_on_resume  the run is paused at that phase: met, no wake (the resume wakes the
                    run, and the tick closes the phase then)
    kept_for_phase  a later phase: met now, no wake (closed as soon as it opens); or a
                    run with no phase rows yet (scheduled, starting), whose start folds
                    the receipt into the statement that writes them
    phase_over      the phase was left or closed, or its condition met already (a
                    person advanced it): recorded, nothing changes
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from ...db import Tx, must_exist
from .. import journal
from ..errors import Conflict, Forbidden, NotFound, UnreadableDocument
from ..lifecycle import RunMode, RunStatus, SignalEffect
from ..model import Run, Signal, Step
from ..programme import programme_of
from ..store import definitions, log, signals
from .protocol import Command, Context, Took


@dataclass(frozen=True)
class Receipt:
    """A signal as the route answers it: the first receipt, and whether this request was a repeat of it."""

    signal: Signal
    repeat: bool


def declared(document: dict[str, Any]) -> list[str]:
    """The signal names a version's phases wait for (`"advance": {"when": "signal", "name": …}`), in phase order."""
    try:
        plans = programme_of(document).phases
    except UnreadableDocument:  # a run of it cannot be walked (the tick fails it): it waits for no signal
        return []
    return [plan.signal for plan in plans if plan.signal is not None]


@dataclass(frozen=True)
class ReceiveSignal(Command[Receipt]):
    """The signal `signal` to the run, sent by the context's actor (a token's sub, `game`, or a dry run's
    engine), with the sender's `payload`.

    NotFound: no such run, or a name its version does not declare (the message lists those it does).
    Conflict: the run is over, and this is not a repeat of a signal it took while it lasted.
    """

    name: ClassVar[str] = "signal"
    run_id: int
    signal: str
    payload: dict[str, Any] | None = None
    by_game: bool = False  # signed with the game server's signal key: for live runs only

    def apply(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Took[Receipt] | None:
        # A dry run's game is the sandbox, never the live game; and the sandbox holds no live key to sign with. The
        # run's mode never changes, and its row is locked.
        # guard: the-live-games-key-signals-a-dry-run
        if self.by_game and run.mode is RunMode.REHEARSAL:
            raise Forbidden(f"run {run.id} is a dry run: the game server's signal key signals live runs only; a dry"
                            " run's signal comes from a person (the console, or a token) or from its auto_signal_seconds")
        names = declared(must_exist(definitions.get_version(tx, run.definition_id, run.definition_version)).document)
        if self.signal not in names:
            raise NotFound(f"run {run.id} has no signal {self.signal!r}: {_listed(names)}")
        if not signals.record_first(tx, run.id, self.signal, by.actor, self.payload, by.now):
            return None
        phase = signals.phase_of(tx, run.id, self.signal)
        effect = _effect(run, phase, met=signals.meet(tx, run.id, self.signal, by.actor, by.now))
        if effect is not SignalEffect.PHASE_OVER:
            signals.record_effect(tx, run.id, self.signal, effect)
        signal = Signal(run.id, self.signal, by.now, by.actor, effect, self.payload)
        # guard: signal-commits-before-its-log-row
        logged = log.append(tx, journal.run_signal(signal, phase), by.now)
        return Took(Receipt(signal, repeat=False), logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Receipt:
        """Not the first receipt: a repeat answers the first; a finished run that never took it is a 409."""
        first = signals.get(tx, run.id, self.signal)
        if first is None:
            raise Conflict(f"run {run.id} is {run.status.value}; a finished run takes no signal", run_status=run.status.value)
        return Receipt(first, repeat=True)

    def answer(self, result: Receipt) -> dict[str, Any]:
        return result.signal.public()


def _listed(names: Iterable[str]) -> str:
    shown = ", ".join(names)
    return f"its version declares {shown}" if shown else "its version declares none"


def _effect(run: Run, phase: int | None, *, met: bool) -> SignalEffect:
    """What the guarded UPDATE did, named from the locked run row and the phase the signal names."""
    if not met:
        return SignalEffect.KEPT_FOR_PHASE if phase is None and run.current_phase is None else SignalEffect.PHASE_OVER
    if phase != run.current_phase:
        return SignalEffect.KEPT_FOR_PHASE
    return SignalEffect.ENDS_PHASE if run.status is RunStatus.RUNNING else SignalEffect.ACTS_ON_RESUME
