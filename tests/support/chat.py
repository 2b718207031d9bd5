"""What the chat tests share: the fake Discord and Slack (devtools/kit/fake_chat.py), settings that point the
engine at them, and Discord's own published schema, against which every body sent to Discord is checked."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from chalicelib.config import Settings
from devtools.kit.fake_chat import GUILD_ID, TEAM_ID, FakeChat

# The repository's copy of ../shared/reference/discord (test_channels_fit checks it is the same)
DISCORD_SCHEMA = Path(__file__).parents[1] / "reference" / "discord" / "openapi-subset.json"
GM_ROLE, MOD_ROLE, OTHER_ROLE = "910000000000000001", "910000000000000002", "910000000000000003"
CUE_CHANNEL, SLACK_CHANNEL = "100000000000000001", "C0CUES"
SLACK_GM = "U0MIRA"


@pytest.fixture
def chat():
    with FakeChat() as fake:
        yield fake


def chat_settings(fake: FakeChat, base: Settings | None = None, **more: Any) -> Settings:
    import dataclasses

    return dataclasses.replace(base or Settings(), **{
        "cue_channel": f"discord:{CUE_CHANNEL}", "discord_api_url": fake.discord_url,
        "discord_bot_token": fake.token, "discord_public_key": fake.public_key, "discord_guild_id": GUILD_ID,
        "discord_roles": ((GM_ROLE, "gm"), (MOD_ROLE, "moderator")),
        "slack_api_url": fake.slack_url, "slack_bot_token": fake.token, "slack_signing_secret": fake.signing_secret,
        "slack_team_id": TEAM_ID, "slack_roles": ((SLACK_GM, "gm"),), **more})


@cache
def _validator(name: str) -> Draft202012Validator:
    document = json.loads(DISCORD_SCHEMA.read_text())
    resource = Resource.from_contents(document, default_specification=DRAFT202012)
    registry = Registry().with_resource("urn:discord", resource)
    where = "interaction_callback" if name == "interaction_callback" else f"components/schemas/{name}"
    schema = {"$ref": f"urn:discord#/{where}"}
    return Draft202012Validator(schema, registry=registry)


def valid_for_discord(name: str, body: Any) -> None:
    """`body` is what Discord's schema `name` takes (raises with every problem otherwise)."""
    errors = sorted(_validator(name).iter_errors(body), key=str)
    assert not errors, f"{name}: " + "; ".join(e.message for e in errors)


# Discord's documented limit of a bot's message content; the published subset's MessageCreateRequest and
# MessageEditRequestPartial allow 4,000 (a Nitro user's), so the schema alone would pass what Discord refuses.
BOT_CONTENT_CHARS = 2000


def every_discord_body_valid(fake: FakeChat) -> int:
    """Every body the engine sent the fake Discord, checked against the schema of its call and a bot's 2,000
    characters of content; how many."""
    checked = 0
    for request in fake.received(path="/discord/"):
        content = request.json.get("content") or ""
        assert len(content) <= BOT_CONTENT_CHARS, f"{request.method} {request.path}: content of {len(content)} characters"
        if "/webhooks/" in request.path and request.method == "POST":  # an interaction's follow-up
            valid_for_discord("IncomingWebhookRequestPartial", request.json)
        elif "/webhooks/" in request.path:
            valid_for_discord("IncomingWebhookUpdateRequestPartial", request.json)
        elif request.method == "POST":
            valid_for_discord("MessageCreateRequest", request.json)
        else:
            valid_for_discord("MessageEditRequestPartial", request.json)
        checked += 1
    return checked


_MARKUP = re.compile(r"<[^>]*>")
_ENGINE_MENTION = re.compile(r"<@U[A-Z0-9]+>")


def every_slack_body_escaped(fake: FakeChat) -> int:
    """Every text the engine sent the fake Slack (a message's `text`, its section block's, a response_url's)
    holds no Slack markup but the engine's own `<@U…>` mentions: an authored `<!channel>` or `<https://…|link>`
    reaches Slack escaped; how many texts."""
    checked = 0
    for request in fake.received(path="/slack/"):
        body = request.json if isinstance(request.json, dict) else {}
        texts = [body.get("text")] + [b["text"]["text"] for b in body.get("blocks") or () if b.get("type") == "section"]
        for text in filter(None, texts):
            markup = [m for m in _MARKUP.findall(text) if not _ENGINE_MENTION.fullmatch(m)]
            assert not markup, f"{request.path}: {markup} in {text!r}"
            checked += 1
    return checked
