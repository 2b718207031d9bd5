"""The tick's chore that tells a chat message how its step's wait ended, whoever ended it.

Invariant: every message whose step no longer waits is edited once to say how its wait ended, who did it
and when, its buttons gone — a press in the chat, on the console or through the API, a timeout, a cancel —
because the tick, not the press, finds it (`chat_messages.unsettled`): the edit is made, then the row is
settled (compare-and-set); a failed edit is tried again, each failure logged (`chat.edit_failed`), after
the step rules' retry backoff doubled at each try up to EDIT_MOST_WAIT, and never sooner than the platform's
own wait (a rate limit's `retry_after`, which holds the channel's other edits to the next tick too, rather than
spend a 429 on each): an edit is idempotent and cheap, so it outlives a rate limit, a
permission being fixed or an outage, and is given up (the row settled without words) only when the platform
says the message or its channel is gone, or EDIT_PATIENCE after the step's wait ended. A message a
chat press already edited is edited here too: the press's own edit (a type 7 answer the engine cannot
confirm landed, `@original`, Slack's `response_url`) may have failed, and one idempotent edit more per press
is the price of a message that always ends up saying how its step ended.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from ...db import Database, Tx, must_exist
from .. import journal
from ..errors import ChannelError
from ..lifecycle import RunMode
from ..model import Step
from ..store import chat_messages, log, runs, steps
from ..store.chat_messages import ChatMessage, Ended
from . import ChatApis
from .platforms import DiscordApi, SlackApi
from .render import current

logger = logging.getLogger(__name__)

MESSAGES_PER_TICK = 50
EDIT_MOST_WAIT = timedelta(minutes=30)  # the longest wait between two tries of an edit, but a platform's own
EDIT_PATIENCE = timedelta(hours=6)  # how long after its step's wait ended a message's edit is still tried


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
        refused = _settle_one(db, api, message, now, retry_seconds)
        if refused is None:
            edited += 1
        elif refused.retry_after is not None:
            limited.add(channel)
    return edited


def _settle_one(db: Database, api: DiscordApi | SlackApi, message: ChatMessage, now: datetime,
                retry_seconds: float) -> ChannelError | None:
    """The message edited and settled; or why its edit failed, logged and its next try set."""
    def read(tx: Tx) -> tuple[Step, RunMode, Ended | None]:
        step = must_exist(steps.get_on_run(tx, message.run_id, message.step_id))
        mode = must_exist(runs.get(tx, message.run_id)).mode
        return step, mode, chat_messages.how_it_ended(tx, message.run_id, message.step_id)

    step, mode, ended = db.autocommit(read)
    shown = current(step, mode, ended, message.platform, api.mapped_roles)
    try:
        api.edit(message.channel_id, message.message_id, shown)
    except ChannelError as refused:
        error = str(refused)
        attempt = message.edit_tries + 1
        again = next_try(now, attempt, retry_seconds, refused, ended.at if ended else message.posted_at or now)
        where = {"platform": message.platform, "channel_id": message.channel_id, "message_id": message.message_id}
        logger.warning("run %s: the chat message of step %s was not edited: %s", message.run_id, message.step_id, error)

        def failed(tx: Tx) -> None:
            took = chat_messages.edit_failed(tx, message, again) if again else chat_messages.settle(tx, message, None, now)
            if took:
                log.append(tx, journal.chat_edit_failed(message.run_id, message.step_id, where, attempt, error, again), now)

        db.transaction(failed)
        return refused
    db.autocommit(lambda tx: chat_messages.settle(tx, message, shown.text.rsplit("\n", 1)[-1], now))
    return None


def next_try(now: datetime, attempt: int, first_wait: float, failed: ChannelError, ended_at: datetime) -> datetime | None:
    """When a message's edit that failed `attempt` times is tried again: `first_wait` doubled at each try up to
    EDIT_MOST_WAIT, never sooner than the platform asked; None (given up) when the message or its channel is
    gone, or that try would come more than EDIT_PATIENCE after its step's wait ended (`ended_at`)."""
    backoff = min(timedelta(seconds=first_wait * 2 ** min(attempt - 1, 16)), EDIT_MOST_WAIT)
    again = now + max(backoff, timedelta(seconds=failed.retry_after or 0))
    return None if failed.gone or again > ended_at + EDIT_PATIENCE else again
