"""Advancing one run inside a tick: start it, work its current phase serially, move it on.

The worker holds the run lease (so no other worker or tick works this run), but
every write is still guarded on its own: the step claim re-checks that the run
is runnable (a pause pressed mid-tick stops the next claim), the claimer's
writes are fenced on its claim, and a phase is left only if it has no open step.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ...db import Database, Tx, must_exist
from .. import journal
from ..actions.context import ActionContext
from ..actions.outcome import Outcome
from ..actions.perform import Actions
from ..document import Programme
from ..errors import UnreadableDocument
from ..model import RUNNABLE, Claim, PhaseKind, Run, RunStatus, Step, StepStatus
from ..store import log, phases, runs, steps
from .budget import Budget
from .outcomes import Applied, Rules, settle_outcome

OPEN_STEPS_PER_READ = 200
NOT_STARTED = (None, RunStatus.SCHEDULED, RunStatus.MISSED)  # where a scheduled run stays when its start did not happen


@dataclass
class RunReport:
    run_id: int
    claimed: bool = False
    status: RunStatus | None = None  # as this worker left it
    dispatched: int = 0
    started: bool = False  # taken from scheduled into its first phase
    outcomes: Counter[str] = field(default_factory=Counter)
    out_of_budget: bool = False


@dataclass(frozen=True)
class Cursor:
    """Where the worker is: the run's status and phase, and the phase's open steps as last read."""

    status: RunStatus
    number: int
    open_steps: list[Step] | None  # None: read them before going on
    more: bool = False  # the read that gave open_steps was cut at OPEN_STEPS_PER_READ: there may be more


def _claimable(step: Step, now: datetime) -> bool:
    """Pending and due, as last read: the claim re-checks both."""
    return step.status is StepStatus.PENDING and (step.due_at is None or step.due_at <= now)


# Where a unit of work left the run (None: a guard lost, someone moved it first), and the claim it took.
Onward = tuple[Cursor | None, Claim | None]


class RunAdvancer:
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
        self.db, self.actions, self.rules, self.programme_for = db, actions, rules, programme_for
        self.now, self.budget, self.step_worst_case = now, budget, step_worst_case_seconds
        self.leases_lapse_at = leases_lapse_at  # on the budget's clock: a lease taken in this tick ends then

    # ── the run lease ────────────────────────────────────────────────────
    def advance(self, run: Run) -> RunReport:
        report = RunReport(run.id)
        if not self.budget.allows(self.step_worst_case):
            report.out_of_budget = True
            return report
        lease = steps.claim_token()
        try:
            report.status = self._work(run, lease, report)
            report.started = run.status is RunStatus.SCHEDULED and report.status not in NOT_STARTED
        finally:
            if report.claimed and (report.status is None or not report.status.terminal):
                # A terminal transition already cleared it; a lease that never committed is no one's.
                self.db.autocommit(lambda tx: runs.release(tx, run.id, lease, self.now))
        return report

    def _take_lease(self, tx: Tx, run_id: int, lease: str, report: RunReport) -> bool:
        report.claimed = runs.claim(tx, run_id, lease, self.now, self.rules.lease_seconds)
        return report.claimed

    # ── the run ──────────────────────────────────────────────────────────
    def _work(self, run: Run, lease: str, report: RunReport) -> RunStatus | None:
        """Take the run lease, then work the run until a step is parked, in flight or not yet due, or the budget is spent.

        None: another worker or tick holds the run. Each transaction carries the
        run as far as it goes without dispatching: after an outcome it leaves an
        emptied phase, opens the next and claims the next step, all guarded, with
        the log rows of all of it in one INSERT. A claim is always committed
        before its step is dispatched.
        """
        try:
            programme = self.programme_for(run)
        except UnreadableDocument as error:
            reason = str(error)
            if not self.db.autocommit(lambda tx: self._take_lease(tx, run.id, lease, report)):
                return None
            return self.db.transaction(lambda tx: self._fail_unreadable(tx, run, reason))
        claim: Claim | None = None  # the first open step's, when a transaction took it
        where: Cursor | None
        if run.status in (RunStatus.SCHEDULED, RunStatus.STARTING):
            # The lease is the start's first statement: one commit for both.
            started = self.db.transaction(lambda tx: self._start(tx, run, programme, lease, report))
            if started is None:
                return None
            where, claim = started
        elif not self.db.autocommit(lambda tx: self._take_lease(tx, run.id, lease, report)):
            return None
        elif run.status is RunStatus.ENDING:
            # The programme's ending, not current_phase: a run that went into ending
            # before current_phase named the ending holds its last main phase there.
            where = Cursor(RunStatus.ENDING, programme.ending.number, None)
        else:
            where = Cursor(run.status, must_exist(run.current_phase), None)
        lost_claim = False
        while where is not None and where.status in RUNNABLE:
            if claim is None:
                if where.open_steps is None:
                    read = self._read_open(run.id, where.number)
                    where = Cursor(where.status, where.number, read, more=len(read) == OPEN_STEPS_PER_READ)
                current = where
                if not current.open_steps:
                    where, claim = self.db.transaction(lambda tx: self._leave(tx, run.id, programme, current))
                    continue
                step = current.open_steps[0]
                if not _claimable(step, self.now):
                    return where.status  # occupied (in flight or parked), or not yet due
                if not self._may_dispatch():
                    report.out_of_budget = True
                    return where.status
                claim = self.db.autocommit(lambda tx: steps.claim(tx, step, self.now, self.rules.lease_seconds))
                if claim is None:
                    # Paused or cancelled meanwhile, or a person skipped the step: look once more.
                    status = self._current_status(run.id)
                    if lost_claim or status not in RUNNABLE:
                        return status
                    lost_claim = True
                    where = Cursor(status, where.number, None)
                    continue
            lost_claim = False
            working = where
            step = must_exist(working.open_steps)[0]
            outcome = self.actions.perform(ActionContext.of(step, claim.attempt, self.now))
            applied, where, claim = self.db.transaction(
                lambda tx: self._settle(tx, run.id, programme, working, must_exist(claim), outcome))
            report.dispatched += 1
            report.outcomes[outcome.verdict.value] += 1
            if applied.run_stopped or not applied.written:
                return self._current_status(run.id)  # paused or failed by the disposition, or fenced out
            if not applied.status.terminal:
                return working.status  # parked, or pending a retry: the phase is occupied
        return self._current_status(run.id) if where is None else where.status  # None: someone moved the run first

    # ── units of work: each ends with `_onward` ───────────────────────────
    def _start(self, tx: Tx, run: Run, programme: Programme, lease: str, report: RunReport) -> Onward | None:
        """The run lease, then the start; None (nothing written) if another worker or tick holds the run."""
        if not self._take_lease(tx, run.id, lease, report):
            return None
        log_rows: list[journal.Entry] = []
        where = self._start_run(tx, run, programme, log_rows)
        return self._onward(tx, log_rows, *self._move_on(tx, run.id, programme, where, log_rows))

    def _leave(self, tx: Tx, run_id: int, programme: Programme, where: Cursor) -> Onward:
        log_rows: list[journal.Entry] = []
        return self._onward(tx, log_rows, *self._move_on(tx, run_id, programme, where, log_rows))

    def _settle(
        self, tx: Tx, run_id: int, programme: Programme, where: Cursor, claim: Claim, outcome: Outcome
    ) -> tuple[Applied, Cursor | None, Claim | None]:
        """The dispatched step's outcome, then — if the phase goes straight on — on to the next claim."""
        open_steps = must_exist(where.open_steps)
        applied, log_rows = settle_outcome(tx, open_steps[0], claim, outcome, self.now, self.rules)
        if not applied.written or applied.run_stopped or not applied.status.terminal:
            return (applied, *self._onward(tx, log_rows, where, None))
        remaining = None if applied.hold else open_steps[1:]
        if remaining == [] and where.more:
            remaining = None  # the read was truncated: there may be more
        moved = Cursor(where.status, where.number, remaining, more=where.more)
        if remaining is None:
            return (applied, *self._onward(tx, log_rows, moved, None))  # the loop reads the phase again first
        return (applied, *self._onward(tx, log_rows, *self._move_on(tx, run_id, programme, moved, log_rows)))

    def _onward(self, tx: Tx, log_rows: list[journal.Entry], where: Cursor | None, to_claim: Step | None) -> Onward:
        """The unit's log rows in one INSERT, then the claim of the step it found next.

        Both in the unit's transaction, so a change and its log rows commit together,
        and a claim commits before its step is dispatched. The claim goes last: it
        reads the run row with a shared lock, held only until the commit.
        """
        log.append_many(tx, log_rows, self.now)
        claim = None if to_claim is None else steps.claim(tx, to_claim, self.now, self.rules.lease_seconds)
        return where, claim

    def _move_on(
        self, tx: Tx, run_id: int, programme: Programme, where: Cursor, log_rows: list[journal.Entry]
    ) -> tuple[Cursor | None, Step | None]:
        """Leave emptied phases; the next step to claim, if it is due and the budget allows. Cursor None: a guard lost."""
        current: Cursor | None = where
        while current is not None and current.status in RUNNABLE and current.open_steps == []:
            current = self._leave_phase(tx, run_id, programme, current, log_rows)
        if current is None or current.status not in RUNNABLE or not current.open_steps:
            return current, None
        first = current.open_steps[0]
        if not _claimable(first, self.now) or not self._may_dispatch():
            return current, None
        return current, first

    def _may_dispatch(self) -> bool:
        """A step starts only if its worst case fits the tick's budget, and its dispatch is over
        before its claim's lease lapses — counted, like every time of the tick, from the tick's
        one clock read. Else a sweep could hand the step on while this attempt is still open."""
        dispatch_over_by = self.budget.monotonic() + self.actions.longest_dispatch_seconds
        return self.budget.allows(self.step_worst_case) and dispatch_over_by < self.leases_lapse_at

    def _read_open(self, run_id: int, phase: int) -> list[Step]:
        return self.db.autocommit(lambda tx: steps.open_steps(tx, run_id, phase, limit=OPEN_STEPS_PER_READ))

    def _current_status(self, run_id: int) -> RunStatus:
        return must_exist(self.db.autocommit(lambda tx: runs.get(tx, run_id))).status

    # ── transitions: each appends its log rows to its unit's ─────────────
    def _start_run(self, tx: Tx, run: Run, programme: Programme, log_rows: list[journal.Entry]) -> Cursor:
        """scheduled -> starting (inside the grace window) or missed; starting -> running with phase 1.

        A scheduled run goes through starting within one statement: the log tells both moves.
        """
        first = programme.first
        if run.status is RunStatus.SCHEDULED:
            if runs.start_within_grace(tx, run.id, self.now, into_phase=first.number):
                log_rows.append(journal.run_status(run.id, None, RunStatus.SCHEDULED, RunStatus.STARTING, cause="due"))
            elif runs.miss_after_grace(tx, run.id, self.now):
                closed = run.scheduled_for + timedelta(seconds=run.grace_seconds)
                cause = f"first seen at {self.now:%Y-%m-%dT%H:%M:%SZ}, after its grace window closed at {closed:%Y-%m-%dT%H:%M:%SZ}"
                log_rows.append(journal.run_status(run.id, None, RunStatus.SCHEDULED, RunStatus.MISSED, cause=cause))
                return Cursor(RunStatus.MISSED, 0, [])
            else:
                return Cursor(must_exist(runs.get(tx, run.id)).status, 0, [])
        elif not runs.transition(tx, run.id, [RunStatus.STARTING], RunStatus.RUNNING, self.now, current_phase=first.number):
            return Cursor(must_exist(runs.get(tx, run.id)).status, 0, [])
        phases.insert_plan(tx, run.id, [(p.number, p.kind, p.name) for p in programme.rows], first.number, self.now)
        opened = steps.materialise_phase(tx, run.id, first.number, first.specs)
        log_rows.append(journal.run_status(run.id, first.number, RunStatus.STARTING, RunStatus.RUNNING, cause="started"))
        log_rows.append(journal.run_phase(run.id, first.number, first.name))
        return Cursor(RunStatus.RUNNING, first.number, [s for s in opened if not s.status.terminal])

    def _leave_phase(
        self, tx: Tx, run_id: int, programme: Programme, where: Cursor, log_rows: list[journal.Entry]
    ) -> Cursor | None:
        """The phase has no open step: on to the next phase, to ending, or to completed. None if the guard lost."""
        now = self.now
        status, number = where.status, where.number
        following = programme.after(number)
        if status is RunStatus.RUNNING and following is not None and following.kind is PhaseKind.MAIN:
            if not runs.leave_phase(tx, run_id, number, RunStatus.RUNNING, RunStatus.RUNNING, now, next_phase=following.number):
                return None
            opened = steps.materialise_phase(tx, run_id, following.number, following.specs)
            log_rows.append(journal.run_phase(run_id, following.number, following.name))
            return Cursor(RunStatus.RUNNING, following.number, [s for s in opened if not s.status.terminal])
        ending = programme.ending
        if status is RunStatus.RUNNING:
            # With no ending to drain, the run passes through ending within this one statement: the
            # log tells both moves, and nobody could have seen it in between (one transaction).
            to = RunStatus.ENDING if ending.specs else RunStatus.COMPLETED
            if not runs.leave_phase(tx, run_id, number, RunStatus.RUNNING, to, now,
                                    next_phase=ending.number if ending.specs else None):
                return None
            log_rows += [
                journal.run_status(run_id, number, RunStatus.RUNNING, RunStatus.ENDING, cause="last phase finished"),
                journal.run_phase(run_id, ending.number, ending.name),
            ]
            if ending.specs:
                opened = steps.materialise_phase(tx, run_id, ending.number, ending.specs)
                return Cursor(RunStatus.ENDING, ending.number, [s for s in opened if not s.status.terminal])
        elif not runs.leave_phase(tx, run_id, number, RunStatus.ENDING, RunStatus.COMPLETED, now):
            return None
        log_rows.append(journal.run_status(run_id, ending.number, RunStatus.ENDING, RunStatus.COMPLETED, cause="ending finished"))
        return Cursor(RunStatus.COMPLETED, ending.number, [])

    def _fail_unreadable(self, tx: Tx, run: Run, error: str) -> RunStatus:
        if runs.transition(tx, run.id, [run.status], RunStatus.FAILED, self.now, last_error=error, degrade=True):
            log.append(tx, journal.run_status(run.id, run.current_phase, run.status, RunStatus.FAILED, cause=error), self.now)
            return RunStatus.FAILED
        return must_exist(runs.get(tx, run.id)).status
