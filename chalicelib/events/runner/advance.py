"""Advancing one run inside a tick: a walker over the run's phases, one step at a time.

The walker is always in one named place (`Cursor`): it must read the phase's
open steps (`NeedsRead`), it has the phase's head step before it (`Head`), the
phase has no open step left (`Drained`: it is left), the phase is drained but
its condition is not met (`Held`: the walker stops, and the run's wake time
waits for the condition), or it has stopped (`Done`). Each transaction carries
the run as far as it goes without dispatching; an outcome is settled and the
next step claimed in one transaction and one commit (`settle_and_claim_next`).

A step in doubt (its last attempt has no known outcome) whose `on_doubt` is `park` is not sent again:
holding its next claim, the walker parks it for a person's decision (`_attempt`).

A run cleaning up is walked in its cleanup phase (`Programme.cleanup`): drained,
the tick writes its revert steps for what is left to revert (`resources.open_reverts`,
only once no other step of the run is in flight), works them like any phase, and
once nothing is open moves the run to its target, or pauses it when a revert failed.

The worker holds the run lease (so no other worker or tick works this run), but
every write is still guarded on its own: the step claim re-checks that the run
is runnable (a pause pressed mid-tick stops the next claim), the claimer's
writes are fenced on its claim, and a phase is left only if it has no open step
and no unmet condition. A claim is always committed before its step is dispatched.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from ...db import Database, Tx, must_exist
from .. import journal
from ..actions import core
from ..actions.context import ActionContext
from ..actions.notice import Notice
from ..actions.outcome import Outcome, Status
from ..actions.perform import Actions
from ..document import Programme
from ..errors import ChannelError, UnreadableDocument
from ..lifecycle import BEFORE_FIRST_PHASE
from ..model import RUNNABLE, Attention, Claim, OnDoubt, PhaseKind, Run, RunStatus, Step, StepStatus
from ..store import log, phases, resources, runs, signals, steps
from .attention import Attender, Timer, due
from .budget import Budget
from .outcomes import Rules, settle_outcome

logger = logging.getLogger(__name__)

OPEN_STEPS_PER_READ = 200
DOUBT_NOTE = "its last attempt has no known outcome: the game may or may not have applied it"
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
    reminders: int = 0  # cue reminders this worker claimed (posted or failed: never re-sent)
    escalations: int = 0  # escalation tries of parked cues
    escalation_failures: int = 0  # escalations whose last try failed: counted with the tick's errors


# ── where the walker is ───────────────────────────────────────────────────
@dataclass(frozen=True)
class NeedsRead:
    """The phase's open steps must be read before going on."""

    status: RunStatus  # the run's, as last seen
    phase: int


@dataclass(frozen=True)
class Head:
    """The phase's open steps as last read, lowest seq first: the first is the one the walker may work."""

    status: RunStatus
    phase: int
    steps: tuple[Step, ...]  # never empty
    more: bool = False  # the read was cut at OPEN_STEPS_PER_READ: there may be more after these

    @property
    def step(self) -> Step:
        return self.steps[0]

    def after_head(self) -> Cursor:
        """Where the walker is once the head step is over."""
        if len(self.steps) > 1:
            return Head(self.status, self.phase, self.steps[1:], self.more)
        # guard: a-truncated-read-is-never-read-again
        if self.more:
            return NeedsRead(self.status, self.phase)  # the read was truncated: read the rest
        return Drained(self.status, self.phase)


@dataclass(frozen=True)
class Drained:
    """The phase has no open step left: it is left (next phase, ending or completed) unless it is held."""

    status: RunStatus
    phase: int


@dataclass(frozen=True)
class Closing:
    """The phase must be closed before anything else of it: its condition was met (a signal) or its
    deadline passed. Closing is a unit of its own (`_close_phase`); then the phase is read again."""

    status: RunStatus
    phase: int


@dataclass(frozen=True)
class Held:
    """A drained phase whose condition is not met: the walker stops here at no cost, and the run's
    wake time waits for the condition (its deadline, or a person or signal meeting it)."""

    status: RunStatus
    phase: int
    began: bool = False  # the hold began in this unit of work: once it commits, the cue channel is told


