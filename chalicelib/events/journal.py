"""The run log's vocabulary: every kind of row, and the one builder of each.

A row is built here and written by `store.log` in the same transaction as the
change it records. The detail of a status row says who moved it and why in one
way: a person's control names itself (`control`), the engine's own change names
its cause (`cause`).

    run.status     a run changed status: {control | cause, from, to, ...}
    run.phase      a run opened a phase: {phase, name[, ended_by]}; ended_by says what ended the one
                   before: {"steps_done": true}, or {"by", "at"} of whoever met its condition (with
                   "closed_by" when the engine closed it, "deadline_passed" when its deadline had passed too)
    run.advance    a person advanced a phase: {phase, reason, skipped_steps, resumed}
    run.phase_skipped  the walk passed over a phase whose only_if was not met: {phase, name, cause}
    run.signal     a signal's first receipt: {name, by, effect, payload}; the row's phase is the one it names
    run.cleanup    a cleanup wrote revert steps: {phase, reverts}, the number written (again for what a late
                   answer recorded meanwhile)
    run.late_cleanup  the cleanup of a finished run (its status kept): {state, ...}; started by a person's
                   Clean up {control, state: "started", reason, reverts (what it plans), by_hand}; then by the
                   tick {state: "done", reverted[, left]} or {state: "failed", reverted, failed, cause[, left]}
                   (left: the resources whose revert is never sent, {why, resources} per reason)
    run.overlap    a run fell due while an earlier run of its definition was live, and its schedule's overlap
                   decided: {policy, decided (started | skipped | queued | cancelled_previous), earlier: [run
                   ids], cause}
    step.status    a step changed status: {control | cause, action, from, to, ...}
    step.dispatch  one attempt at a step's action: {action, attempt, idempotency_key,
                   outcome, http_status, latency_ms, error[, fenced_out][, resources | resources_refused]
                   [, resources_kept_live][, resources_cannot_revert]}
    step.acknowledged  a person has a parked cue: {control, action, note, held_until}; the row's actor is who has it
    step.released  whoever had a parked cue (or a moderator) let it go: {control, action, had_by, had_since,
                   note}; the row's actor is who let it go
    step.taken_over  a person took a parked cue over: {control, action, from, had_since, note, held_until};
                   the row's actor is who has it now
    step.hold_lapsed  a parked cue's hold came to its end unanswered: nobody has it, and its reminders and
                   escalation begin again naming who had it: {action, had_by, had_since, held_until}
    step.reminder  a parked cue's n-th reminder is posted (written with its claim, before the post; at most
                   once): {action, n, of, channel, idempotency_key, waited_seconds}
    step.escalated a try of a parked cue's escalation is posted (written with its claim, before the post; at
                   least once: a try lost with its tick is followed by the next): {action, channel, attempt,
                   of, idempotency_key, waited_seconds}
    run.escalated  a try of escalating a run that waited for a person (a resume, an advance) too long, as
                   step.escalated: {waiting_for, n, channel, attempt, of, idempotency_key, waited_seconds}
    chat.pressed   a button of a Discord or Slack message took (beside the control's own row, in its transaction):
                   {platform, control, user_id, name, place (guild or workspace), channel_id, message_id,
                   interaction_id}; the row's actor is the chat identity (`discord:<user id>`, `slack:<user id>`)
    chat.edit_failed  an edit of a chat message saying how its step's wait ended failed: {platform,
                   channel_id, message_id, attempt, error, again_at (the next try) or null}
    notice.failed  the post of the row before it of that kind (same step or run) failed: {notice (that
                   row's kind), channel, idempotency_key, attempt | n, error, again_at (the next try) or null}
    run.postponed  a person moved a scheduled run to a new time, its occurrence key kept: {control, from, to,
                   reason}
    run.upgraded   a person moved a scheduled run to its definition's current version, its time kept: {control,
                   from, to (the version numbers), reason}
    run.deadline_moved  a person moved the deadline of the phase the run works: {control, phase, from, to,
                   seconds, reason}
    step.timeout_moved  a person moved a parked cue's timeout: {control, action, from, to, seconds, reason}

A recurring definition's schedule has a log of its own (`event_schedule_log`, `store/schedule_log.py`), with
no run to be logged on:

    schedule.paused   a person paused the schedule: {reason}
    schedule.resumed  a person resumed it: {reason, paused_by, paused_at, catch_up, caught_up} (caught_up: the
                      occurrence the resume planned itself, or null)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .actions.outcome import Outcome
from .lifecycle import LateCleanup, RunStatus, StepStatus, WaitingFor
from .model import Run, Signal, Step, iso

RUN_STATUS = "run.status"
RUN_PHASE = "run.phase"
RUN_ADVANCE = "run.advance"
RUN_PHASE_SKIPPED = "run.phase_skipped"
RUN_SIGNAL = "run.signal"
RUN_CLEANUP = "run.cleanup"
RUN_LATE_CLEANUP = "run.late_cleanup"
RUN_OVERLAP = "run.overlap"
STEP_STATUS = "step.status"
STEP_DISPATCH = "step.dispatch"
STEP_ACKNOWLEDGED = "step.acknowledged"
STEP_RELEASED = "step.released"
STEP_TAKEN_OVER = "step.taken_over"
STEP_HOLD_LAPSED = "step.hold_lapsed"
STEP_REMINDER = "step.reminder"
STEP_ESCALATED = "step.escalated"
RUN_ESCALATED = "run.escalated"
NOTICE_FAILED = "notice.failed"
CHAT_PRESSED = "chat.pressed"
CHAT_EDIT_FAILED = "chat.edit_failed"
RUN_POSTPONED = "run.postponed"
RUN_UPGRADED = "run.upgraded"
RUN_DEADLINE_MOVED = "run.deadline_moved"
STEP_TIMEOUT_MOVED = "step.timeout_moved"
KINDS = (CHAT_PRESSED, CHAT_EDIT_FAILED,
         RUN_STATUS, RUN_PHASE, RUN_ADVANCE, RUN_PHASE_SKIPPED, RUN_SIGNAL, RUN_ESCALATED, RUN_CLEANUP, RUN_OVERLAP, STEP_STATUS,
         STEP_DISPATCH, STEP_ACKNOWLEDGED, STEP_REMINDER, STEP_ESCALATED, NOTICE_FAILED, STEP_RELEASED, STEP_TAKEN_OVER,
         STEP_HOLD_LAPSED, RUN_LATE_CLEANUP, RUN_POSTPONED, RUN_UPGRADED, RUN_DEADLINE_MOVED, STEP_TIMEOUT_MOVED)
SCHEDULE_PAUSED = "schedule.paused"
SCHEDULE_RESUMED = "schedule.resumed"
SCHEDULE_KINDS = (SCHEDULE_PAUSED, SCHEDULE_RESUMED)

RUNNER = "runner"  # the actor of every change the engine makes on its own
REHEARSAL = "rehearsal"  # the actor of a dry run's stand-in for a person or the game (its confirm, its signal)


@dataclass(frozen=True)
class Entry:
    """A log row about to be written."""

    run_id: int
    kind: str
    step_id: int | None = None
    phase: int | None = None
    detail: dict[str, Any] | None = None
    actor: str | None = None


def _status_detail(control: str | None, cause: str | None, change: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    if control is not None:
        return {"control": control, **change, **extra}
    return {**change, "cause": cause, **extra}


def run_status(
    run_id: int,
    phase: int | None,
    source: RunStatus | None,
    to: RunStatus,
    *,
    actor: str = RUNNER,
    control: str | None = None,
    cause: str | None = None,
    **detail: Any,
) -> Entry:
    """`source` None: the run was just created."""
    change = {"from": None if source is None else source.value, "to": to.value}
    return Entry(run_id=run_id, kind=RUN_STATUS, phase=phase, detail=_status_detail(control, cause, change, detail), actor=actor)


def run_phase(run_id: int, number: int, name: str | None, ended_by: dict[str, Any] | None = None) -> Entry:
    """`ended_by`: what ended the phase before (None for the first phase)."""
    detail: dict[str, Any] = {"phase": number, "name": name}
    if ended_by is not None:
        detail["ended_by"] = ended_by
    return Entry(run_id=run_id, kind=RUN_PHASE, phase=number, detail=detail, actor=RUNNER)


def run_phase_skipped(run_id: int, number: int, name: str, cause: str) -> Entry:
    """The walk passed over phase `number`: its only_if was not met (`cause` says how), so it never opened."""
    detail = {"phase": number, "name": name, "cause": cause}
    return Entry(run_id=run_id, kind=RUN_PHASE_SKIPPED, phase=number, detail=detail, actor=RUNNER)


def run_advance(run: Run, control: str, phase: int, actor: str, *, reason: str | None, skipped_steps: int,
                resumed: bool) -> Entry:
    """A person met the condition of the phase the run is at (`control`: the Advance phase control)."""
    detail = {"control": control, "phase": phase, "reason": reason, "skipped_steps": skipped_steps, "resumed": resumed}
    return Entry(run_id=run.id, kind=RUN_ADVANCE, phase=phase, detail=detail, actor=actor)


def run_signal(signal: Signal, phase: int | None) -> Entry:
    """A signal's first receipt and what it did; `phase` is the phase it names (None: the run has no phase rows yet)."""
    detail = {"name": signal.name, "by": signal.received_by, "effect": signal.effect.value, "payload": signal.payload}
    return Entry(run_id=signal.run_id, kind=RUN_SIGNAL, phase=phase, detail=detail, actor=signal.received_by)


