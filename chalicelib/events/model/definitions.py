"""The typed rows of a definition: the definition, its versions (whole and listed), what the planner needs of
one that recurs, and an occurrence a person skipped.

The invariant: a definition's row is typed once, here; a version's document is read
as the JSON it was saved as.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .values import iso, json_column, public_fields


@dataclass(frozen=True)
class SchedulePause:
    """Who paused a recurring definition's schedule, when and why (its planner plans nothing meanwhile)."""

    by: str
    at: datetime
    reason: str | None

    def public(self) -> dict[str, Any]:
        return {"by": self.by, "at": iso(self.at), "reason": self.reason}


@dataclass(frozen=True)
class Definition:
    id: int
    name: str
    current_version: int
    schedule_cron: str | None
    created_by: str | None
    created_at: datetime
    updated_at: datetime
    schedule_paused: SchedulePause | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Definition:
        fields = dict(row)
        at, by, reason = (fields.pop(f"schedule_paused_{part}") for part in ("at", "by", "reason"))
        return cls(**fields, schedule_paused=None if at is None else SchedulePause(by, at, reason))

    def public(self) -> dict[str, Any]:
        return {**public_fields(self), "schedule_paused": None if self.schedule_paused is None else self.schedule_paused.public()}


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
        return public_fields(self)


@dataclass(frozen=True)
class DefinitionVersion:
    definition_id: int
    version: int
    document: dict[str, Any]
    created_by: str | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> DefinitionVersion:
        return cls(**{**row, "document": json_column(row["document"], {})})

    def public(self) -> dict[str, Any]:
        return public_fields(self)


@dataclass(frozen=True)
class ScheduleLogEntry:
    """A row of a recurring definition's schedule log: a pause or a resume, who made it, when, and its detail."""

    id: int
    definition_id: int
    kind: str
    actor: str
    detail: dict[str, Any]
    created_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ScheduleLogEntry:
        return cls(**{**row, "detail": json_column(row["detail"], {})})

    def public(self) -> dict[str, Any]:
        return public_fields(self)
