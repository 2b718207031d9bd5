"""The live controls, each declared once: route, OpenAPI entry, roles, offer and button derive from it.

Invariant: a control's name, target, roles, refusal rule and body fields are its command's (`run_controls`,
`step_controls`); its declaration adds only how it is shown and what it makes (what it writes, whether it
wakes the tick, the console's label, question, answer and tone). The API's routes (a body field per command
field: its note, the phase it acts on, its option), `GET /vocabulary`'s `controls` (the console's buttons),
the `controls` offered in `GET /runs/{id}` (`offered`: the run's, the phase it is at's, each step's) and the
409's words (`refusal`) all read this table. What is offered to a caller is what their press would take
(`Standing.offer`, which `GET /inbox`'s row controls read too): the rule allows it on the rows read, and their roles
(and, on a cue, whether they have it) pass the gates the press meets (`Control.allows`: the route's roles, a cue
role's parked cue, the `holder`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from functools import cached_property
from typing import Any, get_type_hints

from ...roles import ROLES
from ..model import Phase, Run, Step
from .plans import Extend, ExtendCue, PhaseCommand, Postpone, Seconds, Upgrade, VersionNumber
from .protocol import HeldBy, RunCommand, StepCommand
from .rules import Refusal, advance_refusal
from .run_controls import Advance, Cancel, CleanUp, Pause, Resume
from .step_controls import Acknowledge, Choice, Confirm, Holder, Release, Resend, Retry, Skip, TakeOver


class Target(str, Enum):
    RUN = "run"
    PHASE = "phase"  # a phase of a run, its number in the route: /runs/{run_id}/phases/{phase}/<name>
    STEP = "step"


class Shape(Enum):
    """What a control's answer carries besides ok (its OpenAPI response)."""

    RUN = "the run"
    STEP = "the step"
    RETRIED = "the step and the run"
    ADVANCED = "the run, its skipped steps and whether it resumed"
    CANCELLED = "the run and how many of its steps it cancelled"


_IDS = ("run_id", "step_id")
_PATHS = {Target.RUN: "", Target.PHASE: "phases/{phase}/", Target.STEP: "steps/{step_id}/"}