def run_cleanup(run_id: int, phase: int, reverts: int) -> Entry:
    """The tick wrote `reverts` revert steps into the run's cleanup phase."""
    return Entry(run_id=run_id, kind=RUN_CLEANUP, phase=phase, detail={"phase": phase, "reverts": reverts}, actor=RUNNER)


def run_late_cleanup(run_id: int, phase: int | None, state: LateCleanup, *, actor: str = RUNNER, **detail: Any) -> Entry:
    """The cleanup of a finished run began (a person's Clean up, `actor`) or ended (the tick): its `state`."""
    return Entry(run_id=run_id, kind=RUN_LATE_CLEANUP, phase=phase, detail={"state": state.value, **detail}, actor=actor)


def run_overlap(run_id: int, policy: str, decision: str, earlier: list[int], cause: str) -> Entry:
    """What the schedule's `overlap` (`policy`) decided for a run due while the `earlier` runs were live."""
    detail = {"policy": policy, "decided": decision, "earlier": earlier, "cause": cause}
    return Entry(run_id=run_id, kind=RUN_OVERLAP, detail=detail, actor=RUNNER)


def step_status(
    step: Step,
    source: StepStatus,
    to: StepStatus,
    *,
    actor: str = RUNNER,
    control: str | None = None,
    cause: str | None = None,
    **detail: Any,
) -> Entry:
    change = {"action": step.action_id, "from": source.value, "to": to.value}
    return Entry(
        run_id=step.run_id, step_id=step.id, kind=STEP_STATUS, phase=step.phase,
        detail=_status_detail(control, cause, change, detail), actor=actor,
    )


