"""When plans change: a scheduled run postponed or upgraded to its definition's current version, a live phase's
deadline or a parked cue's timeout moved.

Invariant: each moves its row only through its guarded statement (`runs.postpone`, `runs.upgrade`,
`phases.move_deadline`, `steps.move_timeout`), whose WHERE holds the status, the time (or the version) as the
press read it (a compare-and-set) and a new time later than now (an upgrade: the run's own time still ahead); its
log row (`run.postponed`, `run.upgraded`, `run.deadline_moved`, `step.timeout_moved`) is written
in the same transaction, under the run's lock that `protocol.within` took first. A statement that matched
nothing is refused in the words of the rows: a status or a time that is not there a 409, a new time not
later than now a 400. Each wakes its run now, or at its new time (a postponed run), and a sleeping
deployment after its commit (its declaration's `wakes`), so a wake time is never late; an upgrade leaves the
run's wake time, its time, as it was, and wakes nothing.

A skipped occurrence (`calendar.skip`) changes a plan too, but is no command: only the control its log row
names is kept here (`SKIP_OCCURRENCE`), beside the commands' names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar, NewType

from ...db import Tx, must_exist
from ...roles import CONTROLLERS
from .. import journal
from ..document import grace_seconds_of
from ..errors import Conflict, Invalid
from ..lifecycle import OnDeadline, RunStatus
from ..model import Run, Step, clean_note, iso
from ..occurrences import MAX_SCHEDULE_AHEAD
from ..store import definitions, log, phases, runs, steps
from .protocol import Context, ControlCommand, Took
from .rules import extend_cue_refusal, extend_refusal, postpone_refusal, upgrade_refusal
from .run_controls import RunMove
from .step_controls import StepChange

# The control of the `run.status` row of a scheduled run cancelled by its occurrence's skip (`calendar.skip`).
SKIP_OCCURRENCE = "skip_occurrence"
Seconds = NewType("Seconds", int)  # how far a deadline moves: later if positive, earlier if negative
VersionNumber = NewType("VersionNumber", int)  # the version an upgrade means: the one its presser saw current
MOST_SECONDS = 7 * 24 * 3600  # a deadline moves at most a week either way in one press


def _not_moved(command: ControlCommand[Any], run: Run, step: Step | None, to: datetime | None, by: Context,
               what: str, was: datetime | None = None) -> Conflict:
    """Why a time (`was`, when it moves by an amount) was not moved to `to` (None: there was no time to move), in
    the order every plan change says it: the rule's 409 first; then a new time not later than now, the press's
    mistake (400, raised), whatever the row says; else the 409 of the rows."""
    if to is not None and to <= by.now and type(command).rule(run, step, None) is None:
        if was is not None and was < to:  # moved later, and still past: it had passed (while the run was paused)
            short = math.ceil((by.now - was).total_seconds())
            when = ("while the run was paused (it acts once the run resumes)" if run.status is RunStatus.PAUSED
                    else "(it acts at the engine's next tick)")
            raise Invalid(f"{what} would be {iso(to)}, still not later than now ({iso(by.now)}): it was {iso(was)},"
                          f" which passed {when}; to move it past now, move it by more than {short} s")
        raise Invalid(f"{what} would be {iso(to)}, not later than now ({iso(by.now)}): a time can be moved earlier,"
                      " but not into the past")
    return command.lost(run, step)


@dataclass(frozen=True)
class Postpone(RunMove):
    """A scheduled run moved to `to`: the same run, its occurrence key kept, its wake time `to`."""

    name: ClassVar[str] = "postpone"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    rule = postpone_refusal
    to: datetime
    reason: str | None = None

    def apply(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Took[Run] | None:
        if postpone_refusal(run, None, None) is not None:  # started (read locked): said so (409) before its time's 400
            return None
        if self.to - by.now > MAX_SCHEDULE_AHEAD:
            raise Invalid(f"to is more than {MAX_SCHEDULE_AHEAD.days} days ahead")
        if not runs.postpone(tx, run.id, self.to, by.now, seen_version=by.version_seen(run)):
            return None
        # guard: postpone-commits-before-its-log-row
        logged = log.append(tx, journal.run_postponed(run, self.name, self.to, by.actor, clean_note(self.reason)), by.now)
        return self.took(tx, run, logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Run:
        raise _not_moved(self, run, None, self.to, by, "the new time")


@dataclass(frozen=True)
class Upgrade(RunMove):
    """A scheduled run moved to its definition's current version: the same run at the same time, playing what was
    saved since it was planned (with that version's grace window). `to` is the version its presser saw current:
    one saved since is not played unseen (None: whichever is current at the press, for a caller that names none)."""

    name: ClassVar[str] = "upgrade"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    rule = upgrade_refusal
    reason: str | None = None
    to: VersionNumber | None = None

    def apply(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Took[Run] | None:
        current = definitions.current_locked(tx, run.definition_id)
        if upgrade_refusal(run, None, None) is not None or current is None:
            return None
        # guard: an-upgrade-plays-a-version-its-presser-never-saw
        to = current.version if self.to is None else self.to
        if not runs.upgrade(tx, run.id, to, grace_seconds_of(current.document), by.now, seen_version=by.version_seen(run)):
            return None
        # guard: upgrade-commits-before-its-log-row
        logged = log.append(tx, journal.run_upgraded(run, self.name, to, by.actor, clean_note(self.reason)), by.now)
        return self.took(tx, run, logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Run:
        if upgrade_refusal(run, None, None) is not None:
            raise self.lost(run)
        current = must_exist(definitions.current_locked(tx, run.definition_id)).version
        if self.to is not None and self.to > current:
            raise Invalid(f"to: the definition has no version {self.to}; its current version is {current}")
        if run.definition_version >= current:
            raise Conflict(f"this run already plays version {run.definition_version}, the definition's current"
                           " version", run_status=run.status.value)
        if self.to is not None and self.to != current:
            raise Conflict(f"version {current} was saved since you looked (you asked for version {self.to}): look at"
                           f" it, then upgrade to it", run_status=run.status.value)
        if run.scheduled_for <= by.now:
            raise Conflict(f"this run's time has come ({iso(run.scheduled_for)}): the engine starts it as it is, on"
                           f" version {run.definition_version}", run_status=run.status.value)
        raise self.lost(run)


@dataclass(frozen=True)
class PhaseCommand(RunMove):
    """A control of one phase of a run, named by its number in the route (`/runs/{run_id}/phases/{phase}/…`)."""

    phase: int


@dataclass(frozen=True)
class Extend(PhaseCommand):
    """The deadline of the phase the run is at (an `after` phase's end, or its time limit) moved by `seconds`."""

    name: ClassVar[str] = "extend"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    rule = extend_refusal
    seconds: Seconds
    reason: str | None = None

    def apply(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Took[Run] | None:
        row = phases.get(tx, run.id, self.phase)
        if row is None or row.deadline is None:
            return None
        moved = (row.deadline, row.deadline + timedelta(seconds=self.seconds))
        note = clean_note(self.reason)
        if not phases.move_deadline(tx, run.id, self.phase, moved, by.actor, note, by.now,
                                    seen_version=by.version_seen(run)):
            return None
        # guard: extend-commits-before-its-log-row
        logged = log.append(tx, journal.run_deadline_moved(run, self.name, self.phase, moved, self.seconds, by.actor,
                                                           note), by.now)
        return self.took(tx, run, logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Run:
        status = extend_refusal(run, step, None)
        if status is not None:
            raise self.lost(run)
        if run.current_phase != self.phase:
            raise Conflict(f"the run is at phase {run.current_phase}, not phase {self.phase}: only the deadline of"
                           " the phase it is at can be moved", run_status=run.status.value)
        row = phases.get(tx, run.id, self.phase)
        if row is not None and row.deadline is None and row.limit_seconds is not None:  # its `pause` limit acted
            raise Conflict(f"phase {self.phase} ({row.name}) had a time limit of {row.limit_seconds} s, and it already"
                           " acted (it paused the run): there is no deadline left to move. Resume the run, and the"
                           " phase waits on without a limit", run_status=run.status.value)
        if row is None or row.deadline is None:
            raise Conflict(f"phase {self.phase} has no deadline to move: it is neither an `after` phase nor one with"
                           " a time limit", run_status=run.status.value)
        if row.closed_at is not None or row.condition_met:
            raise Conflict(f"phase {self.phase} ({row.name}) is over: its deadline no longer counts",
                           run_status=run.status.value)
        if row.deadline <= by.now and row.on_deadline is OnDeadline.CLOSE:
            raise Conflict(f"phase {self.phase} ({row.name}) ended at its deadline, {row.deadline:%H:%M:%S} UTC (what it"
                           " had in flight was cancelled then), and closes at the engine's next tick: its deadline can no"
                           " longer be moved", run_status=run.status.value)
        raise _not_moved(self, run, None, row.deadline + timedelta(seconds=self.seconds), by, "the new deadline",
                         row.deadline)


@dataclass(frozen=True)
class ExtendCue(StepChange):
    """A parked cue's timeout moved by `seconds`."""

    name: ClassVar[str] = "extend_cue"
    roles: ClassVar[frozenset[str]] = CONTROLLERS
    rule = extend_cue_refusal
    seconds: Seconds
    reason: str | None = None

    def decide(self, tx: Tx, run: Run, step: Step, by: Context) -> Took[Step] | None:
        if step.times_out_at is None:
            return None
        to = step.times_out_at + timedelta(seconds=self.seconds)
        if not steps.move_timeout(tx, step.id, (step.times_out_at, to), by.now, seen=by.step_seen(step)):
            return None
        # guard: extend-cue-commits-before-its-log-row
        logged = log.append(tx, journal.step_timeout_moved(step, self.name, to, self.seconds, by.actor,
                                                           clean_note(self.reason)), by.now)
        return self.took(tx, step, logged)

    def refused(self, tx: Tx, run: Run, step: Step | None, by: Context) -> Step:
        timeout = None if step is None else step.times_out_at
        to = None if timeout is None else timeout + timedelta(seconds=self.seconds)
        raise _not_moved(self, run, step, to, by, "the cue's new timeout", timeout)