@dataclass(frozen=True)
class Control:
    """One live control, declared once: everything that names it derives from this and its command."""

    command: type[RunCommand[Any] | StepCommand[Any]]
    writes: str  # what it changes, for the API's description
    wakes: bool  # whether it makes work for the tick (a sleeping deployment is woken after its commit)
    label: str  # the console's button
    question: str | None  # what the console asks before pressing it (None: it asks nothing)
    done: str  # what the console says once it took
    answer: Shape
    tone: str | None = None  # "danger" or "primary": how the console draws the button
    # Whether the console sends the tag it showed (If-Match) with it: not with pause and cancel, which
    # stop a run whatever it did meanwhile (the API takes a tag with every control).
    sends_tag: bool = True

    @property
    def name(self) -> str:
        return self.command.name

    @property
    def target(self) -> Target:
        if issubclass(self.command, StepCommand):
            return Target.STEP
        return Target.PHASE if issubclass(self.command, PhaseCommand) else Target.RUN

    @property
    def path(self) -> str:
        """Its route: `/runs/{run_id}/` and, for a phase's or a step's, the one it acts on, then its name."""
        return "/runs/{run_id}/" + _PATHS[self.target] + self.name

    @property
    def roles(self) -> frozenset[str]:
        return self.command.roles

    @property
    def cue_roles(self) -> frozenset[str]:
        """The roles that may press it on a parked cue only (a gm, on their cue)."""
        return self.command.cue_roles

    @property
    def refuse(self) -> Refusal:
        """The guard as a pure function of the rows (the SQL guard is its statement's WHERE clause)."""
        return self.command.rule

    @cached_property
    def note_field(self) -> str | None:
        """The body field its note goes in (None: it takes none): its command's text field."""
        return self._field_typed(str | None) or self._field_typed(str)

    @cached_property
    def note_required(self) -> bool:
        """Whether its note must be given (a take-over's): its command's text field has no default of None."""
        return self._field_typed(str) is not None

    @property
    def holder(self) -> HeldBy | None:
        """Whether the person who has a cue decides who presses it (`StepCommand.holder`)."""
        return self.command.holder if issubclass(self.command, StepCommand) else None

    @cached_property
    def phase_field(self) -> str | None:
        """The body field naming the phase it acts on (the console sends the run's): its command's number field
        (a phase's control names it in its route instead)."""
        return None if self.target is Target.PHASE else self._field_typed(int)

    @cached_property
    def time_field(self) -> str | None:
        """The body field carrying a new time (postpone's): its command's time field."""
        return self._field_typed(datetime)

    @cached_property
    def seconds_field(self) -> str | None:
        """The body field carrying how far a time moves (extend's): its command's seconds field."""
        return self._field_typed(Seconds)

    @cached_property
    def version_field(self) -> str | None:
        """The body field naming the version its presser saw current (upgrade's): its command's version field."""
        return self._field_typed(VersionNumber | None)

    @cached_property
    def option_field(self) -> str | None:
        """A boolean body field (cancel's cleanup): its command's yes-or-no field."""
        return self._field_typed(bool)

    @cached_property
    def holder_field(self) -> str | None:
        """The body field naming who has the cue as the presser saw it (take-over's, release's): its command's holder."""
        return self._field_typed(Holder | None)

    @cached_property
    def choice_field(self) -> str | None:
        """The body field carrying the answer chosen (confirm's, for a cue with choices): its command's choice."""
        return self._field_typed(Choice | None)

    def _field_typed(self, kind: object) -> str | None:
        hints = get_type_hints(self.command)
        return next((f.name for f in dataclasses.fields(self.command) if f.name not in _IDS and hints[f.name] == kind), None)

    def pressed(self, ids: Mapping[str, int], body: Mapping[str, Any]) -> RunCommand[Any] | StepCommand[Any]:
        """The command a request presses: the ids from its path, each field from the body field of its name (a
        time already read as naive UTC)."""
        fields: dict[str, Any] = {"run_id": ids["run_id"]}
        if self.target is Target.STEP:
            fields["step_id"] = ids["step_id"]
        if self.target is Target.PHASE:
            fields["phase"] = ids["phase"]
        for field in (self.time_field, self.seconds_field):
            if field:
                fields[field] = body[field]
        if self.note_field:
            fields[self.note_field] = body.get(self.note_field)
        if self.phase_field:
            fields[self.phase_field] = body[self.phase_field]
        if self.option_field:
            fields[self.option_field] = bool(body.get(self.option_field))
        if self.choice_field and body.get(self.choice_field) is not None:
            fields[self.choice_field] = Choice(body[self.choice_field])
        if self.holder_field and body.get(self.holder_field) is not None:
            fields[self.holder_field] = Holder(body[self.holder_field])
        if self.version_field and body.get(self.version_field) is not None:
            fields[self.version_field] = VersionNumber(body[self.version_field])
        return self.command(**fields)

    @property
    def gate(self) -> frozenset[str]:
        """Every role the route lets through: a cue role's press is judged on the step (403 unless a parked cue)."""
        return self.roles | self.cue_roles

    def cue_only(self, held: frozenset[str]) -> bool:
        """Whether a caller holding `held` may press it on a parked cue only."""
        return not held & self.roles

    def allows(self, held: frozenset[str], actor: str, step: Step | None) -> bool:
        """Whether `actor`, holding the roles `held`, passes its press's gates on `step` (None: a run control)
        where its rule allows it: one of its `roles` presses it anywhere, except a control for the others
        (take-over) on their own cue, which writes nothing; one of its `cue_roles` only on a parked cue (a step
        parked for a decision is not one), and a control for the holder (release) only on a cue they have."""
        mine = step is not None and step.acknowledged_by == actor
        # guard: offered-as-the-press-is-judged
        if not self.passes(held, on_parked_cue=step is not None and step.parked_cue):
            return False
        if held & self.roles:
            return not (self.holder is HeldBy.OTHERS and mine)
        return self.holder is not HeldBy.OWN or mine

    def passes(self, held: frozenset[str], *, on_parked_cue: bool) -> bool:
        """Whether holding `held` passes its roles' gate: one of its `roles` anywhere, one of its `cue_roles` only
        on a parked cue (a chat message's buttons are filtered by this, for the roles its readers can hold)."""
        return bool(held & self.roles) or (on_parked_cue and bool(held & self.cue_roles))

    def pressed_by(self, actor: str, step: Step | None) -> list[str]:
        """The roles that, held by `actor`, let them press it on `step` where its rule allows it."""
        return [role for role in sorted(ROLES) if self.allows(frozenset({role}), actor, step)]

    @property
    def summary(self) -> str:
        cue = f" ({', '.join(sorted(self.cue_roles))}: on a parked cue only)" if self.cue_roles else ""
        return f"{self.label}: {self.writes}{cue}."

    def public(self) -> dict[str, Any]:
        """The declaration as GET /vocabulary gives it to the console."""
        return {
            "name": self.name, "target": self.target.value, "roles": sorted(self.roles),
            "cue_roles": sorted(self.cue_roles), "wakes": self.wakes,
            "note_field": self.note_field, "label": self.label, "question": self.question, "done": self.done,
            "tone": self.tone, "phase_field": self.phase_field, "sends_tag": self.sends_tag,
            "option_field": self.option_field, "choice_field": self.choice_field, "note_required": self.note_required,
            "time_field": self.time_field, "seconds_field": self.seconds_field, "holder_field": self.holder_field,
            "version_field": self.version_field,
            "holder": None if self.holder is None else self.holder.value,
        }


