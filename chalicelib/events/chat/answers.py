"""A press answered within the platforms' three seconds, always; finished after when the database is slow.

Invariant: Discord and Slack drop an interaction not answered within 3 s. A Discord button that asks first
(`render.ASKED`: skip, resend) is answered at once with its modal (MODAL, type 9), the database not asked: only its submission
(MODAL_SUBMIT) is the press, and a modal cancelled sends nothing. The press is made on a worker
that the answer waits for at most PRESS_ANSWER_SECONDS: done by then, Discord's answer is the message as the
press left it (UPDATE_MESSAGE, type 7) or a private refusal (type 4, flags 64); not done (an Aurora resuming
from a pause takes 15–30 s), the answer is an acknowledgement (DEFERRED_UPDATE_MESSAGE, type 6) and the
press is finished after (waiting up to FINISH_WAIT_SECONDS for the database), and its message edited through
the interaction (Discord's `@original`, valid 15 minutes; Slack's `response_url`). A press refused, or one that
could not be made (the database never answered, or anything failed: logged), is said to its presser alone,
at once or after (Discord's ephemeral follow-up, Slack's ephemeral `response_url`), the message left as it is for
everyone: never silence, and never one person's refusal on the channel's message. Slack's answer is always an empty
200, everything after it through `response_url`, who may press included (a mapped user group's members are
read there, `groups.py`). On AWS the finishing is a real asynchronous invocation of
the chat function (EVENTS_CHAT_FUNCTION_ARN), not a thread Lambda freezes; and the API's worker, which Lambda
freezes with its container once the answer has gone (inside a connect, or queued), begins its press only before
the answer (WORKER_MARGIN_SECONDS ahead of it) and never after: the invocation is the one half that acts late.
The press's interaction id is its Idempotency-Key, so the worker and that invocation both finishing it change the
run once. A press that made
work wakes a sleeping deployment once it has committed (`nudge.after_work_created`), as the API's controls do.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from ... import runtime
from ...config import Settings
from .. import nudge
from ..errors import ChannelError, Invalid, Refused, TooLate
from ..model import MAX_NOTE
from ..setting_keys import setting_key
from ..store import chat_messages
from .groups import is_group, roles_from_groups
from .interactions import (
    COMPONENT,
    MODAL_SUBMIT,
    ChatPress,
    Pressing,
    allowed,
    perform,
    read_discord,
    read_slack,
)
from .platforms import DiscordApi, Message, SlackApi, discord_body, discord_modal, private_body
from .render import Pressed, asked, mapped_roles
from .signatures import check_discord, check_slack

logger = logging.getLogger(__name__)

# The most an answer waits for the press: the rest of Discord's 3 s is the way there and back and, on AWS, the
# chat function's asynchronous invoke (a cold container's boto3 client first): a second of margin.
PRESS_ANSWER_SECONDS = 1.5
# How long the finishing half waits for a database resuming from a pause (Aurora: 15–30 s): the chat function's
# 60 s timeout less a nudge's two AWS calls (2 × AWS_CALL_SECONDS, 22 s at most) and the edit's deadline. The
# API's own wait (EVENT_API_DATABASE_WAIT_SECONDS, at most 20 s) is held to API Gateway's 29 s; this half answers
# nobody, so it waits longer.
FINISH_WAIT_SECONDS = 30.0
EDIT_SECONDS = 5.0  # the deadline of the edit a finished press makes
# On AWS, how long before its answer the API's worker may last begin a press (its transaction takes milliseconds):
# one begun in time is done before the answer, so none is frozen with its container holding the run's locks.
WORKER_MARGIN_SECONDS = 0.25
# What a press that could not be made says to its presser: it may even have taken (a commit whose answer was
# lost), and a second press says which (refused, naming who ended the wait, when the first took).
NOT_MADE = ("Your press could not be made just now: the event engine did not reach its database in time. Press again;"
            " if your first press took after all, the answer says so.")
PING = 1
PONG, CHANNEL_MESSAGE, DEFERRED_UPDATE, UPDATE_MESSAGE, MODAL = 1, 4, 6, 7, 9
_workers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="chat-press")


def discord(headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
    """POST /integrations/discord/interactions: its answer (Unauthorized before anything is read)."""
    settings = runtime.settings()
    check_discord(headers, body, settings.discord_public_key, time.time())
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        raise Invalid("an interaction's body is a JSON object") from None
    if not isinstance(payload, dict) or payload.get("type") not in (PING, COMPONENT, MODAL_SUBMIT):
        raise Invalid("an interaction this endpoint takes is a PING (type 1), a button press (type 3) or a modal's"
                      " submission (type 5)")
    if payload["type"] == PING:
        return {"type": PONG}
    try:
        press = read_discord(payload, settings)
    except Refused as why:
        return _privately(str(why))
    # guard: a-discord-skip-is-one-tap
    asking = asked(Pressed(press.run_id, press.step_id, press.control, press.choice)) if payload["type"] == COMPONENT else None
    if asking is not None:  # the console's question first: its submission is the press (no database asked)
        return {"type": MODAL, "data": discord_modal(asking, MAX_NOTE)}
    pressing = _within(press, settings)
    if pressing is None:  # not done in time: finished after, its answer a follow-up or an edit
        return {"type": DEFERRED_UPDATE}
    if pressing.refused is not None or pressing.message is None:
        return _privately(pressing.refused or "That step is gone: nothing was changed.")
    return {"type": UPDATE_MESSAGE, "data": discord_body(pressing.message)}


def slack(headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
    """POST /integrations/slack/interactions: an empty 200 at once; the press is finished after."""
    settings = runtime.settings()
    check_slack(headers, body, _slack_signing_secret(settings), time.time())
    try:
        press = read_slack(body, settings)
    except Refused as why:
        _hand_off({"refusal": str(why), "response_url": why.response_url}, settings)
        return {}
    _hand_off({"press": press.event()}, settings)
    return {}


def _slack_signing_secret(settings: Settings) -> str | None:
    """SLACK_SIGNING_SECRET, or the secret SLACK_SIGNING_SECRET_ARN names, read through the secrets cache (a
    secret that cannot be read is SecretUnreadable: 503, which Slack shows its presser as a failed press)."""
    if settings.slack_signing_secret or not settings.slack_signing_secret_arn:
        return settings.slack_signing_secret
    from ...secrets import plain_secret  # boto3 only where a secret ARN is configured

    return plain_secret(settings.slack_signing_secret_arn, "SLACK_SIGNING_SECRET_ARN")


def _privately(words: str) -> dict[str, Any]:
    return {"type": CHANNEL_MESSAGE, "data": private_body(words)}


def _within(press: ChatPress, settings: Settings) -> Pressing | None:
    """The press made by a worker, if it is done within PRESS_ANSWER_SECONDS; else None, and it is finished
    after (by the worker itself off AWS, by the chat function's invocation on it).

    On AWS the worker is frozen with its container once the answer has gone and may go on minutes later (inside
    a connect, or queued behind other presses): there it begins the press only before WORKER_MARGIN_SECONDS
    ahead of the answer and never once the answer has gone (`in_time`, read at the transaction's start), so the
    chat function's invocation is the only half that acts after the answer."""
    answer_at = time.monotonic() + PRESS_ANSWER_SECONDS
    on_aws = _lambda_function(settings) is not None
    state: dict[str, Any] = {}
    lock, done = threading.Lock(), threading.Event()

    def in_time() -> bool:
        with lock:
            return not state.get("answered") and time.monotonic() < answer_at - WORKER_MARGIN_SECONDS

    def work() -> None:
        if on_aws:
            pressing = _pressed(press, settings, answer_at - WORKER_MARGIN_SECONDS, in_time)
        else:
            pressing = _pressed(press, settings, time.monotonic() + settings.api_database_wait_seconds)
        with lock:
            if pressing is not None:
                state["pressing"] = pressing
            late = state.get("late", False)
        done.set()
        if late and pressing is not None:
            _said_after(press, pressing, settings)

    _workers.submit(work)
    done.wait(PRESS_ANSWER_SECONDS)
    with lock:
        if "pressing" in state:
            return state["pressing"]
        if not on_aws:
            state["late"] = True
            return None
        state["answered"] = True  # from now on the worker does nothing: the chat function makes the press
    _hand_off({"press": press.event()}, settings)
    return None


def _pressed(press: ChatPress, settings: Settings, until: float, in_time: Callable[[], bool] | None = None) -> Pressing | None:
    """The press made, waiting until `until` (time.monotonic) for a database resuming from a pause; one that
    could not be made (the database never answered, or anything failed) is refused with NOT_MADE, and logged.
    With `in_time` (the API's worker on AWS): None once it says the answer has gone or is about to, the press
    not begun (or a failure then: not done in time), for the chat function's invocation to make."""
    db = runtime.database()
    try:
        with db.waiting_until(until):
            pressing = perform(db, runtime.clock(), press, mapped_roles(settings, press.platform), in_time)
    except TooLate:
        logger.info("run %s: a %s press of step %s is made by the chat function: its answer went first",
                    press.run_id, press.platform, press.step_id)
        return None
    except Exception:
        if in_time is not None and not in_time():
            logger.info("run %s: a %s press of step %s was not made before its answer: the chat function makes it",
                        press.run_id, press.platform, press.step_id, exc_info=True)
            return None
        logger.exception("run %s: a %s press of step %s could not be made", press.run_id, press.platform, press.step_id)
        return Pressing(None, NOT_MADE)
    # guard: a-chat-press-does-not-nudge-a-sleeping-deployment
    if pressing.made_work_at is not None:  # committed: a sleeping deployment is woken for it, as by the console's
        nudge.after_work_created(db, settings, pressing.made_work_at)
    return pressing


def _lambda_function(settings: Settings) -> str | None:
    """The chat function to invoke for the asynchronous half, on AWS (None: finish on this process's worker)."""
    return settings.chat_function_arn if os.environ.get("AWS_LAMBDA_FUNCTION_NAME") else None


def _hand_off(event: dict[str, Any], settings: Settings) -> None:
    arn = _lambda_function(settings)
    if arn is not None:
        from ..adapters.aws import invoke_chat

        invoke_chat(arn, event)
    else:
        _workers.submit(finish, event)


def finish(event: dict[str, Any]) -> None:
    """The asynchronous half: the press made (again: a repeat changes nothing) and its message edited, or a
    Slack refusal said privately."""
    settings = runtime.settings()
    if "refusal" in event:
        _say_privately(settings, event["response_url"], event["refusal"])
        return
    press = ChatPress(**event["press"])
    if press.platform == "slack":
        try:
            press = _with_groups(press, settings)
        except Refused as why:
            _say_privately(settings, why.response_url, str(why))
            return
    pressing = _pressed(press, settings, time.monotonic() + FINISH_WAIT_SECONDS)  # never None: no `in_time` here
    _said_after(press, pressing or Pressing(None, NOT_MADE), settings)


def _with_groups(press: ChatPress, settings: Settings) -> ChatPress:
    """A Slack press with the roles of the mapped user groups its user is in, held to who may press."""
    unread: tuple[str, ...] = ()
    if any(is_group(chat_id) for chat_id, _ in settings.slack_roles):
        token = setting_key(settings.slack_bot_token, settings.slack_bot_token_secret_arn, "SLACK_BOT_TOKEN_SECRET_ARN")
        bot = SlackApi(settings.slack_api_url, token, timeout=EDIT_SECONDS)
        gained, unread = roles_from_groups(bot, settings.slack_roles, press.user_id, frozenset(press.roles))
        press = replace(press, roles=sorted({*press.roles, *gained}))
    return allowed(press, press.reply.get("response_url", ""), unread)


def _said_after(press: ChatPress, pressing: Pressing, settings: Settings) -> None:
    """A press finished after its answer: its message as the press left it, edited through the interaction; a
    press refused or not made, why, to its presser alone (the message left as it is: the tick's chore edits it once
    its step's wait ends)."""
    try:
        if pressing.refused is not None:
            if press.platform == "discord":
                DiscordApi(settings.discord_api_url, None, timeout=EDIT_SECONDS).say_privately(
                    press.reply["application_id"], press.reply["token"], pressing.refused)
            else:
                _slack_api(settings).say_privately(press.reply.get("response_url", ""), pressing.refused)
            return
        shown = pressing.message or Message("That step is gone.")
        if press.platform == "discord":
            DiscordApi(settings.discord_api_url, None, timeout=EDIT_SECONDS).edit_original(
                press.reply["application_id"], press.reply["token"], shown)
        else:
            _slack_api(settings).edit_original(press.reply.get("response_url", ""), shown)
    except ChannelError as error:
        logger.warning("run %s: a %s press's answer was not said: %s", press.run_id, press.platform, error)
        return
    runtime.database().autocommit(lambda tx: chat_messages.edited_by_a_press(
        tx, press.platform, press.message_id, press.run_id, press.step_id))


def _say_privately(settings: Settings, response_url: str, words: str) -> None:
    """Why a Slack press was refused, to its presser alone; a response_url that fails (lapsed after 30 minutes,
    or none) is logged, never raised: the press changed nothing either way."""
    try:
        _slack_api(settings).say_privately(response_url, words)
    except ChannelError as error:
        logger.warning("a refused Slack press could not be told why: %s", error)


def _slack_api(settings: Settings) -> SlackApi:
    return SlackApi(settings.slack_api_url, None, timeout=EDIT_SECONDS)
