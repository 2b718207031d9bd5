"""The nine live controls a person presses: pause, resume, cancel, advance, confirm, skip, retry, resend and
acknowledge, each declared once.

Each control is one `Control` in `CONTROLS`: its name, its target (a run or a
step), the roles that may press it (and those that may press it on a parked cue only:
the game master on their cue), its guard (the rule, as a pure function of
the rows, and the transitions table's person rows for a run control), what it
writes, whether it makes work for the tick, the field its note goes in and its
label. The refusals, the `controls` offered in `GET /runs/{id}`, the route, its
OpenAPI entry and the console's buttons (through `GET /vocabulary`) all derive
from that one declaration.

Each control is one transaction: lock the run (and the step), perform the
guarded statement whose WHERE clause is the real guard, and append the log row
naming the actor and the control. The lock is there so that a lost guard can be
reported as a 409 naming the status the run or step is actually in; the guard
itself never moves out of SQL.

`refusal()` states the same rules as pure functions of the rows, for the console
(`offered()`: what to show now) and for the 409 messages. Tests hold the two to
agreement.

Controls that know what the person saw (issue 27): each press comes with a
`Press`, the tags its If-Match (or body `expected`) named and its
Idempotency-Key. Under the row locks, before any rule: a key pressed on this
run within 24 h answers that press's answer (`AnsweredBefore`, nothing
written); then a tag that is not the target's now (`Run.etag` for a run
control, `Step.etag` for a step control; `*` is any) is a 412 (`Stale`) naming
the state now. A matching tag also goes into the guarded statement's WHERE (the
run's version, the step's tag parts). A press that took keeps its key and its
answer on its log row (`log.remember`). Without a tag or a key a control is what
it always was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from ..db import Database, Tx, must_exist
from ..errors import Forbidden
from ..roles import CONTROLLERS, GM, STAFF
from . import journal
from .errors import AnsweredBefore, Conflict, KeyReused, NotFound, Stale
from .lifecycle import STEP_FAILURES, TERMINAL_RUN, Who
from .lifecycle import TRANSITIONS as _TRANSITIONS
from .model import Phase, PhaseKind, Run, RunStatus, Step, StepStatus, clean_note, iso
from .store import log, phases, resources, runs, steps


def _sources_of_a_persons_move(*into: RunStatus) -> tuple[RunStatus, ...]:
    """The statuses a person's control may move a run from into `into`, as the transitions table has them."""
    found: list[RunStatus] = []
    for row in _TRANSITIONS:
        if row.who is Who.PERSON and row.to in into:
            found += [s for s in row.sources if s not in found]
    return tuple(found)


PAUSABLE = _sources_of_a_persons_move(RunStatus.PAUSED)
RESUMABLE = _sources_of_a_persons_move(RunStatus.RUNNING, RunStatus.STARTING)
CANCELLABLE = _sources_of_a_persons_move(RunStatus.CANCELLED)
CLEANABLE = _sources_of_a_persons_move(RunStatus.CLEANING_UP)  # what a cancel with cleanup may start from
ADVANCEABLE = (RunStatus.RUNNING, RunStatus.PAUSED)  # at a main phase: from paused it also resumes


# ── the rules, as pure functions of the rows ───────────────────────────────
def _step_state(step: Step) -> str:
    if step.parked_in_doubt:
        return "parked in doubt"
    if step.parked:
        return "parked"
    if step.status is StepStatus.RUNNING:
        return "running under a live lease"
    return step.status.value


def _pause_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    return None if run.status in PAUSABLE else (
        f"this run is {run.status.value}; only a starting, running or cleaning-up run can be paused")


def _resume_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    return None if run.status in RESUMABLE else f"this run is {run.status.value}, not paused"


def _cancel_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    return None if run.status in CANCELLABLE else f"this run is already {run.status.value}"


def _advance_status_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    return None if run.status in ADVANCEABLE else (
        f"this run is {run.status.value}; only a running or paused run can be advanced")


def advance_refusal(run: Run, asked: int, phase: Phase | None, in_flight: Step | None) -> str | None:
    """Why advancing phase `asked` is not legal now (None: it is), from the run, its current phase's row and
    the first step of that phase in flight under a live lease. The SQL guard is `runs.advance_phase`'s WHERE."""
    status = _advance_status_refusal(run, None, None)
    if status is not None:
        return status
    if run.cleanup_target is not None:
        return "this run is cleaning up what it left; its phases are over"
    if run.current_phase != asked:
        return f"the run is at phase {run.current_phase}, not phase {asked}"
    if phase is None:
        return f"phase {asked} has no row to advance (the run has not opened it)"
    if phase.kind is not PhaseKind.MAIN:
        return f"phase {asked} is the ending, which runs to its end and cannot be advanced"
    # guard: advance-offered-after-it-was-met
    if phase.condition_met:
        return f"phase {asked} ({phase.name}) was already advanced by {phase.met_by} at {iso(phase.met_at)}"
    if in_flight is not None and in_flight.parked_in_doubt:
        return f"{in_flight.named} {DECIDE_FIRST}"
    # guard: advance-offered-while-a-step-is-in-flight
    if in_flight is not None:
        return f"{in_flight.named} is in flight; try again in a few seconds"
    return None


