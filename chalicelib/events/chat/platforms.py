"""Discord's and Slack's APIs, as the engine's bot calls them: post a message, edit it, edit an interaction's,
read a Slack user group's members.

Invariant: every call goes through `outbound.py` inside one overall deadline and reads at most
MAX_ANSWER_BYTES of the answer; a rate-limit answer (429, or Slack's `ratelimited`) is waited out and the
call sent again only when its `retry_after` / `Retry-After` fits in what is left of that deadline (else the
call fails naming the wait, and its caller's retry comes later: a wait that is no finite number of seconds is
none, and one past MOST_RETRY_AFTER is that, so a platform's `Infinity` never reaches a date); a 401 (Slack:
`invalid_auth`, `token_revoked`, `not_authed`) makes the token be read again past the secrets cache, and the
call is sent once more when that gives another token. Anything else but a 2xx (Slack: `"ok": true`) raises ChannelError:
nothing the platform did not take is taken for delivered.
"""

from __future__ import annotations

import json
import math
import re
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from ... import outbound
from ..actions.notice import ELLIPSIS, Limit, shorten
from ..actions.registry import shown_on_a_button
from ..adapters.signing import SigningKey
from ..errors import ChannelError, OutboundError, SecretUnreadable

MAX_ANSWER_BYTES = 64 * 1024
UNAUTHORISED, RATE_LIMITED = 401, 429
SLACK_UNAUTHORISED = ("invalid_auth", "token_revoked", "not_authed", "account_inactive")
SENDS_PER_CALL = 3  # the first send, and one more after a 401's new token or a rate limit's wait
GONE = (10003, 10008, "channel_not_found", "message_not_found")  # Discord's Unknown Channel and Message codes, Slack's
SLACK_SECTION_CHARS = 3000  # a section block's text, counted escaped
DISCORD_CONTENT_CHARS = 2000  # a bot's message content (the published schema allows 4,000: Discord refuses a bot's)
NONCE_CHARS = 25  # a Discord message's nonce, as a string, in Discord's published schema
DISCORD_MODAL_TITLE_CHARS = 45  # a modal's title, and a label's, in Discord's published schema
DISCORD_LABEL_CHARS = 80  # a button's label, in Discord's published schema (Slack's 75: BUTTON_LABEL_CHARS)
EPHEMERAL = 64  # a Discord message's flag: shown to the one who pressed alone
# The longest wait a rate limit's `retry_after` is taken for, 6 hours: settle.EDIT_PATIENCE is it (an edit waited
# past it is given up), so any wait a platform names is a date the tick can compute.
MOST_RETRY_AFTER = 6 * 60 * 60.0


@dataclass(frozen=True)
class Button:
    label: str
    custom_id: str  # Discord's custom_id, Slack's action_id and value: names the run, step, control (and choice)
    primary: bool = False
    asks: str | None = None  # what is asked before the press takes (Slack's confirm, Discord's modal): the console's question
    note: str | None = None  # the body field of the note the asking takes (Discord's modal; the console's dialog's)


@dataclass(frozen=True)
class Message:
    """A chat message, whichever platform: its text and its buttons (none: a message that only tells). Its last
    `kept` characters (how a step's wait ended, a refused press's why) are kept whole when it is fitted to a
    platform's limit (`fitted`): only what comes before them is shortened."""

    text: str
    buttons: tuple[Button, ...] = field(default=())
    kept: int = 0
    pings: str | None = None  # the one Discord role it may ping (an escalation's ESCALATION_MENTION), its <@&id> in text

    def noted(self, line: str) -> Message:
        """The message with `line` beneath it, kept whole as its last lines are."""
        return Message(f"{self.text}\n{line}", self.buttons, self.kept + 1 + len(line), self.pings)


def fitted(message: Message, most: int) -> str:
    """The message's text in at most `most` characters: what comes before its kept end shortened as a notice
    is (`shorten`: an ellipsis after it), the kept end whole; never cut inside an entity Slack's escaping made
    (`&amp;` cut to `&am…` would show as written)."""
    if len(message.text) <= most:
        return message.text
    split = len(message.text) - min(message.kept, most)
    shortened = shorten(message.text[:split], Limit(most - (len(message.text) - split)))
    return _CUT_ENTITY.sub(ELLIPSIS, shortened) + message.text[split:]


_CUT_ENTITY = re.compile(rf"&[a-z]{{0,3}}{ELLIPSIS}$")


