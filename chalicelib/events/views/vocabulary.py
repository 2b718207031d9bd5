"""The words the console shows and an author picks from: the statuses (label, mark, terminal) with the declared
controls, and the action registry with the module actions the game bridge declares. Reads no database."""

from __future__ import annotations

from .. import commands, lifecycle
from ..actions import registry
from ..commands.bulk import BULK_CONTROLS
from . import Body


def vocabulary() -> Body:
    """The statuses, as the lifecycle words them, and the declared controls, each saying whether `POST /runs/bulk`
    presses it on many runs (`bulk`: the console's bulk bar offers those, to the roles each declares)."""
    return {**lifecycle.vocabulary(), "controls": [{**c.public(), "bulk": c.name in BULK_CONTROLS}
                                                   for c in commands.CONTROLS.values()]}


def actions(module_actions: frozenset[str] | None) -> Body:
    """The registry's actions and their params schemas; `module_actions`: what the bridge declares (None: not declared)."""
    return {"actions": registry.catalogue(), "module_actions": None if module_actions is None else sorted(module_actions)}
