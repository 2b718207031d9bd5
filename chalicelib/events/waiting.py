"""What a run waits for, derived from its rows: a run waiting for a person or for the game has no status of its own.

`waiting(run, head, phase, paused)` is `None` or `{"for", "phase"?, "step_id"?, "signal"?, "since", "until"?}`
(docs/contract.md, "Waiting"). A paused run waits for a `resume`, saying who paused it (`paused_by`: a person,
or null for the engine) and why (`reason`), from the log row that paused it; a running or
ending run whose phase's head step is parked (a cue posted, no lease) waits for
that `cue` to be confirmed or skipped, and so does a run cleaning up whose revert
is parked (undone by hand: the waiting names its `resource`); a run whose current phase is drained but
held by its condition waits for an `advance` (or, when the condition names a
signal, for that `signal`), `until` its time limit if it has one. A phase held
by `after` waits for no one: the engine's own timer ends it. The planned `decision` wait is added here, and
nowhere else, when its rows exist.

What it is for (`for`) is also kept on the run's row, `event_runs.waiting_for`, so
that `GET /runs?waiting=…` reads one range of an index. The row is written by the
statements that already move the run or its head step (docs/contract.md,
"Waiting"), with the values and SQL fragments below; `FROM_ROWS` is this module's
rule over the rows as they stand, for a statement that cannot know it otherwise (a
resume: back to a parked cue, to a held phase, or to nothing).
"""

from __future__ import annotations

from typing import Any

from .lifecycle import ATTENDED, WORKING, PhaseSQL, PhaseState, RunSQL, RunStatus, StepSQL, WaitingFor, WaitSQL
from .model import LogEntry, Phase, Resource, Run, Step, iso

ANY = "any"  # GET /runs?waiting=any: waiting for anything
FILTERS = (ANY, *(w.value for w in WaitingFor))  # GET /runs?waiting=

# A person's answer closed the run's parked step (confirm, skip, resend of it): the run waits for nothing
# more, unless it waits for a resume (a paused run's cue is answered before it resumes).
# guard: an-answered-cue-is-still-waited-for
CUE_ANSWERED = f"IF(r.waiting_for IN ({WaitSQL.CUE}, {WaitSQL.DECISION}), NULL, r.waiting_for)"


def parked_in_doubt(step: str) -> str:
    """SQL: the step (the alias `step`) is parked for a decision on whether the game applied it."""
    return f"({step}.status = {StepSQL.RUNNING} AND {step}.claim_expires_at IS NULL AND {step}.park_reason <=> {StepSQL.DOUBT})"


def late_revert(run: str, step: str) -> str:
    """SQL: the step (the alias `step`) is a revert of a finished run (the alias `run`) whose cleanup a person
    started (Clean up): the tick works it as a cleaning-up run's, though the run keeps its final status."""
    # guard: a-finished-runs-cleanup-is-not-worked
    return f"({run}.late_cleanup <=> {RunSQL.LATE_CLEANUP_STARTED} AND {step}.resource_id IS NOT NULL)"


def works_step(run: str, step: str) -> str:
    """SQL: the run (the alias `run`) works the step's (the alias `step`) part, so a parked step there is what it
    waits for: a running or ending run the phase it is at, a run cleaning up (or a finished run's cleanup) its
    reverts."""
    # guard: a-parked-revert-is-not-waited-for
    return (f"(({run}.status IN ({RunSQL.WORKING}) AND {run}.current_phase = {step}.phase)"
            f" OR ({run}.status = {RunSQL.CLEANING_UP} AND {step}.resource_id IS NOT NULL) OR {late_revert(run, step)})")


