"""Every message the engine posted loses its buttons once its step no longer waits for it, even once the step's
message was posted again.

A step's message posted again in its channel (a decision escalated again after a Resend) took over the row of
the one before: when the first one's edit had not landed yet (an edit outage, a rate limit, or the step parked
again within a tick), nothing ever edited it again, and it kept live buttons for good. Now each message keeps a
row of its own: an older one is edited to say it was asked again below, without buttons, and a press on it
changes nothing, whatever order the edits fail and land in.
"""

import json
from dataclasses import replace

import pytest

from chalicelib.events.chat.settle import ASKED_AGAIN
from chalicelib.events.lifecycle import StepStatus
from chalicelib.events.store import chat_messages
from devtools.kit.fake_chat import Received
from devtools.kit.game_bridge import SECRET, Answer
from tests.support.api import MODERATOR
from tests.support.chat import MOD_ROLE, every_discord_body_valid
from tests.support.chat_world import ChatWorld, opened
from tests.support.factory import document
from tests.support.runner_kit import log_of, schedule, step

DISCORD = "/integrations/discord/interactions"
OUTAGE = {"message": "upstream connect error", "code": 0}


@pytest.fixture
def world(db, clock, db_params, chat):
    with opened(World, db, clock, db_params, chat) as opened_world:
        yield opened_world


class World(ChatWorld):
    def decision_escalated(self, game_bridge):
        """A step parked in doubt (the game's answer lost after sending), escalated to the chat with Confirm, Skip
        and Resend: its message."""
        self.settings = replace(self.settings, game_bridge_url=game_bridge.url, game_bridge_secret=SECRET,
                                escalate_after_seconds=60)
        game_bridge.script("world.spawn", Answer(504, ""))
        self.run = schedule(self.db, self.clock.now(), document([[{**step("world.spawn", npc="scarecrow"),
                                                                   "on_doubt": "park"}]]))
        self.tick()
        self.clock.advance(self.settings.step_retry_seconds)
        self.tick()  # parked for a decision
        self.clock.advance(60)
        self.tick()  # escalated
        [message] = self.chat.messages("discord")
        self.spawn = self.step()
        assert self.spawn.parked_in_doubt and message.custom_ids == self.ids("confirm", "skip", "resend")
        return message

    def resent_and_escalated_again(self, game_bridge):
        """A moderator's Resend on the console, the game's answer lost again: parked again, escalated again."""
        assert self.api.post(f"/runs/{self.run.id}/steps/{self.spawn.id}/resend", {}, auth=MODERATOR).status == 200
        game_bridge.script("world.spawn", Answer(504, ""), Answer(504, ""))
        self.tick()
        self.clock.advance(self.settings.step_retry_seconds)
        self.tick()
        self.clock.advance(60)
        self.tick()  # escalated again: a message of its own
        first, again = sorted(self.chat.messages("discord"), key=lambda m: int(m.id))
        assert self.step().parked_in_doubt and again.custom_ids == self.ids("confirm", "skip", "resend")
        return first, again

    def step(self):
        return self.steps(self.run.id)[0]

    def ids(self, *controls):
        return [f"ev:{self.run.id}:{self.spawn.id}:{c}" for c in controls]

    def press(self, message, control, user="4242"):
        payload = self.chat.discord_interaction(message, f"ev:{self.run.id}:{self.spawn.id}:{control}", roles=[MOD_ROLE],
                                                user=user)
        headers, body = self.chat.discord_signed(payload)
        return self.api.call("POST", DISCORD, raw=body, headers=headers)

    def edits_fail(self, monkeypatch, failing):
        """Discord answers 503 to each edit of a message `failing(message id)` names, while it does."""
        serve = self.chat._serve

        def outage(method, path, headers, raw):
            if method == "PATCH" and "/channels/" in path and failing(path.rsplit("/", 1)[-1]):
                with self.chat._lock:  # kept, as the fake keeps every request: its body is checked too
                    self.chat._received.append(Received(method, path, headers, json.loads(raw)))
                return 503, OUTAGE, {}
            return serve(method, path, headers, raw)

        monkeypatch.setattr(self.chat, "_serve", outage)

    def ticks_until(self, done, most=8):
        """Ticks ten minutes apart until `done()` (the edits' backoff passed), at most `most`."""
        for _ in range(most):
            if done():
                return
            self.clock.advance(600)
            self.tick()
        assert done()


