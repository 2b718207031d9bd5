"""The one template every command runs on: how an outside actor moves a run.

Invariant: a command is one transaction that locks the run's row first (and then its step's), so the
commands and signals of one run take turns; a run holding a word this version does not know (a newer
version's run, a rollback past its migration) is refused (`NewerRow`) before anything; under those locks,
before any rule, a repeated press answers its first answer (`AnsweredBefore`, nothing written) to the
actor who pressed it, and to no one else (`Clash`), and a tag that is not the target's now is a 412
(`Stale`, naming the state now); then the command's guarded statement, whose WHERE clause is the guard,
and its log row, in the same transaction; a statement that matched nothing is a 409 in the words of the
command's refusal rule (the rows are locked, so the rule and the statement agree); a press that took with
an Idempotency-Key keeps the key and its answer on its log row. Time is the context's `now`, read once
from the one clock by the caller.

A command is a frozen dataclass of its typed fields (`RunCommand`, `StepCommand`, or a `Command` of its
own such as a signal's receipt); `execute` runs it in a transaction of its own, `within` in the caller's.
Without a tag or a key (`AS_EVER`) a command is what it always was: no statement is added.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, ClassVar, Generic, TypeVar

from ...db import Database, Tx
from ...errors import Forbidden
from ...roles import named
from .. import journal
from ..errors import AnsweredBefore, Clash, Conflict, KeyReused, NotFound, Stale
from ..lifecycle import RunStatus, StepStatus
from ..model import Run, Step, iso
from ..store import log, runs, steps
from .rules import Refusal, needed, step_state

R = TypeVar("R")
ANY_TAG = "*"  # If-Match: * (any state will do)


@dataclass(frozen=True)
class Press:
    """How a person pressed a control: the tags they saw (If-Match, or the body's `expected`; None: they named
    none, and the control is what it always was) and their Idempotency-Key (None: none)."""

    seen: tuple[str, ...] | None = None
    key: str | None = None

    def matches(self, current: str) -> bool:
        return self.seen is None or ANY_TAG in self.seen or current in self.seen

    @property
    def names_a_tag(self) -> bool:
        """Whether it names a state (not none, not `*`): its guarded statement is then held to it too."""
        return self.seen is not None and ANY_TAG not in self.seen


AS_EVER = Press()


@dataclass(frozen=True)
class Context:
    """Who moves the run and when (the one clock's `now`), how they pressed, whether they may act on a
    parked cue only (`cue_only`: the roles they hold, as a game master holds them; None: anywhere), and whether
    the press came from a message about a parked step (`parked_only`: a chat button, which carries no tag of
    what its presser saw), so acts on that step only while it is parked."""

    actor: str
    now: datetime
    press: Press = AS_EVER
    cue_only: frozenset[str] | None = None
    parked_only: bool = False

    def version_seen(self, run: Run) -> int | None:
        """The run's version for its guarded statement's WHERE, when the press named the run's tag (checked)."""
        return run.version if self.press.names_a_tag else None

    def step_seen(self, step: Step) -> Step | None:
        """The step as seen, for its guarded statement's WHERE, when the press named the step's tag (checked)."""
        return step if self.press.names_a_tag else None


@dataclass(frozen=True)
class Took(Generic[R]):
    """A command's guarded change took: what it answers, and the id of its log row (which keeps a press's key)."""

    result: R
    logged: int


class Command(ABC, Generic[R]):
    """One way an outside actor moves a run: its typed fields, and the hooks `within` calls under the locks."""

    name: ClassVar[str]  # how a press, its key and its log row name it
    run_id: int

    def target(self, tx: Tx, run: Run) -> Step | None:
        """The step it acts on, locked after its run (None: it acts on the run)."""
        return None

    @abstractmethod
    def apply(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Took[R] | None:
        """The guarded change and its log row; None when the guarded statement matched nothing."""

    @abstractmethod
    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> R:
        """A change that did not take: the refusal raised (or, for a repeat that writes nothing, its answer)."""

    @abstractmethod
    def answer(self, result: R) -> dict[str, Any]:
        """The answer's body, as the route sends it and a kept key replays it."""


class ControlCommand(Command[R]):
    """A control a person presses: who may press it, and its refusal rule for the 409 of a change that did not take."""

    roles: ClassVar[frozenset[str]]  # the roles that may press it
    cue_roles: ClassVar[frozenset[str]] = frozenset()  # the roles that may press it on a parked cue only
    rule: ClassVar[Refusal]  # a plain function on the class: read it as type(self).rule (through self it would bind)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> R:
        raise self.lost(run, step)

    def lost(self, run: Run, step: Step | None = None, furthest_seq: int | None = None) -> Conflict:
        """The 409 of a guarded statement that matched nothing: the rule's words, the statuses beside them."""
        # Both rows are locked, so the rule and the statement agree; the fallback
        # still names the status rather than guessing a reason. The statuses travel
        # beside the message, for a client that acts on them.
        actual = f"the step is {step_state(step)}" if step is not None else f"the run is {run.status.value}"
        why = type(self).rule(run, step, furthest_seq) or f"{self.name} did not take: {actual}"
        return Conflict(
            why if step is None else f"{step.named}: {why}",  # a refusal about a step names it by its one name
            run_status=run.status.value,
            step_status=None if step is None else step.status.value,
            step_parked=None if step is None else step.parked,
        )


@dataclass(frozen=True)
class RunCommand(ControlCommand[R]):
    """A control of a run."""

    run_id: int


class HeldBy(str, Enum):
    """Which callers of a step control the person who has its cue (`Step.acknowledged_by`) decides."""

    OWN = "own"  # its cue roles press it only on a cue they have (release)
    OTHERS = "others"  # whoever has the cue does not press it: it is for the others (take-over)


@dataclass(frozen=True)
class StepCommand(ControlCommand[R]):
    """A control of one step of a run: the step is locked after its run, and a caller who may press it on a
    parked cue only is held to one."""

    holder: ClassVar[HeldBy | None] = None  # whether the cue's holder decides who presses it
    run_id: int
    step_id: int

    def target(self, tx: Tx, run: Run) -> Step:
        # guard: control-reads-the-step-unlocked
        step = steps.get_on_run(tx, run.id, self.step_id, for_update=True)
        if step is None:
            raise NotFound(f"no step {self.step_id} on run {run.id}")
        return step

    def apply(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Took[R] | None:
        step = needed(step, self.name)
        if by.cue_only is not None:
            self._on_a_cue_only(run, step, by.cue_only)
        return self.decide(tx, run, step, by)

    @abstractmethod
    def decide(self, tx: Tx, run: Run, step: Step, by: Context) -> Took[R] | None:
        """The step control's guarded change and its log row; None when its statement matched nothing."""

    def _on_a_cue_only(self, run: Run, step: Step, held: frozenset[str]) -> None:
        """A caller who may press it on a parked cue only (a gm), on a step that is not one: 403 when a
        moderator could press it here (the role would lift the refusal), else the 409 everyone gets. A step
        parked in doubt is not a cue: whether the game applied it is a moderator's decision."""
        # guard: a-gm-acts-on-a-step-that-is-not-a-cue
        if step.parked_cue:
            return
        if type(self).rule(run, step, None) is None:
            raise Forbidden(
                f"a game master may {self.name} a parked cue only; this step is {step_state(step)}, and to {self.name} it"
                f" needs the role {named(self.roles)}", roles_needed=self.roles, roles_held=held)
        raise self.lost(run, step)


def execute(db: Database, command: Command[R], by: Context) -> R:
    """`command` in a transaction of its own (re-run whole on a deadlock: every write in it is guarded)."""
    return db.transaction(lambda tx: within(tx, command, by))


def within(tx: Tx, command: Command[R], by: Context) -> R:
    """`command` in the caller's transaction `tx`: the run locked, the press checked, the change, the key kept."""
    # guard: control-reads-the-run-unlocked
    run = runs.get(tx, command.run_id, for_update=True)  # a run whose own words are a newer version's: NewerRow
    if run is None:
        raise NotFound(f"no run {command.run_id}")
    newer = steps.first_newer(tx, run.id)
    # guard: a-control-acts-on-a-run-it-does-not-understand
    if newer is not None:
        raise Step.newer(newer)  # a newer version's step: this version neither moves it nor the run around it
    step = command.target(tx, run)
    _pressed(tx, by, command.name, run, step)
    took = command.apply(tx, run, step, by)
    if took is None:
        return command.refused(tx, run, step, by)
    # guard: a-press-that-took-keeps-no-key
    if by.press.key is not None:
        log.remember(tx, took.logged, run.id, by.press.key, command.name, None if step is None else step.id,
                     command.answer(took.result))
    return took.result


def _pressed(tx: Tx, by: Context, name: str, run: Run, step: Step | None) -> None:
    """What every command does first, under its row locks, before any rule: a repeat of a press that took
    answers its first answer (AnsweredBefore) to whoever pressed it first (anyone else: Clash, naming the key's
    use; a key its presser used for another control or step, or over 24 h ago, is KeyReused), and a tag that is
    not the target's now is Stale, naming the state now. Nothing is written."""
    press = by.press
    if press.key is not None:
        before = log.remembered(tx, run.id, press.key)
        # guard: a-repeat-is-pressed-again
        if before is not None:
            # A replay answers only who pressed: another's key would hand them a press their roles may refuse.
            # guard: a-key-answers-whoever-sends-it
            if before.actor != by.actor:
                raise Clash(f"this Idempotency-Key was used by {before.actor} for {_use(tx, before, run, step)} at"
                            f" {iso(before.at)}; a replay answers only who pressed it, and a new press needs a new key",
                            detail={"key_used_by": before.actor, "key_used_for": before.control,
                                    "key_used_on_step": before.step_id})
            # guard: a-key-replays-another-presses-answer
            if (before.control, before.step_id) != (name, None if step is None else step.id):
                raise KeyReused(f"this Idempotency-Key was used for {_use(tx, before, run, step)} at {iso(before.at)};"
                                " a new press needs a new key")
            # guard: a-key-is-kept-for-ever
            if by.now - before.at > log.KEY_KEPT_FOR:
                raise KeyReused(f"this Idempotency-Key was used on run {run.id} at {iso(before.at)}, more than 24 h"
                                " ago; a new press needs a new key")
            raise AnsweredBefore(before.body)
    # guard: a-run-control-checks-no-tag-under-its-lock
    if step is None and not press.matches(run.etag):
        raise Stale(f"run {run.id} changed while you were looking: it is now {_run_now(run)}{_by_whom(tx, run)}"
                    f" (ETag {run.etag}); {name} was not pressed", etag=run.etag, run_status=run.status.value)
    # guard: a-step-control-checks-no-tag-under-its-lock
    if step is not None and not press.matches(step.etag):
        raise Stale(f"{step.named} changed while you were looking: it is now {_step_now(step)} (ETag {step.etag});"
                    f" {name} was not pressed", etag=step.etag, run_status=run.status.value,
                    step_status=step.status.value, step_parked=step.parked)


def _use(tx: Tx, before: log.Remembered, run: Run, step: Step | None) -> str:
    """What a key was first pressed for, in words that tell it from this press, ready for " at <when>":
    "pause of run 7", "skip of this same step, Phase 1 · step 4 (core.cue),", "confirm of another step, …,"."""
    if before.step_id is None:
        return f"{before.control} of run {run.id}"
    if step is not None and before.step_id == step.id:
        return f"{before.control} of this same step, {step.named},"
    other = steps.get_on_run(tx, run.id, before.step_id)
    which = "another step" if step is not None else "a step"
    return f"{before.control} of {which}, {other.named if other is not None else f'step id {before.step_id}'},"


def _run_now(run: Run) -> str:
    """The run's control state in words, for a 412: "paused (boss bugged again) at phase 1"."""
    why = f" ({run.last_error})" if run.last_error and run.status is not RunStatus.RUNNING else ""
    at = f" at phase {run.current_phase}" if run.current_phase is not None and not run.status.terminal else ""
    return f"{run.status.value}{why}{at}"


# The run's own changes a tag sees (each raises its version), as their log rows name them.
_RUN_CHANGES = (journal.RUN_STATUS, journal.RUN_POSTPONED, journal.RUN_UPGRADED, journal.RUN_DEADLINE_MOVED)


def _by_whom(tx: Tx, run: Run) -> str:
    """Who changed the run last, what, when and why, from its log: ", paused by mod-mia at 20:14 UTC: boss
    bugged", ", postponed to 03:45 UTC by mod-mia at 01:28 UTC", ", upgraded to version 3 by …", ", phase 2's deadline
    moved to 21:40 UTC by …"."""
    last = log.latest(tx, run.id, *_RUN_CHANGES)
    if last is None or last.detail is None:
        return ""
    why = last.detail.get("reason")
    by = f" by {last.actor} at {last.created_at:%H:%M} UTC" + (f": {why}" if why else "")
    to = str(last.detail.get("to"))
    if last.kind == journal.RUN_POSTPONED:
        return f", postponed to {_utc(to)}{by}"
    if last.kind == journal.RUN_UPGRADED:
        return f", upgraded to version {to}{by}"
    if last.kind == journal.RUN_DEADLINE_MOVED:
        return f", phase {last.detail.get('phase')}'s deadline moved to {_utc(to)}{by}"
    return f", {run.status.value}{by}" if to == run.status.value else ""


def _utc(stamp: str) -> str:
    """An ISO time of the log as a 412 says it: "03:45 UTC on 2026-12-07"."""
    return f"{stamp[11:16]} UTC on {stamp[:10]}"


def _step_now(step: Step) -> str:
    """The step's state in words, for a 412: "failed (HTTP 400), attempt 1, after 1 retry"."""
    why = f" ({step.last_error})" if step.last_error and step.status in (StepStatus.FAILED, StepStatus.REFUSED) else ""
    retried = f", after {step.retries} {'retry' if step.retries == 1 else 'retries'}" if step.retries else ""
    return f"{step_state(step)}{why}, attempt {step.attempts}{retried}"
