"""Authoring definitions: a validated document saved as version 1, or as the next version.

Versions are immutable; a run keeps the version it was created from.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..db import Database
from .document import validate
from .errors import NotFound
from .model import Definition
from .store import definitions as store


def create(db: Database, document: Any, *, actor: str, now: datetime) -> Definition:
    """A new definition at version 1, from a document that passes `validate`."""
    valid = validate(document)
    return db.transaction(lambda tx: store.create(tx, valid, actor=actor, now=now))


def add_version(db: Database, definition_id: int, document: Any, *, actor: str, now: datetime) -> Definition:
    """The definition's next version; NotFound if there is no such definition."""
    valid = validate(document)
    definition = db.transaction(lambda tx: store.add_version(tx, definition_id, valid, actor=actor, now=now))
    if definition is None:
        raise NotFound(f"no definition {definition_id}")
    return definition