def run_control(run: Run, control: str, to: RunStatus, actor: str, **detail: Any) -> Entry:
    """A person's control moved the run on from where it stood."""
    return run_status(run.id, run.current_phase, run.status, to, actor=actor, control=control, **detail)


def step_control(step: Step, control: str, to: StepStatus, actor: str, **detail: Any) -> Entry:
    """A person's control moved the step on from where it stood."""
    return step_status(step, step.status, to, actor=actor, control=control, **detail)


def step_acknowledged(step: Step, control: str, actor: str, note: str | None, held_until: datetime | None = None) -> Entry:
    """A person has the parked cue `step` (`control`: the acknowledge control) until `held_until` (None: without
    a bound): its status does not change."""
    detail = {"control": control, "action": step.action_id, "note": note}
    if held_until is not None:
        detail["held_until"] = iso(held_until)
    return Entry(run_id=step.run_id, step_id=step.id, kind=STEP_ACKNOWLEDGED, phase=step.phase, detail=detail, actor=actor)


def step_released(step: Step, control: str, actor: str, note: str | None) -> Entry:
    """`actor` let the parked cue `step` go, as it was held (by them, or by someone a moderator released it for)."""
    detail = {"control": control, "action": step.action_id, "had_by": step.acknowledged_by,
              "had_since": iso(step.acknowledged_at), "note": note}
    return Entry(run_id=step.run_id, step_id=step.id, kind=STEP_RELEASED, phase=step.phase, detail=detail, actor=actor)


