"""GET /inbox: the live runs that need the caller, most urgent first, each with its story and row controls, and
how many there are (every console page shows the count); read through `events/views/inbox.py`."""

from __future__ import annotations

from ... import runtime
from ...events.commands import Caller
from ...events.views.inbox import inbox
from .. import auth, schemas
from ..operations import Body, Call, Router, ok

router = Router(__name__)


@router.operation("GET", "/inbox", "The live runs waiting for something the caller can act on (a gm: the cues), an escalated"
                  " wait first, then the longest wait; each with one line of its story and the one or two controls most"
                  " likely needed that the caller may press now; needs_you counts them all (?limit=0: the count alone).",
                  auth.STAFF, ok("the caller's inbox", schemas.INBOX), query=schemas.INBOX_QUERY)
def caller_inbox(call: Call) -> Body:
    return inbox(runtime.database(), Caller(call.actor, call.roles), call.query)
