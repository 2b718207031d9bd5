"""The refusal rules: why a control may not be pressed now, as pure functions of the rows.

Invariant: a rule reads only the rows it is given and writes nothing; it is never the guard. The guard is the
WHERE clause of the control's statement, sent under the run's lock; a rule says in words what that clause
refuses, for the 409 of a control whose statement matched nothing and for the controls the console offers
(`declared.offered`). Tests hold the rules and the statements to agreement.
"""

from __future__ import annotations

from collections.abc import Callable

from ..lifecycle import (
    CLEANUP_TARGETS,
    CLOSED_WORDS,
    LIVE_PHASE,
    STEP_FAILURES,
    TERMINAL_RUN,
    LateCleanup,
    PhaseKind,
    RunStatus,
    StepStatus,
    Who,
)
from ..lifecycle import TRANSITIONS as _TRANSITIONS
from ..model import Phase, Run, Step, iso

# (the run, the step of a step control or None, `steps.last_started_seq` of the run's phase or None) -> why not.
Refusal = Callable[[Run, Step | None, int | None], str | None]


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

UNDECIDED = "the game may or may not have applied it; confirm, skip or resend it"  # a step parked in doubt
DECIDE_FIRST = f"waits for a decision: {UNDECIDED} first"


def step_state(step: Step) -> str:
    """The step's state in a person's words: "parked in doubt", "running under a live lease", "failed"."""
    if step.parked_in_doubt:
        return "parked in doubt"
    if step.parked:
        return "parked"
    if step.status is StepStatus.RUNNING:
        return "running under a live lease"
    return step.status.value


def needed(step: Step | None, command: str) -> Step:
    """The step of a step command (a rule or a command asked without one is a bug, not a refusal)."""
    if step is None:
        raise ValueError(f"{command} is a step control and needs a step")
    return step


def had_by(step: Step, named: Callable[[str], str] = str) -> str:
    """Who has an acknowledged cue, and since when ("rowan has it since 20:14 UTC"); `named`: the holder's id as
    its reader names people (a chat message's mention of a chat identity, `chat/render.who`)."""
    return f"{named(str(step.acknowledged_by))} has it since {step.acknowledged_at:%H:%M} UTC"


def lapsed(step: Step) -> str:
    """Whose hold of the cue lapsed unanswered, if one did (": rowan acknowledged at 20:14 UTC and has not
    confirmed"), else nothing."""
    return "" if step.lapse_words is None else f": {step.lapse_words}"


# ── run controls ───────────────────────────────────────────────────────────
def pause_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    return None if run.status in PAUSABLE else (
        f"this run is {run.status.value}; only a starting, running or cleaning-up run can be paused")


def resume_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    return None if run.status in RESUMABLE else f"this run is {run.status.value}, not paused"


def cancel_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    return None if run.status in CANCELLABLE else f"this run is already {run.status.value}"


def cleanup_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    """Why a finished run's Clean up may not be pressed, as far as the run's row says (whether it has something
    live to revert, and no step open, `CleanUp.refused` reads from its rows)."""
    if run.status not in CLEANUP_TARGETS:
        finished = ", ".join(s.value for s in CLEANUP_TARGETS)
        return (f"this run is {run.status.value}; only a finished run ({finished}) can be cleaned up"
                + ("" if run.status in TERMINAL_RUN else " (to clean up a run that is not over, cancel it with cleanup)"))
    if run.late_cleanup is LateCleanup.STARTED:
        return f"a cleanup of this run is already in progress (since {iso(run.late_cleanup_at)})"
    return None


def advance_status_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    return None if run.status in ADVANCEABLE else (
        f"this run is {run.status.value}; only a running or paused run can be advanced")


def advance_refusal(run: Run, asked: int, phase: Phase | None, in_flight: Step | None) -> str | None:
    """Why advancing phase `asked` is not legal now (None: it is), from the run, its current phase's row and
    the first step of that phase in flight under a live lease. The SQL guard is `runs.advance_phase`'s WHERE."""
    status = advance_status_refusal(run, None, None)
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


# ── step controls ──────────────────────────────────────────────────────────
def confirm_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    step = needed(step, "confirm")
    return None if step.parked else f"this step is {step_state(step)} and is not waiting on anyone"


def skip_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    step = needed(step, "skip")
    if run.status in TERMINAL_RUN and not (run.late_cleanup is LateCleanup.STARTED and step.resource_id is not None):
        return f"this run is {run.status.value}; its steps can no longer be skipped"
    if step.status is not StepStatus.PENDING and not step.parked:
        return f"this step is {step_state(step)}; only a pending or parked step can be skipped"
    return None


