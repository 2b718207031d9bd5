"""Definitions as a person reads them: a page of them (current versions), one with its versions, one version
with its document. Reads only."""

from __future__ import annotations

from typing import Any

from ...db import Database, Tx
from ..errors import NotFound
from ..store import definitions, schedule_log
from . import Body


def definitions_page(db: Database, query: dict[str, Any]) -> Body:
    """Definitions oldest first, a page at a time (`cursor`, `limit`)."""
    page, next_cursor = db.autocommit(
        lambda tx: definitions.list_page(tx, limit=query.get("limit", 50), after_id=query.get("cursor"))
    )
    return {"definitions": [d.public() for d in page], "next_cursor": next_cursor}


def definition_detail(db: Database, definition_id: int) -> Body:
    """The definition and its versions, without their documents, and its schedule log's latest rows (pauses and
    resumes, newest first)."""

    def read(tx: Tx) -> Body:
        definition = definitions.get(tx, definition_id)
        if definition is None:
            raise NotFound(f"no definition {definition_id}")
        return {"definition": definition.public(), "versions": [v.public() for v in definitions.versions(tx, definition_id)],
                "schedule_log": [entry.public() for entry in schedule_log.recent(tx, definition_id)]}

    return db.transaction(read)


def definition_version(db: Database, definition_id: int, number: int) -> Body:
    """One version of the definition, with its document."""

    def read(tx: Tx) -> Body:
        if definitions.get(tx, definition_id) is None:
            raise NotFound(f"no definition {definition_id}")
        version = definitions.get_version(tx, definition_id, number)
        if version is None:
            raise NotFound(f"definition {definition_id} has no version {number}")
        return {"version": version.public()}

    return db.transaction(read)
