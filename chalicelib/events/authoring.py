"""Authoring definitions: a validated document saved as version 1, or as the next version.

Versions are immutable; a run keeps the version it was created from. A definition's
name is unique, case-insensitively (`store.definitions`: the unique key is the guard).
Module actions are checked against those the game bridge declares (EVENT_MODULE_ACTIONS);
with none declared any well-formed `module.name` is saved, as before, and the answer
warns that it could not be checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..db import Database
from .document import undeclared_warnings, validate
from .errors import NotFound
from .model import Definition
from .store import definitions as store


@dataclass(frozen=True)
class Saved:
    definition: Definition
    warnings: list[dict[str, str]]  # {"code", "message"}: saved all the same


def create(db: Database, document: Any, *, actor: str, now: datetime,
           module_actions: frozenset[str] | None = None) -> Saved:
    """A new definition at version 1, from a document that passes `validate`."""
    valid = validate(document, module_actions)
    definition = db.transaction(lambda tx: store.create(tx, valid, actor=actor, now=now))
    return Saved(definition, undeclared_warnings(valid, module_actions))


def add_version(db: Database, definition_id: int, document: Any, *, actor: str, now: datetime,
                module_actions: frozenset[str] | None = None) -> Saved:
    """The definition's next version; NotFound if there is no such definition."""
    valid = validate(document, module_actions)
    definition = db.transaction(lambda tx: store.add_version(tx, definition_id, valid, actor=actor, now=now))
    if definition is None:
        raise NotFound(f"no definition {definition_id}")
    return Saved(definition, undeclared_warnings(valid, module_actions))
