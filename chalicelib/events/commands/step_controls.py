"""The controls of one step: confirm, skip, acknowledge, retry and resend.

Invariant: each changes the step only through its guarded statement in `store/steps` (held to the step's tag
when the press named one), under the run's and the step's locks that `protocol.within` took, and writes its
log row in the same transaction; a retry resumes its paused run in that transaction too, so nobody ever sees
the half-state "step re-queued, run still paused".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ...db import Tx, must_exist
from ...roles import CONTROLLERS, GM, STAFF
from .. import journal
from ..errors import Conflict
from ..lifecycle import StepStatus
from ..model import Run, Step, clean_note
from ..store import log, phases, resources, runs, steps
from .protocol import Context, StepCommand, Took
from .rules import acknowledge_refusal, confirm_refusal, needed, phase_ended, resend_refusal, retry_refusal, skip_refusal
from .run_controls import resume_locked


def step_answer(step: Step) -> dict[str, Any]:
    return {"ok": True, "step": step.public()}


class _Decision(StepCommand[Step]):
    """A person's decision on one step (confirm, skip): the guarded change and its log row."""

    def decided(self, tx: Tx, step: Step, taken: bool, to: StepStatus, by: Context, **detail: str | None) -> Took[Step] | None:
        if not taken:
            return None
        if step.resource_id is not None:
            resources.follow_steps(tx, [step.id], by.now)  # a revert done by hand (confirm), or given up (skip)
        # guard: confirm-and-skip-commit-before-their-log-row
        logged = log.append(tx, journal.step_control(step, self.name, to, by.actor, **detail), by.now)
        return Took(must_exist(steps.get(tx, step.id)), logged)

    def answer(self, result: Step) -> dict[str, Any]:
        return step_answer(result)


@dataclass(frozen=True)
class Confirm(_Decision):
    """A parked step -> done, with the person's note: they did what it asked."""

    name: ClassVar[str] = "confirm"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    cue_roles: ClassVar[frozenset[str]] = frozenset({GM})
    rule = confirm_refusal
    note: str | None = None

    def decide(self, tx: Tx, run: Run, step: Step, by: Context) -> Took[Step] | None:
        text = clean_note(self.note)
        taken = steps.confirm_parked(tx, step.id, by.now, text, seen=by.step_seen(step))
        return self.decided(tx, step, taken, StepStatus.DONE, by, note=text)


@dataclass(frozen=True)
class Skip(_Decision):
    """A pending or parked step of a live run -> skipped: a person decided against it. The statement's WHERE
    holds the step to the state read (locked): a parked one, or a pending one (never for a cue-only caller)."""

    name: ClassVar[str] = "skip"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    cue_roles: ClassVar[frozenset[str]] = frozenset({GM})
    rule = skip_refusal
    reason: str | None = None

    def decide(self, tx: Tx, run: Run, step: Step, by: Context) -> Took[Step] | None:
        note = clean_note(self.reason)
        # guard: a-gms-skip-is-not-held-to-a-parked-step
        taken = steps.skip_by_human(tx, step.id, by.now, note, parked=step.parked or by.cue_only is not None,
                                    seen=by.step_seen(step))
        return self.decided(tx, step, taken, StepStatus.SKIPPED, by, reason=note)