def from_rows(run: str = "r", *, cleaning_up: bool = False) -> str:
    """What a running or ending run (the alias `run`, at its current phase) waits for, from its rows as they
    stand: a parked step of its phase (the head: a phase's steps run one at a time), else its phase held.
    `cleaning_up`: what a run cleaning up waits for, a parked revert of it (its phases are over, none held)."""
    part = "ws.resource_id IS NOT NULL" if cleaning_up else f"ws.phase = {run}.current_phase"
    held = "NULL" if cleaning_up else f"""(SELECT IF(wp.`signal` IS NULL, {WaitSQL.ADVANCE}, {WaitSQL.SIGNAL})
               FROM event_run_phases wp
               WHERE wp.run_id = {run}.id AND wp.number = {run}.current_phase AND wp.drained_at IS NOT NULL
                 AND wp.`condition` IS NOT NULL AND NOT wp.condition_met
                 AND JSON_VALUE(wp.`condition`, '$.when') <> {PhaseSQL.AFTER})"""  # noqa: S608 — constants only
    return f"""(CASE
        WHEN EXISTS (SELECT 1 FROM event_run_steps ws WHERE ws.run_id = {run}.id AND {part}
                        AND {parked_in_doubt('ws')}) THEN {WaitSQL.DECISION}
        WHEN EXISTS (SELECT 1 FROM event_run_steps ws WHERE ws.run_id = {run}.id AND {part}
                        AND ws.status = {StepSQL.RUNNING} AND ws.claim_expires_at IS NULL) THEN {WaitSQL.CUE}
        ELSE {held} END)"""  # noqa: S608 — constants only


def works(run: Run, step: Step) -> bool:
    """`works_step` of the rows as read: the run works the step's part (its phase, or as a cleanup its reverts)."""
    if run.walked_as is RunStatus.CLEANING_UP:
        return step.resource_id is not None
    return run.status in WORKING and step.phase == run.current_phase



def waiting(run: Run, head: Step | None, phase: Phase | None = None, reverted: Resource | None = None,
            moved: LogEntry | None = None) -> dict[str, Any] | None:
    """What `run` waits for; `head` is the first open step of the phase it works (None if it has none; a run
    cleaning up: its parked revert), `phase` that phase's row (None for a run without phase rows), `reverted`
    the resource a parked revert undoes, `moved` its newest `run.status` log row (read for a paused run only:
    the row that paused it)."""
    if run.status is RunStatus.PAUSED:
        found: dict[str, Any] = {"for": WaitingFor.RESUME.value, "since": iso(run.updated_at)}
        if run.current_phase is not None:
            found["phase"] = run.current_phase
        found["paused_by"], found["reason"] = paused_by(moved)
        return found
    if run.walked_as in ATTENDED and head is not None and head.parked and works(run, head):
        what = WaitingFor.DECISION if head.parked_in_doubt else WaitingFor.CUE
        cue: dict[str, Any] = {"for": what.value, "phase": head.phase, "step_id": head.id, "since": iso(head.started_at)}
        if reverted is not None and reverted.id == head.resource_id:
            cue["resource"] = {"kind": reverted.kind, "id": reverted.resource_id}  # whose revert waits
        return {**cue, **head.holder()}  # who has it, since when and until when (or whose hold lapsed)
    held = None if phase is None or phase.condition is None else phase.condition.waits_for
    if (run.status in WORKING and phase is not None and phase.number == run.current_phase
            and phase.state is PhaseState.HELD and held is not None):
        found = {"for": held.value, "phase": phase.number, "since": iso(phase.drained_at)}
        if phase.signal is not None:
            found["signal"] = phase.signal
        if phase.deadline is not None:
            found["until"] = iso(phase.deadline)  # when the hold gives up: after's end, or the time limit
        return found
    return None


def paused_by(moved: LogEntry | None) -> tuple[str | None, str | None]:
    """Who paused a run (a person's `sub`; None for the engine) and why (their reason, or the engine's cause),
    from the log row that paused it (None, or a row that did not pause it: neither is known)."""
    detail = moved.detail or {} if moved is not None else {}
    if detail.get("to") != RunStatus.PAUSED.value:
        return None, None
    # guard: the-engines-pause-is-told-as-a-persons
    person = moved.actor if moved is not None and detail.get("control") else None
    return person, detail.get("reason") or detail.get("cause")
