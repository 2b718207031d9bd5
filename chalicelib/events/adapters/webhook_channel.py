"""The `webhook:<url>` channel: one signed JSON POST per notice, in the shape Discord and Slack accept.

    {"content": <message for Discord, ≤ 2,000 characters>, "text": <message for Slack, ≤ 40,000 characters>,
     "allowed_mentions": {"parse": []},
     "event": {"kind": "cue" | "announce" | "advance" | "reminder" | "escalation" | "stall", "run_id",
               "step_id" (null for advance and stall), "step_named" (its one name; null as step_id),
               "idempotency_key"}}

Discord reads `content` and Slack `text`; each ignores the other's fields. Each is
shortened to its service's limit (DISCORD_CONTENT, SLACK_TEXT) by the notice's one
rule: the text cut with an ellipsis, the run, step and link kept. Nobody
an authored text happens to name is pinged: `text` escapes `&`, `<` and `>` as
Slack requires (so `<!channel>`, `<!here>` and `<@U…>` show as written), and
`content` breaks `@everyone` and `@here` with a zero-width space on top of
`allowed_mentions` (which stops Discord's pings, user and role mentions too). The escalation channel
may ping one Discord role (ESCALATION_MENTION): its `<@&id>` heads `content`, and `allowed_mentions`
names that role alone. A
receiver of its own checks `X-Event-Signature` exactly as the game bridge does
(HMAC-SHA256 of "{X-Event-Timestamp}.{body}" with WEBHOOK_SECRET) and reads the
run, step, kind and idempotency key from the signed body's `event`: a replay
cannot change them. The `Idempotency-Key` and `X-Event-Run/Step/Kind` headers
repeat them for routing, outside the signature.

Invariant: only a 2xx answer within the channel's timeout is a delivery;
anything else (a key that cannot be read among it) raises ChannelError, so the
step is retried with the same key.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from ... import outbound
from ..actions.notice import Limit, Notice
from ..errors import ChannelError, OutboundError, SecretUnreadable
from .signing import SigningKey, post_signed

DISCORD_CONTENT = Limit(2000)  # execute_webhook's `content`: Discord answers 400 past it
MAX_ANSWER_BYTES = 64 * 1024  # the answer is only looked at for its status


class WebhookChannel:
    def __init__(self, name: str, url: str, secret: str | SigningKey, *, timeout: float,
                 mention_role: str | None = None):
        self.name = name
        self.timeout = timeout
        self.mention_role = mention_role  # a Discord role id every post of this channel pings
        self._endpoint = outbound.Endpoint.parse(url)
        self._key = secret if isinstance(secret, SigningKey) else SigningKey.fixed(secret)

    def post(self, notice: Notice) -> None:
        mention = f"<@&{self.mention_role}> " if self.mention_role else ""
        mentions = {"parse": [], "roles": [self.mention_role]} if self.mention_role else {"parse": []}
        # guard: discord-content-past-its-limit-with-the-mention
        content = mention + discord_content(notice, DISCORD_CONTENT.after(mention))
        # guard: slack-text-past-its-limit
        text = slack_text(notice.message(SLACK_TEXT))
        body = json.dumps({
            "content": content,
            "text": text,
            "allowed_mentions": mentions,
            "event": {"kind": notice.kind, "run_id": notice.run_id, "step_id": notice.step_id,
                      "step_named": notice.step_named, "idempotency_key": notice.delivery_key},
        }).encode()
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": notice.delivery_key,
            "X-Event-Run": str(notice.run_id),
            "X-Event-Step": "" if notice.step_id is None else str(notice.step_id),
            "X-Event-Kind": notice.kind,
        }
        try:
            answer = post_signed(
                self._endpoint, self._endpoint.target(), body, headers, self._key, notice.at,
                # guard: webhook-post-without-the-channels-timeout
                timeout=self.timeout, max_answer_bytes=MAX_ANSWER_BYTES,
            )
        # guard: webhook-unreachable-is-not-a-channel-error
        except OutboundError as error:
            raise ChannelError(f"webhook: {error}") from None
        # guard: a-post-without-its-key-is-an-internal-error
        except SecretUnreadable as error:  # a key never read (the rehearsal channel's alone): nothing was sent
            raise ChannelError(f"webhook: not sent: {error.messages[0]}") from None
        # guard: webhook-3xx-is-a-delivery
        if not 200 <= answer.status < 300:
            reason = answer.body[:200].decode("utf-8", "replace").strip()
            raise ChannelError(f"webhook answered HTTP {answer.status}" + (f": {reason}" if reason else ""))


def slack_text(message: str) -> str:
    """Slack's escaping: `&`, `<` and `>` as entities, so no control sequence (`<!channel>`) is read."""
    return message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# Slack counts the text it is sent, entities and all; it cuts a longer one rather than refusing it.
SLACK_TEXT = Limit(40_000, lambda message: len(slack_text(message)))

_BROADCAST = re.compile(r"@(everyone|here)")


def discord_text(message: str) -> str:
    """Authored words for Discord: `@everyone` and `@here` broken by a zero-width space, so they neither ping
    (no message of the engine's allows it) nor show as the highlighted broadcast they are not."""
    return _BROADCAST.sub("@\u200b\\1", message)


def discord_content(notice: Notice, limit: Limit) -> str:
    """The message for Discord's `content`, its authored text (and the step's name: a cue's instruction may name
    it) `discord_text`, then shortened (never the run, step or link) to `limit`."""
    named = None if notice.step_named is None else discord_text(notice.step_named)
    return replace(notice, text=discord_text(notice.text), step_named=named).message(limit)
