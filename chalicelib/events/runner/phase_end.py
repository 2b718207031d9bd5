"""A phase at its end: left (the next phase opened, into the ending, completed), held, closed early,
or — the cleanup phase — its reverts written and the cleanup ended (a finished run's Clean up: done or failed,
its status kept).

The invariant: a phase is left only by `runs.leave_phase`, whose WHERE clause
refuses a phase with an open step or an unmet condition, and it marks the phase
rows drained and opened in the same statement; the next phase's steps are
materialised in the same transaction. A phase is closed only on its row's
guard (`phases.close`), its open steps cancelled with the cause. Each move
appends its log rows to its unit's and returns the next cursor; Done(None) when
a guard lost (the run is read again).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...db import Tx, must_exist
from .. import journal
from ..commands.protocol import Context, within
from ..commands.signal import ReceiveSignal
from ..lifecycle import (
    CLOSED_WORDS,
    CleanupOn,
    ClosedBy,
    ConditionKind,
    LateCleanup,
    OnDeadline,
    PhaseKind,
    RunStatus,
    StepStatus,
)
from ..model import Run
from ..programme import Programme
from ..store import phases, resources, runs, steps
from .branches import next_to_open
from .cursor import Closing, Cursor, Done, Drained, Held, NeedsRead, opened


def leave_phase(
    tx: Tx, now: datetime, run_id: int, programme: Programme, drained: Drained, log_rows: list[journal.Entry]
) -> Cursor:
    """The phase has no open step: held if its condition is not met; else on to the next phase,
    to ending, or to completed. Done(None) if the guard lost."""
    status, number = drained.status, drained.phase
    plan = programme.phase(number)
    signal = phases.auto_signal_due(tx, run_id, number, now) if plan.signal is not None else None
    if signal is not None:  # a dry run's engine sends it, as the game would: the phase closes on it
        within(tx, ReceiveSignal(run_id, signal), Context(journal.REHEARSAL, now))
        return Closing(status, number)
    # guard: the-walker-never-holds-a-phase
    standing = phases.hold(tx, run_id, number, now) if plan.condition.must_be_met or plan.limit is not None else None
    # guard: a-held-phase-past-its-deadline-stays-held
    if standing is not None and standing.due:
        return Closing(status, number)  # its deadline passed while it was held
    if standing is not None and standing.held:
        return Held(status, number, began=standing.began)
    # What ended it, for the next phase's run.phase row: whoever met its condition, else its steps (a
    # phase without a condition is not read again: a person's advance of one is told by its run.advance row).
    ended_by = (standing.met if standing is not None else None) or {ConditionKind.STEPS_DONE.value: True}
    # The phases passed over (their only_if not met) are told with the move that leaves this one, if it takes.
    following, passed = next_to_open(tx, run_id, programme, number) if status is RunStatus.RUNNING else (None, [])
    if following is not None and following.kind is PhaseKind.MAIN:
        if not runs.leave_phase(tx, run_id, number, RunStatus.RUNNING, RunStatus.RUNNING, now, next_phase=following.number):
            return Done(None)
        rows = steps.materialise_phase(tx, run_id, following.number, following.specs)
        log_rows += [*passed, journal.run_phase(run_id, following.number, following.name, ended_by)]
        return opened(RunStatus.RUNNING, following.number, rows)
    ending = programme.ending
    if (status is RunStatus.ENDING or not ending.specs) and CleanupOn.COMPLETE in programme.cleanup_on \
            and runs.leave_phase(tx, run_id, number, status, RunStatus.CLEANING_UP, now,
                                 cleanup_target=RunStatus.COMPLETED):
        # cleanup_on: complete, and the run left something to revert: its cleanup comes first. The
        # move clears the run lease: the next tick opens the cleanup.
        log_rows += passed
        log_rows.append(journal.run_status(run_id, number, status, RunStatus.CLEANING_UP, cause="last phase finished",
                                           cleanup_target=RunStatus.COMPLETED.value))
        return Done(RunStatus.CLEANING_UP)
    if status is RunStatus.RUNNING:
        # With no ending to drain, the run passes through ending within this one statement: the
        # log tells both moves, and nobody could have seen it in between (one transaction).
        to = RunStatus.ENDING if ending.specs else RunStatus.COMPLETED
        if not runs.leave_phase(tx, run_id, number, RunStatus.RUNNING, to, now,
                                # guard: an-ending-run-wakes-on-its-last-phase
                                next_phase=ending.number if ending.specs else None):
            return Done(None)
        log_rows += [
            *passed,
            journal.run_status(run_id, number, RunStatus.RUNNING, RunStatus.ENDING, cause="last phase finished"),
            journal.run_phase(run_id, ending.number, ending.name, ended_by),
        ]
        if ending.specs:
            rows = steps.materialise_phase(tx, run_id, ending.number, ending.specs)
            return opened(RunStatus.ENDING, ending.number, rows)
    elif not runs.leave_phase(tx, run_id, number, RunStatus.ENDING, RunStatus.COMPLETED, now):
        return Done(None)
    log_rows.append(journal.run_status(run_id, ending.number, RunStatus.ENDING, RunStatus.COMPLETED, cause="ending finished"))
    return Done(RunStatus.COMPLETED)


def tend_cleanup(tx: Tx, now: datetime, run_id: int, programme: Programme, log_rows: list[journal.Entry]) -> Cursor:
    """The cleanup phase has no open step: write the reverts of what is left to revert (the first time,
    and for what a late answer recorded since), else end the cleanup — at its target when every revert
    was done (naming what it leaves in the world, and why: a revert that is never sent), paused when one
    failed — or stop while another step of the run is still in flight."""
    cleanup = programme.cleanup
    added = resources.open_reverts(tx, run_id, cleanup.number, now)
    if added:
        phases.insert_plan(tx, run_id, (cleanup,), cleanup.number, now)
        log_rows.append(journal.run_cleanup(run_id, cleanup.number, added))
        return NeedsRead(RunStatus.CLEANING_UP, cleanup.number)
    run = must_exist(runs.get(tx, run_id))
    if run.late_cleanup is not None:  # a finished run's Clean up: it ends, its status kept
        return _end_late_cleanup(tx, now, run, cleanup.number, log_rows)
    target = must_exist(run.cleanup_target)
    if runs.end_cleanup(tx, run_id, RunStatus.CLEANING_UP, target, now, accept_failures=False):
        left = "".join(f"; left: {reason.count} ({reason.why})" for reason in resources.left_unreverted(tx, run_id))
        log_rows.append(journal.run_status(run_id, cleanup.number, RunStatus.CLEANING_UP, target,
                                           cause=f"every revert was done{left}"))
        return Done(target)
    reverts = resources.reverts_of(tx, run_id)
    error = f"{reverts.failed} of {reverts.total} resources could not be reverted"
    if reverts.failed and runs.pause_cleanup(tx, run_id, now, error):
        log_rows.append(journal.run_status(run_id, cleanup.number, RunStatus.CLEANING_UP, RunStatus.PAUSED, cause=error))
        return Done(RunStatus.PAUSED)
    return Done(RunStatus.CLEANING_UP)  # a step of the run is still in flight: its answer comes first


def _end_late_cleanup(tx: Tx, now: datetime, run: Run, phase: int, log_rows: list[journal.Entry]) -> Cursor:
    """A finished run's cleanup with nothing left open: done, or failed naming how many could not be reverted
    (a finished run cannot pause for a person; what is left stays in the ledger, revert_failed); or, while a
    step of it is still in flight, on."""
    ended = runs.end_late_cleanup(tx, run.id, now)
    if ended is None:
        return Done(RunStatus.CLEANING_UP)  # a revert of it is still in flight: its answer comes first
    reverts = resources.reverts_since(tx, run.id, must_exist(run.late_cleanup_at))
    left = {"left": [reason.public() for reason in refused]} if (refused := resources.left_unreverted(tx, run.id)) else {}
    detail: dict[str, Any] = {"reverted": reverts.total - reverts.failed, **left}
    if ended is LateCleanup.FAILED:
        detail.update(failed=reverts.failed, cause=f"{reverts.failed} of {reverts.total} resources could not be reverted")
    log_rows.append(journal.run_late_cleanup(run.id, phase, ended, **detail))
    return Done(run.status)


def close_phase(
    tx: Tx, now: datetime, run_id: int, programme: Programme, closing: Closing, log_rows: list[journal.Entry]
) -> Cursor:
    """The phase's condition was met (a signal) or its deadline passed: its pending and parked steps are
    cancelled with the cause and the row marked closed (a timeout also degrades the run); or, at a
    `pause` deadline, the run pauses and the phase waits on without one. A step in flight is left to its
    answer. Then the phase is read again (Done(None) if the row's guard lost)."""
    number = closing.phase
    found = phases.closing(tx, run_id, number, now)
    if found is None:
        return NeedsRead(closing.status, number)  # closed meanwhile, or nothing is due any more
    plan = programme.phase(number)
    words = {"number": number, "name": plan.name, "signal": found.signal, "seconds": found.limit_seconds}
    if found.on_deadline is OnDeadline.PAUSE:
        waited = f"the signal {found.signal}" if found.signal else "a person's advance" if plan.condition.must_be_met else "its steps"
        cause = f"phase {number} ({plan.name}) waited {found.limit_seconds} s for {waited}"
        # The run first: a person's move meanwhile leaves the deadline standing (the phase row is locked).
        # guard: a-pause-timeout-keeps-its-deadline
        # guard: a-pause-timeout-leaves-the-run-healthy
        if not runs.transition(tx, run_id, [RunStatus.RUNNING], RunStatus.PAUSED, now, last_error=cause, degrade=True) \
                or not phases.drop_deadline(tx, run_id, number, now):
            return Done(None)
        log_rows.append(journal.run_status(run_id, number, RunStatus.RUNNING, RunStatus.PAUSED, cause=cause))
        return Done(RunStatus.PAUSED)
    if not phases.close(tx, run_id, number, found.closed_by, now):
        return Done(None)
    cause = CLOSED_WORDS[found.closed_by].cause.format(**words)
    if found.closed_by is ClosedBy.SIGNAL and found.deadline_passed:
        # guard: a-signal-past-its-deadline-does-not-say-so
        cause += " (its deadline had passed too)"
    # guard: closing-leaves-the-open-steps
    for step in steps.cancel_phase(tx, run_id, number, now, cause):
        log_rows.append(journal.step_status(step, step.status, StepStatus.CANCELLED, cause=cause,
                                            attempts=step.attempts))
    # guard: a-timeout-does-not-degrade
    if found.closed_by is ClosedBy.TIMEOUT:
        runs.degrade(tx, run_id, now, cause)
    return NeedsRead(closing.status, number)
