"""The controls of one step: confirm, skip, acknowledge, release, take over, retry and resend.

Invariant: each changes the step only through its guarded statement in `store/steps` (held to the step's tag
when the press named one), under the run's and the step's locks that `protocol.within` took, and writes its
log row in the same transaction; a retry resumes its paused run in that transaction too, so nobody ever sees
the half-state "step re-queued, run still paused".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ...db import Tx, must_exist
from ...errors import Forbidden
from ...roles import CONTROLLERS, GM, STAFF, named
from .. import journal
from ..errors import Conflict, Invalid
from ..lifecycle import StepStatus
from ..model import Run, Step, clean_note
from ..store import log, phases, resources, runs, steps
from .protocol import Context, HeldBy, StepCommand, Took
from .rules import (
    acknowledge_refusal,
    confirm_refusal,
    had_by,
    needed,
    phase_ended,
    release_refusal,
    resend_refusal,
    retry_refusal,
    skip_refusal,
    take_over_refusal,
)
from .run_controls import resume_locked


def step_answer(step: Step) -> dict[str, Any]:
    return {"ok": True, "step": step.public()}


class StepChange(StepCommand[Step]):
    """A control whose answer is the step it moved (every step control but retry, and a cue's Extend timeout).
    Each keeps its own guarded statement and log row; what follows them is the same for all, and is here: the
    step read again, in the same transaction (as `RunMove` does for a run's)."""

    def took(self, tx: Tx, step: Step, logged: int) -> Took[Step]:
        """The change took and `logged` is its log row: the step as it is now."""
        return Took(must_exist(steps.get(tx, step.id)), logged)

    def answer(self, result: Step) -> dict[str, Any]:
        return step_answer(result)


class _Decision(StepChange):
    """A person's decision on one step (confirm, skip): the guarded change and its log row."""

    def decided(self, tx: Tx, step: Step, taken: bool, to: StepStatus, by: Context, **detail: str | None) -> Took[Step] | None:
        if not taken:
            return None
        # guard: a-revert-answered-by-hand-stays-reverting
        if step.resource_id is not None:
            resources.follow_steps(tx, [step.id], by.now)  # a revert done by hand (confirm), or given up (skip)
        # guard: confirm-and-skip-commit-before-their-log-row
        logged = log.append(tx, journal.step_control(step, self.name, to, by.actor, **detail), by.now)
        return self.took(tx, step, logged)


class Choice(str):
    """The answer a confirm carries: one of its cue's choices' values (its own type, so that its body field is
    found by it, `declared.Control.choice_field`)."""


@dataclass(frozen=True)
class Confirm(_Decision):
    """A parked step -> done, with the person's note: they did what it asked (a cue with choices: with the
    answer they chose, kept on the step and in the log row)."""

    name: ClassVar[str] = "confirm"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    cue_roles: ClassVar[frozenset[str]] = frozenset({GM})
    rule = confirm_refusal
    note: str | None = None
    choice: Choice | None = None

    def decide(self, tx: Tx, run: Run, step: Step, by: Context) -> Took[Step] | None:
        if confirm_refusal(run, step, None) is not None:  # waits on nobody (read locked): said so (409), not its choice
            return None
        problem = choice_problem(step, self.choice)
        if problem is not None:
            raise Invalid(problem)  # what the step offers is its definition's: nothing of it is a moment's state
        text = clean_note(self.note)
        taken = steps.confirm_parked(tx, step.id, by.now, text, choice=self.choice, seen=by.step_seen(step))
        answer = {} if self.choice is None else {"choice": str(self.choice)}
        return self.decided(tx, step, taken, StepStatus.DONE, by, note=text, **answer)


def choice_problem(step: Step, choice: str | None) -> str | None:
    """Why a confirm's `choice` does not fit the step: a cue with choices is confirmed with one of them, and
    any other step without one. None: it fits."""
    offered = step.choices
    words = ", ".join(f"{c['value']} ({c['label']})" for c in offered)
    if not offered:
        return None if choice is None else f"{step.named} offers no choices: confirm it without one"
    if choice is None:
        return f"{step.named} asks which: confirm it with a choice, one of {words}"
    # guard: a-confirm-takes-a-choice-not-offered
    if choice not in [c["value"] for c in offered]:
        return f"{choice!r} is not one of the choices of {step.named}: {words}"
    return None


@dataclass(frozen=True)
class Skip(_Decision):
    """A pending or parked step of a live run -> skipped: a person decided against it. The statement's WHERE
    holds the step to the state read (locked): a parked one, or a pending one (never for a cue-only caller, nor for a
    chat press)."""

    name: ClassVar[str] = "skip"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    cue_roles: ClassVar[frozenset[str]] = frozenset({GM})
    rule = skip_refusal
    reason: str | None = None

    def decide(self, tx: Tx, run: Run, step: Step, by: Context) -> Took[Step] | None:
        note = clean_note(self.reason)
        # A chat press (`parked_only`) is too: every other control a chat button presses takes a parked step only.
        # guard: a-gms-skip-is-not-held-to-a-parked-step
        # guard: a-chat-press-acts-on-a-step-no-longer-parked
        held = by.cue_only is not None or by.parked_only
        taken = steps.skip_by_human(tx, step.id, by.now, note, parked=step.parked or held, seen=by.step_seen(step))
        return self.decided(tx, step, taken, StepStatus.SKIPPED, by, reason=note)


@dataclass(frozen=True)
class Acknowledge(StepChange):
    """The presser has the parked cue: who, since when and until when are kept on the step, and logged
    (`step.acknowledged`).

    The compare-and-set (`steps.acknowledge`: parked, nobody has it yet) and its log row. It holds the cue for
    as long as the cue waits before its escalation (`Step.hold_from`), then lapses (runner/attention.py). The
    same person again answers the step and writes nothing; anyone else is 409 naming who has it and since when.
    """

    name: ClassVar[str] = "acknowledge"
    roles: ClassVar[frozenset[str]] = STAFF
    rule = acknowledge_refusal
    note: str | None = None

    def decide(self, tx: Tx, run: Run, step: Step, by: Context) -> Took[Step] | None:
        held_until = step.hold_from(by.now)
        if not steps.acknowledge(tx, step.id, by.actor, by.now, held_until=held_until, seen=by.step_seen(step)):
            return None
        # guard: acknowledge-commits-before-its-log-row
        logged = log.append(tx, journal.step_acknowledged(step, self.name, by.actor, clean_note(self.note), held_until), by.now)
        return self.took(tx, step, logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Step:
        step = needed(step, self.name)
        if step.parked and step.acknowledged_by == by.actor:
            return step  # theirs already: nothing written (nor any key kept: a repeat finds it theirs again)
        raise self.lost(run, step)


class Holder(str):
    """Who has a cue as the presser saw it (its own type, so that its body field is found by it,
    `declared.Control.holder_field`): a take-over or a release acts on that hold only. The step's tag leaves the
    holder out (who has a cue is not its state), so without this a hold that lapsed and was taken by another
    between the look and the press was taken over, or released, from someone the presser never saw."""


@dataclass(frozen=True)
class Release(StepChange):
    """Nobody has the parked cue again (`steps.release`), and logged (`step.released`): whoever has it lets it
    go, or a moderator does for them. Its reminders begin again now and its escalation after its delay.

    A game master may release only a cue they have: the statement's WHERE holds their press to it, and a cue
    someone else has is 403 naming who (they take it over instead, with a note).
    """

    name: ClassVar[str] = "release"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    cue_roles: ClassVar[frozenset[str]] = frozenset({GM})
    holder: ClassVar[HeldBy | None] = HeldBy.OWN
    rule = release_refusal
    note: str | None = None
    held_by: Holder | None = None

    def decide(self, tx: Tx, run: Run, step: Step, by: Context) -> Took[Step] | None:
        reminds = bool(step.params.get("remind_after_seconds"))
        holder = by.actor if by.cue_only is not None else self.held_by
        if not steps.release(tx, step.id, by.now, holder=holder, remind_at=by.now if reminds else None,
                             escalate_at=step.hold_from(by.now), seen=by.step_seen(step)):
            return None
        # guard: a-release-commits-before-its-log-row
        logged = log.append(tx, journal.step_released(step, self.name, by.actor, clean_note(self.note)), by.now)
        return self.took(tx, step, logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Step:
        step = needed(step, self.name)
        if by.cue_only is not None and release_refusal(run, step, None) is None:  # held, but by someone else
            raise Forbidden(f"a game master may release only a cue they have; {had_by(step)}: take it over with a note,"
                            f" or ask someone with the role {named(self.roles)} to release it",
                            roles_needed=self.roles, roles_held=by.cue_only)
        raise _another_holds_it(self, run, step) or self.lost(run, step)


@dataclass(frozen=True)
class TakeOver(StepChange):
    """The presser takes over the parked cue someone else has (`steps.take_over`), with a note saying why, and
    logged (`step.taken_over`, naming who had it): theirs from now, held as an acknowledge holds it. A press
    without a note is 400 before anything is read; the holder's own answers the step and writes nothing.
    """

    name: ClassVar[str] = "take-over"
    roles: ClassVar[frozenset[str]] = STAFF
    holder: ClassVar[HeldBy | None] = HeldBy.OTHERS
    rule = take_over_refusal
    note: str  # required: why the cue changes hands, for whoever had it (the log tells them)
    held_by: Holder | None = None

    def __post_init__(self) -> None:
        if clean_note(self.note) is None:
            raise Invalid("a take-over needs a note (body.note) saying why you take this cue over: whoever has it"
                          " reads it in the run's log")

    def decide(self, tx: Tx, run: Run, step: Step, by: Context) -> Took[Step] | None:
        held_until = step.hold_from(by.now)
        if not steps.take_over(tx, step.id, by.actor, by.now, held_until=held_until, seen=by.step_seen(step),
                               from_holder=self.held_by):
            return None
        # guard: a-take-over-commits-before-its-log-row
        logged = log.append(tx, journal.step_taken_over(step, self.name, by.actor, clean_note(self.note), held_until),
                            by.now)
        return self.took(tx, step, logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Step:
        step = needed(step, self.name)
        if step.parked_cue and step.acknowledged_by == by.actor:
            return step  # theirs already: nothing written (nor any key kept: a repeat finds it theirs again)
        raise _another_holds_it(self, run, step) or self.lost(run, step)


def _another_holds_it(command: Release | TakeOver, run: Run, step: Step) -> Conflict | None:
    """The 409 of a take-over or a release held to a holder (`held_by`) who no longer has the cue, when someone
    else has it now (None: the rule's own words say why)."""
    if command.held_by is None or step.acknowledged_by in (None, command.held_by) or not step.parked_cue:
        return None
    return Conflict(f"{step.named}: {had_by(step)}, not {command.held_by} as you saw: nothing was changed; look"
                    " again before you press it", run_status=run.status.value, step_status=step.status.value,
                    step_parked=step.parked)


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
        if retry_refusal(run, step, furthest) is None and ended is not None and ended.over(by.now):
            # Every rule of the step and its run allowed it: its phase is ending (the statement's last term).
            raise Conflict(f"{step.named}: {phase_ended(ended)}", run_status=run.status.value, step_status=step.status.value,
                           step_parked=step.parked)
        raise self.lost(run, step, furthest)

    def answer(self, result: Retried) -> dict[str, Any]:
        return {"ok": True, "step": result.step.public(), "resumed": result.resumed, "run": result.run.public()}


@dataclass(frozen=True)
class Resend(StepChange):
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
        return self.took(tx, step, logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Step:
        step = needed(step, self.name)
        ended = phases.get(tx, run.id, step.phase)
        if resend_refusal(run, step, None) is None and ended is not None and ended.over(by.now):
            raise Conflict(f"{step.named}: {phase_ended(ended, 'sent again')}", run_status=run.status.value,
                           step_status=step.status.value, step_parked=step.parked)
        raise self.lost(run, step)
