"""Every way an outside actor moves a run, as a typed command on one template.

Invariant: a person's control (pause, resume, cancel, advance, postpone, upgrade; extend a phase's deadline; confirm, skip,
acknowledge, release, take over, retry, resend, extend a cue's timeout) and
a game's signal each move a run only through `protocol.within`: the run locked first (then its step), the
press checked (a repeated Idempotency-Key answers its first answer; a stale If-Match is a 412), the guarded
statement and its log row in one transaction, a lost guard a 409 in the words of the refusal rule.

    rules.py          the refusal rules, pure functions of the rows (the 409's words, the controls offered)
    protocol.py       the template: Press, Context, Command, execute/within
    run_controls.py   Pause, Resume, Cancel, Advance (a person's Advance phase control), CleanUp (a finished run's)
    step_controls.py  Confirm, Skip, Acknowledge, Release, TakeOver, Retry, Resend
    plans.py          Postpone, Upgrade (to the current version), Extend (a phase's deadline), ExtendCue (a parked
                      cue's timeout); SKIP_OCCURRENCE
                      (the control a calendar skip logs: no command)
    signal.py         ReceiveSignal: a signal's first receipt, and what it did to the run
    declared.py       CONTROLS: each control declared once (route, OpenAPI, roles, offer, button)

The functions below press one command each, in a transaction of its own, for callers in this process
(the tests and the torture suite; the API presses the command its declaration builds).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...db import Database
from ..model import Run, Step
from .declared import CONTROLS, PHASE_CONTROLS, RUN_CONTROLS, STEP_CONTROLS, Caller, Control, Shape, Standing, Target, offered, refusal
from .plans import MOST_SECONDS, SKIP_OCCURRENCE, Extend, ExtendCue, Postpone, Seconds, Upgrade
from .protocol import AS_EVER, Context, HeldBy, Press, execute, within
from .rules import CANCELLABLE, CLEANABLE, PAUSABLE, RESUMABLE, advance_refusal
from .run_controls import Advance, Advanced, Cancel, Cancelled, CleanUp, Pause, Resume
from .signal import Receipt, ReceiveSignal, declared
from .step_controls import Acknowledge, Choice, Confirm, Release, Resend, Retried, Retry, Skip, TakeOver

__all__ = [
    "AS_EVER", "CANCELLABLE", "CLEANABLE", "CONTROLS", "MOST_SECONDS", "PAUSABLE", "PHASE_CONTROLS", "RESUMABLE",
    "RUN_CONTROLS", "SKIP_OCCURRENCE", "STEP_CONTROLS",
    "Acknowledge", "Advance", "Advanced", "Caller", "Cancel", "Cancelled", "Choice", "CleanUp", "Confirm", "Context",
    "Control", "Extend", "ExtendCue", "HeldBy", "Pause", "Postpone", "Press",
    "Receipt", "ReceiveSignal", "Release", "Resend", "Resume", "Retried", "Retry", "Seconds", "Shape", "Skip", "Standing", "TakeOver",
    "Target", "Upgrade", "acknowledge", "advance", "advance_refusal", "cancel", "cleanup", "confirm", "declared", "execute", "extend",
    "extend_cue", "offered", "pause", "postpone", "receive_signal", "refusal", "release", "resend", "resume", "retry",
    "skip", "take_over", "upgrade", "within",
]


def pause(db: Database, run_id: int, *, actor: str, now: datetime, reason: str | None = None, press: Press = AS_EVER) -> Run:
    return execute(db, Pause(run_id, reason), Context(actor, now, press))


def resume(db: Database, run_id: int, *, actor: str, now: datetime, press: Press = AS_EVER) -> Run:
    return execute(db, Resume(run_id), Context(actor, now, press))


def cancel(db: Database, run_id: int, *, actor: str, now: datetime, reason: str | None = None, press: Press = AS_EVER,
           cleanup: bool = False) -> Run:
    """The run as the cancel left it (the control's answer also counts the steps it cancelled: `Cancelled`)."""
    return execute(db, Cancel(run_id, reason, cleanup), Context(actor, now, press)).run


def cleanup(db: Database, run_id: int, *, actor: str, now: datetime, reason: str | None = None, press: Press = AS_EVER) -> Run:
    """A finished run's Clean up: the run as it left it (its status kept, its cleanup started)."""
    return execute(db, CleanUp(run_id, reason), Context(actor, now, press))


def advance(db: Database, run_id: int, phase: int, *, actor: str, now: datetime, reason: str | None = None,
            press: Press = AS_EVER) -> Advanced:
    """A person's Advance phase control: the phase `phase` the run is at ends."""
    return execute(db, Advance(run_id, phase, reason), Context(actor, now, press))


def confirm(db: Database, run_id: int, step_id: int, *, actor: str, now: datetime, note: str | None = None,
            cue_only: frozenset[str] | None = None, press: Press = AS_EVER, choice: str | None = None) -> Step:
    return execute(db, Confirm(run_id, step_id, note, None if choice is None else Choice(choice)),
                   Context(actor, now, press, cue_only))


def skip(db: Database, run_id: int, step_id: int, *, actor: str, now: datetime, reason: str | None = None,
         cue_only: frozenset[str] | None = None, press: Press = AS_EVER) -> Step:
    return execute(db, Skip(run_id, step_id, reason), Context(actor, now, press, cue_only))


def acknowledge(db: Database, run_id: int, step_id: int, *, actor: str, now: datetime, note: str | None = None,
                press: Press = AS_EVER) -> Step:
    return execute(db, Acknowledge(run_id, step_id, note), Context(actor, now, press))


def release(db: Database, run_id: int, step_id: int, *, actor: str, now: datetime, note: str | None = None,
            cue_only: frozenset[str] | None = None, press: Press = AS_EVER) -> Step:
    return execute(db, Release(run_id, step_id, note), Context(actor, now, press, cue_only))


def take_over(db: Database, run_id: int, step_id: int, *, actor: str, now: datetime, note: str,
              press: Press = AS_EVER) -> Step:
    return execute(db, TakeOver(run_id, step_id, note), Context(actor, now, press))


def retry(db: Database, run_id: int, step_id: int, *, actor: str, now: datetime, press: Press = AS_EVER) -> Retried:
    return execute(db, Retry(run_id, step_id), Context(actor, now, press))


def resend(db: Database, run_id: int, step_id: int, *, actor: str, now: datetime, reason: str | None = None,
           press: Press = AS_EVER) -> Step:
    return execute(db, Resend(run_id, step_id, reason), Context(actor, now, press))


def receive_signal(db: Database, run_id: int, signal: str, *, actor: str, now: datetime,
                   payload: dict[str, Any] | None = None) -> Receipt:
    """The signal `signal` to the run, sent by `actor`: its first receipt, or a repeat's answer."""
    return execute(db, ReceiveSignal(run_id, signal, payload), Context(actor, now))


def postpone(db: Database, run_id: int, to: datetime, *, actor: str, now: datetime, reason: str | None = None,
             press: Press = AS_EVER) -> Run:
    """A scheduled run moved to `to`."""
    return execute(db, Postpone(run_id, to, reason), Context(actor, now, press))


def upgrade(db: Database, run_id: int, *, actor: str, now: datetime, reason: str | None = None,
            press: Press = AS_EVER) -> Run:
    """A scheduled run moved to its definition's current version."""
    return execute(db, Upgrade(run_id, reason), Context(actor, now, press))


def extend(db: Database, run_id: int, phase: int, seconds: int, *, actor: str, now: datetime, reason: str | None = None,
           press: Press = AS_EVER) -> Run:
    """The deadline of phase `phase`, the one the run is at, moved by `seconds`."""
    return execute(db, Extend(run_id, phase, Seconds(seconds), reason), Context(actor, now, press))


def extend_cue(db: Database, run_id: int, step_id: int, seconds: int, *, actor: str, now: datetime,
               reason: str | None = None, press: Press = AS_EVER) -> Step:
    """A parked cue's timeout moved by `seconds`."""
    return execute(db, ExtendCue(run_id, step_id, Seconds(seconds), reason), Context(actor, now, press))