DECIDE_FIRST = ("waits for a decision: the game may or may not have applied it; confirm, skip or resend it"
                " first")


def _confirm_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    step = _needed(step, "confirm")
    return None if step.parked else f"this step is {_step_state(step)} and is not waiting on anyone"


def _skip_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    step = _needed(step, "skip")
    if run.status in TERMINAL_RUN:
        return f"this run is {run.status.value}; its steps can no longer be skipped"
    if step.status is not StepStatus.PENDING and not step.parked:
        return f"this step is {_step_state(step)}; only a pending or parked step can be skipped"
    return None


def _acknowledge_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    step = _needed(step, "acknowledge")
    if not step.parked_cue:
        return f"this step is {_step_state(step)}; only a parked cue can be acknowledged"
    if step.acknowledged_by is not None:
        return had_by(step)
    return None


def had_by(step: Step) -> str:
    """Who has an acknowledged cue, and since when ("rowan has it since 20:14 UTC")."""
    return f"{step.acknowledged_by} has it since {step.acknowledged_at:%H:%M} UTC"


def _retry_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    step = _needed(step, "retry")
    if run.status not in RESUMABLE:
        return f"this run is {run.status.value}; a step can only be retried while its run is paused"
    if step.resource_id is not None:  # a revert of a paused cleanup: any that failed, in any order
        return None if step.status in STEP_FAILURES else f"this revert is {_step_state(step)}; only a failed one can be retried"
    if run.cleanup_target is not None:
        return "this run is cleaning up what it left; only its failed reverts can be retried"
    if step.status is not StepStatus.FAILED:
        return f"this step is {_step_state(step)}; only a failed step can be retried"
    if step.phase != run.current_phase:
        return f"this step is in phase {step.phase}, which the run has left (it is at phase {run.current_phase})"
    if furthest_seq is not None and furthest_seq > step.seq:
        return (
            "the run is not stopped at this step: a later step of its phase has already started;"
            " only the step a run is stopped at can be retried"
        )
    return None


def _resend_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    step = _needed(step, "resend")
    if run.status in TERMINAL_RUN:
        return f"this run is {run.status.value}; its steps can no longer be sent"
    if not step.parked_in_doubt:
        return f"this step is {_step_state(step)}; only a step parked in doubt can be re-sent"
    return None


def _needed(step: Step | None, control: str) -> Step:
    if step is None:
        raise ValueError(f"{control} is a step control and needs a step")
    return step


# ── the declarations ───────────────────────────────────────────────────────
class Target(str, Enum):
    RUN = "run"
    STEP = "step"


Refusal = Callable[[Run, Step | None, int | None], str | None]


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
# (database, run id, step id or None, actor, now, the note, the phase field or None, the roles of a caller who
# may press it on a parked cue only, None for one who may press it anywhere, the press[, its option as a
# keyword]) -> the answer's body. Untyped beyond that: only a control with an `option_field` takes the keyword.
Perform = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class Control:
    """One live control, declared once: everything that names it derives from this."""

    name: str
    target: Target
    roles: frozenset[str]
    refuse: Refusal  # the guard as a pure function of the rows (the SQL guard is its statement's WHERE clause)
    perform: Perform  # the control itself: one transaction, the guarded statement and its log row
    writes: str  # what it changes, for the API's description
    wakes: bool  # whether it makes work for the tick (a sleeping deployment is woken after its commit)
    note_field: str | None  # the body field its note goes in (None: it takes none)
    label: str  # the console's button
    question: str | None  # what the console asks before pressing it (None: it asks nothing)
    done: str  # what the console says once it took
    tone: str | None = None  # "danger" or "primary": how the console draws the button
    answer: str = ""  # what the answer carries besides ok: "run", "step", or "step and run"
    phase_field: str | None = None  # the body field naming the phase it acts on (the console sends the run's)
    cue_roles: frozenset[str] = frozenset()  # the roles that may press it on a parked cue only (a gm, on their cue)
    # Whether the console sends the tag it showed (If-Match) with it: not with pause and cancel, which
    # stop a run whatever it did meanwhile (the API takes a tag with every control).
    sends_tag: bool = True
    option_field: str | None = None  # a boolean body field passed to `perform` by its name (cancel's cleanup)

    @property
    def gate(self) -> frozenset[str]:
        """Every role the route lets through: a cue role's press is judged on the step (403 unless a parked cue)."""
        return self.roles | self.cue_roles

    def cue_only(self, held: frozenset[str]) -> bool:
        """Whether a caller holding `held` may press it on a parked cue only."""
        return not held & self.roles

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
            "option_field": self.option_field,
        }


# ── the controls ──────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Retried:
    step: Step
    run: Run
    resumed: bool