CONTROLS: dict[str, Control] = {c.name: c for c in (
    Control(Pause, "a starting, running or cleaning-up run is paused; its run lease is cleared, so a working tick stops"
            " at its next re-read", wakes=False, label="Pause run", question="Pause this run?", done="Paused", answer=Shape.RUN,
            sends_tag=False),
    Control(Resume, "a paused run is running again (starting, if it never had a phase); its last error is cleared, its"
            " health kept; the person's note (optional) on its log row", wakes=True, label="Resume run",
            question="Resume this run?", done="Resumed", answer=Shape.RUN),
    Control(Cancel, "a run that is not over is cancelled; its pending and parked steps are cancelled, a step in flight is"
            " left to its answer. With cleanup, a run that left something to revert (or has a step in flight) is"
            " cleaning_up first: the tick reverts what it left, newest first, then cancels it; a cancel without"
            " cleanup of a run cleaning up abandons the cleanup", wakes=True, label="Cancel run",
            question="Cancel this run? It cannot be undone.", done="Cancelled", answer=Shape.CANCELLED, tone="danger",
            sends_tag=False),
    # guard: advance-does-not-nudge-a-sleeping-deployment
    Control(Advance, "the phase the run is at ends: its condition is met, its pending and parked steps are skipped with"
            " the reason, and from paused the run resumes; refused while a step of it is in flight, and in the ending",
            wakes=True, label="Advance phase", question="Advance past this phase?", done="Advanced",
            answer=Shape.ADVANCED),
    Control(CleanUp, "a finished run (completed, failed or cancelled) that left something live in the game world is"
            " cleaned up, its status kept: the tick reverts what it left, newest first, as a cancel's cleanup does,"
            " and records the cleanup done, or failed with what is left; refused while one is in progress, while a"
            " step of the run is in flight, and when nothing live is left to revert", wakes=True, label="Clean up",
            question="Clean up what this run left in the game world? Each live resource is reverted, newest first;"
            " the run keeps its status.", done="Cleaning up", answer=Shape.RUN),
    Control(Confirm, "a parked step is done, with the person's note", wakes=True, label="Confirm",
            question="Confirm this step is done?", done="Confirmed", answer=Shape.STEP, tone="primary"),
    Control(Skip, "a pending or parked step of a run that is not over is skipped", wakes=True, label="Skip",
            question="Skip this step?", done="Skipped", answer=Shape.STEP),
    Control(Retry, "the failed step a paused run is stopped at is re-queued, and the run resumed", wakes=True,
            label="Retry", question=None, done="Re-queued", answer=Shape.RETRIED),
    Control(Resend, "a step parked in doubt (the game may or may not have applied it) is sent again with the same key"
            " and its attempts kept, without asking the game first", wakes=True, label="Resend",
            question="Send this step to the game again? If the game did apply it, it may be applied twice.",
            done="Re-sent", answer=Shape.STEP),
    Control(Acknowledge, "a parked cue is had by the person who presses it: who, since when and until when are kept"
            " on the step, its reminders and escalation silenced; the hold lasts as long as the cue waits before its"
            " escalation, then lapses and the cue is reminded and escalated again (the same person again changes"
            " nothing; anyone else is refused, naming who has it)", wakes=True,
            label="I have it", question="Say you have this cue? Its reminders and escalation stop while you hold it.",
            done="Acknowledged", answer=Shape.STEP, sends_tag=False),
    Control(Release, "a parked cue someone has is had by nobody again: its reminders begin again now and its escalation"
            " after its delay (a game master releases only a cue they have)", wakes=True, label="Release",
            question="Let this cue go? Nobody will have it, and its reminders begin again.", done="Released",
            answer=Shape.STEP, sends_tag=False),
    Control(TakeOver, "a parked cue someone else has becomes the presser's, held as an acknowledge holds it, with their"
            " note (required) saying why; who had it is in the log (the holder again changes nothing)", wakes=True,
            label="Take over", question="Take this cue over from whoever has it? Say why: they read it in the log.",
            done="Taken over", answer=Shape.STEP, sends_tag=False),
    Control(Postpone, "a scheduled run is moved to a new time, later than now: the same run, its occurrence key kept,"
            " its wake time the new time; refused once it has started", wakes=True, label="Postpone",
            question="Move this run to a new time?", done="Postponed", answer=Shape.RUN, sends_tag=False),
    Control(Upgrade, "a scheduled live run is moved to its definition's current version, with that version's grace"
            " window: the same run at the same time; refused once it has started, once its time has come, and when the"
            " version it names (`to`, the one its presser saw current) is no longer the current one", wakes=False, label="Upgrade",
            question="Play the definition's current version in this run? It has not started, so only what it will do"
            " changes.", done="Upgraded", answer=Shape.RUN),
    Control(Extend, "the deadline of the phase the run is at (an after phase's end, or its time limit) moves by the"
            " seconds given, later or earlier but not into the past; who moved it is kept on the phase", wakes=True,
            label="Extend", question="Move this phase's deadline?", done="Deadline moved", answer=Shape.RUN, sends_tag=False),
    Control(ExtendCue, "a parked cue's timeout moves by the seconds given, later or earlier but not into the past",
            wakes=True, label="Extend timeout", question="Move this cue's timeout?", done="Timeout moved",
            answer=Shape.STEP, sends_tag=False),
)}
RUN_CONTROLS = tuple(name for name, c in CONTROLS.items() if c.target is Target.RUN)
PHASE_CONTROLS = tuple(name for name, c in CONTROLS.items() if c.target is Target.PHASE)
STEP_CONTROLS = tuple(name for name, c in CONTROLS.items() if c.target is Target.STEP)


