"""A run's lifecycle: its statuses, the transitions between them (what each move writes), and its modes.

The invariant: a run status is named here and nowhere else. `store/runs/moves.py`
(`move`) takes what a status change writes from `TRANSITIONS` (a move nobody declared is
refused), the runner's tuples (`RUNNABLE`, `DUE`) and the controls' guards are
derived from the per-status facts below, and `docs/contract.md`'s transitions
table is `TRANSITIONS` (`tests/test_lifecycle.py` compares them).

    scheduled ─► starting ─► running ─► ending ─► completed
        │            │  ▲       │  ▲
        ▼            ▼  │       ▼  │
     missed          paused ◄───┘  │       (any not terminal ─► cancelled;
                       └───────────┘        running, paused ─► failed)

    cancel with cleanup, abort_run or an ending under cleanup_on, when the run
    left something its cleanup reverts:  … ─► cleaning_up ─► its cleanup_target
    (cancelled, failed or completed); cleaning_up ◄─► paused
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from .words import Facts


class RunStatus(str, Enum):
    SCHEDULED = "scheduled"  # waiting for scheduled_for
    STARTING = "starting"  # due and taken; its first phase not yet materialised
    RUNNING = "running"  # working through current_phase
    PAUSED = "paused"  # stopped by a person or an on_failure of pause
    ENDING = "ending"  # draining the ending steps; never pauses
    CLEANING_UP = "cleaning_up"  # reverting what the run left in the world, then on to its cleanup_target
    COMPLETED = "completed"  # everything ran (health says how well)
    CANCELLED = "cancelled"  # a person called it off
    FAILED = "failed"  # an on_failure of abort_run
    MISSED = "missed"  # first seen after its grace window

    @property
    def terminal(self) -> bool:
        return RUN_FACTS[self].terminal


RUN_FACTS: dict[RunStatus, Facts] = {
    RunStatus.SCHEDULED: Facts("scheduled", "○", due=True),
    RunStatus.STARTING: Facts("starting", "▷", due=True, runnable=True),
    RunStatus.RUNNING: Facts("running", "▶", due=True, runnable=True),
    RunStatus.PAUSED: Facts("paused", "‖"),
    RunStatus.ENDING: Facts("ending", "▶", due=True, runnable=True),
    RunStatus.CLEANING_UP: Facts("cleaning up", "↺", due=True, runnable=True),
    RunStatus.COMPLETED: Facts("completed", "✓", terminal=True),
    RunStatus.CANCELLED: Facts("cancelled", "✕", terminal=True),
    RunStatus.FAILED: Facts("failed", "✕", terminal=True),
    RunStatus.MISSED: Facts("missed", "⊘", terminal=True),
}

TERMINAL_RUN = frozenset(s for s, f in RUN_FACTS.items() if f.terminal)
LIVE_RUN = tuple(s for s, f in RUN_FACTS.items() if not f.terminal)
# Statuses in which the runner may claim a run's steps.
RUNNABLE = tuple(s for s, f in RUN_FACTS.items() if f.runnable)
# Statuses a tick picks up.
DUE = tuple(s for s, f in RUN_FACTS.items() if f.due)
# A run working a phase (the current one, or its ending).
WORKING = (RunStatus.RUNNING, RunStatus.ENDING)
# A run that waits for its parked step as for any cue (listed, reminded, escalated, timed out): one working a
# phase, or one cleaning up (its parked revert, undone by hand). A paused run waits for its resume instead.
# guard: a-cleanup-is-not-attended
ATTENDED = (*WORKING, RunStatus.CLEANING_UP)
# A run the tick starts (materialises its first phase) rather than moves on.
BEFORE_FIRST_PHASE = tuple(s for s in DUE if s not in (*WORKING, RunStatus.CLEANING_UP))
# A run whose current phase's deadline a person may move (extend): one working it, or paused at it.
LIVE_PHASE = (*WORKING, RunStatus.PAUSED)
# Where a cleanup ends once every revert is over (`event_runs.cleanup_target`); and the finished statuses a
# person may still clean up from (the Clean up control: the run keeps its status, `LateCleanup` says how it stands).
CLEANUP_TARGETS = (RunStatus.CANCELLED, RunStatus.FAILED, RunStatus.COMPLETED)


class LateCleanup(str, Enum):
    """How the cleanup of a finished run stands (`event_runs.late_cleanup`): the run keeps its final status, and
    the tick works its reverts as it works a cleaning-up run's while this is `started`."""

    STARTED = "started"  # a person pressed Clean up: the tick reverts what the run left, newest first
    DONE = "done"  # every revert was done
    FAILED = "failed"  # every revert is over and some failed or were refused: what is left stays in the ledger


