"""The chat platforms' interaction endpoints: a press of a Discord or Slack message's button.

Not behind the console's token: each request is signed by its platform, and the signature is checked before
anything of it is read (`events/chat/signatures.py`); the press is then the control it names, as the console
presses it (`events/chat/interactions.py`), answered within the platforms' 3 s (`events/chat/answers.py`).
"""

from __future__ import annotations

from ...events.chat import answers
from ..operations import Body, Call, Router, ok

router = Router(__name__)
MAX_INTERACTION_BYTES = 64 * 1024  # a press is a few kilobytes; anything far larger is refused unread

_ANSWER = {"type": "object", "description": "Discord's interaction answer (PONG, UPDATE_MESSAGE, DEFERRED_UPDATE_MESSAGE,"
                                            " or a message only the presser sees); Slack's is empty"}


@router.operation("POST", "/integrations/discord/interactions",
                  "A Discord interaction, signed with the application's Ed25519 key (DISCORD_PUBLIC_KEY): a PING, or"
                  " a press of a cue's button, made as the control it names (docs/chat.md).", None,
                  ok("the interaction's answer", _ANSWER), platform_signed=True)
def discord_interaction(call: Call) -> Body:
    return answers.discord(call.headers, _capped(call.raw))


@router.operation("POST", "/integrations/slack/interactions",
                  "A Slack interaction (block_actions), signed with SLACK_SIGNING_SECRET: a press of a cue's button,"
                  " made as the control it names (docs/chat.md).", None, ok("an empty answer", _ANSWER),
                  platform_signed=True,
                  content_types=("application/x-www-form-urlencoded",))
def slack_interaction(call: Call) -> Body:
    return answers.slack(call.headers, _capped(call.raw))


def _capped(raw: bytes) -> bytes:
    from ...events.errors import Invalid

    if len(raw) > MAX_INTERACTION_BYTES:
        raise Invalid(f"an interaction is at most {MAX_INTERACTION_BYTES} bytes; this one is {len(raw)}")
    return raw
