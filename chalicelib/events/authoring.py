"""Authoring definitions: a validated document saved as version 1, or as the next version.

Versions are immutable; a run keeps the version it was created from. A definition's
name is unique, case-insensitively (`store.definitions`: the unique key is the guard).
Module actions are checked against those the game bridge declares (EVENT_MODULE_ACTIONS);
with none declared any well-formed `module.name` is saved, as before, and the answer
warns that it could not be checked. A new version's answer names the runs already
scheduled that keep an earlier one, read in the save's own transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..db import Database, Tx
from .document import undeclared_warnings, validate
from .errors import NotFound
from .model import Definition
from .model.values import iso
from .store import definitions as store
from .store import runs

KEPT_RUNS_NAMED = 5  # the warning names this many of the runs that keep an earlier version, then counts the rest


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

    def save(tx: Tx) -> tuple[Definition | None, list[dict[str, str]]]:
        definition = store.add_version(tx, definition_id, valid, actor=actor, now=now)
        return definition, [] if definition is None else _kept_versions(tx, definition)

    definition, kept = db.transaction(save)
    if definition is None:
        raise NotFound(f"no definition {definition_id}")
    return Saved(definition, undeclared_warnings(valid, module_actions) + kept)


def _kept_versions(tx: Tx, definition: Definition) -> list[dict[str, str]]:
    """The warning that runs already scheduled keep the version they were made from (none: no warning)."""
    kept, count = runs.scheduled_of_earlier_versions(tx, definition.id, definition.current_version, KEPT_RUNS_NAMED)
    if not kept:
        return []
    named = ", ".join(f"run {run.id} at {iso(run.scheduled_for)} (version {run.definition_version})" for run in kept)
    more = f" and {count - len(kept)} more" if count > len(kept) else ""
    keeps = "1 scheduled run keeps the version it was" if count == 1 else f"{count} scheduled runs keep the version they were"
    return [{"code": "runs_keep_their_version",
             "message": f"{keeps} made from: {named}{more}. A run plays the version it was made from; runs planned or"
                        f" scheduled from now on play version {definition.current_version}, and a scheduled run moves to"
                        " it when a person upgrades it (its page's Upgrade, or ticked on the runs list)"}]
