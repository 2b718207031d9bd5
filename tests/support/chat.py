"""What the chat tests share: the fake Discord and Slack (devtools/kit/fake_chat.py), settings that point the
engine at them, and Discord's own published schema, against which every body sent to Discord is checked.

The `chat` fixture checks, in every test that uses it, every body the fake Discord received and every answer the
API gave a Discord interaction (`answers.discord`): one Discord would refuse fails the test at its teardown,
naming it. Discord enforces more than its published schema says (`discord_problems`): a bot's content of at most
2,000 characters, at most 5 action rows of at most 5 buttons, each custom_id once, and an interaction's answer
of `type` and `data` alone."""

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
def chat(monkeypatch):
    from chalicelib.events.chat import answers

    answered: list[str] = []
    discord = answers.discord

    def checked(headers, body):
        answer = discord(headers, body)
        answered.extend(f"the answer to a Discord interaction, {answer}: {problem}"
                        for problem in discord_problems("interaction_callback", answer))
        return answer

    monkeypatch.setattr(answers, "discord", checked)
    with FakeChat() as fake:
        yield fake
    problems = answered + what_discord_would_refuse(fake)
    assert not problems, "Discord would refuse:\n" + "\n".join(problems)


def what_discord_would_refuse(fake: FakeChat) -> list[str]:
    """Every problem of every body the fake Discord received (`discord_problems`), naming its request."""
    return [problem for request in fake.received(path="/discord/") for problem in _request_problems(request)]


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
    """`body` is what Discord's schema `name` takes, and within what Discord enforces beyond it (raises with every
    problem otherwise)."""
    problems = discord_problems(name, body)
    assert not problems, f"{name}: " + "; ".join(problems)


# Discord's documented limit of a bot's message content; the published subset's MessageCreateRequest and
# MessageEditRequestPartial allow 4,000 (a Nitro user's), so the schema alone would pass what Discord refuses.
BOT_CONTENT_CHARS = 2000
# What Discord enforces of a message's (or a modal's) components that the published subset does not say: its
# top-level `components` allow 40 (the newer layouts'), a row's buttons are not counted, custom_ids not compared.
ROWS, BUTTONS_A_ROW = 5, 5
CALLBACK_FIELDS = frozenset({"type", "data"})


def discord_problems(name: str, body: Any) -> list[str]:
    """What Discord would refuse in `body` as its schema `name` (`interaction_callback` for an interaction's
    answer): the published schema's errors, then what Discord enforces beyond it."""
    problems = [e.message for e in sorted(_validator(name).iter_errors(body), key=str)]
    if not isinstance(body, dict):
        return problems
    callback = name == "interaction_callback" or name.endswith("CallbackRequest")
    if callback and not set(body) <= CALLBACK_FIELDS:  # the schema's anyOf takes any other field, misspelt too
        problems.append(f"an interaction's answer has only type and data, not {sorted(set(body) - CALLBACK_FIELDS)}")
    message = body.get("data") if callback else body
    if not isinstance(message, dict):
        return problems
    content = message.get("content")
    if isinstance(content, str) and len(content) > BOT_CONTENT_CHARS:
        problems.append(f"content of {len(content)} characters (a bot's is at most {BOT_CONTENT_CHARS})")
    rows = message.get("components") or []
    if isinstance(rows, list):
        if len(rows) > ROWS:
            problems.append(f"{len(rows)} components at the top (at most {ROWS} rows)")
        for row in rows:
            if isinstance(row, dict) and row.get("type") == 1 and len(row.get("components") or []) > BUTTONS_A_ROW:
                problems.append(f"an action row of {len(row['components'])} components (at most {BUTTONS_A_ROW})")
        ids = _custom_ids(rows)
        if len(ids) != len(set(ids)):
            problems.append(f"custom_ids given twice: {sorted({i for i in ids if ids.count(i) > 1})}")
    return problems


def _custom_ids(components: Any) -> list[str]:
    """Every custom_id in `components`, however deep (an action row's buttons, a label's text input)."""
    found: list[str] = []
    for part in components if isinstance(components, list) else [components]:
        if isinstance(part, dict):
            if isinstance(part.get("custom_id"), str):
                found.append(part["custom_id"])
            found += _custom_ids(part.get("components") or []) + _custom_ids(part.get("component") or [])
    return found


def _request_problems(request: Any) -> list[str]:
    """What Discord would refuse in a body the fake Discord received, checked as its call's schema."""
    if "/webhooks/" in request.path and request.method == "POST":  # an interaction's follow-up
        name = "IncomingWebhookRequestPartial"
    elif "/webhooks/" in request.path:
        name = "IncomingWebhookUpdateRequestPartial"
    else:
        name = "MessageCreateRequest" if request.method == "POST" else "MessageEditRequestPartial"
    return [f"{request.method} {request.path}: {problem}" for problem in discord_problems(name, request.json)]


def every_discord_body_valid(fake: FakeChat) -> int:
    """Every body the engine sent the fake Discord, checked against the schema of its call and what Discord
    enforces beyond it (a bot's 2,000 characters of content, 5 rows of 5 buttons, unique custom_ids); how many."""
    checked = 0
    for request in fake.received(path="/discord/"):
        problems = _request_problems(request)
        assert not problems, "; ".join(problems)
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
