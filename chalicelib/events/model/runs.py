"""The typed rows of a run and what hangs off it: the run (and a dry run's settings), its phases, the
signals it received, and its log.

The invariant: a run's row is typed once, here; its words (statuses, modes, phase kinds,
signal effects) are the lifecycle's, read from the row by their enums, and a run or step word
this version does not know is refused (`NewerRow`), never read as another. Its health is its own
word (`Health`), which the store's SQL names only as `HealthSQL`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from ..lifecycle import (
    ClosedBy,
    Condition,
    LateCleanup,
    OnDeadline,
    PhaseKind,
    PhaseState,
    RehearsalBridge,
    RunMode,
    RunStatus,
    SignalEffect,
    WaitingFor,
    condition_of,
    sql_literal,
)
from .values import iso, json_column, known, public_fields


class Health(str, Enum):
    OK = "ok"
    DEGRADED = "degraded"  # something went wrong; ok again once a retried step succeeds and none stands failed


class HealthSQL:
    """A run's health as SQL, rendered from Health as `lifecycle.RunSQL` renders a status: the only place the
    store's SQL names one."""

    OK = sql_literal(Health.OK)
    DEGRADED = sql_literal(Health.DEGRADED)


REHEARSAL_COLUMNS = ("mode", "speed", "rehearsal_bridge", "auto_confirm_seconds", "auto_signal_seconds")


@dataclass(frozen=True)
class Rehearsal:
    """How the tick drives a dry run (its row's columns): authored durations divided by `speed`, module
    actions to `bridge`, a cue nobody confirmed confirmed after `auto_confirm_seconds` and a signal phase's
    signal sent after `auto_signal_seconds` (None: never), both in rehearsal seconds (not divided)."""

    speed: int
    bridge: RehearsalBridge
    auto_confirm_seconds: int
    auto_signal_seconds: int | None

    @property
    def time_scale(self) -> float:
        """Run seconds per authored second."""
        return 1 / self.speed



@dataclass(frozen=True)
class Run:
    id: int
    definition_id: int
    definition_version: int
    occurrence_key: str
    status: RunStatus
    scheduled_for: datetime
    grace_seconds: int
    current_phase: int | None
    health: Health
    last_error: str | None
    claimed_by: str | None
    claim_expires_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    created_at: datetime
    updated_at: datetime
    wake_at: datetime | None  # when a tick next has to look at it; None: only a person can move it
    waiting_for: WaitingFor | None = None  # what it waits for, as its row keeps it for the index (`waiting`: the whole of it)
    version: int = 1  # its control state, counted: raised by each status change (`store/runs/moves.py`) and advance
    cleanup_target: RunStatus | None = None  # where its cleanup ends once every revert is over; None: it never cleaned up
    rehearsal: Rehearsal | None = None  # a dry run's settings (its mode is rehearsal); None: a live run
    late_cleanup: LateCleanup | None = None  # a finished run's cleanup (its status kept); None: none asked for
    late_cleanup_at: datetime | None = None  # when that cleanup was last asked for

    @property
    def walked_as(self) -> RunStatus:
        """The status the tick walks it in: its own, or cleaning up while a person's Clean up of the finished run
        is under way (its reverts are worked as a cleaning-up run's; its status stays what it finished as)."""
        return RunStatus.CLEANING_UP if self.late_cleanup is LateCleanup.STARTED else self.status

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Run:
        """The run its row holds; NewerRow for a word of it this version does not know (a newer version's run:
        a mode it does not know is never read as live)."""
        target, waits, run = row.get("cleanup_target"), row.get("waiting_for"), f"run {row.get('id')}"
        late = row.get("late_cleanup")
        fields = {k: v for k, v in row.items() if k not in REHEARSAL_COLUMNS}
        rehearsal = None
        # guard: a-run-of-an-unknown-mode-reads-as-live
        if known(RunMode, row.get("mode", RunMode.LIVE.value), f"{run}'s mode") is RunMode.REHEARSAL:
            rehearsal = Rehearsal(int(row["speed"]), known(RehearsalBridge, row["rehearsal_bridge"], f"{run}'s bridge"),
                                  int(row["auto_confirm_seconds"]),
                                  None if row["auto_signal_seconds"] is None else int(row["auto_signal_seconds"]))
        return cls(
            **{**fields, "status": known(RunStatus, row["status"], f"{run}'s status"),
               "health": known(Health, row["health"], f"{run}'s health"),
               "cleanup_target": None if target is None else known(RunStatus, target, f"{run}'s cleanup target"),
               "rehearsal": rehearsal,
               "late_cleanup": None if late is None else known(LateCleanup, late, f"{run}'s cleanup"),
               "waiting_for": None if waits is None else known(WaitingFor, waits, f"what {run} waits for")}
        )

    @property
    def mode(self) -> RunMode:
        return RunMode.LIVE if self.rehearsal is None else RunMode.REHEARSAL

    @property
    def time_scale(self) -> float:
        """Run seconds per authored second: 1, or a rehearsal's 1/speed."""
        return 1.0 if self.rehearsal is None else self.rehearsal.time_scale

    @property
    def etag(self) -> str:
        """The run's control state as an entity tag (GET /runs/{id}'s ETag; what a run control's If-Match names)."""
        return f'"r{self.id}.{self.version}"'

    def public(self) -> dict[str, Any]:
        data = public_fields(self)
        del data["claimed_by"], data["waiting_for"]  # `waiting` beside the run says it whole
        data["etag"] = self.etag
        data["mode"] = self.mode.value
        data["rehearsal"] = None if self.rehearsal is None else public_fields(self.rehearsal)
        return data


