"""event_run_steps closed by their run's or their phase's end: the steps nothing will run any more.

The invariant: a step with a live lease is never closed here (nothing can recall
a command already sent: its answer lands it, `claimer.cancel_if_over`), nor a
step parked in doubt by a phase's end (it holds its phase until a person decides
whether the game applied it).
"""

from __future__ import annotations

from datetime import datetime

from ....db import Tx, placeholders
from ... import waiting
from ...lifecycle import CANCEL_OPEN, CANCEL_PENDING, CLOSE_WITH_THE_PHASE, StepSQL, StepStatus
from ...model import Step, kept_note
from .fragments import COLUMNS
from .write import write


def cancel_pending(tx: Tx, run_id: int, now: datetime) -> int:
    """Cancel the steps of a run that have not started (abort_run)."""
    return write(tx, CANCEL_PENDING, "run_id = %s", (run_id,), now=now)


def cancel_open(tx: Tx, run_id: int, now: datetime) -> int:
    """Cancel pending and parked steps of a cancelled run.

    A step with a live lease is left alone: something is dispatching it, and
    nothing can recall a command already sent. A parked cue is not a sent
    command, and leaving it running would claim a cancelled run still waits.
    """
    # guard: cancel-open-cancels-a-leased-step
    return write(tx, CANCEL_OPEN, f"run_id = %s AND (status = {StepSQL.PENDING} OR claim_expires_at IS NULL)", (run_id,),
                 now=now)


# The steps a phase's end closes: pending, parked, or leased by a lease that lapsed (the sweep would bring it back).
# Not a step parked in doubt: it holds its phase until a person decides whether the game applied it.
# guard: advance-leaves-a-lapsed-step-to-come-back
# guard: a-phase-close-cancels-a-step-parked-in-doubt
_CLOSED_WITH_THE_PHASE = f"""run_id = %s AND phase = %s
               AND (status = {StepSQL.PENDING} OR (status = {StepSQL.RUNNING}
                    AND (claim_expires_at IS NULL OR claim_expires_at < %s)))
               AND NOT {waiting.parked_in_doubt('event_run_steps')}"""


def skip_phase_for_advance(tx: Tx, run_id: int, phase: int, now: datetime, reason: str | None) -> list[Step]:
    """The advance control's second statement: the phase's pending and parked steps are skipped with the
    person's reason (and a step whose lease lapsed: its late answer is fenced out, never re-queued); the
    steps as they were, for their log rows. A step in flight under a live lease is never touched: the
    advance's own guard refused while one was."""
    return _close_open_steps(tx, run_id, phase, now, StepStatus.SKIPPED, reason)


def cancel_phase(tx: Tx, run_id: int, phase: int, now: datetime, cause: str) -> list[Step]:
    """Closing a phase (a signal, `after`, a timeout): its pending and parked steps are cancelled with the
    cause; a step in flight under a live lease is left to its answer (`cancel_if_phase_ended`)."""
    return _close_open_steps(tx, run_id, phase, now, StepStatus.CANCELLED, cause)


def _close_open_steps(tx: Tx, run_id: int, phase: int, now: datetime, to: StepStatus, note: str | None) -> list[Step]:
    """Read locked, then updated with the same WHERE: a step that moved in between is left."""
    rows = tx.all(f"SELECT {COLUMNS} FROM event_run_steps WHERE {_CLOSED_WITH_THE_PHASE} ORDER BY seq FOR UPDATE",  # noqa: S608 — COLUMNS and the WHERE are constants; values are parameters
                  (run_id, phase, now))
    if not rows:
        return []
    found = [Step.from_row(r) for r in rows]
    write(tx, CLOSE_WITH_THE_PHASE[to], f"id IN ({placeholders(len(found))}) AND {_CLOSED_WITH_THE_PHASE}",
          (*(step.id for step in found), run_id, phase, now), now=now, sets="last_error = %s", set_args=(kept_note(note),))
    return found