# ── transitions ──────────────────────────────────────────────────────────
class Who(str, Enum):
    TICK = "tick"
    PERSON = "person"
    PLANNER = "planner or API"


class Wake(str, Enum):
    """What a transition does to the run's wake time."""

    KEPT = "kept"  # the worker holds the run; its release writes the wake time
    NOW = "now"  # a person made work: a tick looks at once
    CLEARED = "cleared"  # no timer moves the run any more
    SCHEDULED_FOR = "scheduled_for"  # a new run falls due then


@dataclass(frozen=True)
class Transition:
    """One row of the transitions table: who moves a run from `sources` to `to`, and what the move writes."""

    sources: tuple[RunStatus, ...]  # empty: the run is created
    to: RunStatus
    who: Who
    when: str
    wake: Wake
    clears_claim: bool = False

    @property
    def stamps_finished_at(self) -> bool:
        return self.to.terminal


_R = RunStatus
TRANSITIONS: tuple[Transition, ...] = (
    Transition((), _R.SCHEDULED, Who.PLANNER, "the occurrence is created", Wake.SCHEDULED_FOR),
    Transition((_R.SCHEDULED,), _R.STARTING, Who.TICK, "due, and still inside its grace window", Wake.KEPT),
    Transition((_R.SCHEDULED,), _R.RUNNING, Who.TICK, "due inside its grace window, phase 1 created in the same statement set",
               Wake.KEPT),
    Transition((_R.SCHEDULED,), _R.MISSED, Who.TICK, "first seen after `scheduled_for + grace_seconds`; or due while an"
               " earlier run of its definition is live under `overlap: skip` (or another waits under `queue_one`)",
               Wake.CLEARED, True),
    Transition((_R.STARTING,), _R.RUNNING, Who.TICK, "phase 1 is created, in the same transaction", Wake.KEPT),
    Transition((_R.RUNNING,), _R.RUNNING, Who.TICK, "a phase has no open step left: the next phase is created", Wake.KEPT),
    Transition((_R.RUNNING,), _R.ENDING, Who.TICK, "the last phase has no open step left", Wake.KEPT),
    Transition((_R.RUNNING,), _R.COMPLETED, Who.TICK, "the last phase has no open step left and there is no ending",
               Wake.CLEARED, True),
    Transition((_R.ENDING,), _R.COMPLETED, Who.TICK, "the ending steps are all over (an empty ending completes at once)",
               Wake.CLEARED, True),
    Transition((_R.RUNNING,), _R.PAUSED, Who.TICK,
               "a step failed or was refused with `on_failure: pause`, or a phase's time limit or a parked cue's timeout"
               " with `on_timeout: pause` passed (degraded)", Wake.CLEARED, True),
    Transition(LIVE_RUN, _R.FAILED, Who.TICK,
               "a step of a running or paused run failed or was refused with `on_failure: abort_run` (its pending steps"
               " are cancelled), or the run's document cannot be walked", Wake.CLEARED, True),
    # guard: pause-keeps
    Transition((_R.STARTING, _R.RUNNING, _R.CLEANING_UP), _R.PAUSED, Who.PERSON, "pause", Wake.CLEARED, True),
    Transition((_R.PAUSED,), _R.RUNNING, Who.PERSON,
               # guard: resume-does-not-wake
               "resume, retry of the step it stopped at, or advance of the phase it is at (it had a phase)", Wake.NOW),
    Transition((_R.PAUSED,), _R.STARTING, Who.PERSON, "resume, or retry (it never had a phase)", Wake.NOW),
    Transition(LIVE_RUN, _R.CANCELLED, Who.PERSON,
               "cancel (pending and parked steps are cancelled; a step in flight is left to its answer)", Wake.CLEARED, True),
    Transition((_R.STARTING, _R.RUNNING, _R.PAUSED, _R.ENDING), _R.CLEANING_UP, Who.PERSON,
               "cancel with cleanup, when the run has something live to revert or a step in flight (target"
               " `cancelled`)", Wake.NOW, True),
    Transition((_R.RUNNING, _R.PAUSED), _R.CLEANING_UP, Who.TICK,
               "`on_failure: abort_run` under `cleanup_on: fail`, when the run has something live to revert (target"
               " `failed`; the worker stops, and the next tick opens the cleanup)", Wake.NOW, True),
    Transition((_R.RUNNING, _R.ENDING), _R.CLEANING_UP, Who.TICK,
               "the run's last phase is over under `cleanup_on: complete`, when it has something live to revert"
               " (target `completed`; likewise)", Wake.NOW, True),
    Transition((_R.CLEANING_UP,), _R.CANCELLED, Who.TICK, "every revert is over and each was done (target `cancelled`)",
               Wake.CLEARED, True),
    Transition((_R.CLEANING_UP,), _R.FAILED, Who.TICK, "every revert is over and each was done (target `failed`)",
               Wake.CLEARED, True),
    Transition((_R.CLEANING_UP,), _R.COMPLETED, Who.TICK, "every revert is over and each was done (target `completed`)",
               Wake.CLEARED, True),
    Transition((_R.CLEANING_UP,), _R.PAUSED, Who.TICK,
               "every revert is over and some failed or were refused (\"2 of 7 resources could not be reverted\"), or"
               " a by-hand revert's cue timed out under `on_timeout: pause`", Wake.CLEARED, True),
    Transition((_R.PAUSED,), _R.CLEANING_UP, Who.PERSON,
               "resume, or retry of a failed revert, of a paused cleanup with a revert still open", Wake.NOW, True),
    Transition((_R.PAUSED,), _R.CANCELLED, Who.PERSON,
               "resume of a paused cleanup with no revert open: its failures are accepted (target `cancelled`)",
               Wake.CLEARED, True),
    Transition((_R.PAUSED,), _R.FAILED, Who.PERSON,
               "resume of a paused cleanup with no revert open: its failures are accepted (target `failed`)",
               Wake.CLEARED, True),
    Transition((_R.PAUSED,), _R.COMPLETED, Who.PERSON,
               "resume of a paused cleanup with no revert open: its failures are accepted (target `completed`)",
               Wake.CLEARED, True),
)


