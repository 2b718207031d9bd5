"""Waking a sleeping deployment once work was created: the state row asleep -> waking, then the tick, invoked.

Called after the work's own transaction has committed (a run scheduled, a
definition with a schedule saved, a confirm, skip, resume or retry), so the
tick it wakes sees the work. Only the caller whose compare-and-set moved the
row invokes the tick, asynchronously (`InvocationType=Event`): an awake
deployment already has an invocation running or due, which sees the new wake
time at its next one-second read. Overlapping invocations stay harmless (run
leases and fenced writes). See `runner/sleep.py` for why no work is stranded.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from ..config import Settings
from ..db import Database
from .store import engine_state

logger = logging.getLogger(__name__)

_client = None
_client_lock = threading.Lock()


def tick_payload(source: str) -> bytes:
    """An event the tick's Chalice handler reads as it reads the minute rule's (it wants every field of one)."""
    return json.dumps({
        "version": "0", "id": source, "detail-type": "Scheduled Event", "source": source, "account": "",
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "region": "", "resources": [],
        "detail": {},
    }).encode()


def invoke_tick(function_arn: str) -> None:
    """Start the tick function now, not waiting for it (boto3 is imported only by a deployment that sleeps)."""
    global _client
    with _client_lock:
        if _client is None:
            import boto3

            _client = boto3.client("lambda")
        client = _client
    client.invoke(FunctionName=function_arn, InvocationType="Event", Payload=tick_payload("events.nudge"))


def after_work_created(
    db: Database, settings: Settings, now: datetime, invoke: Callable[[str], None] | None = None
) -> bool:
    """Wake the deployment if it sleeps; True if this call woke it (and invoked the tick)."""
    if not settings.sleep:
        return False
    if not settings.tick_function_arn:
        logger.error("EVENTS_SLEEP=on without EVENTS_TICK_FUNCTION_ARN: a sleeping deployment cannot be woken")
        return False
    if not db.autocommit(lambda tx: engine_state.wake(tx, now)):
        return False
    try:
        (invoke or invoke_tick)(settings.tick_function_arn)
    except Exception:
        # Put the row back so the next work created nudges again; the one-time wake-up still stands.
        db.autocommit(lambda tx: engine_state.back_to_sleep(tx, now))
        logger.exception("could not invoke the tick %s to wake the deployment", settings.tick_function_arn)
        return False
    logger.info("woke the deployment: invoked %s", settings.tick_function_arn)
    return True