def _locked_run(tx: Tx, run_id: int) -> Run:
    # guard: control-reads-the-run-unlocked
    run = runs.get(tx, run_id, for_update=True)
    if run is None:
        raise NotFound(f"no run {run_id}")
    return run


def _locked_step(tx: Tx, run: Run, step_id: int) -> Step:
    # guard: control-reads-the-step-unlocked
    step = steps.get_on_run(tx, run.id, step_id, for_update=True)
    if step is None:
        raise NotFound(f"no step {step_id} on run {run.id}")
    return step


def _run_now(run: Run) -> str:
    """The run's control state in words, for a 412: "paused (boss bugged again) at phase 1"."""
    why = f" ({run.last_error})" if run.last_error and run.status is not RunStatus.RUNNING else ""
    at = f" at phase {run.current_phase}" if run.current_phase is not None and not run.status.terminal else ""
    return f"{run.status.value}{why}{at}"


def _by_whom(tx: Tx, run: Run) -> str:
    """Who moved the run last, when and why, from its log: ", paused by mod-mia at 20:14 UTC: boss bugged"."""
    last = log.latest(tx, run.id, journal.RUN_STATUS)
    if last is None or last.detail is None or last.detail.get("to") != run.status.value:
        return ""
    why = last.detail.get("reason")
    return f", {run.status.value} by {last.actor} at {last.created_at:%H:%M} UTC" + (f": {why}" if why else "")


def _step_now(step: Step) -> str:
    """The step's state in words, for a 412: "failed (HTTP 400), attempt 1, after 1 retry"."""
    why = f" ({step.last_error})" if step.last_error and step.status in (StepStatus.FAILED, StepStatus.REFUSED) else ""
    retried = f", after {step.retries} {'retry' if step.retries == 1 else 'retries'}" if step.retries else ""
    return f"{_step_state(step)}{why}, attempt {step.attempts}{retried}"


def _pressed(tx: Tx, press: Press, control: str, run: Run, step: Step | None, now: datetime) -> None:
    """What every control does first, under its row locks, before any rule: a repeat of a press that took
    answers its first answer (AnsweredBefore; a key used for another control, or over 24 h ago, is
    KeyReused), and a tag that is not the target's now is Stale, naming the state now. Nothing is written."""
    if press.key is not None:
        before = log.remembered(tx, run.id, press.key)
        # guard: a-repeat-is-pressed-again
        if before is not None:
            if (before.control, before.step_id) != (control, None if step is None else step.id):
                what = before.control if before.step_id is None else f"{before.control} of another step"
                raise KeyReused(f"this Idempotency-Key was used for {what} on run {run.id} at {iso(before.at)};"
                                " a new press needs a new key")
            # guard: a-key-is-kept-for-ever
            if now - before.at > log.KEY_KEPT_FOR:
                raise KeyReused(f"this Idempotency-Key was used on run {run.id} at {iso(before.at)}, more than 24 h"
                                " ago; a new press needs a new key")
            raise AnsweredBefore(before.body)
    # guard: a-run-control-checks-no-tag-under-its-lock
    if step is None and not press.matches(run.etag):
        raise Stale(f"run {run.id} changed while you were looking: it is now {_run_now(run)}{_by_whom(tx, run)}"
                    f" (ETag {run.etag}); {control} was not pressed", etag=run.etag, run_status=run.status.value)
    # guard: a-step-control-checks-no-tag-under-its-lock
    if step is not None and not press.matches(step.etag):
        raise Stale(f"{step.named} changed while you were looking: it is now {_step_now(step)} (ETag {step.etag});"
                    f" {control} was not pressed", etag=step.etag, run_status=run.status.value,
                    step_status=step.status.value, step_parked=step.parked)


def _kept(tx: Tx, press: Press, logged: int, run_id: int, control: str, step_id: int | None, body: dict[str, Any]) -> None:
    """A press that took, with a key: the key and its answer on the log row `logged`, in the same transaction."""
    # guard: a-press-that-took-keeps-no-key
    if press.key is not None:
        log.remember(tx, logged, run_id, press.key, control, step_id, body)


def _version_seen(press: Press, run: Run) -> int | None:
    """The run's version for its guarded statement's WHERE, when the press named the run's tag (checked)."""
    return run.version if press.names_a_tag else None


def _step_seen(press: Press, step: Step) -> Step | None:
    """The step as seen, for its guarded statement's WHERE, when the press named the step's tag (checked)."""
    return step if press.names_a_tag else None


def _lost(control: str, run: Run, step: Step | None = None, furthest_seq: int | None = None) -> Conflict:
    # Both rows are locked, so the rules and the statement agree; the fallback
    # still names the status rather than guessing a reason. The statuses travel
    # beside the message, for a client that acts on them.
    actual = f"the step is {_step_state(step)}" if step is not None else f"the run is {run.status.value}"
    return Conflict(
        refusal(control, run, step, furthest_seq) or f"{control} did not take: {actual}",
        run_status=run.status.value,
        step_status=None if step is None else step.status.value,
        step_parked=None if step is None else step.parked,
    )


