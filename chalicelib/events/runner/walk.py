"""Walking one run inside a tick: the loop that composes the moves, one step at a time.

The invariant: only this loop moves the walk on. It stands on one cursor
(`cursor.py`) and hands it to the move that fits — the start (`start.py`), a
phase's end (`phase_end.py`), an attempt's outcome (`attempt.py`), a cue's
timeout (`cue_timeout.py`) — each of which takes what it needs, returns the
next cursor and never calls the loop back. A unit of work is one transaction
that always ends the same way (`_finish_unit`): drained phases left, the unit's
log rows sent ahead, then the next head step claimed with the COMMIT behind it
in the same request. So a change and its log rows commit together, a claim is
committed before its step is dispatched, and an outcome and the next claim take
one commit (`attempt.settle`, then `_finish_unit`).

The worker holds the run lease (`lease.py`: no other worker or tick walks this
run), but every write is still guarded on its own: the step claim re-checks
that the run is runnable (a pause pressed mid-tick stops the next claim), the
claimer's writes are fenced on its claim, and a phase is left only if it has no
open step and no unmet condition. A run cleaning up is walked in its cleanup
phase (`Programme.cleanup`): drained, it gets its revert steps
(`phase_end.tend_cleanup`), works them like any phase, then ends at its target;
so is a finished run whose Clean up is under way (`Run.walked_as`), which ends
its cleanup done or failed and keeps its status.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from ... import storable
from ...db import Database, Tx, credentials_refused, lost_connection, must_exist
from .. import journal
from ..actions.outcome import Outcome
from ..actions.perform import Actions
from ..errors import UnreadableDocument
from ..lifecycle import BEFORE_FIRST_PHASE, RUNNABLE, RunStatus
from ..model import Claim, Run
from ..programme import Programme
from ..store import log, runs, steps
from .attempt import Need, claimable, may_dispatch, need_of, next_claim, outcome_of, settle
from .attention import Attender, Timer, due
from .branches import gated, pass_over, unmet_at_turn
from .budget import Budget
from .context import WalkContext
from .cue_timeout import time_out
from .cursor import Closing, Cursor, Done, Drained, Head, Held, NeedsRead, opened
from .hold_post import post_hold
from .lease import RunLease
from .outcomes import Rules
from .phase_end import close_phase, leave_phase, tend_cleanup
from .start import fail_unreadable, picked_up, start_run

logger = logging.getLogger(__name__)

OPEN_STEPS_PER_READ = 200
NOT_STARTED = (None, RunStatus.SCHEDULED, RunStatus.MISSED)  # where a scheduled run stays when its start did not happen

# A move of a unit of work: its writes in the unit's transaction, its log rows appended, the next cursor returned.
Move = Callable[[Tx, list[journal.Entry]], Cursor]


@dataclass
class RunReport:
    run_id: int
    leased: bool = False  # this worker took the run lease
    status: RunStatus | None = None  # as this worker left it
    dispatched: int = 0
    started: bool = False  # taken from scheduled into its first phase
    outcomes: Counter[str] = field(default_factory=Counter)
    out_of_budget: bool = False
    unfitted: Need | None = None  # the head step left because its attempt did not fit the tick's time left
    reminders: int = 0  # cue reminders this worker claimed (posted or failed: never re-sent)
    escalations: int = 0  # escalation tries of parked cues
    escalation_failures: int = 0  # escalations whose last try failed: counted with the tick's errors


class RunWalker:
    """Walks the runs of one tick on one bridge and its channels: `walk` one run at a time per thread."""

    def __init__(
        self,
        db: Database,
        actions: Actions,
        rules: Rules,
        programme_for: Callable[[Run], Programme],
        now: datetime,
        budget: Budget,
        step_worst_case_seconds: float,
        leases_lapse_at: float = math.inf,
    ):
        self.db, self.programme_for = db, programme_for
        self.ctx = WalkContext(actions, rules, now, budget, step_worst_case_seconds, leases_lapse_at)
        self.attender = Attender(db, actions, rules, now, budget)

    def walk(self, run: Run) -> RunReport:
        """Take the run lease, walk the run until a step is parked, in flight or not yet due, a phase is held,
        the run is over or the budget is spent, and release the lease."""
        report = RunReport(run.id)
        if not self.ctx.budget.allows(self.ctx.step_worst_case_seconds):
            report.out_of_budget = True
            return report
        lease = RunLease(self.db, run.id, self.ctx.now, self.ctx.rules.lease_seconds)
        try:
            report.status = self._leased_walk(run, lease, report)
            report.started = run.status is RunStatus.SCHEDULED and report.status not in NOT_STARTED
        finally:
            report.leased = lease.taken
            lease.release(report.status)
        return report

    def _leased_walk(self, run: Run, lease: RunLease, report: RunReport) -> RunStatus | None:
        """None: another worker or tick holds the run. A run before its first phase takes the lease as the
        start's first statement (one commit for both); any other takes it on its own first."""
        try:
            programme = self.programme_for(run)
        except UnreadableDocument as error:
            reason = str(error)
            if not self.db.autocommit(lease.take):
                return None
            return self.db.transaction(lambda tx: fail_unreadable(tx, self.ctx.now, run, reason))
        if run.status in BEFORE_FIRST_PHASE:
            started = self.db.transaction(lambda tx: self._lease_and_start(tx, run, programme, lease))
            if started is None:
                return None
            cursor, claim = started
        elif not self.db.autocommit(lease.take):
            return None
        else:
            cursor, claim = picked_up(run, programme), None
        return self._walk(run, programme, cursor, claim, report)

    def _walk(self, run: Run, programme: Programme, cursor: Cursor, claim: Claim | None, report: RunReport) -> RunStatus:
        """From `cursor` (and the head's claim, if a unit took it) until the walk stops: a head step that is
        occupied (in flight or parked) or not yet due, a held phase, the budget, or the run over.
        Its actions and timers run on `run`'s clock (a rehearsal's speed), as its row says."""
        ctx, run_id, lost_claim = self.ctx, run.id, False
        while True:
            if isinstance(cursor, Done):
                if cursor.status is not None:
                    return cursor.status
                status = self._current_status(run_id)
                if status is RunStatus.CLEANING_UP:
                    # A cleanup began while this step was in flight: its answer is in, so the cleanup may
                    # open now rather than at the step's lease expiry its wake time last counted.
                    self.db.autocommit(lambda tx: runs.wake_cleanup(tx, run_id, ctx.now))
                return status
            # guard: a-manual-hold-is-never-posted
            if isinstance(cursor, Held) and cursor.began:
                post_hold(ctx, run_id, programme, cursor)  # its unit has committed
            if isinstance(cursor, Held) or cursor.status not in RUNNABLE:
                return cursor.status  # a held phase costs nothing more: its wake time waits for its condition
            if isinstance(cursor, NeedsRead):
                cursor = self._read(run_id, cursor)
                continue
            if isinstance(cursor, (Drained, Closing)):
                ending = cursor  # its unit's only move is the phase's end, which `_finish_unit` works
                cursor, claim = self._unit(run_id, programme, lambda tx, log_rows: ending)
                continue
            head = cursor
            if claim is None:
                if not claimable(head.step, ctx.now):
                    timer = due(head.step, ctx.now)
                    if timer is None:
                        return head.status  # occupied (in flight, or parked with no timer due), or not yet due
                    cursor, claim = self._attend(run, programme, head, timer, report)
                    continue
                if not may_dispatch(ctx, head.step):
                    report.out_of_budget, report.unfitted = True, need_of(ctx, head.step)
                    return head.status
                # guard: a-gated-step-is-claimed-unread
                if gated(programme, head.step):
                    cause = self.db.autocommit(lambda tx: unmet_at_turn(tx, run_id, programme, head.step))
                    if cause is not None:  # a branch not taken: skipped, and the walk goes on after it
                        cursor, claim = self._unit(
                            run_id, programme, lambda tx, log_rows: pass_over(tx, ctx.now, head, cause, log_rows))
                        continue
                claim = self.db.autocommit(lambda tx: steps.claim(tx, head.step, ctx.now, ctx.rules.lease_seconds))
                if claim is None:
                    # Paused or cancelled meanwhile, or a person skipped the step: look once more.
                    status = self._current_status(run_id)
                    if lost_claim or status not in RUNNABLE:
                        return status
                    lost_claim = True
                    cursor = NeedsRead(status, head.phase)
                    continue
            lost_claim = False
            claimed = claim
            outcome = outcome_of(ctx, run, head.step, claimed)
            cursor, claim = self._settled(run, programme, head, claimed, outcome)
            report.dispatched += 1
            report.outcomes[outcome.verdict.value] += 1

    def _settled(self, run: Run, programme: Programme, head: Head, claim: Claim,
                 outcome: Outcome) -> tuple[Cursor, Claim | None]:
        """The outcome's unit; if it fails for a reason other than the database's reach, the outcome again in a
        unit of its own, plainly (`attempt.settle`'s `unwritten`): the answer is kept, never lost to a re-send."""
        ctx, run_id = self.ctx, run.id
        try:
            return self._unit(
                run_id, programme, lambda tx, log_rows: settle(tx, ctx, programme, run, head, claim, outcome, log_rows))
        except Exception as failure:
            # guard: an-outcome-whose-writes-failed-is-re-sent
            if lost_connection(failure) or credentials_refused(failure):
                raise  # the database is out of reach: the plain write would fail too, and the sweep asks later
            logger.exception("the outcome of run %s step %s could not be written whole", run_id, head.step.id)
            unwritten = f"the outcome's writes failed ({storable.cleaned(str(failure))[:200]})"
            return self._unit(run_id, programme, lambda tx, log_rows: settle(
                tx, ctx, programme, run, head, claim, outcome, log_rows, unwritten=unwritten))

    def _attend(self, run: Run, programme: Programme, head: Head, timer: Timer,
                report: RunReport) -> tuple[Cursor, Claim | None]:
        """The parked head step's due timer: a hold's lapse, a reminder or an escalation try (then the phase is
        read again, for the next timer), or its timeout, a unit of work of its own. Done(None) when a guard lost:
        as it stands."""
        if not self.attender.affordable(timer):
            report.out_of_budget = True
            return Done(head.status), None
        if timer is Timer.TIMEOUT:
            return self._unit(run.id, programme, lambda tx, log_rows: time_out(tx, self.ctx.now, run, head, log_rows))
        if timer is Timer.LAPSE:
            acted = self.attender.lapse(head.step)
        elif timer is Timer.REMIND:
            acted = self.attender.remind(head.step, run)
            report.reminders += acted
        else:
            acted, failed = self.attender.escalate(head.step)
            report.escalations += acted
            report.escalation_failures += failed
        return (NeedsRead(head.status, head.phase) if acted else Done(None)), None

    def _read(self, run_id: int, where: NeedsRead) -> Head | Drained | Closing:
        rows, close_due = self.db.autocommit(
            lambda tx: steps.open_steps_and_close_due(tx, run_id, where.phase, self.ctx.now, OPEN_STEPS_PER_READ))
        if close_due:
            return Closing(where.status, where.phase)
        return opened(where.status, where.phase, rows, more=len(rows) == OPEN_STEPS_PER_READ)

    def _current_status(self, run_id: int) -> RunStatus:
        """The run's status as the walk goes by it (a finished run whose Clean up is under way: cleaning up)."""
        return must_exist(self.db.autocommit(lambda tx: runs.get(tx, run_id))).walked_as

    # ── units of work: each is one transaction, and ends with `_finish_unit` ──
    def _unit(self, run_id: int, programme: Programme, move: Move) -> tuple[Cursor, Claim | None]:
        return self.db.transaction(lambda tx: self._worked(tx, run_id, programme, move))

    def _worked(self, tx: Tx, run_id: int, programme: Programme, move: Move) -> tuple[Cursor, Claim | None]:
        """`move` and the end of its unit, in `tx`: the log rows start empty on every try of the unit."""
        log_rows: list[journal.Entry] = []
        return self._finish_unit(tx, run_id, programme, move(tx, log_rows), log_rows)

    def _lease_and_start(self, tx: Tx, run: Run, programme: Programme,
                         lease: RunLease) -> tuple[Cursor, Claim | None] | None:
        """The run lease, then the start, in one unit; None (nothing written) if another worker or tick holds the run.
        The start decides from the run as the lease found it, not as the tick read it before (a person's postpone
        in between moved its time and left its status: decided from the old time, it was missed by its overlap,
        or cancelled the run under way, for a start that then did not come); a run upgraded in between is not
        started from the programme of the version it was read with (it waits for its next walk)."""
        # guard: start-without-the-run-lease
        if not lease.take(tx):
            return None
        # guard: a-start-decides-from-the-run-read-before-its-lease
        leased = must_exist(runs.get(tx, run.id))  # the lease's UPDATE holds the row: nothing moves it meanwhile
        # guard: a-start-plays-the-version-its-programme-was-read-for
        if leased.definition_version != run.definition_version:  # upgraded since: its next walk reads its programme
            return Done(leased.status), None
        return self._worked(tx, run.id, programme,
                            lambda tx, log_rows: start_run(tx, self.ctx.now, leased, programme, log_rows))

    def _finish_unit(
        self, tx: Tx, run_id: int, programme: Programme, cursor: Cursor, log_rows: list[journal.Entry]
    ) -> tuple[Cursor, Claim | None]:
        """Leave drained phases, write the unit's log rows in one INSERT, then claim the head step it found.

        All in the unit's transaction, so a change and its log rows commit together,
        and a claim commits before its step is dispatched. The claim goes last, its
        COMMIT in the same request: it reads the run row with a shared lock, held
        only until the commit.
        """
        now = self.ctx.now
        while isinstance(cursor, (Drained, Closing)) and cursor.status in RUNNABLE:
            if isinstance(cursor, Closing):
                cursor = close_phase(tx, now, run_id, programme, cursor, log_rows)
            elif cursor.status is RunStatus.CLEANING_UP:
                cursor = tend_cleanup(tx, now, run_id, programme, log_rows)
            else:
                cursor = leave_phase(tx, now, run_id, programme, cursor, log_rows)
        to_claim = next_claim(self.ctx, cursor)
        # guard: a-gated-step-is-claimed-unread-in-its-unit
        if to_claim is not None and gated(programme, to_claim):
            to_claim = None  # its only_if is read first, by the walk
        # guard: runner-unit-commits-before-its-log-rows
        log.append_ahead(tx, log_rows, now)  # with the claim: one round trip for both, and the COMMIT
        if to_claim is None:
            return cursor, None
        tx.ends_with_next()
        return cursor, steps.claim(tx, to_claim, now, self.ctx.rules.lease_seconds)