@dataclass(frozen=True)
class Done:
    """The walker stops: the run's status as it left it, or None when someone moved the run first
    (a guard lost, a fence matched nothing, a disposition stopped the run): read it again."""

    status: RunStatus | None


Cursor = NeedsRead | Head | Drained | Closing | Held | Done


def _opened(status: RunStatus, phase: int, rows: list[Step], *, more: bool = False) -> Head | Drained:
    """A phase as read or materialised: its head, or drained when none of its steps is open."""
    open_steps = tuple(s for s in rows if not s.status.terminal)
    return Head(status, phase, open_steps, more) if open_steps else Drained(status, phase)


# What a close tells the next phase's run.phase row and each cancelled step's cause.
_CLOSED_BECAUSE = {
    "signal": "phase {number} ({name}) ended on the signal {signal}",
    "advance": "phase {number} ({name}) was advanced",
    "after": "phase {number} ({name}) lasted its {seconds} s",
    "timeout": "phase {number} ({name}) timed out after {seconds} s",
}


def _claimable(step: Step, now: datetime) -> bool:
    """Pending and due, as last read: the claim re-checks both."""
    return step.status is StepStatus.PENDING and (step.due_at is None or step.due_at <= now)


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
        self.escalate_at = actions.escalation_due(now)  # of a wait for a person that begins in this tick
        self.attender = Attender(db, actions, rules, now, budget)

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
            # guard: a-worker-that-raises-keeps-its-run-lease
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
        cursor: Cursor
        claim: Claim | None = None  # the head step's, when a transaction took it
        if run.status in BEFORE_FIRST_PHASE:
            # The lease is the start's first statement: one commit for both.
            started = self.db.transaction(lambda tx: self._start(tx, run, programme, lease, report))
            if started is None:
                return None
            cursor, claim = started
        elif not self.db.autocommit(lambda tx: self._take_lease(tx, run.id, lease, report)):
            return None
        elif run.status is RunStatus.CLEANING_UP:
            cursor = NeedsRead(RunStatus.CLEANING_UP, programme.cleanup.number)
        elif run.status is RunStatus.ENDING:
            # The programme's ending, not current_phase: a run that went into ending
            # before current_phase named the ending holds its last main phase there.
            cursor = NeedsRead(RunStatus.ENDING, programme.ending.number)
        else:
            cursor = NeedsRead(run.status, must_exist(run.current_phase))
        return self._walk(run, programme, cursor, claim, report)

    def _walk(self, run: Run, programme: Programme, cursor: Cursor, claim: Claim | None, report: RunReport) -> RunStatus:
        """From `cursor` (and the head's claim, if a transaction took it) until the walker stops: a head
        step that is occupied (in flight or parked) or not yet due, a held phase, the budget, or the run over.
        Its actions and timers run on `run`'s clock (a rehearsal's speed), as its row says."""
        run_id, lost_claim = run.id, False
        while True:
            if isinstance(cursor, Done):
                if cursor.status is not None:
                    return cursor.status
                status = self._current_status(run_id)
                if status is RunStatus.CLEANING_UP:
                    # A cleanup began while this step was in flight: its answer is in, so the cleanup may
                    # open now rather than at the step's lease expiry its wake time last counted.
                    self.db.autocommit(lambda tx: runs.wake_cleanup(tx, run_id, self.now))
                return status
            # guard: a-manual-hold-is-never-posted
            if isinstance(cursor, Held) and cursor.began:
                self._tell_of_hold(run_id, programme, cursor)  # its unit has committed
            if isinstance(cursor, Held) or cursor.status not in RUNNABLE:
                return cursor.status  # a held phase costs nothing more: its wake time waits for its condition
            if isinstance(cursor, NeedsRead):
                cursor = self._read(run_id, cursor)
                continue
            if isinstance(cursor, (Drained, Closing)):
                ending = cursor
                cursor, claim = self.db.transaction(lambda tx: self._onward(tx, run_id, programme, ending, []))
                continue
            head = cursor
            if claim is None:
                if not _claimable(head.step, self.now):
                    timer = due(head.step, self.now)
                    if timer is None:
                        return head.status  # occupied (in flight, or parked with no timer due), or not yet due
                    cursor, claim = self._attend(run, programme, head, timer, report)
                    continue
                if not self._may_dispatch(head.step):
                    report.out_of_budget = True
                    return head.status
                claim = self.db.autocommit(lambda tx: steps.claim(tx, head.step, self.now, self.rules.lease_seconds))
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
            outcome = self._attempt(run, head.step, claimed)
            cursor, claim = self.db.transaction(
                lambda tx: self.settle_and_claim_next(tx, run_id, programme, head, claimed, outcome))
            report.dispatched += 1
            report.outcomes[outcome.verdict.value] += 1

    def _attempt(self, run: Run, step: Step, claim: Claim) -> Outcome:
        """What the claimed attempt comes to: the action performed. A step in doubt is first asked about, when
        the bridge asks (GAME_BRIDGE_STATUS): applied is done with nothing sent, in progress is a retry still in
        doubt, not applied is sent; with no answer (or nobody asked), `on_doubt: park` sends nothing and parks
        the step for a person's decision, `resend` sends it. The probe's answer goes with the outcome."""
        context = ActionContext.of(step, claim.attempt, self.now, run)
        if not step.in_doubt:
            return self.actions.perform(context)
        # guard: a-step-in-doubt-is-re-sent-without-asking
        probe = self.actions.probe(context)
        asked = None if probe is None else probe.detail
        # guard: applied-is-sent-again
        if probe is not None and probe.status is Status.APPLIED:
            return Outcome.done(result=probe.answer, http_status=probe.http_status, latency_ms=probe.latency_ms,
                                probe=asked)
        # guard: in-progress-is-sent-again
        if probe is not None and probe.status is Status.IN_PROGRESS:
            return Outcome.retry("the game is still applying it", in_doubt=True, http_status=probe.http_status,
                                 latency_ms=probe.latency_ms, probe=asked)
        # guard: a-step-in-doubt-under-park-is-sent-again
        if (probe is None or probe.status is Status.UNKNOWN) and step.on_doubt is OnDoubt.PARK:
            # guard: a-decision-is-never-escalated
            parked = Outcome.parked_in_doubt(DOUBT_NOTE, Attention(escalate_at=self.escalate_at))
            return replace(parked, probe=asked)
        return replace(self.actions.perform(context), probe=asked)

    def _attend(self, run: Run, programme: Programme, head: Head, timer: Timer,
                report: RunReport) -> tuple[Cursor, Claim | None]:
        """The parked head step's due timer: a reminder or an escalation try (then the phase is read again, for
        the next timer), or its timeout, a unit of work of its own. Done(None) when a guard lost: as it stands."""
        if not self.attender.affordable(timer):
            report.out_of_budget = True
            return Done(head.status), None
        if timer is Timer.TIMEOUT:
            return self.db.transaction(lambda tx: self._time_out(tx, run, programme, head))
        if timer is Timer.REMIND:
            acted = self.attender.remind(head.step, run)
            report.reminders += acted
        else:
            acted, failed = self.attender.escalate(head.step)
            report.escalations += acted
            report.escalation_failures += failed
        return (NeedsRead(head.status, head.phase) if acted else Done(None)), None

    def _tell_of_hold(self, run_id: int, programme: Programme, held: Held) -> None:
        """A manual phase's hold has begun: the cue channel is told once, with the run's console link.

        After the commit, outside any transaction. At most once: a post that fails is logged and not
        retried (the run's page and its `waiting` say the same); the hold itself is in the rows."""
        plan = programme.phase(held.phase)
        if (plan.condition or {}).get("when") != "manual":
            return
        notice = Notice.of_hold(run_id, plan.number, plan.name, self.now, self.actions.console_url)
        if not self.budget.allows(self.actions.cue_channel.timeout):
            logger.warning("run %s: the hold of phase %s was not posted: the tick's time is spent", run_id, plan.number,
                           extra={"run_id": run_id, "phase": plan.number})
            return
        try:
            self.actions.cue_channel.post(notice)
        except ChannelError as error:
            logger.warning("run %s: the hold of phase %s was not posted: %s", run_id, plan.number, error,
                           extra={"run_id": run_id, "phase": plan.number})

    # ── units of work: each is one transaction, and ends with `_onward` ───
    def _start(
        self, tx: Tx, run: Run, programme: Programme, lease: str, report: RunReport
    ) -> tuple[Cursor, Claim | None] | None:
        """The run lease, then the start; None (nothing written) if another worker or tick holds the run."""
        # guard: start-without-the-run-lease
        if not self._take_lease(tx, run.id, lease, report):
            return None
        log_rows: list[journal.Entry] = []
        cursor = self._start_run(tx, run, programme, log_rows)
        return self._onward(tx, run.id, programme, cursor, log_rows)

    def settle_and_claim_next(
        self, tx: Tx, run_id: int, programme: Programme, head: Head, claim: Claim, outcome: Outcome
    ) -> tuple[Cursor, Claim | None]:
        """The dispatched head step's outcome and its log rows, then — when the phase goes straight on —
        leaving a drained phase, opening the next and claiming the step after: one transaction, one commit."""
        applied, log_rows = settle_outcome(tx, head.step, claim, outcome, self.now, self.rules,
                                           static_revert=programme.static_revert(head.phase, head.step.seq),
                                           compensate="fail" in programme.cleanup_on,
                                           escalate_at=self.escalate_at)
        cursor: Cursor
        # guard: fenced-out-dispatcher-goes-on
        if not applied.written or applied.run_stopped:
            # guard: fenced-out-dispatcher-keeps-looking
            cursor = Done(None)  # fenced out, or the disposition paused or failed the run: as it now stands
        elif not applied.status.terminal:
            cursor = Done(head.status)  # parked, or pending a retry: the phase is occupied
        elif applied.hold:
            cursor = NeedsRead(head.status, head.phase)  # a wait moved the next step's due_at: read it again
        else:
            cursor = head.after_head()
        return self._onward(tx, run_id, programme, cursor, log_rows)

    def _onward(
        self, tx: Tx, run_id: int, programme: Programme, cursor: Cursor, log_rows: list[journal.Entry]
    ) -> tuple[Cursor, Claim | None]:
        """Leave drained phases, write the unit's log rows in one INSERT, then claim the head step it found.

        All in the unit's transaction, so a change and its log rows commit together,
        and a claim commits before its step is dispatched. The claim goes last, its
        COMMIT in the same request: it reads the run row with a shared lock, held
        only until the commit.
        """
        while isinstance(cursor, (Drained, Closing)) and cursor.status in RUNNABLE:
            if isinstance(cursor, Closing):
                cursor = self._close_phase(tx, run_id, programme, cursor, log_rows)
            elif cursor.status is RunStatus.CLEANING_UP:
                cursor = self._tend_cleanup(tx, run_id, programme, log_rows)
            else:
                cursor = self._leave_phase(tx, run_id, programme, cursor, log_rows)
        to_claim = self._next_claim(cursor)
        # guard: runner-unit-commits-before-its-log-rows
        log.append_ahead(tx, log_rows, self.now)  # with the claim: one round trip for both, and the COMMIT
        if to_claim is None:
            return cursor, None
        tx.ends_with_next()
        return cursor, steps.claim(tx, to_claim, self.now, self.rules.lease_seconds)

    def _next_claim(self, cursor: Cursor) -> Step | None:
        """The head step a unit claims in its own transaction: due, and the budget allows its dispatch."""
        if not isinstance(cursor, Head) or cursor.status not in RUNNABLE:
            return None
        first = cursor.step
        # guard: claim-in-an-outcome-unit-past-the-budget
        if not _claimable(first, self.now) or not self._may_dispatch(first):
            return None
        return first

    def _may_dispatch(self, step: Step) -> bool:
        """A step starts only if its worst case fits the tick's budget, and its dispatch is over
        before its claim's lease lapses — counted, like every time of the tick, from the tick's
        one clock read. Else a sweep could hand the step on while this attempt is still open.
        A step in doubt that is asked about first counts two outbound deadlines (`dispatch_seconds`)."""
        seconds = self.actions.dispatch_seconds(step)
        # guard: the-lease-check-counts-one-deadline-for-a-probed-attempt
        dispatch_over_by = self.budget.monotonic() + seconds
        worst_case = self.step_worst_case + seconds - self.actions.longest_dispatch_seconds
        # guard: dispatch-started-past-its-lease
        return self.budget.allows(worst_case) and dispatch_over_by < self.leases_lapse_at

    def _read(self, run_id: int, where: NeedsRead) -> Head | Drained | Closing:
        rows, close_due = self.db.autocommit(
            lambda tx: steps.open_steps_and_close_due(tx, run_id, where.phase, self.now, OPEN_STEPS_PER_READ))
        if close_due:
            return Closing(where.status, where.phase)
        return _opened(where.status, where.phase, rows, more=len(rows) == OPEN_STEPS_PER_READ)

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
                return Done(RunStatus.MISSED)
            else:
                return Done(must_exist(runs.get(tx, run.id)).status)
        elif not runs.transition(tx, run.id, [RunStatus.STARTING], RunStatus.RUNNING, self.now, current_phase=first.number):
            return Done(must_exist(runs.get(tx, run.id)).status)
        phases.insert_plan(tx, run.id, programme.rows, first.number, self.now, time_scale=run.time_scale)
        opened = steps.materialise_phase(tx, run.id, first.number, first.specs)
        log_rows.append(journal.run_status(run.id, first.number, RunStatus.STARTING, RunStatus.RUNNING, cause="started"))
        log_rows.append(journal.run_phase(run.id, first.number, first.name))
        return _opened(RunStatus.RUNNING, first.number, opened)

    def _leave_phase(
        self, tx: Tx, run_id: int, programme: Programme, drained: Drained, log_rows: list[journal.Entry]
    ) -> Cursor:
        """The phase has no open step: held if its condition is not met; else on to the next phase,
        to ending, or to completed. Done(None) if the guard lost."""
        now = self.now
        status, number = drained.status, drained.phase
        plan = programme.phase(number)
        signal = phases.auto_signal_due(tx, run_id, number, now) if plan.signal is not None else None
        if signal is not None:  # a dry run's engine sends it, as the game would: the phase closes on it
            signals.receive(tx, run_id, signal, journal.REHEARSAL, None, now)
            return Closing(status, number)
        # guard: the-walker-never-holds-a-phase
        standing = phases.hold(tx, run_id, number, now) if plan.condition is not None or plan.limit is not None else None
        # guard: a-held-phase-past-its-deadline-stays-held
        if standing is not None and standing.due:
            return Closing(status, number)  # its deadline passed while it was held
        if standing is not None and standing.held:
            return Held(status, number, began=standing.began)
        # What ended it, for the next phase's run.phase row: whoever met its condition, else its steps (a
        # phase without a condition is not read again: a person's advance of one is told by its run.advance row).
        ended_by = (standing.met if standing is not None else None) or {"steps_done": True}
        following = programme.after(number)
        if status is RunStatus.RUNNING and following is not None and following.kind is PhaseKind.MAIN:
            if not runs.leave_phase(tx, run_id, number, RunStatus.RUNNING, RunStatus.RUNNING, now, next_phase=following.number):
                return Done(None)
            opened = steps.materialise_phase(tx, run_id, following.number, following.specs)
            log_rows.append(journal.run_phase(run_id, following.number, following.name, ended_by))
            return _opened(RunStatus.RUNNING, following.number, opened)
        ending = programme.ending
        if (status is RunStatus.ENDING or not ending.specs) and "complete" in programme.cleanup_on \
                and runs.leave_phase(tx, run_id, number, status, RunStatus.CLEANING_UP, now,
                                     cleanup_target=RunStatus.COMPLETED):
            # cleanup_on: complete, and the run left something to revert: its cleanup comes first. The
            # move clears the run lease: the next tick opens the cleanup.
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
                journal.run_status(run_id, number, RunStatus.RUNNING, RunStatus.ENDING, cause="last phase finished"),
                journal.run_phase(run_id, ending.number, ending.name, ended_by),
            ]
            if ending.specs:
                opened = steps.materialise_phase(tx, run_id, ending.number, ending.specs)
                return _opened(RunStatus.ENDING, ending.number, opened)
        elif not runs.leave_phase(tx, run_id, number, RunStatus.ENDING, RunStatus.COMPLETED, now):
            return Done(None)
        log_rows.append(journal.run_status(run_id, ending.number, RunStatus.ENDING, RunStatus.COMPLETED, cause="ending finished"))
        return Done(RunStatus.COMPLETED)

    def _tend_cleanup(self, tx: Tx, run_id: int, programme: Programme, log_rows: list[journal.Entry]) -> Cursor:
        """The cleanup phase has no open step: write the reverts of what is left to revert (the first time,
        and for what a late answer recorded since), else end the cleanup — at its target when every revert
        was done, paused when one failed — or stop while another step of the run is still in flight."""
        now, cleanup = self.now, programme.cleanup
        added = resources.open_reverts(tx, run_id, cleanup.number, now)
        if added:
            phases.insert_plan(tx, run_id, (cleanup,), cleanup.number, now)
            log_rows.append(journal.run_cleanup(run_id, cleanup.number, added))
            return NeedsRead(RunStatus.CLEANING_UP, cleanup.number)
        run = must_exist(runs.get(tx, run_id))
        target = must_exist(run.cleanup_target)
        if runs.end_cleanup(tx, run_id, RunStatus.CLEANING_UP, target, now, accept_failures=False):
            log_rows.append(journal.run_status(run_id, cleanup.number, RunStatus.CLEANING_UP, target,
                                               cause="every revert was done"))
            return Done(target)
        reverts = resources.reverts_of(tx, run_id)
        error = f"{reverts.failed} of {reverts.total} resources could not be reverted"
        if reverts.failed and runs.pause_cleanup(tx, run_id, now, error):
            log_rows.append(journal.run_status(run_id, cleanup.number, RunStatus.CLEANING_UP, RunStatus.PAUSED, cause=error))
            return Done(RunStatus.PAUSED)
        return Done(RunStatus.CLEANING_UP)  # a step of the run is still in flight: its answer comes first

    def _close_phase(
        self, tx: Tx, run_id: int, programme: Programme, closing: Closing, log_rows: list[journal.Entry]
    ) -> Cursor:
        """The phase's condition was met (a signal) or its deadline passed: its pending and parked steps are
        cancelled with the cause and the row marked closed (a timeout also degrades the run); or, at a
        `pause` deadline, the run pauses and the phase waits on without one. A step in flight is left to its
        answer. Then the phase is read again (Done(None) if the row's guard lost)."""
        now, number = self.now, closing.phase
        found = phases.closing(tx, run_id, number, now)
        if found is None:
            return NeedsRead(closing.status, number)  # closed meanwhile, or nothing is due any more
        plan = programme.phase(number)
        words = {"number": number, "name": plan.name, "signal": found.signal, "seconds": found.limit_seconds}
        if found.on_deadline == "pause":
            waited = f"the signal {found.signal}" if found.signal else "a person's advance" if plan.condition else "its steps"
            cause = f"phase {number} ({plan.name}) waited {found.limit_seconds} s for {waited}"
            # The run first: a person's move meanwhile leaves the deadline standing (the phase row is locked).
            # guard: a-pause-timeout-keeps-its-deadline
            if not runs.transition(tx, run_id, [RunStatus.RUNNING], RunStatus.PAUSED, now, last_error=cause, degrade=True) \
                    or not phases.drop_deadline(tx, run_id, number, now):
                return Done(None)
            log_rows.append(journal.run_status(run_id, number, RunStatus.RUNNING, RunStatus.PAUSED, cause=cause))
            return Done(RunStatus.PAUSED)
        if not phases.close(tx, run_id, number, found.closed_by, now):
            return Done(None)
        cause = _CLOSED_BECAUSE[found.closed_by].format(**words)
        if found.closed_by == "signal" and found.deadline_passed:
            # guard: a-signal-past-its-deadline-does-not-say-so
            cause += " (its deadline had passed too)"
        # guard: closing-leaves-the-open-steps
        for step in steps.cancel_phase(tx, run_id, number, now, cause):
            log_rows.append(journal.step_status(step, step.status, StepStatus.CANCELLED, cause=cause,
                                                attempts=step.attempts))
        # guard: a-timeout-does-not-degrade
        if found.closed_by == "timeout":
            runs.degrade(tx, run_id, now, cause)
        return NeedsRead(closing.status, number)

    def _time_out(self, tx: Tx, run: Run, programme: Programme, head: Head) -> tuple[Cursor, Claim | None]:
        """Nobody answered the parked cue in time, as its `on_timeout` says: `continue` cancels it and the phase
        goes on, `confirm` assumes it done (both degrade the run); `pause` pauses the run with the cue still
        parked (in the ending, which never pauses, it only degrades). Each on the timeout's compare-and-set.
        A rehearsal's engine confirm (`core.cue_timeout`) confirms it and degrades nothing: it stands in for a person."""
        step, now, run_id = head.step, self.now, run.id
        log_rows: list[journal.Entry] = []
        rehearsal = run.rehearsal
        timeout = must_exist(core.cue_timeout(step.params, run.time_scale,
                                              None if rehearsal is None else rehearsal.auto_confirm_seconds))
        seconds, on_timeout = step.params.get("timeout_seconds"), timeout.on_timeout
        cursor: Cursor
        # guard: a-dry-runs-engine-confirm-degrades-it
        if timeout.by_rehearsal:
            cause = f"confirmed by the rehearsal after {must_exist(rehearsal).auto_confirm_seconds} s"
            if not steps.time_out(tx, step, StepStatus.DONE, now, cause):
                return self._onward(tx, run_id, programme, Done(None), log_rows)
            log_rows.append(journal.step_status(step, StepStatus.RUNNING, StepStatus.DONE, cause=cause,
                                                actor=journal.REHEARSAL))
            return self._onward(tx, run_id, programme, head.after_head(), log_rows)
        if on_timeout == "pause":
            cause = f"no one confirmed within {seconds} s"
            if not steps.drop_timeout(tx, step, now):
                return self._onward(tx, run_id, programme, Done(None), log_rows)
            why = f"step {step.id} ({step.action_id}): {cause}"
            if head.status is RunStatus.RUNNING and runs.transition(
                    tx, run_id, [RunStatus.RUNNING], RunStatus.PAUSED, now, last_error=why, degrade=True):
                log_rows.append(journal.run_status(run_id, head.phase, RunStatus.RUNNING, RunStatus.PAUSED, cause=why))
                cursor = Done(RunStatus.PAUSED)
            else:
                runs.degrade(tx, run_id, now, why)
                cursor = NeedsRead(head.status, head.phase)
            return self._onward(tx, run_id, programme, cursor, log_rows)
        to = StepStatus.DONE if on_timeout == "confirm" else StepStatus.CANCELLED
        cause = f"assumed done after {seconds} s" if to is StepStatus.DONE else f"no one confirmed within {seconds} s"
        if not steps.time_out(tx, step, to, now, cause):
            return self._onward(tx, run_id, programme, Done(None), log_rows)
        runs.degrade(tx, run_id, now, f"step {step.id} ({step.action_id}): {cause}")
        log_rows.append(journal.step_status(step, StepStatus.RUNNING, to, cause=cause, on_timeout=on_timeout))
        return self._onward(tx, run_id, programme, head.after_head(), log_rows)

    def _fail_unreadable(self, tx: Tx, run: Run, error: str) -> RunStatus:
        if runs.transition(tx, run.id, [run.status], RunStatus.FAILED, self.now, last_error=error, degrade=True):
            log.append(tx, journal.run_status(run.id, run.current_phase, run.status, RunStatus.FAILED, cause=error), self.now)
            return RunStatus.FAILED
        return must_exist(runs.get(tx, run.id)).status
