"""GET /actions: the action registry an author picks from, and the module actions the game bridge declares."""

from __future__ import annotations

from ... import runtime
from ...events.views.vocabulary import actions
from .. import auth, schemas
from ..operations import Body, Call, Router, ok

router = Router(__name__)


@router.operation("GET", "/actions", "The action registry and each action's params schema, and the module actions the "
                  "game bridge declares (EVENT_MODULE_ACTIONS; null when it declares none).", auth.STAFF,
                  ok("actions", schemas.ACTIONS))
def list_actions(call: Call) -> Body:
    return actions(runtime.settings().module_actions)