def _phase_ended(phase: Phase, done_again: str = "retried") -> str:
    """Why a step of an ending phase cannot be retried: when its phase ended, and by what."""
    how = {"signal": f"by the signal {phase.signal}", "after": "at the end of its time",
           "timeout": "at its time limit", "advance": "by a person's advance"}.get(phase.closed_by or "", "")
    if phase.closed_at is None:  # met while the run was paused: it closes when the run resumes
        by = f"the signal {phase.signal}" if phase.signal else f"{phase.met_by}'s advance"
        return (f"phase {phase.number} ({phase.name}) ends when the run resumes ({by} at {iso(phase.met_at)}):"
                f" its steps can no longer be {done_again}; resume the run instead")
    return (f"phase {phase.number} ({phase.name}) ended at {iso(phase.closed_at)} {how}: its steps can no longer"
            f" be {done_again}")


def _resume_target(run: Run) -> RunStatus:
    # Derived, never remembered: current_phase is written only on the way into running (or into
    # ending, which never pauses): a paused run that has one was running.
    return RunStatus.RUNNING if run.current_phase is not None else RunStatus.STARTING


def pause(db: Database, run_id: int, *, actor: str, now: datetime, reason: str | None = None,
          press: Press = AS_EVER) -> Run:
    """starting/running -> paused; the run claim is cleared so a working tick stops at its next re-read."""
    note = clean_note(reason)

    def work(tx: Tx) -> Run:
        run = _locked_run(tx, run_id)
        _pressed(tx, press, "pause", run, None, now)
        if not runs.transition(tx, run.id, PAUSABLE, RunStatus.PAUSED, now, seen_version=_version_seen(press, run)):
            raise _lost("pause", run)
        # guard: pause-commits-before-its-log-row
        logged = log.append(tx, journal.run_control(run, "pause", RunStatus.PAUSED, actor, reason=note), now)
        paused = must_exist(runs.get(tx, run.id))
        _kept(tx, press, logged, run.id, "pause", None, _run_answer(paused))
        return paused

    return db.transaction(work)


def _resume_locked(tx: Tx, run: Run, control: str, actor: str, now: datetime, seen_version: int | None = None) -> int | None:
    """The resume's guarded move and its log row; the row's id, None if it did not take."""
    if run.cleanup_target is not None:
        return _resume_cleanup(tx, run, control, actor, now, seen_version)
    to = _resume_target(run)
    if not runs.transition(tx, run.id, RESUMABLE, to, now, last_error=None, seen_version=seen_version):
        return None
    # guard: resume-commits-before-its-log-row
    return log.append(tx, journal.run_control(run, control, to, actor), now)


def _resume_cleanup(tx: Tx, run: Run, control: str, actor: str, now: datetime, seen_version: int | None) -> int | None:
    """A paused cleanup resumed: with a revert still open (or something left to revert) it goes on; with none,
    the person accepts the failed reverts (their resources stay revert_failed) and the run reaches its target."""
    target = must_exist(run.cleanup_target)
    if runs.end_cleanup(tx, run.id, RunStatus.PAUSED, target, now, accept_failures=True, seen_version=seen_version):
        accepted = resources.reverts_of(tx, run.id).failed
        return log.append(tx, journal.run_control(run, control, target, actor, accepted_revert_failures=accepted), now)
    if not runs.transition(tx, run.id, [RunStatus.PAUSED], RunStatus.CLEANING_UP, now, last_error=None,
                           seen_version=seen_version):
        return None
    return log.append(tx, journal.run_control(run, control, RunStatus.CLEANING_UP, actor), now)


def resume(db: Database, run_id: int, *, actor: str, now: datetime, press: Press = AS_EVER) -> Run:
    """paused -> running (or starting if it never got a phase); last_error cleared, health kept."""

    def work(tx: Tx) -> Run:
        run = _locked_run(tx, run_id)
        _pressed(tx, press, "resume", run, None, now)
        logged = _resume_locked(tx, run, "resume", actor, now, _version_seen(press, run))
        if logged is None:
            raise _lost("resume", run)
        resumed = must_exist(runs.get(tx, run.id))
        _kept(tx, press, logged, run.id, "resume", None, _run_answer(resumed))
        return resumed

    return db.transaction(work)