def _ended(world, message):
    return world.chat.message(message.id).custom_ids == []


def test_a_decision_escalated_again_while_edits_fail_leaves_no_live_buttons_on_either_message(world, game_bridge,
                                                                                               monkeypatch):
    """The reviewer's reproduction: Discord's edits fail while a moderator Resends, the answer is lost again and
    the step is escalated again; then they work. Both messages kept Confirm, Skip and Resend for good."""
    first = world.decision_escalated(game_bridge)
    outage = {"on": True}
    world.edits_fail(monkeypatch, lambda _: outage["on"])
    first, again = world.resent_and_escalated_again(game_bridge)
    assert world.chat.message(first.id).custom_ids == world.ids("confirm", "skip", "resend")  # its edits failed
    before = log_of(world.db, world.run.id)
    refused = world.press(first, "confirm")  # a press on the older message, its buttons still showing
    assert refused.body["type"] == 4 and refused.body["data"]["flags"] == 64, refused.body  # said privately
    assert refused.body["data"]["content"].endswith(
        "this message was asked again below: press the newer one. Nothing was changed"), refused.body
    assert world.step().parked_in_doubt and log_of(world.db, world.run.id) == before  # nothing changed
    outage["on"] = False
    world.ticks_until(lambda: _ended(world, first))
    shown = world.chat.message(first.id)
    assert shown.text.endswith(f"\n{ASKED_AGAIN}") and shown.text.startswith(world.spawn.named), shown.text
    assert world.chat.message(again.id).custom_ids == world.ids("confirm", "skip", "resend")  # the live one
    confirmed = world.press(again, "confirm")
    assert confirmed.body["type"] == 7 and world.step().status is StepStatus.DONE
    world.ticks_until(lambda: _ended(world, again))
    assert "Confirmed by <@4242>" in world.chat.message(again.id).text
    assert world.chat.message(first.id).text.endswith(f"\n{ASKED_AGAIN}")
    patches = len(world.chat.received("PATCH", "/channels/"))
    world.clock.advance(600)
    world.tick()
    assert len(world.chat.received("PATCH", "/channels/")) == patches  # both settled: never edited again
    every_discord_body_valid(world.chat)


def test_the_newer_message_ending_first_leaves_the_older_one_to_be_told_it_was_asked_again(world, game_bridge,
                                                                                          monkeypatch):
    """The older message's edits fail on after it was asked again; the newer one is confirmed on the console and
    edited at once. Once the older one's edits work, it says it was asked again."""
    first = world.decision_escalated(game_bridge)
    outage = {"on": True}
    world.edits_fail(monkeypatch, lambda message_id: outage["on"] and message_id == first.id)
    first, again = world.resent_and_escalated_again(game_bridge)
    assert world.api.post(f"/runs/{world.run.id}/steps/{world.spawn.id}/confirm", {}, auth=MODERATOR).status == 200
    world.tick()
    assert "Confirmed by mod-mia" in world.chat.message(again.id).text and _ended(world, again)
    assert world.chat.message(first.id).custom_ids  # still failing
    outage["on"] = False
    world.ticks_until(lambda: _ended(world, first))
    assert world.chat.message(first.id).text.endswith(f"\n{ASKED_AGAIN}")
    every_discord_body_valid(world.chat)


def test_a_message_recorded_again_is_not_taken_for_one_asked_again(world):
    """A post answered with a message already recorded (Discord answers a nonce it saw with the message it made)
    is that message's row again, not a newer message superseding it: it is told how its wait ended."""
    run, cue = world.cue_posted()
    [message] = world.chat.messages("discord")
    [row] = world.db.autocommit(lambda tx: chat_messages.of_step(tx, cue.id))
    world.db.autocommit(lambda tx: chat_messages.record(tx, run.id, cue.id, "discord", row.channel_id, message.id,
                                                        world.clock.now()))
    assert [m.id for m in world.db.autocommit(lambda tx: chat_messages.of_step(tx, cue.id))] == [row.id]
    assert world.api.post(f"/runs/{run.id}/steps/{cue.id}/confirm", {}, auth=MODERATOR).status == 200
    world.tick()
    shown = world.chat.message(message.id)
    assert "Confirmed by mod-mia" in shown.text and ASKED_AGAIN not in shown.text and shown.custom_ids == []