def discord_body(message: Message) -> dict[str, Any]:
    """A message as Discord takes it (create, edit, an interaction's answer): content fitted to a bot's 2,000
    characters, no pings but the role it `pings`, action rows of at most five buttons (an empty list clears
    them)."""
    buttons = [{"type": 2, "style": 1 if b.primary else 2, "label": shorten(b.label, Limit(DISCORD_LABEL_CHARS)),
                "custom_id": b.custom_id} for b in message.buttons]
    # guard: a-discord-edit-past-2000-characters
    mentions = {"parse": [], "roles": [message.pings]} if message.pings else {"parse": []}
    return {"content": fitted(message, DISCORD_CONTENT_CHARS), "allowed_mentions": mentions,
            "components": [{"type": 1, "components": buttons[i:i + 5]} for i in range(0, len(buttons), 5)]}


def slack_blocks(message: Message) -> list[dict[str, Any]]:
    """A message as Slack's Block Kit shows it: its text (escaped as Slack's: `render.written`) fitted to a
    section's 3,000 characters, then its buttons (at most 25 to an actions block)."""
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn",
                                                                  "text": fitted(message, SLACK_SECTION_CHARS)}}]
    if message.buttons:
        blocks.append({"type": "actions", "elements": [
            {"type": "button", "text": {"type": "plain_text", "text": shown_on_a_button(b.label)}, "action_id": b.custom_id,
             "value": b.custom_id, **({"style": "primary"} if b.primary else {}), **_confirm(b)}
            for b in message.buttons]})
    return blocks


def slack_text_of(message: Message) -> str:
    """A message's `text` as Slack is sent it beside its blocks (the notification's words, and what Slack gives
    back in a press's payload): fitted as its section is, so no message of the engine's carries more than
    SLACK_SECTION_CHARS characters of it twice (`routes/chat.py` sizes a press's payload from that)."""
    return fitted(message, SLACK_SECTION_CHARS)


def _confirm(button: Button) -> dict[str, Any]:
    """Block Kit's own dialog before a button's press is sent (its question, then the button's label or Go back,
    as the console asks); nothing for a button that asks nothing."""
    if button.asks is None:
        return {}
    label = {"type": "plain_text", "text": button.label[:30]}
    return {"confirm": {"title": {"type": "plain_text", "text": f"{button.label[:99]}?"}, "confirm": label,
                        "text": {"type": "plain_text", "text": button.asks[:300]},
                        "deny": {"type": "plain_text", "text": "Go back"}}}


def private_body(words: str) -> dict[str, Any]:
    """Words for one person, as Discord takes them in an interaction's answer or follow-up: ephemeral, at most
    its 2,000 characters, mentioning nobody."""
    return {"content": words[:DISCORD_CONTENT_CHARS], "flags": EPHEMERAL, "allowed_mentions": {"parse": []}}


def discord_modal(button: Button, note_most: int) -> dict[str, Any]:
    """The dialog Discord shows before an asking button's press is made (a MODAL answer's data): the console's
    question as its title (whole beneath a shorter title where it does not fit), and its note optional, as the
    console asks it; its custom_id is the button's, so its submission names the run, step and control again.
    Discord draws its own Submit and Cancel."""
    question = button.asks or f"{button.label}?"
    fits = len(question) <= DISCORD_MODAL_TITLE_CHARS
    components: list[dict[str, Any]] = [] if fits else [{"type": 10, "content": question}]
    if button.note is not None:
        components.append({"type": 18, "label": f"{button.note.capitalize()} (optional)"[:DISCORD_MODAL_TITLE_CHARS],
                           "component": {"type": 4, "custom_id": button.note, "style": 2, "required": False,
                                         "max_length": note_most}})
    return {"custom_id": button.custom_id, "title": question if fits else f"{button.label}?"[:DISCORD_MODAL_TITLE_CHARS],
            "components": components or [{"type": 10, "content": question}]}


