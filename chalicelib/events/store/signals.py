"""event_run_signals: the first receipt of each signal a run is sent, and what it did to the run.

Invariant: the first receipt of each (run, name) is the only one that writes. The
run's row is locked first, as a control locks it, so the signals and controls of
one run take turns; then the receipt is claimed by an `INSERT IGNORE` on the key,
whose SELECT also refuses a finished run: a repeat finds the key taken, writes
nothing and answers the first receipt, and a terminal run records nothing (409).
What the receipt did is what one guarded UPDATE did, joined like
`runs.advance_phase`: the row of the phase whose `signal` is the name has its
condition met (`met_by` the sender) only while `NOT condition_met AND closed_at IS
NULL`, and only of a phase not yet left by a running or paused run; the run wakes
now only when it is running at that phase. Its effect, kept on the receipt:

    ends_phase      the run is running at that phase (open or held): met, and the run
                    wakes now; the tick closes the phase
    acts_on_resume  the run is paused at that phase: met, no wake (the resume wakes the
                    run, and the tick closes the phase then)
    kept_for_phase  a later phase: met now, no wake (closed as soon as it opens); or a
                    run with no phase rows yet (scheduled, starting), whose start folds
                    the receipt into the statement that writes them
    phase_over      the phase was left or closed, or its condition met already (a
                    person advanced it): recorded, nothing changes

The receipt, the phase's condition, the wake time and the `run.signal` log row
commit together, in the caller's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...db import Tx, must_exist
from .. import journal, waiting
from ..document import programme_of
from ..errors import Conflict, NotFound, UnreadableDocument
from ..lifecycle import RunSQL
from ..model import Run, RunStatus, Signal, SignalEffect
from . import definitions, log, runs

COLUMNS = "run_id, name, received_at, received_by, effect, payload"


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


def receive(tx: Tx, run_id: int, name: str, by: str, payload: dict[str, Any] | None, now: datetime) -> Receipt:
    """Record the signal `name` to the run, sent by `by` (a token's sub, or `game`), and act on it (see above).

    NotFound: no such run, or a name its version does not declare (the message lists those it does).
    Conflict: the run is over, and this is not a repeat of a signal it took while it lasted.
    """
    run = runs.get(tx, run_id, for_update=True)
    if run is None:
        raise NotFound(f"no run {run_id}")
    names = declared(must_exist(definitions.get_version(tx, run.definition_id, run.definition_version)).document)
    if name not in names:
        raise NotFound(f"run {run.id} has no signal {name!r}: {_listed(names)}")
    if not claim(tx, run.id, name, by, payload, now):
        first = get(tx, run.id, name)
        if first is None:
            raise Conflict(f"run {run.id} is {run.status.value}; a finished run takes no signal", run_status=run.status.value)
        return Receipt(first, repeat=True)
    phase = phase_of(tx, run.id, name)
    effect = _effect(run, phase, met=meet(tx, run.id, name, by, now))
    if effect is not SignalEffect.PHASE_OVER:
        settle(tx, run.id, name, effect)
    signal = Signal(run.id, name, now, by, effect, payload)
    # guard: signal-commits-before-its-log-row
    log.append(tx, journal.run_signal(signal, phase), now)
    return Receipt(signal, repeat=False)


def _listed(names: Iterable[str]) -> str:
    shown = ", ".join(names)
    return f"its version declares {shown}" if shown else "its version declares none"


def claim(tx: Tx, run_id: int, name: str, by: str, payload: dict[str, Any] | None, now: datetime) -> bool:
    """The receipt, if it is the first of (run, name) and the run is not over (its effect is settled after)."""
    # guard: signal-to-a-finished-run-recorded
    return (
        tx.execute(
            # guard: signal-repeat-overwrites-the-first-receipt
            f"""INSERT IGNORE INTO event_run_signals ({COLUMNS})
                SELECT id, %s, %s, %s, %s, %s FROM event_runs WHERE id = %s AND status NOT IN ({RunSQL.TERMINAL})""",  # noqa: S608 — COLUMNS and the status literals are constants; values are parameters
            (name, now, by, SignalEffect.PHASE_OVER.value, None if payload is None else json.dumps(payload), run_id),
        )
        == 1
    )


def settle(tx: Tx, run_id: int, name: str, effect: SignalEffect) -> None:
    """The receipt just claimed gets the effect its guarded UPDATE had (it was claimed as recording only)."""
    tx.execute("UPDATE event_run_signals SET effect = %s WHERE run_id = %s AND name = %s", (effect.value, run_id, name))


def phase_of(tx: Tx, run_id: int, name: str) -> int | None:
    """The number of the run's phase that waits for `name` (None: the run has no phase rows yet)."""
    row = tx.one("SELECT number FROM event_run_phases WHERE run_id = %s AND `signal` = %s", (run_id, name))
    return None if row is None else int(row["number"])


def meet(tx: Tx, run_id: int, name: str, by: str, now: datetime) -> bool:
    """The guarded UPDATE: the signal's phase met by `by` if it has not ended, the run woken if it works that phase."""
    # guard: signal-meets-a-phase-already-met
    # guard: signal-wakes-a-paused-run
    # guard: a-signalled-phase-is-still-waited-for
    return (
        tx.execute(
            f"""UPDATE event_runs r JOIN event_run_phases p ON p.run_id = r.id AND p.`signal` = %s
                   SET p.condition_met = TRUE, p.met_at = %s, p.met_by = %s,
                       r.wake_at = IF(r.status = {RunSQL.RUNNING} AND p.number = r.current_phase, %s, r.wake_at),
                       r.waiting_for = IF(p.number = r.current_phase AND r.waiting_for = {waiting.SIGNAL}, NULL,
                                          r.waiting_for)
                 WHERE r.id = %s AND r.status IN ({RunSQL.RUNNING}, {RunSQL.PAUSED}) AND p.number >= r.current_phase
                   AND NOT p.condition_met AND p.closed_at IS NULL""",  # noqa: S608 — the status literals are lifecycle's renderings (constants); values are parameters
            (name, now, by, now, run_id),
        )
        >= 1
    )


def _effect(run: Run, phase: int | None, *, met: bool) -> SignalEffect:
    """What the guarded UPDATE did, named from the locked run row and the phase the signal names."""
    if not met:
        return SignalEffect.KEPT_FOR_PHASE if phase is None and run.current_phase is None else SignalEffect.PHASE_OVER
    if phase != run.current_phase:
        return SignalEffect.KEPT_FOR_PHASE
    return SignalEffect.ENDS_PHASE if run.status is RunStatus.RUNNING else SignalEffect.ACTS_ON_RESUME


def get(tx: Tx, run_id: int, name: str) -> Signal | None:
    row = tx.one(f"SELECT {COLUMNS} FROM event_run_signals WHERE run_id = %s AND name = %s", (run_id, name))  # noqa: S608 — COLUMNS is a constant; values are parameters
    return None if row is None else Signal.from_row(row)
