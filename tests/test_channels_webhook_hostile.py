"""A webhook's text as Slack and Discord read it, and what its signature covers: an authored text pings
nobody on either, and the run, step, kind and idempotency key travel inside the signed body."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from chalicelib.config import Settings
from chalicelib.events.adapters.webhook_channel import DISCORD_CONTENT
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.store import steps
from tests.support.factory import document
from tests.support.runner_kit import schedule, step, tick

SECRET = "webhook-secret"
HOSTILE = "Ping <!channel> and <!here> and <@U024BE7LH> & <https://evil.example|click> @everyone @here"


def _posted(db, clock, game_bridge, instruction: str):
    runner = build_runner(Settings(cue_channel=f"webhook:{game_bridge.url}/hooks/cue", webhook_secret=SECRET), db, clock)
    try:
        run = schedule(db, clock.now(), document([[step("core.cue", instruction=instruction)]]))
        tick(runner)
    finally:
        runner.close()
    [request] = game_bridge.received("cue")
    [cue] = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))
    return request, run, cue


def test_slack_text_escapes_its_control_characters_so_no_mention_or_link_is_read(db, clock, game_bridge):
    request, _, _ = _posted(db, clock, game_bridge, HOSTILE)
    text = request.json["text"]
    assert "<" not in text and ">" not in text, text
    assert ("Ping &lt;!channel&gt; and &lt;!here&gt; and &lt;@U024BE7LH&gt; &amp; "
            "&lt;https://evil.example|click&gt;") in text
    assert text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").startswith(f"Cue: {HOSTILE}\n")


def test_discord_content_breaks_everyone_and_here_and_allows_no_mention(db, clock, game_bridge):
    request, _, _ = _posted(db, clock, game_bridge, HOSTILE)
    content = request.json["content"]
    assert "@everyone" not in content and "@here" not in content
    assert "@\u200beveryone @\u200bhere" in content
    assert request.json["allowed_mentions"] == {"parse": []}


def test_content_full_of_broadcasts_still_fits_discords_limit_with_its_run_and_step(db, clock, game_bridge):
    request, _, cue = _posted(db, clock, game_bridge, "@everyone " * 190)  # 1,900 characters, 190 to break
    content = request.json["content"]
    assert len(content) <= DISCORD_CONTENT.most and "@everyone" not in content
    broken = cue.named.replace("@", "@\u200b")  # its name too: the instruction names it
    assert content.endswith(f"{broken}: confirm it once done, or skip it.")


def _sign(timestamp: str, body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


@pytest.mark.parametrize("field, forged", [("run_id", 999), ("step_id", 999), ("kind", "announce"),
                                           ("idempotency_key", "replayed-under-another-key")])
def test_the_key_and_ids_are_signed_so_a_replay_cannot_change_them(db, clock, game_bridge, field, forged):
    request, run, cue = _posted(db, clock, game_bridge, "Light the bonfire")
    timestamp = request.headers["x-event-timestamp"]
    assert request.json["event"] == {"kind": "cue", "run_id": run.id, "step_id": cue.id, "step_named": cue.named,
                                     "idempotency_key": cue.idempotency_key}
    assert request.headers["x-event-signature"] == _sign(timestamp, request.body)
    replayed = json.loads(request.body)
    replayed["event"][field] = forged
    forged_body = json.dumps(replayed).encode()
    assert _sign(timestamp, forged_body) != request.headers["x-event-signature"], "a receiver checking the signature refuses it"