def step_taken_over(step: Step, control: str, actor: str, note: str | None, held_until: datetime | None) -> Entry:
    """`actor` took the parked cue `step` over, as it was held, with their note; theirs until `held_until`."""
    detail = {"control": control, "action": step.action_id, "from": step.acknowledged_by,
              "had_since": iso(step.acknowledged_at), "note": note, "held_until": iso(held_until)}
    return Entry(run_id=step.run_id, step_id=step.id, kind=STEP_TAKEN_OVER, phase=step.phase, detail=detail, actor=actor)


def step_hold_lapsed(step: Step) -> Entry:
    """The hold of the parked cue `step`, as the tick read it, came to its end with nobody's answer."""
    detail = {"action": step.action_id, "had_by": step.acknowledged_by, "had_since": iso(step.acknowledged_at),
              "held_until": iso(step.held_until)}
    return Entry(run_id=step.run_id, step_id=step.id, kind=STEP_HOLD_LAPSED, phase=step.phase, detail=detail,
                 actor=RUNNER)


def step_dispatch(step: Step, attempt: int, outcome: Outcome, *, fenced_out: bool, **ledger: Any) -> Entry:
    """One attempt's answer; `ledger` says what it recorded of the resources it listed (`resources`, the
    count; `resources_refused`, why none was; `resources_kept_live`, for a revert's own; `resources_cannot_revert`,
    how many have a revert that is never sent, and why)."""
    detail = {
        "action": step.action_id,
        "attempt": attempt,
        "idempotency_key": step.idempotency_key,
        "outcome": outcome.verdict.value,
        "http_status": outcome.http_status,
        "latency_ms": outcome.latency_ms,
        "error": outcome.error,
    }
    if fenced_out:
        detail["fenced_out"] = True  # the answer came after our lease was taken over: recorded, not applied
    if outcome.in_doubt:
        detail["in_doubt"] = True  # no known outcome: the game may or may not have applied it
    if outcome.probe is not None:
        detail["probe"] = outcome.probe  # what the game's status endpoint said before this attempt
    detail.update(ledger)
    return Entry(run_id=step.run_id, step_id=step.id, kind=STEP_DISPATCH, phase=step.phase, detail=detail, actor=RUNNER)


def step_reminder(step: Step, n: int, of: int, channel: str, key: str, waited_seconds: int) -> Entry:
    """The n-th of a parked cue's reminders is posted (its claim's row: it is never sent again)."""
    detail = {"action": step.action_id, "n": n, "of": of, "channel": channel, "idempotency_key": key,
              "waited_seconds": waited_seconds}
    return Entry(run_id=step.run_id, step_id=step.id, kind=STEP_REMINDER, phase=step.phase, detail=detail,
                 actor=RUNNER)


def step_escalated(step: Step, channel: str, attempt: int, of: int, key: str, waited_seconds: int) -> Entry:
    """Try `attempt` of `of` of a parked cue's escalation is posted (its claim's row)."""
    detail = {"action": step.action_id, "channel": channel, "attempt": attempt, "of": of, "idempotency_key": key,
              "waited_seconds": waited_seconds}
    return Entry(run_id=step.run_id, step_id=step.id, kind=STEP_ESCALATED, phase=step.phase, detail=detail,
                 actor=RUNNER)


def run_escalated(run_id: int, phase: int | None, waiting_for: WaitingFor, n: int, channel: str, attempt: int, of: int,
                  key: str, waited_seconds: int) -> Entry:
    """Try `attempt` of `of` of a run's n-th escalation for a wait is posted (its claim's row)."""
    detail = {"waiting_for": WaitingFor(waiting_for).value, "n": n, "channel": channel, "attempt": attempt, "of": of,
              "idempotency_key": key, "waited_seconds": waited_seconds}
    return Entry(run_id=run_id, kind=RUN_ESCALATED, phase=phase, detail=detail, actor=RUNNER)