def acknowledge_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    step = needed(step, "acknowledge")
    if not step.parked_cue:
        return f"this step is {step_state(step)}; only a parked cue can be acknowledged"
    if step.acknowledged_by is not None:
        return f"{had_by(step)}; to have it yourself, take it over with a note"
    return None


def release_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    step = needed(step, "release")
    if not step.parked_cue:
        return f"this step is {step_state(step)}; only a parked cue someone has can be released"
    if step.acknowledged_by is None:
        return f"nobody has this cue{lapsed(step)}; there is nothing to release"
    return None


def take_over_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    step = needed(step, "take-over")
    if not step.parked_cue:
        return f"this step is {step_state(step)}; only a parked cue someone has can be taken over"
    if step.acknowledged_by is None:
        return f"nobody has this cue{lapsed(step)}; say you have it (acknowledge) instead"
    return None


def retry_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    step = needed(step, "retry")
    if run.status not in RESUMABLE:
        return f"this run is {run.status.value}; a step can only be retried while its run is paused"
    if step.resource_id is not None:  # a revert of a paused cleanup: any that failed, in any order
        return None if step.status in STEP_FAILURES else f"this revert is {step_state(step)}; only a failed one can be retried"
    if run.cleanup_target is not None:
        return "this run is cleaning up what it left; only its failed reverts can be retried"
    if step.status is not StepStatus.FAILED:
        return f"this step is {step_state(step)}; only a failed step can be retried"
    if step.phase != run.current_phase:
        return f"this step is in phase {step.phase}, which the run has left (it is at phase {run.current_phase})"
    if furthest_seq is not None and furthest_seq > step.seq:
        return (
            "the run is not stopped at this step: a later step of its phase has already started;"
            " only the step a run is stopped at can be retried"
        )
    return None


def resend_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    step = needed(step, "resend")
    if run.status in TERMINAL_RUN:
        return f"this run is {run.status.value}; its steps can no longer be sent"
    if not step.parked_in_doubt:
        return f"this step is {step_state(step)}; only a step parked in doubt can be re-sent"
    return None


def phase_ended(phase: Phase, done_again: str = "retried") -> str:
    """Why a step of an ending phase cannot be retried (or sent again): when its phase ended, and by what."""
    how = "" if phase.closed_by is None else CLOSED_WORDS[phase.closed_by].label.format(signal=phase.signal)
    if phase.closed_at is None and not phase.condition_met:  # its close deadline passed while the run was paused
        return (f"phase {phase.number} ({phase.name}) ended at its time limit, {iso(phase.deadline)}, while the run"
                f" was paused: its steps can no longer be {done_again}; resume the run instead")
    if phase.closed_at is None:  # met while the run was paused: it closes when the run resumes
        by = f"the signal {phase.signal}" if phase.signal else f"{phase.met_by}'s advance"
        return (f"phase {phase.number} ({phase.name}) ends when the run resumes ({by} at {iso(phase.met_at)}):"
                f" its steps can no longer be {done_again}; resume the run instead")
    return (f"phase {phase.number} ({phase.name}) ended at {iso(phase.closed_at)} {how}: its steps can no longer"
            f" be {done_again}")


# ── when plans change (commands/plans.py) ──────────────────────────────────
def postpone_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    return None if run.status is RunStatus.SCHEDULED else (
        f"this run is {run.status.value}; only a scheduled run can be postponed (it has not started)")


def upgrade_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    """Whether the run may be moved to its definition's current version (whether it is on an earlier one, and its
    time still ahead, its statement decides on the rows)."""
    if run.status is not RunStatus.SCHEDULED:
        return (f"this run is {run.status.value}; only a scheduled run can be upgraded (a started run plays the"
                f" version it started with, version {run.definition_version})")
    if run.rehearsal is not None:
        return f"this is a dry run; it plays the version it was started for, version {run.definition_version}"
    return None


def extend_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    """Whether the run has a live phase whose deadline may be moved (the phase's own row decides the rest)."""
    if run.status not in LIVE_PHASE or run.current_phase is None:
        return f"this run is {run.status.value}; only the deadline of a running, ending or paused run's phase can be moved"
    if run.cleanup_target is not None:
        return "this run is cleaning up what it left; its phases are over"
    return None


def extend_cue_refusal(run: Run, step: Step | None, furthest_seq: int | None) -> str | None:
    step = needed(step, "extend_cue")
    if run.status in TERMINAL_RUN and not (run.late_cleanup is LateCleanup.STARTED and step.resource_id is not None):
        return f"this run is {run.status.value}; its cues no longer time out"
    if not step.parked_cue:
        return f"this step is {step_state(step)}; only a parked cue's timeout can be moved"
    if step.times_out_at is None:
        own = step.params.get("timeout_seconds")
        return ("this cue has no timeout to move" if not own else
                f"this cue's timeout ({own} s) already acted, and it waits on without one: confirm or skip it")
    return None
