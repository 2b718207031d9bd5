"""The engine's typed rows: each row as the store reads it, and as the API shows it.

The invariant: a row is typed once, here; its words (statuses, kinds, reasons) are the
lifecycle's (`lifecycle/`), its errors in errors.py, its log rows in journal.py.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from .lifecycle import (
    ClosedBy,
    Condition,
    OnDeadline,
    OnDoubt,
    OnFailure,
    ParkReason,
    PhaseKind,
    PhaseState,
    RehearsalBridge,
    ResourceStatus,
    RunMode,
    RunStatus,
    SignalEffect,
    StepStatus,
    WaitingFor,
    condition_of,
)

MAX_NOTE = 500


class Health(str, Enum):
    OK = "ok"
    DEGRADED = "degraded"  # something already went wrong; never goes back


# ── helpers ────────────────────────────────────────────────────────────────
def clean_note(raw: Any) -> str | None:
    """A reason or note as a person's control keeps it: trimmed, at most MAX_NOTE characters, empty -> None."""
    text = raw.strip() if isinstance(raw, str) else ""
    return text[:MAX_NOTE] or None


def kept_note(text: object | None) -> str | None:
    """A note, error or reason as stored: at most MAX_NOTE characters."""
    return None if text is None else str(text)[:MAX_NOTE]


def step_named(phase: int, seq: int, action_id: str) -> str:
    """"Phase 2 · step 4 (world.spawn)": the phase's number and the step's place in it, counted from 1."""
    return f"Phase {phase} · step {seq + 1} ({action_id})"


def is_whole_number(value: object, *, at_least: int) -> bool:
    """An int (a bool is not one) of at least `at_least`."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= at_least


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%S.%fZ").replace(".000000Z", "Z")


def _json(raw: Any, default: Any) -> Any:
    if raw is None:
        return default
    return json.loads(raw) if isinstance(raw, (str, bytes)) else raw


def _public(obj: Any) -> dict[str, Any]:
    return {k: iso(v) if isinstance(v, datetime) else (v.value if isinstance(v, Enum) else v) for k, v in asdict(obj).items()}


# ── rows ───────────────────────────────────────────────────────────────────
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
class Attention:
    """A parked cue's first timer moments, as its park writes them (None: that timer does not apply)."""

    remind_at: datetime | None = None
    escalate_at: datetime | None = None
    times_out_at: datetime | None = None


@dataclass(frozen=True)
class Revert:
    """How a resource is undone: a module action (or core.cue: a person undoes it by hand) and its params."""

    action: str
    params: dict[str, Any]

    def public(self) -> dict[str, Any]:
        return {"action": self.action, "params": self.params}


