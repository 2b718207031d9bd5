"""What a run waits for, derived from its rows: a run waiting for a person or for the game has no status of its own.

`waiting(run, head, phase)` is `None` or `{"for", "phase"?, "step_id"?, "signal"?, "since", "until"?}`
(docs/contract.md, "Waiting"). A paused run waits for a `resume`; a running or
ending run whose phase's head step is parked (a cue posted, no lease) waits for
that `cue` to be confirmed or skipped; a run whose current phase is drained but
held by its condition waits for an `advance` (or, when the condition names a
signal, for that `signal`), `until` its time limit if it has one. A phase held
by `after` waits for no one: the engine's own timer ends it. The planned `decision` wait is added here, and
nowhere else, when its rows exist.
"""

from __future__ import annotations

from typing import Any

from .lifecycle import WORKING
from .model import Phase, PhaseState, Run, RunStatus, Step, iso

FOR = ("cue", "advance", "signal", "decision", "resume")


def waiting(run: Run, head: Step | None, phase: Phase | None = None) -> dict[str, Any] | None:
    """What `run` waits for; `head` is the first open step of the phase it works (None if it has none),
    `phase` that phase's row (None for a run without phase rows)."""
    if run.status is RunStatus.PAUSED:
        found: dict[str, Any] = {"for": "resume", "since": iso(run.updated_at)}
        if run.current_phase is not None:
            found["phase"] = run.current_phase
        return found
    if run.status in WORKING and head is not None and head.parked and head.phase == run.current_phase:
        return {"for": "cue", "phase": head.phase, "step_id": head.id, "since": iso(head.started_at)}
    if (run.status in WORKING and phase is not None and phase.number == run.current_phase
            and phase.state is PhaseState.HELD and (phase.condition or {}).get("when") != "after"):
        found = {"for": "advance", "phase": phase.number, "since": iso(phase.drained_at)}
        if phase.signal is not None:
            found = {"for": "signal", "phase": phase.number, "signal": phase.signal, "since": iso(phase.drained_at)}
        if phase.deadline is not None:
            found["until"] = iso(phase.deadline)  # when the hold gives up: after's end, or the time limit
        return found
    return None
