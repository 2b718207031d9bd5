"""Waking a sleeping deployment once work was created: the state row asleep -> waking, then the tick, invoked.

Called after the work's own transaction has committed (a run scheduled, a
definition with a schedule saved, a confirm, skip, resume or retry), so the
tick it wakes sees the work. Only the caller whose compare-and-set moved the
row invokes the tick, asynchronously (`InvocationType=Event`): an awake
deployment already has an invocation running or due, which sees the new wake
time at its next one-second read. Overlapping invocations stay harmless (run
leases and fenced writes). See `runner/sleep.py` for why no work is stranded.

Two rules keep a nudge from being lost for good:

- an invoke that fails puts the row back to asleep (compare-and-set on the
  nudge's epoch), so the next work created nudges again at once;
- a row left `waking` longer than `WAKING_STALE` (its invocation was lost after
  the invoke was accepted: it never started, or failed before waking) counts as
  asleep: the next work created nudges again.

The invoke is `adapters/aws.invoke_tick`, a client with a deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from ..config import Settings
from ..db import Database
from .adapters.aws import invoke_tick
from .store import engine_state

logger = logging.getLogger(__name__)

# A nudged invocation reaches the database within its minute (the tick waits that long for it).
WAKING_STALE = timedelta(minutes=2)


def after_work_created(
    db: Database, settings: Settings, now: datetime, invoke: Callable[[str], None] | None = None
) -> bool:
    """Wake the deployment if it sleeps; True if this call woke it (and invoked the tick)."""
    if not settings.sleep:
        return False
    if not settings.tick_function_arn:
        logger.error("EVENTS_SLEEP=on without EVENTS_TICK_FUNCTION_ARN: a sleeping deployment cannot be woken")
        return False
    nudge = db.transaction(lambda tx: engine_state.wake(tx, now, now - WAKING_STALE))
    if nudge is None:
        return False
    try:
        (invoke or invoke_tick)(settings.tick_function_arn)
    except Exception:
        # Put the row back so the next work created nudges again; the one-time wake-up still stands.
        # guard: failed-nudge-leaves-the-row-waking
        db.autocommit(lambda tx: engine_state.back_to_sleep(tx, now, nudge))
        logger.exception("could not invoke the tick %s to wake the deployment", settings.tick_function_arn)
        return False
    logger.info("woke the deployment: invoked %s", settings.tick_function_arn)
    return True