class CleanupOn(str, Enum):
    """When a run reverts what it left in the world without a person's cancel (the document's `cleanup_on`)."""

    COMPLETE = "complete"  # after its ending, before it completes
    FAIL = "fail"  # on an `abort_run` failure, before it fails


class Overlap(str, Enum):
    """What a recurring definition does with an occurrence that comes while an earlier run of it is live (its
    schedule's `overlap`): decided when the occurrence falls due, each decision a `run.overlap` log row."""

    ALLOW = "allow"  # both run (the default)
    SKIP = "skip"  # the new occurrence is missed, and why said
    CANCEL_PREVIOUS = "cancel_previous"  # the earlier runs are cancelled (cleaning up if the definition has cleanup_on)
    QUEUE_ONE = "queue_one"  # the new one waits and starts once the earlier ones end; a second waiting is missed


OVERLAP_WORDS = ("when an occurrence falls due while an earlier run of this definition is still live: allow (both run;"
                 " the default), skip (the new one is missed, and why said), cancel_previous (the earlier run is"
                 " cancelled, cleaning up first when cleanup_on is set, then the new one starts), queue_one (the new"
                 " one waits and starts when the earlier run ends; another coming meanwhile is missed)")


class RunMode(str, Enum):
    """How a run meets the world. A rehearsal walks the same transitions as a live run; what differs is
    read from its row by the tick (`Run.rehearsal`): its bridge and channels, and its speed."""

    LIVE = "live"
    REHEARSAL = "rehearsal"  # a dry run: its actions never reach the live game, its posts the live channels


class RehearsalBridge(str, Enum):
    """Where a rehearsal's module actions go."""

    SIMULATE = "simulate"  # answered done inside the engine
    SANDBOX = "sandbox"  # GAME_BRIDGE_SANDBOX_URL, signed with the sandbox's own key


def _rendered(sources: tuple[str, ...], to: str, who: str, when: str, wake: str, claim: bool, finishes: bool) -> tuple[str, ...]:
    every_live = {r.value for r in LIVE_RUN}
    named = "any not terminal" if set(sources) == every_live else (", ".join(sources) or "—")
    return (named, to, who, when, "set" if finishes else "—", "cleared" if claim else "—", wake)


def table() -> list[tuple[str, ...]]:
    """`TRANSITIONS` as docs/contract.md's table spells it: from, to, who, when, finished_at, claim, wake time."""
    return [
        _rendered(tuple(s.value for s in t.sources), t.to.value, t.who.value, t.when, t.wake.value, t.clears_claim,
                  t.stamps_finished_at)
        for t in TRANSITIONS
    ]


def writes(sources: Iterable[RunStatus], to: RunStatus) -> Transition:
    """The table's row for a move from every one of `sources` to `to`; ValueError for a move nobody declared.

    Two rows may cover the same pair (a person's pause and the tick's); they
    must then write the same things, which `test_lifecycle` holds.
    """
    wanted = set(sources)
    for row in TRANSITIONS:
        # guard: a-move-nobody-declared-is-written
        if row.to is to and wanted and wanted <= set(row.sources):
            return row
    raise ValueError(f"no transition from {sorted(s.value for s in wanted)} to {to.value} is declared")