@dataclass(frozen=True)
class StepSpec:
    """One authored step, as materialised into a phase."""

    action_id: str
    params: dict[str, Any] = field(default_factory=dict)
    action_version: int = 1
    on_failure: OnFailure = OnFailure.PAUSE
    revert: Revert | None = None  # its static revert: a done answer records one resource with it
    on_doubt: OnDoubt = OnDoubt.RESEND


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

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Run:
        target, waits = row.get("cleanup_target"), row.get("waiting_for")
        fields = {k: v for k, v in row.items() if k not in REHEARSAL_COLUMNS}
        rehearsal = None
        if row.get("mode", RunMode.LIVE.value) == RunMode.REHEARSAL.value:
            rehearsal = Rehearsal(int(row["speed"]), RehearsalBridge(row["rehearsal_bridge"]),
                                  int(row["auto_confirm_seconds"]),
                                  None if row["auto_signal_seconds"] is None else int(row["auto_signal_seconds"]))
        return cls(
            **{**fields, "status": RunStatus(row["status"]), "health": Health(row["health"]),
               "cleanup_target": None if target is None else RunStatus(target), "rehearsal": rehearsal,
               "waiting_for": None if waits is None else WaitingFor(waits)}
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
        data = _public(self)
        del data["claimed_by"], data["waiting_for"]  # `waiting` beside the run says it whole
        data["etag"] = self.etag
        data["mode"] = self.mode.value
        data["rehearsal"] = None if self.rehearsal is None else _public(self.rehearsal)
        return data


@dataclass(frozen=True)
class Step:
    id: int
    run_id: int
    phase: int
    seq: int
    action_id: str
    params: dict[str, Any]
    action_version: int
    on_failure: OnFailure
    idempotency_key: str
    status: StepStatus
    attempts: int
    claimed_by: str | None
    claim_expires_at: datetime | None
    due_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    last_error: str | None
    acknowledged_by: str | None = None  # who has this parked cue (acknowledge), and since when
    acknowledged_at: datetime | None = None
    # A parked cue's attention timers (runner/attention.py): each is when it is next due, None once spent.
    remind_at: datetime | None = None
    reminders_sent: int = 0
    escalate_at: datetime | None = None
    escalation_tries: int = 0
    times_out_at: datetime | None = None
    retries: int = 0  # how many times a person retried it (raised by the retry's own statement)
    resource_id: int | None = None  # a cleanup's revert step: the resource it reverts (never in params)
    in_doubt: bool = False  # its last attempt has no known outcome: the game may or may not have applied it
    on_doubt: OnDoubt = OnDoubt.RESEND
    park_reason: ParkReason | None = None  # why it waits, while parked (kept after, as history)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Step:
        return cls(
            **{
                **row,
                "params": _json(row["params"], {}),
                "status": StepStatus(row["status"]),
                "on_failure": OnFailure(row["on_failure"]),
                "in_doubt": bool(row.get("in_doubt", False)),
                "on_doubt": OnDoubt(row.get("on_doubt", OnDoubt.RESEND.value)),
                "park_reason": None if row.get("park_reason") is None else ParkReason(row["park_reason"]),
            }
        )

    @classmethod
    def new(cls, step_id: int, run_id: int, phase: int, seq: int, spec: StepSpec, idempotency_key: str) -> Step:
        """The step as its INSERT wrote it (the table's defaults): pending, never claimed, not held."""
        return cls(
            id=step_id, run_id=run_id, phase=phase, seq=seq, action_id=spec.action_id, params=spec.params,
            action_version=int(spec.action_version), on_failure=OnFailure(spec.on_failure),
            idempotency_key=idempotency_key, status=StepStatus.PENDING, attempts=0, claimed_by=None,
            claim_expires_at=None, due_at=None, started_at=None, finished_at=None, last_error=None,
            on_doubt=OnDoubt(spec.on_doubt),
        )

    @property
    def parked(self) -> bool:
        return self.status is StepStatus.RUNNING and self.claim_expires_at is None

    @property
    def parked_in_doubt(self) -> bool:
        """Parked for a decision: nobody knows whether the game applied it (confirm, skip or resend)."""
        return self.parked and self.park_reason is ParkReason.DOUBT

    @property
    def parked_cue(self) -> bool:
        """Parked for a person to do what it asks (a cue): reminders, acknowledge and a gm's press apply."""
        return self.parked and self.park_reason is not ParkReason.DOUBT

    @property
    def named(self) -> str:
        """The step as a person sees it everywhere: "Phase 2 · step 4 (world.spawn)" (never its database id)."""
        return step_named(self.phase, self.seq, self.action_id)

    @property
    def etag(self) -> str:
        """The step's state as an entity tag (what a step control's If-Match names): its retries, attempts,
        state (parked apart from running under a lease) and finished_at. Attempts only rise, except across a
        retry, which raises retries: a step retried and back at the same status never repeats an earlier tag."""
        state = "parked" if self.parked else self.status.value
        finished = "-" if self.finished_at is None else f"{self.finished_at:%Y%m%dT%H%M%S%f}"
        return f'"s{self.id}.{self.retries}.{self.attempts}.{state}.{finished}"'

    def public(self) -> dict[str, Any]:
        data = _public(self)
        del data["claimed_by"]
        data["parked"] = self.parked
        data["etag"] = self.etag
        return data


@dataclass(frozen=True)
class Resource:
    """One thing a run left in the world, as its ledger row stands (`store.resources`)."""

    id: int
    run_id: int
    step_id: int
    kind: str
    resource_id: str
    revert: Revert | None
    status: ResourceStatus
    recorded_at: datetime
    changed_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Resource:
        revert = _json(row["revert"], None)
        return cls(**{**row, "status": ResourceStatus(row["status"]),
                      "revert": None if revert is None else Revert(revert["action"], revert["params"])})

    def public(self) -> dict[str, Any]:
        """As GET /runs/{id}/resources answers it: `id` is the game's id for it, `ledger_id` the row's."""
        return {"ledger_id": self.id, "run_id": self.run_id, "step_id": self.step_id, "kind": self.kind,
                "id": self.resource_id, "revert": None if self.revert is None else self.revert.public(),
                "status": self.status.value, "recorded_at": iso(self.recorded_at), "changed_at": iso(self.changed_at)}


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

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Phase:
        written = _json(row["condition"], None)
        return cls(**{**row, "kind": PhaseKind(row["kind"]), "condition": None if written is None else condition_of(written),
                      "condition_met": bool(row["condition_met"]),
                      "on_deadline": None if row.get("on_deadline") is None else OnDeadline(row["on_deadline"]),
                      "closed_by": None if row.get("closed_by") is None else ClosedBy(row["closed_by"])})

    @property
    def state(self) -> PhaseState:
        if self.opened_at is None:
            return PhaseState.NOT_STARTED
        if self.drained_at is None:
            return PhaseState.OPEN
        return PhaseState.HELD if self.condition is not None and not self.condition_met else PhaseState.DRAINED

    def public(self) -> dict[str, Any]:
        data = _public(self)
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
        return cls(**{**row, "effect": SignalEffect(row["effect"]), "payload": _json(row["payload"], None)})

    def public(self) -> dict[str, Any]:
        """The receipt as the signal route answers it."""
        return {"signal": {"name": self.name, "received_at": iso(self.received_at), "by": self.received_by},
                "effect": self.effect.value}


@dataclass(frozen=True)
class Claim:
    """Proof of one claim of one step: the fence every later write of the claimer matches."""

    step_id: int
    token: str
    attempt: int


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
        return cls(**{**row, "detail": _json(row["detail"], None)})

    def public(self) -> dict[str, Any]:
        return _public(self)


@dataclass(frozen=True)
class Definition:
    id: int
    name: str
    current_version: int
    schedule_cron: str | None
    created_by: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Definition:
        return cls(**row)

    def public(self) -> dict[str, Any]:
        return _public(self)


@dataclass(frozen=True)
class OccurrenceSkip:
    """An occurrence of a recurring definition a person marked not to be run."""

    definition_id: int
    scheduled_for: datetime
    reason: str | None
    skipped_by: str
    skipped_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> OccurrenceSkip:
        return cls(**row)

    def public(self) -> dict[str, Any]:
        return {"reason": self.reason, "by": self.skipped_by, "at": iso(self.skipped_at)}


@dataclass(frozen=True)
class Recurrence:
    """What the planner needs of a definition whose current version recurs."""

    definition_id: int
    version: int
    cron: str
    timezone: str | None  # None: a version stored before schedules had a time zone, read as UTC
    version_created_at: datetime
    planned_through: datetime | None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Recurrence:
        return cls(**row)


@dataclass(frozen=True)
class VersionSummary:
    """A version as a definition lists it: who saved it and when, without its document."""

    definition_id: int
    version: int
    created_by: str | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> VersionSummary:
        return cls(**row)

    def public(self) -> dict[str, Any]:
        return _public(self)


@dataclass(frozen=True)
class DefinitionVersion:
    definition_id: int
    version: int
    document: dict[str, Any]
    created_by: str | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> DefinitionVersion:
        return cls(**{**row, "document": _json(row["document"], {})})

    def public(self) -> dict[str, Any]:
        return _public(self)