@dataclass(frozen=True)
class Phase:
    """One phase of a started run, as its row stands (`store.phases`)."""

    run_id: int
    number: int
    kind: PhaseKind
    name: str
    opened_at: datetime | None
    drained_at: datetime | None
    condition: Condition | None  # what must be met before a drained phase may be left; None: the row has none
    condition_met: bool
    met_at: datetime | None
    met_by: str | None
    signal: str | None = None  # the signal that ends it, if it waits for one
    limit_seconds: int | None = None  # its time limit as authored (after's duration, or a timeout)
    on_deadline: OnDeadline | None = None  # at the limit: close (its open steps cancelled) or pause (the run, once)
    deadline: datetime | None = None  # opened_at + limit_seconds, written by the statement that opened it
    closed_at: datetime | None = None  # the engine closed it: its open steps cancelled, none claimed again
    closed_by: ClosedBy | None = None
    deadline_moved_by: str | None = None  # who last moved its deadline by hand (extend), when and why
    deadline_moved_at: datetime | None = None
    deadline_moved_reason: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Phase:
        written = json_column(row["condition"], None)
        return cls(**{**row, "kind": PhaseKind(row["kind"]), "condition": None if written is None else condition_of(written),
                      "condition_met": bool(row["condition_met"]),
                      "on_deadline": None if row.get("on_deadline") is None else OnDeadline(row["on_deadline"]),
                      "closed_by": None if row.get("closed_by") is None else ClosedBy(row["closed_by"])})

    def closes_at_passed_deadline(self, now: datetime | None) -> bool:
        """Whether (read at `now`; None: not judged) a `close` deadline has passed: that ended it, before the tick
        closes it (a paused run's phase stays open until the run resumes)."""
        return now is not None and self.deadline is not None and self.deadline <= now and self.on_deadline is OnDeadline.CLOSE

    def over(self, now: datetime | None) -> bool:
        """Whether it has ended for its steps (none is claimed, retried or sent again): its condition met, or a
        `close` deadline passed (`phases.OVER`, the guarded statements' own term)."""
        return self.condition_met or self.closes_at_passed_deadline(now)

    def deadline_counts(self, now: datetime | None) -> bool:
        """Whether it has a deadline that still counts (extend may move it): neither closed nor its condition met,
        nor a `close` deadline passed (`phases.move_deadline`'s WHERE says the same)."""
        return self.deadline is not None and self.closed_at is None and not self.over(now)

    @property
    def state(self) -> PhaseState:
        if self.opened_at is None:
            return PhaseState.NOT_STARTED
        if self.drained_at is None:
            return PhaseState.OPEN
        return PhaseState.HELD if self.condition is not None and not self.condition_met else PhaseState.DRAINED

    def public(self) -> dict[str, Any]:
        data = public_fields(self)
        del data["run_id"]
        data["condition"] = None if self.condition is None else self.condition.row()
        data["state"] = self.state.value
        return data


@dataclass(frozen=True)
class Signal:
    """The first receipt of one signal to one run (`store.signals`): who sent it, when, and what it did."""

    run_id: int
    name: str
    received_at: datetime
    received_by: str
    effect: SignalEffect
    payload: dict[str, Any] | None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Signal:
        return cls(**{**row, "effect": SignalEffect(row["effect"]), "payload": json_column(row["payload"], None)})

    def public(self) -> dict[str, Any]:
        """The receipt as the signal route answers it."""
        return {"signal": {"name": self.name, "received_at": iso(self.received_at), "by": self.received_by},
                "effect": self.effect.value}



@dataclass(frozen=True)
class LogEntry:
    id: int
    run_id: int
    step_id: int | None
    kind: str
    phase: int | None
    detail: dict[str, Any] | None
    actor: str | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> LogEntry:
        return cls(**{**row, "detail": json_column(row["detail"], None)})

    def public(self) -> dict[str, Any]:
        return public_fields(self)

