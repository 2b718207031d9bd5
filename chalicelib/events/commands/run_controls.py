"""The controls of a run: pause, resume, cancel, advance (the person's Advance phase control) and clean up
(of a finished run).

Invariant: each moves the run only through its guarded statement (`runs.transition`, `runs.begin_cleanup`,
`runs.end_cleanup`, `runs.advance_phase`, `runs.begin_late_cleanup`), held to the version the press saw when it named one, and writes
its log rows in the same transaction, under the run's lock that `protocol.within` took first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ...db import Tx, must_exist
from ...roles import CONTROLLERS
from .. import journal
from ..errors import Conflict
from ..lifecycle import TERMINAL_RUN, LateCleanup, RunStatus, StepStatus
from ..model import Run, Step, clean_note
from ..store import log, phases, resources, runs, steps
from .protocol import Context, RunCommand, Took
from .rules import (
    CANCELLABLE,
    CLEANABLE,
    PAUSABLE,
    RESUMABLE,
    advance_refusal,
    advance_status_refusal,
    cancel_refusal,
    cleanup_refusal,
    pause_refusal,
    resume_refusal,
)


def run_answer(run: Run) -> dict[str, Any]:
    return {"ok": True, "run": run.public()}


@dataclass(frozen=True)
class RunMove(RunCommand[Run]):
    """A run control that answers the run as its change left it (pause, resume, clean up; postpone and extend,
    commands/plans.py). Each keeps its own guarded statement and log row, as a verb of its own; what follows
    them is the same for all, and is here: the run read again, in the same transaction."""

    def took(self, tx: Tx, run: Run, logged: int) -> Took[Run]:
        """The change took and `logged` is its log row: the run as it is now."""
        return Took(must_exist(runs.get(tx, run.id)), logged)

    def answer(self, result: Run) -> dict[str, Any]:
        return run_answer(result)


@dataclass(frozen=True)
class Pause(RunMove):
    """starting/running/cleaning_up -> paused; the run claim is cleared so a working tick stops at its next re-read."""

    name: ClassVar[str] = "pause"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    rule = pause_refusal
    reason: str | None = None

    def apply(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Took[Run] | None:
        note = clean_note(self.reason)
        if not runs.transition(tx, run.id, PAUSABLE, RunStatus.PAUSED, by.now, seen_version=by.version_seen(run)):
            return None
        # guard: pause-commits-before-its-log-row
        logged = log.append(tx, journal.run_control(run, self.name, RunStatus.PAUSED, by.actor, reason=note), by.now)
        return self.took(tx, run, logged)


def resume_locked(tx: Tx, run: Run, control: str, by: Context, seen_version: int | None = None,
                  note: str | None = None) -> int | None:
    """The resume's guarded move and its log row (`control`: the control that resumes the run, resume or
    retry; `note`: a person's words on the resume, kept on its row); the row's id, None if it did not take."""
    said = {} if note is None else {"note": note}
    if run.cleanup_target is not None:
        return _resume_cleanup(tx, run, control, by, seen_version, said)
    # Derived, never remembered: current_phase is written only on the way into running (or into
    # ending, which never pauses): a paused run that has one was running.
    to = RunStatus.RUNNING if run.current_phase is not None else RunStatus.STARTING
    if not runs.transition(tx, run.id, RESUMABLE, to, by.now, last_error=None, seen_version=seen_version):
        return None
    # guard: resume-commits-before-its-log-row
    return log.append(tx, journal.run_control(run, control, to, by.actor, **said), by.now)


def _resume_cleanup(tx: Tx, run: Run, control: str, by: Context, seen_version: int | None,
                    said: dict[str, str]) -> int | None:
    """A paused cleanup resumed: with a revert still open (or something left to revert) it goes on; with none,
    the person accepts the failed reverts (their resources stay revert_failed) and the run reaches its target."""
    target = must_exist(run.cleanup_target)
    if runs.end_cleanup(tx, run.id, RunStatus.PAUSED, target, by.now, accept_failures=True, seen_version=seen_version):
        accepted = resources.reverts_of(tx, run.id).failed
        return log.append(tx, journal.run_control(run, control, target, by.actor, accepted_revert_failures=accepted,
                                                  **said), by.now)
    if not runs.transition(tx, run.id, [RunStatus.PAUSED], RunStatus.CLEANING_UP, by.now, last_error=None,
                           seen_version=seen_version):
        return None
    return log.append(tx, journal.run_control(run, control, RunStatus.CLEANING_UP, by.actor, **said), by.now)


@dataclass(frozen=True)
class Resume(RunMove):
    """paused -> running (or starting if it never got a phase); last_error cleared, health kept; the person's
    optional note on their row (why it may go on: the answer to a pause's reason)."""

    name: ClassVar[str] = "resume"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    rule = resume_refusal
    note: str | None = None

    def apply(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Took[Run] | None:
        logged = resume_locked(tx, run, self.name, by, by.version_seen(run), clean_note(self.note))
        return None if logged is None else self.took(tx, run, logged)


@dataclass(frozen=True)
class Cancelled:
    run: Run
    cancelled_steps: int  # its pending and parked steps the cancel closed (a step in flight is left to its answer)


@dataclass(frozen=True)
class Cancel(RunCommand[Cancelled]):
    """Any non-terminal -> cancelled; pending and parked steps cancelled, a leased step left alone.

    With `cleanup`, a run that has something live to revert or a step in flight goes to cleaning_up
    instead (target cancelled; the tick writes and works the reverts); one that was scheduled, or has
    neither, is cancelled as without it. A cancel without cleanup of a run cleaning up abandons the cleanup:
    its reverts not yet done are cancelled, and their resources are live again.
    """

    name: ClassVar[str] = "cancel"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    rule = cancel_refusal
    reason: str | None = None
    cleanup: bool = False

    def apply(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Took[Cancelled] | None:
        note, cleanup = clean_note(self.reason), self.cleanup
        undecided = steps.parked_in_doubt_of(tx, run.id)
        if cleanup and runs.begin_cleanup(tx, run.id, CLEANABLE, RunStatus.CANCELLED, by.now,
                                          last_error=note or "cancelled by staff, cleaning up",
                                          seen_version=by.version_seen(run)):
            closed = steps.cancel_open(tx, run.id, by.now)
            logged = log.append(tx, journal.run_control(run, self.name, RunStatus.CLEANING_UP, by.actor, reason=note,
                                                        cancelled_steps=closed, cleanup=True), by.now)
            return Took(Cancelled(must_exist(runs.get(tx, run.id)), closed), logged)
        if cleanup and run.cleanup_target is not None and run.status not in TERMINAL_RUN:
            raise Conflict("this run is already cleaning up; cancel without cleanup to abandon the cleanup",
                           run_status=run.status.value)
        # guard: a-cancel-with-cleanup-forgets-the-undecided-step
        if cleanup and undecided is not None and run.status not in TERMINAL_RUN:
            # A cleanup reverts what the run created: whether this step created anything, a person says first.
            raise Conflict(f"decide {undecided.named} first: the game may or may not have applied it (confirm,"
                           " skip or resend it), or cancel without cleanup", run_status=run.status.value)
        if not runs.transition(
            tx, run.id, CANCELLABLE, RunStatus.CANCELLED, by.now, last_error=note or "cancelled by staff",
            seen_version=by.version_seen(run),
        ):
            return None
        closed = steps.cancel_open(tx, run.id, by.now)
        abandoned = resources.follow_run(tx, run.id, by.now) if run.cleanup_target is not None else 0
        # guard: cancel-commits-before-its-log-row
        logged = log.append(tx, journal.run_control(run, self.name, RunStatus.CANCELLED, by.actor, reason=note, cancelled_steps=closed,
                                                    **({"cleanup": cleanup} if cleanup else {}),
                                                    **({"abandoned_reverts": abandoned} if abandoned else {})), by.now)
        if undecided is not None:  # closed undecided: whether the game applied it, nobody knows
            # guard: a-cancel-closes-an-undecided-step-without-saying-so
            log.append(tx, journal.step_control(undecided, self.name, StepStatus.CANCELLED, by.actor, in_doubt=True), by.now)
        return Took(Cancelled(must_exist(runs.get(tx, run.id)), closed), logged)

    def answer(self, result: Cancelled) -> dict[str, Any]:
        return {**run_answer(result.run), "cancelled_steps": result.cancelled_steps}


@dataclass(frozen=True)
class CleanUp(RunMove):
    """A finished run (completed, failed or cancelled) that left something live to revert is cleaned up, its
    status kept: `runs.begin_late_cleanup` marks its cleanup started and wakes it, the reverts a cancel abandoned
    and those that failed or were refused (a Clean up again, after one that failed) are pending again
    (`steps.reopen_reverts`), and the tick writes the others and works them all newest first as
    a cancel's cleanup does (`phase_end.tend_cleanup`), then records the cleanup done or failed."""

    name: ClassVar[str] = "cleanup"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    rule = cleanup_refusal
    reason: str | None = None

    def apply(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Took[Run] | None:
        planned = resources.cleanup_counts(tx, run.id)
        if not runs.begin_late_cleanup(tx, run.id, by.now):
            return None
        steps.reopen_reverts(tx, run.id, by.now)
        logged = log.append(tx, journal.run_late_cleanup(
            run.id, run.current_phase, LateCleanup.STARTED, actor=by.actor, control=self.name,
            reason=clean_note(self.reason), reverts=planned.reverts, by_hand=planned.by_hand), by.now)
        return self.took(tx, run, logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Run:
        """The 409 in the rows' words: not finished or already cleaning up (the rule), a step still in flight,
        or nothing live to revert (and, if so, what is left and why)."""
        if cleanup_refusal(run, None, None) is not None:
            raise self.lost(run)
        if resources.in_flight_count(tx, run.id, by.now):
            raise Conflict("a step of this run is still in flight; clean up once its answer is in (what it created"
                           " is reverted too)", run_status=run.status.value)
        left = "; ".join(f"{reason.count} left: {reason.why}" for reason in resources.left_unreverted(tx, run.id))
        raise Conflict("this run has nothing live to revert and no failed revert to send again" + (f" ({left})" if left else ""),
                       run_status=run.status.value)


@dataclass(frozen=True)
class Advanced:
    run: Run
    skipped_steps: int
    resumed: bool


@dataclass(frozen=True)
class Advance(RunCommand[Advanced]):
    """A person ends the phase the run is at (the Advance phase control): its condition met, its pending and
    parked steps skipped.

    The guarded UPDATE (`runs.advance_phase`: at that phase, not yet met, nothing in flight under a live lease;
    from paused it resumes), then the skips with the person's reason, then the log rows. The run wakes now,
    and the tick leaves the drained phase and opens the next.
    """

    name: ClassVar[str] = "advance"
    # guard: a-gm-may-advance
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    rule = advance_status_refusal
    phase: int
    reason: str | None = None

    def apply(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Took[Advanced] | None:
        note, phase = clean_note(self.reason), self.phase
        resuming = run.status is RunStatus.PAUSED
        if not runs.advance_phase(tx, run.id, phase, by.actor, by.now, resuming=resuming, seen_version=by.version_seen(run)):
            return None
        skipped = steps.skip_phase_for_advance(tx, run.id, phase, by.now, note)
        rows = [journal.run_advance(run, self.name, phase, by.actor, reason=note, skipped_steps=len(skipped), resumed=resuming)]
        if resuming:
            rows.append(journal.run_control(run, self.name, RunStatus.RUNNING, by.actor))
        rows += [journal.step_control(step, self.name, StepStatus.SKIPPED, by.actor, reason=note, attempts=step.attempts)
                 for step in skipped]
        log.append_many(tx, rows, by.now)
        logged = tx.last_insert_id  # a multi-row INSERT's: its first row, the advance's own
        return Took(Advanced(must_exist(runs.get(tx, run.id)), len(skipped), resuming), logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Advanced:
        current = None if run.current_phase is None else phases.get(tx, run.id, run.current_phase)
        flying = None if run.current_phase is None else steps.holding_phase(tx, run.id, run.current_phase, by.now)
        raise Conflict(advance_refusal(run, self.phase, current, flying) or f"advance did not take: the run is {run.status.value}",
                       run_status=run.status.value)

    def answer(self, result: Advanced) -> dict[str, Any]:
        return {"ok": True, "run": result.run.public(), "skipped_steps": result.skipped_steps, "resumed": result.resumed}