def refusal(control: str, run: Run, step: Step | None = None, furthest_seq: int | None = None) -> str | None:
    """Why `control` is not legal now, or None if it is.

    `furthest_seq` is `steps.last_started_seq` of the run's current phase (retry only).
    """
    declared = CONTROLS.get(control)
    if declared is None:
        raise ValueError(f"unknown control {control!r}")
    return declared.refuse(run, step, furthest_seq)


@dataclass(frozen=True)
class Caller:
    """Who asks which controls they may press: the token's subject and its roles."""

    actor: str
    roles: frozenset[str]


@dataclass(frozen=True)
class Standing:
    """Where a run stands, as its controls are judged on the rows of one snapshot: the run, `furthest_seq`
    (`steps.last_started_seq` of its current phase: retry only), `phase` (the row of the phase it is at:
    advance and a phase's controls), `in_flight` (that phase's first step in flight under a live lease:
    advance only), `revertable` (it has something live its cleanup would revert and no step open: Clean up
    only), `now` (when it is judged: a phase's controls, whose deadline may have passed) and `current_version`
    (its definition's: Upgrade only, offered to a run made from an earlier one whose time is still ahead)."""

    run: Run
    furthest_seq: int | None = None
    phase: Phase | None = None
    in_flight: Step | None = None
    revertable: bool = False
    now: datetime | None = None
    current_version: int | None = None

    def legal(self, declared: Control, step: Step | None) -> bool:
        """Whether `declared`'s rule allows it now, on `step` (None: on the run, or on the phase it is at)."""
        run = self.run
        if declared.command is Advance:
            return run.current_phase is not None and advance_refusal(run, run.current_phase, self.phase, self.in_flight) is None
        if declared.command is CleanUp:
            return self.revertable and declared.refuse(run, None, None) is None
        if declared.command is Upgrade:
            # guard: upgrade-offered-on-the-current-version
            return (declared.refuse(run, None, None) is None and self.current_version is not None and self.now is not None
                    and run.definition_version < self.current_version and run.scheduled_for > self.now)
        if declared.target is Target.PHASE:  # the phase the run is at, while its deadline still counts
            # guard: a-phase-control-offered-without-a-deadline
            return declared.refuse(run, None, None) is None and self.phase is not None and self.phase.deadline_counts(self.now)
        # guard: a-step-of-an-ended-phase-is-offered-again
        if declared.command in (Retry, Resend) and step is not None and self.phase is not None \
                and step.phase == self.phase.number and step.resource_id is None and self.phase.over(self.now):
            return False  # its phase ended while the run was paused (a signal, an advance, a close deadline)
        return declared.refuse(run, step, self.furthest_seq if step is not None else None) is None

    def offer(self, declared: Control, step: Step | None, caller: Caller) -> list[str]:
        """The roles that, held by `caller`, let them press `declared` on `step` now, when they hold one of them
        and its rule allows it; else none (it is not offered to them)."""
        if not self.legal(declared, step):
            return []
        roles = declared.pressed_by(caller.actor, step)
        return roles if caller.roles & set(roles) else []


