"""What a run waits for, derived from its rows: a run waiting for a person or for the game has no status of its own.

`waiting(run, head)` is `None` or `{"for", "phase"?, "step_id"?, "signal"?, "since", "until"?}`
(docs/contract.md, "Waiting"). What exists today gives two answers: a paused run
waits for a `resume`, and a running or ending run whose phase's head step is
parked (a cue posted, no lease) waits for that `cue` to be confirmed or skipped.
The planned `advance`, `signal` and `decision` waits are added here, and nowhere
else, when their rows exist.
"""

from __future__ import annotations

from typing import Any

from .lifecycle import WORKING
from .model import Run, RunStatus, Step, iso

FOR = ("cue", "advance", "signal", "decision", "resume")


def waiting(run: Run, head: Step | None) -> dict[str, Any] | None:
    """What `run` waits for; `head` is the first open step of the phase it works (None if it has none)."""
    if run.status is RunStatus.PAUSED:
        found: dict[str, Any] = {"for": "resume", "since": iso(run.updated_at)}
        if run.current_phase is not None:
            found["phase"] = run.current_phase
        return found
    if run.status in WORKING and head is not None and head.parked and head.phase == run.current_phase:
        return {"for": "cue", "phase": head.phase, "step_id": head.id, "since": iso(head.started_at)}
    return None