def cancel(db: Database, run_id: int, *, actor: str, now: datetime, reason: str | None = None,
           press: Press = AS_EVER, cleanup: bool = False) -> Run:
    """Any non-terminal -> cancelled; pending and parked steps cancelled, a leased step left alone.

    With `cleanup`, a run that has something live to revert or a step in flight goes to cleaning_up
    instead (target cancelled; the tick writes and works the reverts); one that was scheduled, or has
    neither, is cancelled as without it. A cancel without cleanup of a run cleaning up abandons the cleanup:
    its reverts not yet done are cancelled, and their resources are live again.
    """
    note = clean_note(reason)

    def work(tx: Tx) -> Run:
        run = _locked_run(tx, run_id)
        _pressed(tx, press, "cancel", run, None, now)
        undecided = steps.parked_in_doubt_of(tx, run.id)
        if cleanup and runs.begin_cleanup(tx, run.id, CLEANABLE, RunStatus.CANCELLED, now,
                                          last_error=note or "cancelled by staff, cleaning up",
                                          seen_version=_version_seen(press, run)):
            closed = steps.cancel_open(tx, run.id, now)
            logged = log.append(tx, journal.run_control(run, "cancel", RunStatus.CLEANING_UP, actor, reason=note,
                                                        cancelled_steps=closed, cleanup=True), now)
            cleaning = must_exist(runs.get(tx, run.id))
            _kept(tx, press, logged, run.id, "cancel", None, _run_answer(cleaning))
            return cleaning
        if cleanup and run.cleanup_target is not None and run.status not in TERMINAL_RUN:
            raise Conflict("this run is already cleaning up; cancel without cleanup to abandon the cleanup",
                           run_status=run.status.value)
        # guard: a-cancel-with-cleanup-forgets-the-undecided-step
        if cleanup and undecided is not None and run.status not in TERMINAL_RUN:
            # A cleanup reverts what the run created: whether this step created anything, a person says first.
            raise Conflict(f"decide {undecided.named} first: the game may or may not have applied it (confirm,"
                           " skip or resend it), or cancel without cleanup", run_status=run.status.value)
        if not runs.transition(
            tx, run.id, CANCELLABLE, RunStatus.CANCELLED, now, last_error=note or "cancelled by staff",
            seen_version=_version_seen(press, run),
        ):
            raise _lost("cancel", run)
        closed = steps.cancel_open(tx, run.id, now)
        abandoned = resources.follow_run(tx, run.id, now) if run.cleanup_target is not None else 0
        # guard: cancel-commits-before-its-log-row
        logged = log.append(tx, journal.run_control(run, "cancel", RunStatus.CANCELLED, actor, reason=note, cancelled_steps=closed,
                                                    **({"cleanup": cleanup} if cleanup else {}),
                                                    **({"abandoned_reverts": abandoned} if abandoned else {})), now)
        if undecided is not None:  # closed undecided: whether the game applied it, nobody knows
            # guard: a-cancel-closes-an-undecided-step-without-saying-so
            log.append(tx, journal.step_control(undecided, "cancel", StepStatus.CANCELLED, actor, in_doubt=True), now)
        cancelled = must_exist(runs.get(tx, run.id))
        _kept(tx, press, logged, run.id, "cancel", None, _run_answer(cancelled))
        return cancelled

    return db.transaction(work)


@dataclass(frozen=True)
class Advanced:
    run: Run
    skipped_steps: int
    resumed: bool


def advance(db: Database, run_id: int, phase: int, *, actor: str, now: datetime, reason: str | None = None,
            press: Press = AS_EVER) -> Advanced:
    """A person ends the phase the run is at: its condition met, its pending and parked steps skipped.

    One transaction, run row locked first: the guarded UPDATE (`runs.advance_phase`:
    at that phase, not yet met, nothing in flight under a live lease; from paused it
    resumes), then the skips with the person's reason, then the log rows. The run
    wakes now, and the tick leaves the drained phase and opens the next.
    """
    note = clean_note(reason)

    def work(tx: Tx) -> Advanced:
        run = _locked_run(tx, run_id)
        _pressed(tx, press, "advance", run, None, now)
        resuming = run.status is RunStatus.PAUSED
        if not runs.advance_phase(tx, run.id, phase, actor, now, resuming=resuming, seen_version=_version_seen(press, run)):
            current = None if run.current_phase is None else phases.get(tx, run.id, run.current_phase)
            flying = None if run.current_phase is None else steps.holding_phase(tx, run.id, run.current_phase, now)
            raise Conflict(advance_refusal(run, phase, current, flying) or f"advance did not take: the run is {run.status.value}",
                           run_status=run.status.value)
        skipped = steps.skip_phase_for_advance(tx, run.id, phase, now, note)
        rows = [journal.run_advance(run, phase, actor, reason=note, skipped_steps=len(skipped), resumed=resuming)]
        if resuming:
            rows.append(journal.run_control(run, "advance", RunStatus.RUNNING, actor))
        rows += [journal.step_control(step, "advance", StepStatus.SKIPPED, actor, reason=note, attempts=step.attempts)
                 for step in skipped]
        log.append_many(tx, rows, now)
        logged = tx.last_insert_id  # a multi-row INSERT's: its first row, the advance's own
        advanced = Advanced(must_exist(runs.get(tx, run.id)), len(skipped), resuming)
        _kept(tx, press, logged, run.id, "advance", None, _advanced_answer(advanced))
        return advanced

    return db.transaction(work)


