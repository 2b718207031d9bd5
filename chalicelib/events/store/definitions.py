"""event_definitions and event_definition_versions: authored events, immutable versions.

Validation of the document is `events.definitions`' job; this module stores
what it is given.
"""

from __future__ import annotations

import json
from datetime import datetime

from ...db import Tx
from ..model import Definition, DefinitionVersion

COLUMNS = "id, name, current_version, schedule_cron, created_by, created_at, updated_at"
VERSION_COLUMNS = "definition_id, version, document, created_by, created_at"


def create(tx: Tx, document: dict, *, actor: str | None, now: datetime) -> Definition:
    """A new definition at version 1."""
    tx.execute(
        """INSERT INTO event_definitions (name, current_version, schedule_cron, created_by, created_at, updated_at)
           VALUES (%s, 1, %s, %s, %s, %s)""",
        (document["name"], _cron(document), actor, now, now),
    )
    definition_id = tx.last_insert_id
    _insert_version(tx, definition_id, 1, document, actor, now)
    return get(tx, definition_id)


def add_version(tx: Tx, definition_id: int, document: dict, *, actor: str | None, now: datetime) -> Definition | None:
    """The next version of an existing definition, or None if there is no such definition.

    The version number comes from the definition row's own counter, raised by
    the UPDATE that also locks the row, so two concurrent edits get two versions.
    """
    changed = tx.execute(
        """UPDATE event_definitions
              SET current_version = current_version + 1, name = %s, schedule_cron = %s, updated_at = %s
            WHERE id = %s""",
        (document["name"], _cron(document), now, definition_id),
    )
    if changed != 1:
        return None
    definition = get(tx, definition_id)
    _insert_version(tx, definition_id, definition.current_version, document, actor, now)
    return definition


def get(tx: Tx, definition_id: int) -> Definition | None:
    row = tx.one(f"SELECT {COLUMNS} FROM event_definitions WHERE id = %s", (definition_id,))
    return Definition.from_row(row) if row else None


def list_all(tx: Tx, limit: int = 500) -> list[Definition]:
    rows = tx.all(f"SELECT {COLUMNS} FROM event_definitions ORDER BY id LIMIT %s", (limit,))
    return [Definition.from_row(r) for r in rows]


def scheduled(tx: Tx) -> list[Definition]:
    """Definitions whose current version recurs: what the planner looks at (in no order: none matters)."""
    rows = tx.all(f"SELECT {COLUMNS} FROM event_definitions WHERE schedule_cron IS NOT NULL")
    return [Definition.from_row(r) for r in rows]


def get_version(tx: Tx, definition_id: int, version: int) -> DefinitionVersion | None:
    row = tx.one(
        f"SELECT {VERSION_COLUMNS} FROM event_definition_versions WHERE definition_id = %s AND version = %s",
        (definition_id, version),
    )
    return DefinitionVersion.from_row(row) if row else None


def versions(tx: Tx, definition_id: int) -> list[DefinitionVersion]:
    rows = tx.all(
        f"SELECT {VERSION_COLUMNS} FROM event_definition_versions WHERE definition_id = %s ORDER BY version",
        (definition_id,),
    )
    return [DefinitionVersion.from_row(r) for r in rows]


def _cron(document: dict) -> str | None:
    return (document.get("schedule") or {}).get("cron")


def _insert_version(tx: Tx, definition_id: int, version: int, document: dict, actor: str | None, now: datetime) -> None:
    tx.execute(
        """INSERT INTO event_definition_versions (definition_id, version, document, created_by, created_at)
           VALUES (%s, %s, %s, %s, %s)""",
        (definition_id, version, json.dumps(document), actor, now),
    )