def notice_failed(posted: Entry, error: str, again_at: datetime | None) -> Entry:
    """The post `posted` recorded (a reminder or an escalation try) failed; `again_at` is the next try, if any."""
    was = posted.detail or {}
    count = {"n": was["n"]} if posted.kind == STEP_REMINDER else {"attempt": was["attempt"]}
    detail = {"notice": posted.kind, "channel": was["channel"], "idempotency_key": was["idempotency_key"], **count,
              "error": error,
              "again_at": iso(again_at)}
    return Entry(run_id=posted.run_id, step_id=posted.step_id, kind=NOTICE_FAILED, phase=posted.phase,
                 detail=detail, actor=RUNNER)





def chat_pressed(step: Step, actor: str, control: str, **where: Any) -> Entry:
    """A chat button of `step` took: who pressed it (their name on the platform) and from where."""
    return Entry(run_id=step.run_id, step_id=step.id, kind=CHAT_PRESSED, phase=step.phase,
                 detail={"control": control, **where}, actor=actor)


def chat_edit_failed(run_id: int, step_id: int, where: dict[str, Any], attempt: int, error: str,
                     again_at: datetime | None) -> Entry:
    """An edit of a step's chat message failed; `again_at` is the next try, if any."""
    return Entry(run_id=run_id, step_id=step_id, kind=CHAT_EDIT_FAILED,
                 detail={**where, "attempt": attempt, "error": error, "again_at": iso(again_at)}, actor=RUNNER)


def run_postponed(run: Run, control: str, to: datetime, actor: str, reason: str | None) -> Entry:
    """A person moved the scheduled run `run` (as it stood) to `to`."""
    detail = {"control": control, "from": iso(run.scheduled_for), "to": iso(to), "reason": reason}
    return Entry(run_id=run.id, kind=RUN_POSTPONED, detail=detail, actor=actor)


def run_upgraded(run: Run, control: str, to: int, actor: str, reason: str | None) -> Entry:
    """A person moved the scheduled run `run` (as it stood) to version `to` of its definition."""
    detail = {"control": control, "from": run.definition_version, "to": to, "reason": reason}
    return Entry(run_id=run.id, kind=RUN_UPGRADED, detail=detail, actor=actor)


def run_deadline_moved(run: Run, control: str, phase: int, moved: tuple[datetime, datetime], seconds: int, actor: str,
                       reason: str | None) -> Entry:
    """A person moved the deadline of phase `phase` of `run` from `moved[0]` to `moved[1]` (`seconds` later)."""
    detail = {"control": control, "phase": phase, "from": iso(moved[0]), "to": iso(moved[1]), "seconds": seconds,
              "reason": reason}
    return Entry(run_id=run.id, kind=RUN_DEADLINE_MOVED, phase=phase, detail=detail, actor=actor)


def step_timeout_moved(step: Step, control: str, to: datetime, seconds: int, actor: str, reason: str | None) -> Entry:
    """A person moved the timeout of the parked cue `step` (as it stood) to `to` (`seconds` later)."""
    detail = {"control": control, "action": step.action_id, "from": iso(step.times_out_at), "to": iso(to),
              "seconds": seconds, "reason": reason}
    return Entry(run_id=step.run_id, step_id=step.id, kind=STEP_TIMEOUT_MOVED, phase=step.phase, detail=detail,
                 actor=actor)


@dataclass(frozen=True)
class ScheduleEntry:
    """A schedule log row about to be written (`store/schedule_log.py`)."""

    definition_id: int
    kind: str
    actor: str
    detail: dict[str, Any]


def schedule_paused(definition_id: int, actor: str, reason: str | None) -> ScheduleEntry:
    return ScheduleEntry(definition_id, SCHEDULE_PAUSED, actor, {"reason": reason})


def schedule_resumed(definition_id: int, actor: str, reason: str | None, paused: tuple[str | None, datetime | None],
                     catch_up: str, caught_up: datetime | None) -> ScheduleEntry:
    """`paused`: who paused it and when, as the resume found it."""
    detail = {"reason": reason, "paused_by": paused[0], "paused_at": iso(paused[1]), "catch_up": catch_up,
              "caught_up": iso(caught_up)}
    return ScheduleEntry(definition_id, SCHEDULE_RESUMED, actor, detail)
