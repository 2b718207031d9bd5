"""A definition's projected timeline as a person asks for it (POST /definitions/{id}/rehearse): of one of its
versions (default: the current one) or of an unsaved document (an editor's draft, validated first). Reads
the version only; the projection is `timeline.project`, from the document alone."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...db import Database, Tx
from .. import timeline as projection
from ..document import validate
from ..errors import Invalid, NotFound
from ..store import definitions
from . import Body


def timeline(db: Database, definition_id: int, asked: Body, now: datetime, *, module_actions: frozenset[str] | None,
             escalate_after_seconds: int) -> Body:
    """The projection of `asked`'s `version` or `document` (not both); `module_actions`: the game bridge's declared
    actions (None: any), `escalate_after_seconds`: the deployment's EVENT_ESCALATE_AFTER_SECONDS."""
    if "version" in asked and "document" in asked:
        raise Invalid("send version or document, not both")

    def read(tx: Tx) -> dict[str, Any]:
        definition = definitions.get(tx, definition_id)
        if definition is None:
            raise NotFound(f"no definition {definition_id}")
        if "document" in asked:
            return validate(asked["document"], module_actions)
        number = asked.get("version", definition.current_version)
        version = definitions.get_version(tx, definition_id, number)
        if version is None:
            raise NotFound(f"definition {definition_id} has no version {number}")
        return version.document

    return projection.project(db.autocommit(read), now, escalate_after_seconds=escalate_after_seconds)
