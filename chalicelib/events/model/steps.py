"""The typed rows of a step: the step as authored and as its row stands, the proof of its claim, a parked
cue's timers, and what a step left in the world (a resource and its revert).

The invariant: a step's row is typed once, here; a step is named to a person one way on every surface
(`step_named`, docs/contract.md "A step's one name"): "Run 6 · Phase 1 · step 2 (light the bonfire)", its
run, its phase, its place counted from 1, and in brackets its authored name (underscores read as spaces), else
a cue's instruction (cut at a word), else its action. Its database id shows only where a machine needs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..errors import NewerRow
from ..lifecycle import OnDoubt, OnFailure, ParkReason, ResourceStatus, StepStatus
from .values import iso, json_column, known, newer_word, public_fields

# The longest a cue's instruction is shown in a step's name: longer ones are cut at a word, with an ellipsis.
NAMED_INSTRUCTION_CHARS = 40


def step_label(name: str | None, action_id: str, params: dict[str, Any]) -> str:
    """What a step's name says in its brackets: its authored name, underscores read as spaces ("light the
    bonfire"), else a cue's instruction (at most NAMED_INSTRUCTION_CHARS, cut at a word: "Light the bonfire,
    then confirm this…"), else its action ("world.spawn")."""
    if name:
        return name.replace("_", " ")
    instruction = params.get("instruction") if action_id == "core.cue" else None
    if not isinstance(instruction, str) or not instruction.strip():
        return action_id
    words = " ".join(instruction.split())
    if len(words) <= NAMED_INSTRUCTION_CHARS:
        return words
    cut = words[:NAMED_INSTRUCTION_CHARS - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:.") + "…"


def step_named(run_id: int, phase: int, seq: int, label: str) -> str:
    """"Run 6 · Phase 1 · step 2 (light the bonfire)": the step's one name (`step_label` says the brackets)."""
    return f"Run {run_id} · Phase {phase} · step {seq + 1} ({label})"


@dataclass(frozen=True)
class Attention:
    """A parked cue's first timer moments, as its park writes them (None: that timer does not apply), and how
    long an acknowledge holds it (its escalation delay on its run's clock; None: no bound)."""

    remind_at: datetime | None = None
    escalate_at: datetime | None = None
    times_out_at: datetime | None = None
    hold_seconds: float | None = None


@dataclass(frozen=True)
class Revert:
    """How a resource is undone: a module action (or core.cue: a person undoes it by hand) and its params."""

    action: str
    params: dict[str, Any]

    def public(self) -> dict[str, Any]:
        return {"action": self.action, "params": self.params}


@dataclass(frozen=True)
class OnlyIf:
    """When an authored step or phase runs (its `only_if`): the answer of the cue named `choice`, or the field
    `field` of the payload of the signal `signal`, is one of `among` (docs/definitions.md, "Cues that ask")."""

    among: tuple[Any, ...]
    choice: str | None = None
    signal: str | None = None
    field: str | None = None

    @classmethod
    def of(cls, written: dict[str, Any]) -> OnlyIf:
        """As the document writes it: `{"choice", "in"}` or `{"signal", "field", "in"}` (KeyError, TypeError:
        not one of those)."""
        among = written["in"]
        if not isinstance(among, list):
            raise TypeError("only_if.in must be a list")
        if "choice" in written:
            return cls(tuple(among), choice=str(written["choice"]))
        return cls(tuple(among), signal=str(written["signal"]), field=str(written["field"]))

    def admits(self, answer: Any) -> bool:
        """Whether `answer` is one of its values, compared as JSON values are (the string "1" is not the number 1,
        nor true the number 1); None, no answer, never is."""
        return any(type(value) is type(answer) and value == answer for value in self.among)

    @staticmethod
    def distinct(values: Iterable[Any]) -> list[Any]:
        """`values` once each, told apart as `admits` tells them (true and 1 are two values, not one)."""
        return list({(type(value), value): value for value in values}.values())

    @staticmethod
    def shown(value: Any) -> str:
        """A value as its author wrote it in JSON (`true`, `1`, `null`), a text as itself (`north`)."""
        return value if isinstance(value, str) else json.dumps(value)

    def public(self) -> dict[str, Any]:
        read = {"choice": self.choice} if self.choice is not None else {"signal": self.signal, "field": self.field}
        return {**read, "in": list(self.among)}


@dataclass(frozen=True)
class StepSpec:
    """One authored step, as materialised into a phase."""

    action_id: str
    params: dict[str, Any] = field(default_factory=dict)
    action_version: int = 1
    on_failure: OnFailure = OnFailure.PAUSE
    revert: Revert | None = None  # its static revert: a done answer records one resource with it
    on_doubt: OnDoubt = OnDoubt.RESEND
    name: str | None = None  # what an `only_if` calls it by (a cue with choices)
    only_if: OnlyIf | None = None  # it runs only when this is met at its turn; else it is passed over (skipped)



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
    # Who has a parked cue, for how long (docs/contract.md, "Who has a cue"): an acknowledge holds it for
    # hold_seconds (None: no bound) until held_until; a hold that lapsed unanswered leaves who had it and
    # since when (lapsed_*) for the notices after it; holds_ended counts the holds released or lapsed.
    hold_seconds: float | None = None
    held_until: datetime | None = None
    lapsed_by: str | None = None
    lapsed_acknowledged_at: datetime | None = None
    holds_ended: int = 0
    choice: str | None = None  # a cue with choices: the value its confirm (or its timeout) chose
    attempts_allowed_from: int = 0  # the attempts spent before a person's last retry or resend (0: none)
    name: str | None = None  # its authored name (what an only_if calls it by), None if it has none

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Step:
        """The step its row holds; NewerRow for a word of it this version does not know (a newer version's)."""
        step = f"step {row.get('id')} of run {row.get('run_id')}"
        return cls(
            **{
                **row,
                "params": json_column(row["params"], {}),
                "status": known(StepStatus, row["status"], f"{step}'s status"),
                "on_failure": known(OnFailure, row["on_failure"], f"{step}'s on_failure"),
                "in_doubt": bool(row.get("in_doubt", False)),
                "on_doubt": known(OnDoubt, row.get("on_doubt", OnDoubt.RESEND.value), f"{step}'s on_doubt"),
                "park_reason": None if row.get("park_reason") is None
                else known(ParkReason, row["park_reason"], f"why {step} is parked"),
            }
        )

    @staticmethod
    def newer(row: dict[str, Any]) -> NewerRow:
        """The refusal of a step row (id, run_id, status, park_reason) holding a status or a park reason this
        version does not know."""
        step = f"step {row['id']} of run {row['run_id']}"
        if row["status"] not in {status.value for status in StepStatus}:
            return newer_word(f"{step}'s status", row["status"])
        return newer_word(f"why {step} is parked", row["park_reason"])

    @classmethod
    def new(cls, step_id: int, run_id: int, phase: int, seq: int, spec: StepSpec, idempotency_key: str) -> Step:
        """The step as its INSERT wrote it (the table's defaults): pending, never claimed, not held."""
        return cls(
            id=step_id, run_id=run_id, phase=phase, seq=seq, action_id=spec.action_id, params=spec.params,
            action_version=int(spec.action_version), on_failure=OnFailure(spec.on_failure),
            idempotency_key=idempotency_key, status=StepStatus.PENDING, attempts=0, claimed_by=None,
            claim_expires_at=None, due_at=None, started_at=None, finished_at=None, last_error=None,
            on_doubt=OnDoubt(spec.on_doubt), name=spec.name,
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

    def hold_from(self, now: datetime) -> datetime | None:
        """When a hold of this cue taken `now` lapses (None: it holds without a bound)."""
        return None if self.hold_seconds is None else now + timedelta(seconds=self.hold_seconds)

    def holder(self) -> dict[str, Any]:
        """Who has the cue and since when (`acknowledged_by`, `acknowledged_at`, `held_until` while held), or
        who had it when their hold lapsed unanswered (`lapsed_by`, `lapsed_acknowledged_at`); {} for neither."""
        if self.acknowledged_by is not None:
            held = {"acknowledged_by": self.acknowledged_by, "acknowledged_at": iso(self.acknowledged_at)}
            return held if self.held_until is None else {**held, "held_until": iso(self.held_until)}
        if self.lapsed_by is not None:
            return {"lapsed_by": self.lapsed_by, "lapsed_acknowledged_at": iso(self.lapsed_acknowledged_at)}
        return {}

    @property
    def lapse_words(self) -> str | None:
        """Whose hold lapsed unanswered, as a notice and a refusal say it ("rowan acknowledged at 20:14 UTC and
        has not confirmed"); None when no hold lapsed since someone last had it."""
        if self.lapsed_by is None:
            return None
        return f"{self.lapsed_by} acknowledged at {self.lapsed_acknowledged_at:%H:%M} UTC and has not confirmed"

    @property
    def choices(self) -> list[dict[str, Any]]:
        """A cue's choices as authored (each {value, label}); none for any other step."""
        offered = self.params.get("choices") if self.action_id == "core.cue" else None
        return offered if isinstance(offered, list) else []

    @property
    def named(self) -> str:
        """The step as a person sees it everywhere: "Run 6 · Phase 1 · step 2 (light the bonfire)" (never its
        database id)."""
        return step_named(self.run_id, self.phase, self.seq, step_label(self.name, self.action_id, self.params))

    @property
    def etag(self) -> str:
        """The step's state as an entity tag (what a step control's If-Match names): its retries, attempts,
        state (parked apart from running under a lease) and finished_at. Attempts only rise, and a retry
        raises retries: a step retried and back at the same status never repeats an earlier tag."""
        state = "parked" if self.parked else self.status.value
        finished = "-" if self.finished_at is None else f"{self.finished_at:%Y%m%dT%H%M%S%f}"
        return f'"s{self.id}.{self.retries}.{self.attempts}.{state}.{finished}"'

    def public(self) -> dict[str, Any]:
        data = public_fields(self)
        del data["claimed_by"]
        data["parked"] = self.parked
        data["etag"] = self.etag
        data["named"] = self.named
        return data


def _text(stored: bytes | str) -> str:
    return stored.decode("utf-8") if isinstance(stored, bytes) else stored


@dataclass(frozen=True)
class Resource:
    """One thing a run left in the world, as its ledger row stands (`store.resources`)."""

    id: int
    run_id: int
    step_id: int
    kind: str
    resource_id: str
    revert: Revert | None
    revert_refused: str | None  # why its revert is never sent ("cannot revert: undeclared action x"): left as it is
    status: ResourceStatus
    recorded_at: datetime
    changed_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Resource:
        revert = json_column(row["revert"], None)
        # kind and id are stored as bytes (compared exactly): the game's UTF-8 text
        return cls(**{**row, "kind": _text(row["kind"]), "resource_id": _text(row["resource_id"]),
                      "status": ResourceStatus(row["status"]),
                      "revert": None if revert is None else Revert(revert["action"], revert["params"])})

    def public(self) -> dict[str, Any]:
        """As GET /runs/{id}/resources answers it: `id` is the game's id for it, `ledger_id` the row's."""
        return {"ledger_id": self.id, "run_id": self.run_id, "step_id": self.step_id, "kind": self.kind,
                "id": self.resource_id, "revert": None if self.revert is None else self.revert.public(),
                "revert_refused": self.revert_refused, "status": self.status.value,
                "recorded_at": iso(self.recorded_at), "changed_at": iso(self.changed_at)}



@dataclass(frozen=True)
class Claim:
    """Proof of one claim of one step: the fence every later write of the claimer matches."""

    step_id: int
    token: str
    attempt: int  # the attempt the game is sent: the step's attempts, raised by this claim
    allowed_from: int = 0  # the step's attempts_allowed_from as claimed (no claim ever sees it change)

    @property
    def of_allowance(self) -> int:
        """This attempt's place in the step's allowance: the attempt ceiling counts it, not `attempt`."""
        return self.attempt - self.allowed_from
