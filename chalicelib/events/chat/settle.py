"""The tick's chore that tells a chat message how its step's wait ended, whoever ended it.

Invariant: every message whose step no longer waits is edited once to say how its wait ended, who did it
and when, its buttons gone — a press in the chat, on the console or through the API, a timeout, a cancel —
because the tick, not the press, finds it (`chat_messages.unsettled`): the edit is made, then the row is
settled (compare-and-set); a failed edit is tried again after the retry backoff, each failure logged
(`chat.edit_failed`), and given up (the row settled without words) after the attempt ceiling. A message a
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
from ..model import Step
from ..store import chat_messages, log, steps
from ..store.chat_messages import ChatMessage, Ended
from . import ChatApis
from .platforms import DiscordApi, SlackApi
from .render import current

logger = logging.getLogger(__name__)

MESSAGES_PER_TICK = 50


def settle_messages(db: Database, apis: ChatApis, now: datetime, *, retry_seconds: float, max_attempts: int,
                    affords: Callable[[float], bool]) -> int:
    """Edit the due messages while the tick `affords` each edit's deadline; how many were edited."""
    edited = 0
    for message in db.autocommit(lambda tx: chat_messages.unsettled(tx, now, MESSAGES_PER_TICK)):
        api = apis.of(message.platform)
        if api is None or not affords(api.timeout):
            continue
        edited += _settle_one(db, api, message, now, retry_seconds, max_attempts)
    return edited


def _settle_one(db: Database, api: DiscordApi | SlackApi, message: ChatMessage, now: datetime, retry_seconds: float,
                max_attempts: int) -> int:
    def read(tx: Tx) -> tuple[Step, Ended | None]:
        step = must_exist(steps.get_on_run(tx, message.run_id, message.step_id))
        return step, chat_messages.how_it_ended(tx, message.run_id, message.step_id)

    step, ended = db.autocommit(read)
    shown = current(step, ended, message.platform, api.mapped_roles)
    try:
        api.edit(message.channel_id, message.message_id, shown)
    except ChannelError as refused:
        error = str(refused)
        attempt = message.edit_tries + 1
        again = now + timedelta(seconds=retry_seconds) if attempt < max_attempts else None
        where = {"platform": message.platform, "channel_id": message.channel_id, "message_id": message.message_id}
        logger.warning("run %s: the chat message of step %s was not edited: %s", message.run_id, message.step_id, error)

        def failed(tx: Tx) -> None:
            took = chat_messages.edit_failed(tx, message, again) if again else chat_messages.settle(tx, message, None, now)
            if took:
                log.append(tx, journal.chat_edit_failed(message.run_id, message.step_id, where, attempt, error, again), now)

        db.transaction(failed)
        return 0
    db.autocommit(lambda tx: chat_messages.settle(tx, message, shown.text.rsplit("\n", 1)[-1], now))
    return 1