def confirm(db: Database, run_id: int, step_id: int, *, actor: str, now: datetime, note: str | None = None,
            cue_only: frozenset[str] | None = None, press: Press = AS_EVER) -> Step:
    """A parked step -> done, with the person's note: they did what it asked."""
    text = clean_note(note)
    return _decide(db, run_id, step_id, "confirm", StepStatus.DONE,
                   lambda tx, step: steps.confirm_parked(tx, step.id, now, text, seen=_step_seen(press, step)),
                   actor=actor, now=now, cue_only=cue_only, press=press, note=text)


def skip(db: Database, run_id: int, step_id: int, *, actor: str, now: datetime, reason: str | None = None,
         cue_only: frozenset[str] | None = None, press: Press = AS_EVER) -> Step:
    """A pending or parked step of a live run -> skipped: a person decided against it. The statement's WHERE
    holds the step to the state read (locked): a parked one, or a pending one (never for `cue_only`)."""
    note = clean_note(reason)
    return _decide(db, run_id, step_id, "skip", StepStatus.SKIPPED,
                   # guard: a-gms-skip-is-not-held-to-a-parked-step
                   lambda tx, step: steps.skip_by_human(tx, step.id, now, note, parked=step.parked or cue_only is not None,
                                                        seen=_step_seen(press, step)),
                   actor=actor, now=now, cue_only=cue_only, press=press, reason=note)


def _on_a_cue_only(control: str, run: Run, step: Step, held: frozenset[str]) -> None:
    """A caller who may press `control` on a parked cue only (a gm), on a step that is not one: 403 when a
    moderator could press it here (the role would lift the refusal), else the 409 everyone gets. A step
    parked in doubt is not a cue: whether the game applied it is a moderator's decision."""
    # guard: a-gm-acts-on-a-step-that-is-not-a-cue
    if step.parked_cue:
        return
    if refusal(control, run, step) is None:
        declared = CONTROLS[control]
        raise Forbidden(
            f"a game master may {control} a parked cue only; this step is {_step_state(step)}, and to {control} it"
            f" needs one of the roles {sorted(declared.roles)}", roles_needed=declared.roles, roles_held=held)
    raise _lost(control, run, step)


def _decide(
    db: Database, run_id: int, step_id: int, control: str, to: StepStatus,
    guarded_change: Callable[[Tx, Step], bool], *, actor: str, now: datetime, cue_only: frozenset[str] | None = None,
    press: Press = AS_EVER, **detail: str | None,
) -> Step:
    """A person's decision on one step: run and step locked, the guarded change and its log row in one transaction."""

    def work(tx: Tx) -> Step:
        run = _locked_run(tx, run_id)
        step = _locked_step(tx, run, step_id)
        _pressed(tx, press, control, run, step, now)
        if cue_only is not None:
            _on_a_cue_only(control, run, step, cue_only)
        if not guarded_change(tx, step):
            raise _lost(control, run, step)
        if step.resource_id is not None:
            resources.follow_steps(tx, [step.id], now)  # a revert done by hand (confirm), or given up (skip)
        # guard: confirm-and-skip-commit-before-their-log-row
        logged = log.append(tx, journal.step_control(step, control, to, actor, **detail), now)
        decided = must_exist(steps.get(tx, step.id))
        _kept(tx, press, logged, run.id, control, step.id, _step_answer(decided))
        return decided

    return db.transaction(work)


def acknowledge(db: Database, run_id: int, step_id: int, *, actor: str, now: datetime, note: str | None = None,
                press: Press = AS_EVER) -> Step:
    """`actor` has the parked cue: who and since when are kept on the step, and logged (`step.acknowledged`).

    One transaction, run and step locked: the compare-and-set (`steps.acknowledge`: parked, nobody has it
    yet) and its log row. The same person again answers the step and writes nothing; anyone else is 409
    naming who has it and since when.
    """
    text = clean_note(note)

    def work(tx: Tx) -> Step:
        run = _locked_run(tx, run_id)
        step = _locked_step(tx, run, step_id)
        _pressed(tx, press, "acknowledge", run, step, now)
        if not steps.acknowledge(tx, step.id, actor, now, seen=_step_seen(press, step)):
            if step.parked and step.acknowledged_by == actor:
                return step  # theirs already: nothing written (nor any key kept: a repeat finds it theirs again)
            raise _lost("acknowledge", run, step)
        # guard: acknowledge-commits-before-its-log-row
        logged = log.append(tx, journal.step_acknowledged(step, actor, text), now)
        had = must_exist(steps.get(tx, step.id))
        _kept(tx, press, logged, run.id, "acknowledge", step.id, _step_answer(had))
        return had

    return db.transaction(work)


