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

Every AWS client of sleeping and waking (`aws_client`) answers within a deadline:
`CONNECT_SECONDS` to connect, `READ_SECONDS` per read, `ATTEMPTS` attempts in all
(botocore's standard retries), so one call takes at most `AWS_CALL_SECONDS`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ..config import Settings
from ..db import Database
from .store import engine_state

logger = logging.getLogger(__name__)

CONNECT_SECONDS = 2.0
READ_SECONDS = 3.0
ATTEMPTS = 2  # botocore's total_max_attempts: the first try and one retry
# Each attempt's connect and read, and standard mode's back-off before the retry (at most 1 s).
AWS_CALL_SECONDS = ATTEMPTS * (CONNECT_SECONDS + READ_SECONDS) + 1.0
# A nudged invocation reaches the database within its minute (the tick waits that long for it).
WAKING_STALE = timedelta(minutes=2)

_clients: dict[str, Any] = {}
_client_lock = threading.Lock()


def client_config() -> Any:
    from botocore.config import Config

    # guard: aws-clients-without-timeouts
    return Config(connect_timeout=CONNECT_SECONDS, read_timeout=READ_SECONDS,
                  # guard: aws-clients-retry-without-a-cap
                  retries={"mode": "standard", "total_max_attempts": ATTEMPTS})


def aws_client(service: str) -> Any:
    """The boto3 client of `service` (events, scheduler, lambda) with the deadlines above, one per process
    (boto3 is imported only by a deployment that sleeps)."""
    with _client_lock:
        client = _clients.get(service)
        if client is None:
            import boto3

            client = _clients[service] = boto3.client(service, config=client_config())
        return client


def tick_payload(source: str) -> bytes:
    """An event the tick's Chalice handler reads as it reads the minute rule's (it wants every field of one)."""
    return json.dumps({
        "version": "0", "id": source, "detail-type": "Scheduled Event", "source": source, "account": "",
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "region": "", "resources": [],
        "detail": {},
    }).encode()


def invoke_tick(function_arn: str) -> None:
    """Start the tick function now, not waiting for it."""
    aws_client("lambda").invoke(FunctionName=function_arn, InvocationType="Event", Payload=tick_payload("events.nudge"))


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