class ChatApi(ABC):
    """One platform's API at `url` with the bot's token (`token`, read through the secrets cache)."""

    platform = ""

    def __init__(self, url: str, token: SigningKey | None, *, timeout: float, mapped_roles: frozenset[str] = frozenset()):
        self.endpoint = outbound.Endpoint.parse(url)
        self.token = token
        self.timeout = timeout
        self.mapped_roles = mapped_roles  # the engine roles its people may hold: which buttons a message shows

    def _send(self, method: str, path: str, body: dict[str, Any], *, bot: bool = True,
              endpoint: outbound.Endpoint | None = None, form: bool = False) -> dict[str, Any]:
        """The answer's JSON object, or ChannelError; see the module's invariant. `form`: the body form-encoded
        (a Slack method that reads no JSON)."""
        endpoint = endpoint or self.endpoint
        deadline = time.monotonic() + self.timeout
        data = urlencode(body).encode() if form else json.dumps(body).encode()
        kind = "application/x-www-form-urlencoded" if form else "application/json; charset=utf-8"
        token = self._token() if bot else None
        for _ in range(SENDS_PER_CALL):
            headers = {"Content-Type": kind, "User-Agent": "event-run-engine"}
            if token is not None:
                headers["Authorization"] = self._authorization(token)
            left = deadline - time.monotonic()
            try:
                send = outbound.patch if method == "PATCH" else outbound.post
                answer = send(endpoint, endpoint.target(path), data, headers, timeout=max(left, 0.001),
                              max_answer_bytes=MAX_ANSWER_BYTES)
            except OutboundError as error:
                raise ChannelError(f"{self.platform}: {error}") from None
            parsed = _json(answer)
            failure = self._failure(answer, parsed)
            if failure is None:
                return parsed
            if failure == UNAUTHORISED and token is not None and self.token is not None:
                fresh = self.token.reread(token)
                if fresh is not None:
                    token = fresh
                    continue
                raise ChannelError(f"{self.platform} refused the bot's token (401), and reading it again gave no other")
            if failure == RATE_LIMITED:
                wait = _retry_after(answer, parsed)
                # guard: a-chat-rate-limit-is-not-waited-out
                if wait is not None and wait < deadline - time.monotonic():
                    time.sleep(wait)
                    continue
                after = "naming no usable wait" if wait is None else f"retry after {wait} s"
                raise ChannelError(f"{self.platform} is rate limiting the bot: {after}", retry_after=wait)
            raise ChannelError(f"{self.platform} answered HTTP {answer.status}: {_said(answer, parsed)}",
                               gone=parsed.get("code") in GONE or parsed.get("error") in GONE)
        raise ChannelError(f"{self.platform}: no answer taken after {SENDS_PER_CALL} sends")

    def _token(self) -> str:
        if self.token is None:
            raise ChannelError(f"{self.platform}: set the bot's token ({self.platform.upper()}_BOT_TOKEN or its _SECRET_ARN)")
        try:
            return self.token.current()
        except SecretUnreadable as error:
            raise ChannelError(f"{self.platform}: not sent: {error.messages[0]}") from None

    @abstractmethod
    def _authorization(self, token: str) -> str:
        """The Authorization header's value for the bot's `token`."""

    def _failure(self, answer: outbound.Answer, parsed: dict[str, Any]) -> int | None:
        """None when the platform took the call; else UNAUTHORISED, RATE_LIMITED or the HTTP status."""
        if answer.status == UNAUTHORISED:
            return UNAUTHORISED
        if answer.status == RATE_LIMITED:
            return RATE_LIMITED
        return None if 200 <= answer.status < 300 and not answer.truncated else answer.status


class DiscordApi(ChatApi):
    platform = "discord"

    def _authorization(self, token: str) -> str:
        return f"Bot {token}"

    def post(self, channel_id: str, message: Message, reply_to: str | None = None, nonce: str | None = None) -> str:
        """POST /channels/{id}/messages; the new message's id. A reply references the message it answers. With
        `nonce` (at most NONCE_CHARS), enforced: a message the bot created with the same nonce in the past few
        minutes is answered instead of a new one (a post Discord took but answered after the deadline, sent again
        by the step's retry, is the same message)."""
        body = discord_body(message)
        if reply_to is not None:
            body["message_reference"] = {"message_id": reply_to, "fail_if_not_exists": False}
        if nonce is not None:
            body.update(nonce=nonce, enforce_nonce=True)
        posted = self._send("POST", f"/channels/{channel_id}/messages", body)
        if not isinstance(posted.get("id"), str):
            raise ChannelError("discord: the answer to a message carried no id")
        return posted["id"]

    def edit(self, channel_id: str, message_id: str, message: Message) -> None:
        """PATCH /channels/{id}/messages/{message id}."""
        self._send("PATCH", f"/channels/{channel_id}/messages/{message_id}", discord_body(message))

    def edit_original(self, application_id: str, token: str, message: Message) -> None:
        """PATCH /webhooks/{application id}/{interaction token}/messages/@original: the message a deferred press
        came from (the interaction's token is its authority: no bot token)."""
        self._send("PATCH", f"/webhooks/{application_id}/{token}/messages/@original", discord_body(message), bot=False)

    def say_privately(self, application_id: str, token: str, words: str) -> None:
        """POST /webhooks/{application id}/{interaction token}: a follow-up only the presser sees (`flags: 64`,
        ephemeral), after a deferred answer; the message the press came from is left as it is."""
        self._send("POST", f"/webhooks/{application_id}/{token}", private_body(words), bot=False)


