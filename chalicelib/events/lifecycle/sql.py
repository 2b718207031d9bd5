"""The lifecycle's words as SQL literals: the only place the store's SQL names a status or another of its words
(a run's health and the engine's sleep state are rendered beside their own enums: `model.HealthSQL`,
`store.engine_state.SleepSQL`).

The invariant: a status, mode, condition, wait or reason reaches SQL text only as
one of these renderings, built at import from the enums (`tests/test_homes.py`
greps the rest of `chalicelib/` for a quoted status or word).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from .phases import ConditionKind, OnDeadline, PhaseKind, SignalEffect
from .resources import ResourceStatus
from .runs import ATTENDED, DUE, LIVE_PHASE, RUNNABLE, TERMINAL_RUN, WORKING, LateCleanup, RunMode, RunStatus
from .steps import OPEN_STEP, STEP_FAILURES, OnDoubt, ParkReason, StepStatus
from .waits import PEOPLES, STALLS, WaitingFor


def sql_literal(word: Enum) -> str:
    """A word as an SQL string literal (the words are lower-case identifiers: nothing to escape)."""
    if not str(word.value).isidentifier():
        raise ValueError(f"a word is one identifier, got {word.value!r}")
    return f"'{word.value}'"


def sql_list(words: Iterable[Enum]) -> str:
    """Words as the inside of an SQL `IN (…)`."""
    return ", ".join(sql_literal(w) for w in words)


class RunSQL:
    """Run statuses as SQL: the only place the store's SQL names one."""

    SCHEDULED = sql_literal(RunStatus.SCHEDULED)
    STARTING = sql_literal(RunStatus.STARTING)
    RUNNING = sql_literal(RunStatus.RUNNING)
    PAUSED = sql_literal(RunStatus.PAUSED)
    ENDING = sql_literal(RunStatus.ENDING)
    CLEANING_UP = sql_literal(RunStatus.CLEANING_UP)
    LATE_CLEANUP_STARTED = sql_literal(LateCleanup.STARTED)  # `late_cleanup`: a finished run's cleanup under way
    LATE_CLEANUP_DONE = sql_literal(LateCleanup.DONE)
    LATE_CLEANUP_FAILED = sql_literal(LateCleanup.FAILED)
    DUE = sql_list(DUE)
    RUNNABLE = sql_list(RUNNABLE)
    WORKING = sql_list(WORKING)
    ATTENDED = sql_list(ATTENDED)
    LIVE_PHASE = sql_list(LIVE_PHASE)
    TERMINAL = sql_list(sorted(TERMINAL_RUN))
    LIVE = sql_literal(RunMode.LIVE)  # a run's mode, for the filters that keep rehearsals apart
    # Every status and mode this version knows: a row holding another was written by a newer version.
    KNOWN = sql_list(RunStatus)
    MODES = sql_list(RunMode)


class StepSQL:
    """Step statuses as SQL: the only place the store's SQL names one."""

    PENDING = sql_literal(StepStatus.PENDING)
    RUNNING = sql_literal(StepStatus.RUNNING)
    DONE = sql_literal(StepStatus.DONE)
    FAILED = sql_literal(StepStatus.FAILED)
    SKIPPED = sql_literal(StepStatus.SKIPPED)
    CANCELLED = sql_literal(StepStatus.CANCELLED)
    OPEN = sql_list(OPEN_STEP)
    FAILURES = sql_list(STEP_FAILURES)
    DOUBT = sql_literal(ParkReason.DOUBT)  # the park_reason of a step parked in doubt
    PARKS_IN_DOUBT = sql_literal(OnDoubt.PARK)  # the on_doubt of a step parked, not resent, once in doubt
    # Every status and park reason this version knows: a row holding another was written by a newer version.
    KNOWN = sql_list(StepStatus)
    PARK_REASONS = sql_list(ParkReason)


class ResourceSQL:
    """Resource statuses as SQL: the only place the store's SQL names one."""

    LIVE = sql_literal(ResourceStatus.LIVE)
    REVERTING = sql_literal(ResourceStatus.REVERTING)
    REVERTED = sql_literal(ResourceStatus.REVERTED)
    REVERT_FAILED = sql_literal(ResourceStatus.REVERT_FAILED)


class PhaseSQL:
    """A phase row's words as SQL: its kind, its condition's kind, what its deadline does, a receipt's effect."""

    MAIN = sql_literal(PhaseKind.MAIN)
    AFTER = sql_literal(ConditionKind.AFTER)
    CLOSE = sql_literal(OnDeadline.CLOSE)
    PHASE_OVER = sql_literal(SignalEffect.PHASE_OVER)


class WaitSQL:
    """What a run waits for as SQL (`event_runs.waiting_for`)."""

    CUE = sql_literal(WaitingFor.CUE)
    ADVANCE = sql_literal(WaitingFor.ADVANCE)
    SIGNAL = sql_literal(WaitingFor.SIGNAL)
    DECISION = sql_literal(WaitingFor.DECISION)
    RESUME = sql_literal(WaitingFor.RESUME)
    STALLS = sql_list(STALLS)
    PEOPLES = sql_list(PEOPLES)