def offered(
    run: Run, run_steps: Iterable[Step], furthest_seq: int | None, phase: Phase | None = None, in_flight: Step | None = None,
    *, caller: Caller, revertable: bool = False, now: datetime | None = None, current_version: int | None = None,
) -> dict[str, Any]:
    """The controls legal right now for `caller`, as GET /runs/{id} reports them: the run's (`run`), the phase
    it is at's (`phase`) and each step's (`steps`), and for each of them the roles that, held by the caller, may
    press it (`roles`). The rows are `Standing`'s: `phase` is the row of the phase the run is at."""
    standing = Standing(run, furthest_seq, phase, in_flight, revertable, now, current_version)

    def for_caller(target: Target, step: Step | None) -> dict[str, list[str]]:
        offers = {c.name: standing.offer(c, step, caller) for c in CONTROLS.values() if c.target is target}
        return {name: roles for name, roles in offers.items() if roles}

    run_roles = for_caller(Target.RUN, None)
    phase_roles = for_caller(Target.PHASE, None)
    step_roles = {str(step.id): for_caller(Target.STEP, step) for step in run_steps}
    return {
        "run": list(run_roles),
        "phase": list(phase_roles),
        "steps": {step_id: list(roles) for step_id, roles in step_roles.items()},
        "roles": {"run": run_roles, "phase": phase_roles, "steps": step_roles},
    }
