"""The tick's chore that keeps each chat message saying what its step is at, whoever changed it.

Invariant: every message the engine posted ends up saying what it should, because the tick, not the press,
finds it (`chat_messages.unsettled`): while its step waits, who has its cue, with the buttons the step now
offers (a take-over, a release or a lapse anywhere, not just a press in the chat: the holder it names is
recorded once its edit was taken, `chat_messages.shown`, and it is edited again only when that changes); once
its step no longer waits, how the wait ended, who did it and when, its buttons gone — a press in the chat, on
the console or through the API, a timeout, a cancel — edited once and then settled (compare-and-set); and once
the step's message was posted again in its channel (a decision escalated again after a person sent the step
again), that it was asked again below, its buttons gone, settled, whatever became of the edits of either meanwhile. A failed edit
is tried again, each failure logged (`chat.edit_failed`), after the step rules' retry backoff doubled at each
try up to EDIT_MOST_WAIT, and never sooner than the platform's own wait (a rate limit's `retry_after`, which
holds the channel's other edits to the next tick too, rather than spend a 429 on each): an edit is idempotent
and cheap, so it outlives a rate limit, a permission being fixed or an outage, and is given up (the row settled
without words) only when the platform says the message or its channel is gone, or EDIT_PATIENCE after the
step's wait ended (or the message was superseded); a message whose step still waits is tried until it is
told how the wait ended. A message a chat press already edited is edited here too: the press's own edit (a
type 7 answer the engine cannot confirm landed, `@original`, Slack's `response_url`) may have failed, and one
idempotent edit more per press is the price of a message that always ends up saying what its step is at.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from ...db import Database, Tx, must_exist
from .. import journal
from ..errors import ChannelError
from ..lifecycle import RunMode, StepStatus
from ..model import Step
from ..store import chat_messages, log, runs, steps
from ..store.chat_messages import ChatMessage, Ended
from . import ChatApis
from .platforms import MOST_RETRY_AFTER, DiscordApi, Message, SlackApi
from .render import current

logger = logging.getLogger(__name__)

MESSAGES_PER_TICK = 50
EDIT_MOST_WAIT = timedelta(minutes=30)  # the longest wait between two tries of an edit, but a platform's own
# How long after its step's wait ended a message's edit is still tried: the longest rate-limit wait taken too.
EDIT_PATIENCE = timedelta(seconds=MOST_RETRY_AFTER)
ASKED_AGAIN = "Asked again below."  # a superseded message's last line: the step's live message is a newer one


def settle_messages(db: Database, apis: ChatApis, now: datetime, *, retry_seconds: float,
                    affords: Callable[[float], bool]) -> int:
    """Edit the due messages while the tick `affords` each edit's deadline; how many were edited. A failed
    edit's first wait is `retry_seconds` (the step rules' retry backoff)."""
    edited = 0
    limited: set[tuple[str, str]] = set()  # the channels that answered a rate limit: their other edits wait a tick
    for message in db.autocommit(lambda tx: chat_messages.unsettled(tx, now, MESSAGES_PER_TICK, apis.platforms())):
        api = apis.of(message.platform)
        channel = (message.platform, message.channel_id)
        if api is None or channel in limited or not affords(api.timeout):
            continue
        made, refused = _edit_one(db, api, message, now, retry_seconds)
        edited += made
        if refused is not None and refused.retry_after is not None:
            limited.add(channel)
    return edited


def _edit_one(db: Database, api: DiscordApi | SlackApi, message: ChatMessage, now: datetime,
              retry_seconds: float) -> tuple[bool, ChannelError | None]:
    """The message edited to say what it should, then settled (or, its step waiting, the holder it names
    recorded); or why its edit failed, logged and its next try set. Whether it was edited."""
    def read(tx: Tx) -> tuple[Step, RunMode, Ended | None]:
        step = must_exist(steps.get_on_run(tx, message.run_id, message.step_id))
        mode = must_exist(runs.get(tx, message.run_id)).mode
        return step, mode, None if step.parked else chat_messages.how_it_ended(tx, message.run_id, message.step_id)

    step, mode, ended = db.autocommit(read)
    waits = step.status is StepStatus.RUNNING and not message.superseded
    if waits and not step.parked:
        return False, None  # being dispatched again: its message is edited once the step parks or ends
    if message.superseded:
        shown = asked_again(step, mode, message.platform)
    else:
        shown = current(step, mode, ended, message.platform, api.mapped_roles)
    try:
        api.edit(message.channel_id, message.message_id, shown)
    except ChannelError as refused:
        _failed(db, message, refused, now, retry_seconds, since=_since(message, waits, ended, now))
        return False, refused
    if waits:  # the step still waits: who has its cue is shown, and the message is edited again once that changes
        db.autocommit(lambda tx: chat_messages.shown(tx, message, step.acknowledged_by))
    else:
        db.autocommit(lambda tx: chat_messages.settle(tx, message, shown.text.rsplit("\n", 1)[-1], now))
    return True, None


def asked_again(step: Step, mode: RunMode, platform: str) -> Message:
    """A superseded message: what it asked, headed as `current` heads the step's message (a dry run's mark
    kept), without buttons, and that the step was asked again below (its live message is the newer one)."""
    asked = current(step, mode, None, platform, frozenset())  # no role mapped: no button
    return Message(asked.text[:len(asked.text) - asked.kept]).noted(ASKED_AGAIN)


def _since(message: ChatMessage, waits: bool, ended: Ended | None, now: datetime) -> datetime:
    """From when a message's failing edit is given up after EDIT_PATIENCE: its supersession, its step's wait's
    end; never while its step waits (`now`), as it must still be told how the wait ends."""
    if waits:
        return now
    if message.superseded_at is not None:
        return message.superseded_at
    return ended.at if ended else message.posted_at or now


def _failed(db: Database, message: ChatMessage, refused: ChannelError, now: datetime, retry_seconds: float, *,
            since: datetime) -> None:
    """A failed edit: logged, its next try set (or its edits given up, the row settled without words)."""
    error = str(refused)
    attempt = message.edit_tries + 1
    again = next_try(now, attempt, retry_seconds, refused, since)
    where = {"platform": message.platform, "channel_id": message.channel_id, "message_id": message.message_id}
    logger.warning("run %s: the chat message of step %s was not edited: %s", message.run_id, message.step_id, error)

    def failed(tx: Tx) -> None:
        took = chat_messages.edit_failed(tx, message, again) if again else chat_messages.settle(tx, message, None, now)
        if took:
            log.append(tx, journal.chat_edit_failed(message.run_id, message.step_id, where, attempt, error, again), now)

    db.transaction(failed)


def next_try(now: datetime, attempt: int, first_wait: float, failed: ChannelError, ended_at: datetime) -> datetime | None:
    """When a message's edit that failed `attempt` times is tried again: `first_wait` doubled at each try up to
    EDIT_MOST_WAIT, never sooner than the platform asked; None (given up) when the message or its channel is
    gone, or that try would come more than EDIT_PATIENCE after its step's wait ended (`ended_at`)."""
    backoff = min(timedelta(seconds=first_wait * 2 ** min(attempt - 1, 16)), EDIT_MOST_WAIT)
    again = now + max(backoff, timedelta(seconds=failed.retry_after or 0))
    return None if failed.gone or again > ended_at + EDIT_PATIENCE else again
