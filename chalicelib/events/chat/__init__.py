"""Acting where people are: a cue's Discord or Slack message carries its buttons, a press there is the control.

Invariant: a press from a chat message is the console's control — the same command on the same template
(`commands.protocol.within`), guards, roles and log rows, in one transaction — pressed by the chat identity
its platform signed for (`discord:<user id>`, `slack:<user id>`) with the engine roles the deployment maps
to it, and a message is edited once to say how its step's wait ended, whoever ended it (or that it was asked
again below), and while it waits to name whoever has it now.

    platforms.py     Discord's and Slack's APIs through outbound.py (deadline, cap, 429s, a 401's re-read token)
    render.py        what a message says, its buttons, and what a button's identifier names
    channel.py       the `discord:` and `slack:` channels: a cue's message with its buttons, recorded
    settle.py        the tick's chore: a message whose step no longer waits (or was asked again) is edited to say
                     so, and one whose cue changed hands to name its holder
    signatures.py    the platforms' signatures on an interaction (Ed25519; Slack's v0 HMAC)
    interactions.py  a press: who, may they, the control in one transaction, the message it leaves
    groups.py        the roles a Slack user group gives, its members read with the bot's token and kept a minute
    answers.py       the press answered within the platforms' 3 s, or acknowledged and finished after
"""

from __future__ import annotations

from dataclasses import dataclass

from .platforms import DiscordApi, SlackApi


@dataclass(frozen=True)
class ChatApis:
    """The deployment's bots: Discord's and Slack's APIs (None: not configured)."""

    discord: DiscordApi | None = None
    slack: SlackApi | None = None

    def of(self, platform: str) -> DiscordApi | SlackApi | None:
        return self.discord if platform == "discord" else self.slack if platform == "slack" else None

    def platforms(self) -> frozenset[str]:
        """The platforms whose messages this deployment can edit."""
        return frozenset(name for name in ("discord", "slack") if self.of(name) is not None)
