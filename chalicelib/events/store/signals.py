"""event_run_signals: the first receipt of each signal a run is sent, and what it did to the run.

Invariant: the first receipt of each (run, name) is the only one that writes. The receipt is recorded by
an `INSERT IGNORE` on the key, whose SELECT also refuses a finished run: a repeat finds the key taken and
writes nothing, and a terminal run records nothing. What the receipt did is what one guarded UPDATE did,
joined like `runs.advance_phase`: the row of the phase whose `signal` is the name has its condition met
(`met_by` the sender) only while `NOT condition_met AND closed_at IS NULL`, and only of a phase not yet left
by a running or paused run; the run wakes now only when it is running at that phase. The caller holds the
run's lock and writes the log row in the same transaction (`commands/signal.py` says what each effect means).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ...db import Tx
from ..lifecycle import RunSQL, SignalEffect, WaitSQL
from ..model import Signal

COLUMNS = "run_id, name, received_at, received_by, effect, payload"


def record_first(tx: Tx, run_id: int, name: str, by: str, payload: dict[str, Any] | None, now: datetime) -> bool:
    """The receipt, if it is the first of (run, name) and the run is not over (its effect recorded after)."""
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


def record_effect(tx: Tx, run_id: int, name: str, effect: SignalEffect) -> None:
    """The receipt just recorded gets the effect its guarded UPDATE had (it was recorded as phase_over)."""
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
                       r.waiting_for = IF(p.number = r.current_phase AND r.waiting_for = {WaitSQL.SIGNAL}, NULL,
                                          r.waiting_for)
                 WHERE r.id = %s AND r.status IN ({RunSQL.RUNNING}, {RunSQL.PAUSED}) AND p.number >= r.current_phase
                   AND NOT p.condition_met AND p.closed_at IS NULL""",  # noqa: S608 — the status literals are lifecycle's renderings (constants); values are parameters
            (name, now, by, now, run_id),
        )
        >= 1
    )


def get(tx: Tx, run_id: int, name: str) -> Signal | None:
    row = tx.one(f"SELECT {COLUMNS} FROM event_run_signals WHERE run_id = %s AND name = %s", (run_id, name))  # noqa: S608 — COLUMNS is a constant; values are parameters
    return None if row is None else Signal.from_row(row)