@dataclass(frozen=True)
class Acknowledge(StepCommand[Step]):
    """The presser has the parked cue: who and since when are kept on the step, and logged (`step.acknowledged`).

    The compare-and-set (`steps.acknowledge`: parked, nobody has it yet) and its log row. The same person
    again answers the step and writes nothing; anyone else is 409 naming who has it and since when.
    """

    name: ClassVar[str] = "acknowledge"
    roles: ClassVar[frozenset[str]] = STAFF
    rule = acknowledge_refusal
    note: str | None = None

    def decide(self, tx: Tx, run: Run, step: Step, by: Context) -> Took[Step] | None:
        if not steps.acknowledge(tx, step.id, by.actor, by.now, seen=by.step_seen(step)):
            return None
        # guard: acknowledge-commits-before-its-log-row
        logged = log.append(tx, journal.step_acknowledged(step, self.name, by.actor, clean_note(self.note)), by.now)
        return Took(must_exist(steps.get(tx, step.id)), logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Step:
        step = needed(step, self.name)
        if step.parked and step.acknowledged_by == by.actor:
            return step  # theirs already: nothing written (nor any key kept: a repeat finds it theirs again)
        raise self.lost(run, step)

    def answer(self, result: Step) -> dict[str, Any]:
        return step_answer(result)


@dataclass(frozen=True)
class Retried:
    step: Step
    run: Run
    resumed: bool


@dataclass(frozen=True)
class Retry(StepCommand[Retried]):
    """Re-queue the failed step a paused run is stopped at, and resume the run: one action.

    The requeue's own WHERE clause demands a paused run, and from that moment until COMMIT nobody else can
    move the run (every run transition needs the row lock held), so the resume cannot lose a race.
    `resumed` is still the transition's own answer, not an assumption.
    """

    name: ClassVar[str] = "retry"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    rule = retry_refusal

    def decide(self, tx: Tx, run: Run, step: Step, by: Context) -> Took[Retried] | None:
        requeued = (steps.requeue_revert(tx, run.id, step.id, by.now) if step.resource_id is not None
                    else steps.requeue_where_stopped(tx, run.id, step.id, by.now, seen=by.step_seen(step)))
        if not requeued:
            return None
        # guard: retry-commits-before-its-log-row
        logged = log.append(tx, journal.step_control(step, self.name, StepStatus.PENDING, by.actor, attempts=step.attempts), by.now)
        resumed = resume_locked(tx, run, self.name, by) is not None
        return Took(Retried(step=must_exist(steps.get(tx, step.id)), run=must_exist(runs.get(tx, run.id)), resumed=resumed), logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Retried:
        step = needed(step, self.name)
        furthest = steps.last_started_seq(tx, run.id, run.current_phase)
        ended = phases.get(tx, run.id, step.phase)
        if retry_refusal(run, step, furthest) is None and ended is not None and ended.condition_met:
            # Every rule of the step and its run allowed it: its phase is ending (the statement's last term).
            raise Conflict(phase_ended(ended), run_status=run.status.value, step_status=step.status.value,
                           step_parked=step.parked)
        raise self.lost(run, step, furthest)

    def answer(self, result: Retried) -> dict[str, Any]:
        return {"ok": True, "step": result.step.public(), "resumed": result.resumed, "run": result.run.public()}


@dataclass(frozen=True)
class Resend(StepCommand[Step]):
    """A step parked in doubt is sent again (`steps.resend`): pending with its attempts kept and a fresh
    allowance of them, its next claim sends it without asking the game. A person's word that the game did not apply it (or that a second
    application does no harm)."""

    name: ClassVar[str] = "resend"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    rule = resend_refusal
    reason: str | None = None

    def decide(self, tx: Tx, run: Run, step: Step, by: Context) -> Took[Step] | None:
        note = clean_note(self.reason)
        if not steps.resend(tx, step.id, by.now, note, seen=by.step_seen(step)):
            return None
        logged = log.append(tx, journal.step_control(step, self.name, StepStatus.PENDING, by.actor, reason=note,
                                                     attempts=step.attempts), by.now)
        return Took(must_exist(steps.get(tx, step.id)), logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Step:
        step = needed(step, self.name)
        ended = phases.get(tx, run.id, step.phase)
        if resend_refusal(run, step, None) is None and ended is not None and ended.condition_met:
            raise Conflict(phase_ended(ended, "sent again"), run_status=run.status.value,
                           step_status=step.status.value, step_parked=step.parked)
        raise self.lost(run, step)

    def answer(self, result: Step) -> dict[str, Any]:
        return step_answer(result)