def retry(db: Database, run_id: int, step_id: int, *, actor: str, now: datetime, press: Press = AS_EVER) -> Retried:
    """Re-queue the failed step a paused run is stopped at, and resume the run: one action.

    One transaction, run locked first. The requeue's own WHERE clause demands a
    paused run, and from that moment until COMMIT nobody else can move the run
    (every run transition needs the row lock we hold), so the resume cannot lose
    a race and nobody ever sees the half-state "step re-queued, run still paused".
    `resumed` is still the transition's own
    answer, not an assumption.
    """

    def work(tx: Tx) -> Retried:
        run = _locked_run(tx, run_id)
        step = _locked_step(tx, run, step_id)
        _pressed(tx, press, "retry", run, step, now)
        requeued = (steps.requeue_revert(tx, run.id, step.id, now) if step.resource_id is not None
                    else steps.requeue_where_stopped(tx, run.id, step.id, now, seen=_step_seen(press, step)))
        if not requeued:
            furthest = steps.last_started_seq(tx, run.id, run.current_phase)
            ended = phases.get(tx, run.id, step.phase)
            if refusal("retry", run, step, furthest) is None and ended is not None and ended.condition_met:
                # Every rule of the step and its run allowed it: its phase is ending (the statement's last term).
                raise Conflict(_phase_ended(ended), run_status=run.status.value, step_status=step.status.value,
                               step_parked=step.parked)
            raise _lost("retry", run, step, furthest)
        # guard: retry-commits-before-its-log-row
        logged = log.append(tx, journal.step_control(step, "retry", StepStatus.PENDING, actor, attempts_reset=step.attempts), now)
        resumed = _resume_locked(tx, run, "retry", actor, now) is not None
        retried = Retried(step=must_exist(steps.get(tx, step.id)), run=must_exist(runs.get(tx, run.id)), resumed=resumed)
        _kept(tx, press, logged, run.id, "retry", step.id, _retried_answer(retried))
        return retried

    return db.transaction(work)


def resend(db: Database, run_id: int, step_id: int, *, actor: str, now: datetime, reason: str | None = None,
           press: Press = AS_EVER) -> Step:
    """A step parked in doubt is sent again (`steps.resend`): pending with its attempts kept, its next claim
    sends it without asking the game. A person's word that the game did not apply it (or that a second
    application does no harm)."""
    note = clean_note(reason)

    def work(tx: Tx) -> Step:
        run = _locked_run(tx, run_id)
        step = _locked_step(tx, run, step_id)
        _pressed(tx, press, "resend", run, step, now)
        if not steps.resend(tx, step.id, now, note, seen=_step_seen(press, step)):
            ended = phases.get(tx, run.id, step.phase)
            if refusal("resend", run, step) is None and ended is not None and ended.condition_met:
                raise Conflict(_phase_ended(ended, "sent again"), run_status=run.status.value,
                               step_status=step.status.value, step_parked=step.parked)
            raise _lost("resend", run, step)
        logged = log.append(tx, journal.step_control(step, "resend", StepStatus.PENDING, actor, reason=note,
                                                     attempts=step.attempts), now)
        resent = must_exist(steps.get(tx, step.id))
        _kept(tx, press, logged, run.id, "resend", step.id, _step_answer(resent))
        return resent

    return db.transaction(work)


# ── the declarations, and what derives from them ──────────────────────────
def _run_answer(run: Run) -> dict[str, Any]:
    return {"ok": True, "run": run.public()}


def _step_answer(step: Step) -> dict[str, Any]:
    return {"ok": True, "step": step.public()}


def _advanced_answer(result: Advanced) -> dict[str, Any]:
    return {"ok": True, "run": result.run.public(), "skipped_steps": result.skipped_steps, "resumed": result.resumed}


def _retried_answer(result: Retried) -> dict[str, Any]:
    return {"ok": True, "step": result.step.public(), "resumed": result.resumed, "run": result.run.public()}


