"""event_definitions and event_definition_versions: authored events, immutable versions.

A definition's name is its own: the unique key `event_definitions_name` (migration 0044,
case-insensitive by the column's collation) refuses a second holder, and the refusal
names the first.

Validation of the document is `events.document`'s job; this module stores
what it is given.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, NamedTuple

from ...db import Tx, must_exist
from ..errors import Clash
from ..model import Definition, DefinitionVersion, Recurrence, VersionSummary

COLUMNS = ("id, name, current_version, schedule_cron, created_by, created_at, updated_at, schedule_paused_at,"
           " schedule_paused_by, schedule_paused_reason")
SUMMARY_COLUMNS = "definition_id, version, created_by, created_at"
VERSION_COLUMNS = f"{SUMMARY_COLUMNS}, document"


def create(tx: Tx, document: dict[str, Any], *, actor: str | None, now: datetime) -> Definition:
    """A new definition at version 1; Clash if another definition holds its name (the unique key
    `event_definitions_name` is the guard: INSERT IGNORE inserts nothing then)."""
    inserted = tx.execute(
        """INSERT IGNORE INTO event_definitions
             (name, current_version, schedule_cron, schedule_timezone, created_by, created_at, updated_at)
           VALUES (%s, 1, %s, %s, %s, %s, %s)""",
        (document["name"], *_schedule(document), actor, now, now),
    )
    if inserted != 1:
        raise _taken(tx, document["name"], None)
    definition_id = tx.last_insert_id
    _insert_version(tx, definition_id, 1, document, actor, now)
    return must_exist(get(tx, definition_id))


def add_version(tx: Tx, definition_id: int, document: dict[str, Any], *, actor: str | None, now: datetime) -> Definition | None:
    """The next version of an existing definition, or None if there is no such definition.

    The version number comes from the definition row's own counter, raised by
    the UPDATE that also locks the row, so two concurrent edits get two versions.
    The new version is planned from its own creation on, so planned_through is cleared.
    A name another definition holds is a Clash (UPDATE IGNORE leaves the row as it was then).
    """
    changed = tx.execute(
        """UPDATE IGNORE event_definitions
              SET current_version = current_version + 1, name = %s, schedule_cron = %s, schedule_timezone = %s,
                  planned_through = NULL, updated_at = %s
            WHERE id = %s""",
        (document["name"], *_schedule(document), now, definition_id),
    )
    if changed != 1:
        if get(tx, definition_id) is None:
            return None
        raise _taken(tx, document["name"], definition_id)
    definition = must_exist(get(tx, definition_id))
    _insert_version(tx, definition_id, definition.current_version, document, actor, now)
    return definition


def _taken(tx: Tx, name: str, definition_id: int | None) -> Clash:
    """The refusal naming the definition that holds `name`, compared as the unique key compares it."""
    holder = must_exist(tx.one("SELECT id, name FROM event_definitions WHERE name = %s AND id <> %s LOCK IN SHARE MODE",
                               (name, definition_id or 0)))
    return Clash(f"the name {name!r} is taken by definition {holder['id']} ({holder['name']!r}); definition names"
                 " are unique, whatever their case", detail={"definition_id": holder["id"], "definition_name": holder["name"]})


class Planned(NamedTuple):
    through: datetime | None  # every occurrence up to then is planned; None: none yet


def lock_planning(tx: Tx, definition_id: int) -> Planned | None:
    """Lock the definition's row, as the planner's mark does (`mark_planned`), and read how far it is planned;
    None if there is no such definition."""
    # guard: a-skip-interleaves-with-a-planning
    row = tx.one("SELECT planned_through FROM event_definitions WHERE id = %s FOR UPDATE", (definition_id,))
    return None if row is None else Planned(row["planned_through"])


def get(tx: Tx, definition_id: int) -> Definition | None:
    row = tx.one(f"SELECT {COLUMNS} FROM event_definitions WHERE id = %s", (definition_id,))  # noqa: S608 — COLUMNS is a constant; the id is a parameter
    return Definition.from_row(row) if row else None


def list_page(tx: Tx, *, limit: int = 50, after_id: int | None = None) -> tuple[list[Definition], int | None]:
    """Definitions oldest first, keyset-paginated: the page and the next cursor (its last id), or None."""
    if not 1 <= limit <= 500:
        raise ValueError(f"limit must be between 1 and 500, got {limit}")
    rows = tx.all(
        f"SELECT {COLUMNS} FROM event_definitions WHERE id > %s ORDER BY id LIMIT %s", (after_id or 0, limit + 1)  # noqa: S608 — COLUMNS is a constant; the cursor and limit are parameters
    )
    page = [Definition.from_row(r) for r in rows[:limit]]
    return page, (page[-1].id if len(rows) > limit else None)


def recurrences(tx: Tx, until: datetime) -> list[Recurrence]:
    """Recurring definitions not yet planned through `until`, the most behind (never planned) first."""
    # Definitions drive the join, so the planning-order index gives the order without a sort.
    rows = tx.all(
        """SELECT d.id AS definition_id, d.current_version AS version, d.schedule_cron AS cron,
                  d.schedule_timezone AS timezone, v.created_at AS version_created_at, d.planned_through
             FROM event_definitions d
             STRAIGHT_JOIN event_definition_versions v ON v.definition_id = d.id AND v.version = d.current_version
            WHERE d.planning_order < %s
            ORDER BY d.planning_order, d.id""",
        (until,),
    )
    return [Recurrence.from_row(r) for r in rows]


def mark_planned(tx: Tx, recurrence: Recurrence, through: datetime) -> bool:
    """Move planned_through on from what the planner read; False if another planner or a new version came first,
    or a person paused the schedule since it was read (the pause's UPDATE holds the row until it commits)."""
    # guard: mark-planned
    # guard: a-schedule-paused-under-the-planner-is-planned
    return (
        tx.execute(
            """UPDATE event_definitions SET planned_through = %s
                WHERE id = %s AND current_version = %s AND planned_through <=> %s AND schedule_paused_at IS NULL""",
            (through, recurrence.definition_id, recurrence.version, recurrence.planned_through),
        )
        == 1
    )


def pause_schedule(tx: Tx, definition_id: int, actor: str, reason: str | None, now: datetime) -> bool:
    """The definition's schedule paused by `actor`: a compare-and-set on its recurring and not being paused
    already. Its planning order becomes NULL with it (migration 0061): the planner reads it no more."""
    # guard: pause-a-schedule-already-paused
    # guard: pause-a-definition-that-does-not-recur
    return tx.execute(
        """UPDATE event_definitions SET schedule_paused_at = %s, schedule_paused_by = %s, schedule_paused_reason = %s
            WHERE id = %s AND schedule_cron IS NOT NULL AND schedule_paused_at IS NULL""",
        (now, actor, reason, definition_id),
    ) == 1


def resume_schedule(tx: Tx, definition_id: int, paused_at: datetime | None, now: datetime) -> bool:
    """The definition's schedule runs again: a compare-and-set on its being paused since `paused_at` (as read;
    None: it read no pause, and nothing is resumed). Planned through now at least, so the planner creates none
    of the occurrences missed while it was paused."""
    # guard: resume-a-schedule-not-paused
    # guard: a-resume-plans-what-the-pause-missed
    return tx.execute(
        """UPDATE event_definitions SET schedule_paused_at = NULL, schedule_paused_by = NULL, schedule_paused_reason = NULL,
                  planned_through = GREATEST(COALESCE(planned_through, %s), %s)
            WHERE id = %s AND schedule_paused_at = %s""",
        (now, now, definition_id, paused_at),
    ) == 1


def current_locked(tx: Tx, definition_id: int) -> DefinitionVersion | None:
    """The definition's current version as last committed, its row and its version's in one locking read (not the
    transaction's snapshot, which may predate a save and hold neither its number nor its version: a save that
    committed since it began is seen, and none commits until it ends); None if there is no definition."""
    # guard: the-current-version-is-read-from-the-transactions-snapshot
    row = tx.one(
        f"""SELECT {", ".join(f"v.{c.strip()}" for c in VERSION_COLUMNS.split(","))} FROM event_definitions AS d
              JOIN event_definition_versions AS v ON v.definition_id = d.id AND v.version = d.current_version
             WHERE d.id = %s LOCK IN SHARE MODE""",  # noqa: S608 — the columns are constants; the id is a parameter
        (definition_id,),
    )
    return DefinitionVersion.from_row(row) if row else None


def get_version(tx: Tx, definition_id: int, version: int) -> DefinitionVersion | None:
    row = tx.one(
        f"SELECT {VERSION_COLUMNS} FROM event_definition_versions WHERE definition_id = %s AND version = %s",  # noqa: S608 — VERSION_COLUMNS is a constant; ids are parameters
        (definition_id, version),
    )
    return DefinitionVersion.from_row(row) if row else None


def versions(tx: Tx, definition_id: int) -> list[VersionSummary]:
    """Every version of a definition, oldest first, without the documents (each may be up to a megabyte)."""
    rows = tx.all(
        f"SELECT {SUMMARY_COLUMNS} FROM event_definition_versions WHERE definition_id = %s ORDER BY version",  # noqa: S608 — SUMMARY_COLUMNS is a constant; the id is a parameter
        (definition_id,),
    )
    return [VersionSummary.from_row(r) for r in rows]


def _schedule(document: dict[str, Any]) -> tuple[str | None, str | None]:
    schedule = document.get("schedule") or {}
    return schedule.get("cron"), schedule.get("timezone")


def _insert_version(tx: Tx, definition_id: int, version: int, document: dict[str, Any], actor: str | None, now: datetime) -> None:
    tx.execute(
        """INSERT INTO event_definition_versions (definition_id, version, document, created_by, created_at)
           VALUES (%s, %s, %s, %s, %s)""",
        (definition_id, version, json.dumps(document), actor, now),
    )