class SlackApi(ChatApi):
    platform = "slack"

    def _authorization(self, token: str) -> str:
        return f"Bearer {token}"

    def _failure(self, answer: outbound.Answer, parsed: dict[str, Any]) -> int | None:
        error = parsed.get("error")
        if error in SLACK_UNAUTHORISED:
            return UNAUTHORISED
        if error == "ratelimited":
            return RATE_LIMITED
        failed = super()._failure(answer, parsed)
        if failed is None and parsed.get("ok") is False:
            return answer.status
        return failed

    def post(self, channel_id: str, message: Message, reply_to: str | None = None, nonce: str | None = None) -> str:
        """chat.postMessage; the message's ts. A reply goes in the thread of the message it answers. Slack has no
        nonce (`nonce` is not sent): a post Slack took but answered after the deadline is posted again by the retry."""
        body: dict[str, Any] = {"channel": channel_id, "text": slack_text_of(message), "blocks": slack_blocks(message)}
        if reply_to is not None:
            body["thread_ts"] = reply_to
        posted = self._send("POST", "/chat.postMessage", body)
        if not isinstance(posted.get("ts"), str):
            raise ChannelError("slack: the answer to a message carried no ts")
        return posted["ts"]

    def edit(self, channel_id: str, message_id: str, message: Message) -> None:
        """chat.update of the message `message_id` (its ts)."""
        self._send("POST", "/chat.update", {"channel": channel_id, "ts": message_id, "text": slack_text_of(message),
                                            "blocks": slack_blocks(message)})

    def edit_original(self, response_url: str, message: Message) -> None:
        """The press's `response_url`: the message it came from, replaced (no bot token: the URL is its authority)."""
        try:
            endpoint = outbound.Endpoint.parse(response_url)
        except ValueError:
            raise ChannelError("slack: the press's response_url is not an http(s) URL") from None
        self._send("POST", "", {"replace_original": True, "text": slack_text_of(message), "blocks": slack_blocks(message)},
                   bot=False, endpoint=endpoint)

    def group_members(self, group_id: str) -> frozenset[str]:
        """usergroups.users.list (scope usergroups:read; form-encoded, as Slack's read methods take): the user ids
        in the user group `group_id`."""
        listed = self._send("POST", "/usergroups.users.list", {"usergroup": group_id}, form=True).get("users")
        if not isinstance(listed, list) or not all(isinstance(user, str) for user in listed):
            raise ChannelError(f"slack: the members of {group_id} came as no list of user ids")
        return frozenset(listed)

    def say_privately(self, response_url: str, words: str) -> None:
        """A refusal only the presser sees (`response_type: ephemeral`), through the press's response_url; `words`
        as Slack shows them (authored words in them escaped: `render.written`)."""
        try:
            endpoint = outbound.Endpoint.parse(response_url)
        except ValueError:
            raise ChannelError("slack: the press's response_url is not an http(s) URL") from None
        self._send("POST", "", {"response_type": "ephemeral", "replace_original": False, "text": words},
                   bot=False, endpoint=endpoint)


def _json(answer: outbound.Answer) -> dict[str, Any]:
    try:
        parsed = json.loads(answer.body or b"{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _retry_after(answer: outbound.Answer, parsed: dict[str, Any]) -> float | None:
    """Seconds to wait: Discord's body `retry_after`, else the `Retry-After` header (Slack's); a value that is no
    finite number of seconds (JSON's `Infinity`, `1e400`, NaN) is none, and a longer one than MOST_RETRY_AFTER
    is taken for that (a wait past it gives the edit up: `settle.EDIT_PATIENCE`)."""
    for raw in (parsed.get("retry_after"), answer.headers.get("retry-after")):
        try:
            seconds = float(raw) if raw is not None and not isinstance(raw, bool) else None
        except (TypeError, ValueError, OverflowError):
            continue
        # guard: a-platforms-endless-wait-is-taken
        if seconds is not None and math.isfinite(seconds) and seconds >= 0:
            return min(seconds, MOST_RETRY_AFTER)
    return None


def _said(answer: outbound.Answer, parsed: dict[str, Any]) -> str:
    said = parsed.get("message") or parsed.get("error") or answer.body[:200].decode("utf-8", "replace")
    return str(said).strip()[:200]