CONTROLS: dict[str, Control] = {c.name: c for c in (
    Control("pause", Target.RUN, CONTROLLERS, _pause_refusal,
            lambda db, run, _, actor, now, note, phase, cue, press: _run_answer(
                pause(db, run, actor=actor, now=now, reason=note, press=press)),
            "a starting or running run is paused; its run lease is cleared, so a working tick stops at its next re-read",
            wakes=False, note_field="reason", label="Pause run", question="Pause this run?", done="Paused",
            sends_tag=False),
    Control("resume", Target.RUN, CONTROLLERS, _resume_refusal,
            lambda db, run, _, actor, now, note, phase, cue, press: _run_answer(resume(db, run, actor=actor, now=now, press=press)),
            "a paused run is running again (starting, if it never had a phase); its last error is cleared, its health kept",
            wakes=True, note_field=None, label="Resume run", question=None, done="Resumed"),
    Control("cancel", Target.RUN, CONTROLLERS, _cancel_refusal,
            lambda db, run, _, actor, now, note, phase, cue, press, cleanup=False: _run_answer(
                cancel(db, run, actor=actor, now=now, reason=note, press=press, cleanup=cleanup)),
            "a run that is not over is cancelled; its pending and parked steps are cancelled, a step in flight is left"
            " to its answer. With cleanup, a run that left something to revert (or has a step in flight) is"
            " cleaning_up first: the tick reverts what it left, newest first, then cancels it; a cancel without"
            " cleanup of a run cleaning up abandons the cleanup", wakes=True, note_field="reason", label="Cancel run",
            question="Cancel this run? It cannot be undone.", done="Cancelled", tone="danger", sends_tag=False,
            option_field="cleanup"),
    # guard: a-gm-may-advance
    Control("advance", Target.RUN, CONTROLLERS, _advance_status_refusal,
            lambda db, run, _, actor, now, note, phase, cue, press: _advanced_answer(
                advance(db, run, must_exist(phase), actor=actor, now=now, reason=note, press=press)),
            "the phase the run is at ends: its condition is met, its pending and parked steps are skipped with the"
            " reason, and from paused the run resumes; refused while a step of it is in flight, and in the ending",
            # guard: advance-does-not-nudge-a-sleeping-deployment
            wakes=True, note_field="reason", label="Advance phase", question="Advance past this phase?",
            done="Advanced", answer="advance", phase_field="phase"),
    Control("confirm", Target.STEP, CONTROLLERS, _confirm_refusal,
            lambda db, run, step, actor, now, note, phase, cue, press: _step_answer(confirm(db, run, must_exist(step), actor=actor, now=now,
                                                                         note=note, cue_only=cue, press=press)),
            "a parked step is done, with the person's note", wakes=True, note_field="note", label="Confirm",
            question="Confirm this step is done?", done="Confirmed", tone="primary", answer="step",
            cue_roles=frozenset({GM})),
    Control("skip", Target.STEP, CONTROLLERS, _skip_refusal,
            lambda db, run, step, actor, now, note, phase, cue, press: _step_answer(skip(db, run, must_exist(step), actor=actor, now=now,
                                                                      reason=note, cue_only=cue, press=press)),
            "a pending or parked step of a run that is not over is skipped", wakes=True, note_field="reason",
            label="Skip", question="Skip this step?", done="Skipped", answer="step", cue_roles=frozenset({GM})),
    Control("retry", Target.STEP, CONTROLLERS, _retry_refusal,
            lambda db, run, step, actor, now, note, phase, cue, press: _retried_answer(
                retry(db, run, must_exist(step), actor=actor, now=now, press=press)),
            "the failed step a paused run is stopped at is re-queued, and the run resumed", wakes=True, note_field=None,
            label="Retry", question=None, done="Re-queued", answer="step and run"),
    Control("resend", Target.STEP, CONTROLLERS, _resend_refusal,
            lambda db, run, step, actor, now, note, phase, cue, press: _step_answer(
                resend(db, run, must_exist(step), actor=actor, now=now, reason=note, press=press)),
            "a step parked in doubt (the game may or may not have applied it) is sent again with the same key and"
            " its attempts kept, without asking the game first", wakes=True, note_field="reason", label="Resend",
            question="Send this step to the game again? If the game did apply it, it may be applied twice.",
            done="Re-sent", answer="step"),
    Control("acknowledge", Target.STEP, STAFF, _acknowledge_refusal,
            lambda db, run, step, actor, now, note, phase, cue, press: _step_answer(
                acknowledge(db, run, must_exist(step), actor=actor, now=now, note=note, press=press)),
            "a parked cue is had by the person who presses it: who and since when are kept on the step (the same"
            " person again changes nothing; anyone else is refused, naming who has it)", wakes=False,
            note_field="note", label="I have it", question=None, done="Acknowledged", answer="step", sends_tag=False),
)}
RUN_CONTROLS = tuple(name for name, c in CONTROLS.items() if c.target is Target.RUN)
STEP_CONTROLS = tuple(name for name, c in CONTROLS.items() if c.target is Target.STEP)


def refusal(control: str, run: Run, step: Step | None = None, furthest_seq: int | None = None) -> str | None:
    """Why `control` is not legal now, or None if it is.

    `furthest_seq` is `steps.last_started_seq` of the run's current phase (retry only).
    """
    declared = CONTROLS.get(control)
    if declared is None:
        raise ValueError(f"unknown control {control!r}")
    return declared.refuse(run, step, furthest_seq)


def offered(
    run: Run, run_steps: Iterable[Step], furthest_seq: int | None, phase: Phase | None = None, in_flight: Step | None = None
) -> dict[str, Any]:
    """The controls legal right now, as GET /runs/{id} reports them to the console.

    `phase` is the row of the phase the run is at and `in_flight` that phase's first step in flight under a
    live lease (advance only: it is offered exactly when `advance_refusal` finds nothing)."""
    def legal(control: str) -> bool:
        if control == "advance":
            return run.current_phase is not None and advance_refusal(run, run.current_phase, phase, in_flight) is None
        return refusal(control, run) is None

    return {
        "run": [c for c in RUN_CONTROLS if legal(c)],
        "steps": {
            str(step.id): [c for c in STEP_CONTROLS if refusal(c, run, step, furthest_seq) is None]
            for step in run_steps
        },
    }
