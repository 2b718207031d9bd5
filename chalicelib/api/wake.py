"""A request that made work for the tick wakes a sleeping deployment, once that work has committed."""

from __future__ import annotations

from .. import runtime
from ..events import nudge
from .operations import Call


def made_work(call: Call) -> None:
    """The request's work has committed: wake the deployment if it sleeps (one guarded UPDATE; nothing when it never sleeps)."""
    nudge.after_work_created(runtime.database(), runtime.settings(), call.now)
