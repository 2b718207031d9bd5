"""The chat platforms' interaction endpoints: a press of a Discord or Slack message's button.

Not behind the console's token: each request is signed by its platform, and the signature is checked before
anything of it is read (`events/chat/signatures.py`); the press is then the control it names, as the console
presses it (`events/chat/interactions.py`), answered within the platforms' 3 s (`events/chat/answers.py`).
"""

from __future__ import annotations

from ...events.actions.registry import BUTTON_LABEL_CHARS, MAX_CHOICES
from ...events.chat import answers
from ...events.chat.platforms import SLACK_SECTION_CHARS
from ..operations import Body, Call, Router, ok

router = Router(__name__)
# Anything larger than its platform's largest press is refused unread, before its signature is checked.
# A Discord press carries its message once (2,000 characters of content, 12 buttons): under 40 KB however escaped.
MAX_INTERACTION_BYTES = 64 * 1024
# A Slack press carries its message twice, its `text` and its blocks (the section, every button's label, and the
# pressed button's label once more in `actions`), JSON-escaped and form-encoded: a character outside the BMP (an
# emoji) is a pair of \u escapes, "%5Cud83d%5Cude00", 16 bytes. The engine's largest message, its text and its
# section each fitted to SLACK_SECTION_CHARS (`platforms.slack_text_of`) and a cue's MAX_CHOICES answers with Skip
# and I have it, each label at most BUTTON_LABEL_CHARS, is at most SLACK_WORST_MESSAGE_BYTES of a press (112 KB);
# the payload's own fields (who, where, the blocks' ids, a button's confirm dialog) a few KB more: a press of a cue
# of 2,000 emoji with ten answers of 200 is 111 KB (tests/test_chat_fit.py). The cap is over twice that.
SLACK_ESCAPED_CHAR_BYTES = 16
SLACK_WORST_MESSAGE_BYTES = SLACK_ESCAPED_CHAR_BYTES * (2 * SLACK_SECTION_CHARS + (MAX_CHOICES + 2 + 1) * BUTTON_LABEL_CHARS)
MAX_SLACK_INTERACTION_BYTES = 256 * 1024

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
    return answers.slack(call.headers, _capped(call.raw, MAX_SLACK_INTERACTION_BYTES))


def _capped(raw: bytes, most: int = MAX_INTERACTION_BYTES) -> bytes:
    from ...events.errors import Invalid

    # guard: a-chat-body-is-read-past-its-cap
    if len(raw) > most:
        raise Invalid(f"an interaction is at most {most} bytes; this one is {len(raw)}")
    return raw
