"""The `discord:<channel id>` and `slack:<channel id>` channels: a notice posted by the community's own bot.

Invariant: a cue's message carries its buttons (Confirm, or a button per answer, Skip, I have it), and an
escalation of a step parked in doubt (a decision) carries Confirm, Skip and a send-again, each only where a
role mapped to the platform's people may press it (`render.for_readers`; a message left with none says to
open it on the console); either is recorded
(`store/chat_messages.py`) once the platform has taken it, so a later change of its step finds it. A
reminder or an escalation of a step whose message is recorded replies to that message (a Discord reply, a
Slack thread) without buttons; anything else is a plain message. The escalation channel's posts on Discord
ping ESCALATION_MENTION's role and no one else (its `<@&id>` heads the text, `allowed_mentions` names it
alone); configuration refuses that mention with a channel that could not ping it. A post the platform did not take raises
ChannelError (the step's retry, or the notice's `notice.failed` row), as every channel's does. Every Discord post
carries its notice's nonce (`nonce`), the same for each try of one notice and another once a person grants its
step new attempts: a try sent again after Discord took it but answered late gets that message back, recorded as
the first would have been, never a second copy (Slack has no such field: there a copy can still appear).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from ...db import Clock, Database
from ..actions.notice import Limit, Notice
from ..adapters.webhook_channel import DISCORD_CONTENT, SLACK_TEXT, discord_content, slack_text
from ..store import chat_messages
from .platforms import NONCE_CHARS, SLACK_SECTION_CHARS, DiscordApi, Message, SlackApi
from .render import CUE_CONTROLS, DECISION_CONTROLS, NOBODY_HERE, buttons, for_readers


class ChatChannel:
    def __init__(self, name: str, api: DiscordApi | SlackApi, channel_id: str, db: Database, clock: Clock, *,
                 mention_role: str | None = None):
        self.name = name
        self.mention_role = mention_role  # the Discord role every post pings (ESCALATION_MENTION; config: discord only)
        self.api = api
        self.channel_id = channel_id
        self.timeout = api.timeout
        self.db, self.clock = db, clock

    def post(self, notice: Notice) -> None:
        text = self._text(notice)
        step_id = notice.step_id
        once = nonce(notice, self.channel_id)
        if step_id is None:
            self.api.post(self.channel_id, Message(text, pings=self.mention_role), nonce=once)
            return
        cue = notice.kind == "cue"
        controls = CUE_CONTROLS if cue else DECISION_CONTROLS if notice.decision else None
        if controls is None:  # a reminder, or an escalation of a cue: a reply to the cue's message
            recorded = self.db.autocommit(lambda tx: chat_messages.of_step(tx, step_id, self.api.platform))
            here = [m for m in recorded if m.channel_id == self.channel_id]
            self.api.post(self.channel_id, Message(text, pings=self.mention_role),
                          reply_to=here[-1].message_id if here else None, nonce=once)
            return
        shown = for_readers(controls, self.api.mapped_roles, cue=cue)
        if not shown:
            text = self._text(replace(notice, text=f"{notice.text} ({NOBODY_HERE})"))
        message_id = self.api.post(self.channel_id, Message(text, buttons(notice.run_id, step_id, shown, notice.choices),
                                                            pings=self.mention_role), nonce=once)
        # guard: a-chat-message-is-not-recorded
        self.db.autocommit(lambda tx: chat_messages.record(tx, notice.run_id, step_id, self.api.platform,
                                                           self.channel_id, message_id, self.clock.now()))

    def _text(self, notice: Notice) -> str:
        if isinstance(self.api, DiscordApi):
            mention = f"<@&{self.mention_role}> " if self.mention_role else ""
            # guard: a-bot-escalation-drops-its-mention
            return mention + discord_content(notice, DISCORD_CONTENT.after(mention))
        # Slack counts the text escaped; its section block takes at most 3,000 characters of it.
        return slack_text(notice.message(Limit(min(SLACK_TEXT.most, SLACK_SECTION_CHARS), SLACK_TEXT.measure)))


def nonce(notice: Notice, channel_id: str) -> str:
    """The Discord nonce of `notice` posted to `channel_id`: a prefix of a hash (Discord takes NONCE_CHARS) of its
    delivery key, the same for every try of one notice (the step's retries, an escalation's tries), so a try
    Discord took but answered too late is answered with its message when sent again, and another once a
    person's retry or resend raised the step's allowance: within Discord's few minutes a cue posted again for
    that person would otherwise get back the message of its last round, already edited to say how it ended,
    without buttons. The channel is in it too, as Discord checks a nonce against all of the bot's messages."""
    seed = f"{notice.delivery_key}|{channel_id}"
    return hashlib.sha256(seed.encode()).hexdigest()[:NONCE_CHARS]
