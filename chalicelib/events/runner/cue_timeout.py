"""A parked cue nobody answered in time, as its `on_timeout` says: a move in a unit of work of its own.

The invariant: a timeout acts only through the step's compare-and-set on its
timeout (`steps.time_out`, `steps.drop_timeout`), so a person who confirmed or
skipped the cue first wins and the timeout changes nothing; the run's pause or
degrade and the log rows share that transaction. A by-hand revert (a cleanup's
parked `core.cue`) times out as a cue does, and its resource follows in the same
transaction: assumed done, reverted; nobody answered (`continue`), the revert
failed and the resource left, named, for the cleanup's end; `pause` pauses the
cleanup with the revert still waiting. The cue's reminders and
escalation are `attention.py`'s: they post, a timeout posts nothing.
"""

from __future__ import annotations

from datetime import datetime

from ...db import Tx, must_exist
from .. import journal
from ..actions import core
from ..lifecycle import CueOnTimeout, RunStatus, StepStatus
from ..model import Run, Step, iso
from ..store import log, resources, runs, steps
from .cursor import Cursor, Done, Head, NeedsRead


def time_out(tx: Tx, now: datetime, run: Run, head: Head, log_rows: list[journal.Entry]) -> Cursor:
    """`continue` cancels the cue and the phase goes on (a by-hand revert fails, and the cleanup goes on),
    `confirm` assumes it done (both degrade the run); `pause` pauses the run with the cue still parked (in
    the ending, which never pauses, it only degrades). A rehearsal's engine confirm (`core.cue_timeout`)
    confirms it and degrades nothing: it stands in for a person. Done(None) when the cue's guard lost: the
    run as it now stands."""
    step, run_id, rehearsal = head.step, run.id, run.rehearsal
    timeout = must_exist(core.cue_timeout(step.params, run.time_scale,
                                          None if rehearsal is None else rehearsal.auto_confirm_seconds))
    on_timeout = timeout.on_timeout
    choosing, answer = ("", {}) if timeout.choice is None else (f", choosing {timeout.choice}", {"choice": timeout.choice})
    # guard: a-dry-runs-engine-confirm-degrades-it
    if timeout.by_rehearsal:
        cause = f"confirmed by the rehearsal after {must_exist(rehearsal).auto_confirm_seconds} s{choosing}"
        if not _timed_out(tx, step, StepStatus.DONE, now, cause, timeout.choice):
            return Done(None)
        log_rows.append(journal.step_status(step, StepStatus.RUNNING, StepStatus.DONE, cause=cause,
                                            actor=journal.REHEARSAL, **answer))
        return head.after_head()
    within, after = _waited(tx, step)
    if on_timeout is CueOnTimeout.PAUSE:
        cause = f"no one confirmed {within}"
        if not steps.drop_timeout(tx, step, now):
            return Done(None)
        why = f"{step.named} {cause}"  # the step's one name, as a person sees it everywhere
        # The ending never pauses: there it only degrades. A cleanup pauses with its by-hand revert waiting.
        # guard: a-by-hand-reverts-pause-timeout-only-degrades
        if head.status is not RunStatus.ENDING and runs.transition(
                tx, run_id, [head.status], RunStatus.PAUSED, now, last_error=why, degrade=True):
            log_rows.append(journal.run_status(run_id, head.phase, head.status, RunStatus.PAUSED, cause=why))
            return Done(RunStatus.PAUSED)
        runs.degrade(tx, run_id, now, why)
        return NeedsRead(head.status, head.phase)
    # guard: a-timed-out-revert-is-abandoned
    gave_up = StepStatus.FAILED if step.resource_id is not None else StepStatus.CANCELLED  # a revert: its resource left
    to = StepStatus.DONE if on_timeout is CueOnTimeout.CONFIRM else gave_up
    cause = f"assumed done {after}{choosing}" if to is StepStatus.DONE else f"no one confirmed {within}"
    if not _timed_out(tx, step, to, now, cause, timeout.choice):
        return Done(None)
    runs.degrade(tx, run_id, now, f"{step.named} {cause}")
    log_rows.append(journal.step_status(step, StepStatus.RUNNING, to, cause=cause, on_timeout=on_timeout.value, **answer))
    return head.after_head()


def _waited(tx: Tx, step: Step) -> tuple[str, str]:
    """How long the cue waited, as its timeout's words say it: ("within 600 s", "after 600 s") for its authored
    timeout, or, when a person moved the timeout it had now, ("by 21:40 UTC …", "at 21:40 UTC …"), "… (its timeout,
    moved by mod-mia)"."""
    moved = log.latest_of_step(tx, step.run_id, step.id, journal.STEP_TIMEOUT_MOVED)
    if moved is None or step.times_out_at is None or (moved.detail or {}).get("to") != iso(step.times_out_at):
        seconds = step.params.get("timeout_seconds")
        return f"within {seconds} s", f"after {seconds} s"
    why = f"{step.times_out_at:%H:%M} UTC (its timeout, moved by {moved.actor})"
    return f"by {why}", f"at {why}"


def _timed_out(tx: Tx, step: Step, to: StepStatus, now: datetime, cause: str, choice: str | None) -> bool:
    """The cue ends as `to` (done: with `choice`, for a cue with choices) on its timeout's compare-and-set; a
    revert's resource follows in the same transaction (done: reverted; failed: revert_failed), never
    `reverting` for ever."""
    if not steps.time_out(tx, step, to, now, cause, choice):
        return False
    # guard: a-timed-out-revert-leaves-its-resource-reverting
    if step.resource_id is not None:
        resources.follow_steps(tx, [step.id], now)
    return True
