"""A chat message names who has its cue now, whoever changed the hold, and where.

Before, only a press's own answer and the tick's edit once the wait had ended ever edited a message: after
"I have it" in the chat the message read "<@4242> has it" with Confirm and Skip alone, and a take-over on the
console left it naming the wrong person; a release or a hold that lapsed left nobody a way to claim the cue
from the chat, its I have it button gone for everyone. Now the tick edits a message whose step still waits
when its holder is not the one the message last named (recorded once that edit was taken), and only then.
"""

import pytest

from chalicelib.events.chat.answers import finish
from chalicelib.events.chat.interactions import read_discord
from chalicelib.events.chat.platforms import DiscordApi
from chalicelib.events.errors import ChannelError
from chalicelib.events.runner.sleep import next_work
from chalicelib.events.store import chat_messages
from devtools.kit.fake_chat import Scripted
from tests.support.api import GM, MODERATOR
from tests.support.chat import GM_ROLE, SLACK_CHANNEL, chat_settings, every_discord_body_valid, every_slack_body_escaped
from tests.support.chat_world import ChatWorld, opened
from tests.support.runner_kit import log_of, step
from tests.support.sleep_world import HORIZON

DISCORD = "/integrations/discord/interactions"


@pytest.fixture
def world(db, clock, db_params, chat):
    with opened(World, db, clock, db_params, chat) as opened_world:
        yield opened_world


class World(ChatWorld):
    def press(self, message, control, user="4242"):
        payload = self.chat.discord_interaction(message, f"ev:{self.run.id}:{self.cue.id}:{control}", roles=[GM_ROLE],
                                                user=user)
        headers, body = self.chat.discord_signed(payload)
        return self.api.call("POST", DISCORD, raw=body, headers=headers)

    def claimed_in_chat(self, *steps_):
        """A cue posted, @4242's I have it pressed in the chat, and a tick: the message as everyone sees it."""
        self.run, self.cue = self.cue_posted(None, *steps_)
        [message] = self.chat.messages("discord")
        answer = self.press(message, "acknowledge")
        assert answer.body["type"] == 7 and answer.body["data"]["content"].endswith("<@4242> has it")
        self.tick()  # the answer may not have landed: the tick makes sure the message says so
        self.shows_held_by(message, "<@4242>")
        return message

    def control(self, name, body=None, auth=MODERATOR):
        assert self.api.post(f"/runs/{self.run.id}/steps/{self.cue.id}/{name}", body or {}, auth=auth).status == 200

    def ids(self, *controls):
        return [f"ev:{self.run.id}:{self.cue.id}:{control}" for control in controls]

    def shows_held_by(self, message, holder):
        shown = self.chat.message(message.id)
        assert shown.text.endswith(f"\n{holder} has it"), shown.text
        assert shown.custom_ids == self.ids("confirm", "skip")  # nobody else may say they have it

    def shows_nobody_has_it(self, message):
        shown = self.chat.message(message.id)
        assert "has it" not in shown.text, shown.text
        assert shown.custom_ids == self.ids("confirm", "skip", "acknowledge")  # anyone may claim it again

    def edits(self):
        return len(self.chat.received("PATCH", "/channels/"))

    def holder(self):
        return self.steps(self.run.id)[0].acknowledged_by


def test_a_take_over_on_the_console_is_shown_on_the_chat_message_and_nothing_else_is_edited(world):
    message = world.claimed_in_chat()
    world.tick()
    edits = world.edits()
    assert edits == 1  # the claim's, once; a tick with nothing changed edits nothing
    world.control("take-over", {"note": "Mira is away from the bonfire"})
    assert next_work(world.db, world.clock.now(), HORIZON, chat_platforms=frozenset({"discord"})) <= world.clock.now()
    world.tick()
    world.shows_held_by(message, "mod-mia")
    world.tick()
    world.tick()
    assert world.edits() == edits + 1
    every_discord_body_valid(world.chat)


def test_a_release_on_the_console_offers_i_have_it_in_the_chat_again(world):
    message = world.claimed_in_chat()
    world.control("release")
    world.tick()
    world.shows_nobody_has_it(message)
    edits = world.edits()
    answer = world.press(message, "acknowledge", user="5555")  # someone else claims it from the chat
    assert answer.body["type"] == 7 and answer.body["data"]["content"].endswith("<@5555> has it")
    assert world.holder() == "discord:5555"
    world.tick()
    world.shows_held_by(message, "<@5555>")
    world.tick()
    assert world.edits() == edits + 1
    every_discord_body_valid(world.chat)


def test_a_hold_that_lapses_offers_i_have_it_in_the_chat_again(world):
    message = world.claimed_in_chat(step("core.cue", instruction="Light the bonfire", escalate_after_seconds=300))
    held_until = world.steps(world.run.id)[0].held_until
    world.clock.set(held_until)
    world.tick()
    assert (world.holder(), world.steps(world.run.id)[0].lapsed_by) == (None, "discord:4242")
    world.shows_nobody_has_it(message)
    edits = world.edits()
    world.tick()
    assert world.edits() == edits
    every_discord_body_valid(world.chat)


def test_a_hold_taken_and_released_on_the_console_is_shown_on_slack(world):
    settings = chat_settings(world.chat, world.settings, cue_channel=f"slack:{SLACK_CHANNEL}")
    world.run, world.cue = world.cue_posted(settings)
    [message] = world.chat.messages("slack")
    world.control("acknowledge", auth=GM)
    world.tick(settings)
    shown = world.chat.message(message.id)
    assert shown.text.endswith("\ngm-gus has it") and shown.custom_ids == world.ids("confirm", "skip")
    world.control("release", auth=GM)
    world.tick(settings)
    shown = world.chat.message(message.id)
    assert "has it" not in shown.text and shown.custom_ids == world.ids("confirm", "skip", "acknowledge")
    world.tick(settings)
    assert len(world.chat.received("POST", "/chat.update")) == 2
    assert every_slack_body_escaped(world.chat)


def _held_press(world, monkeypatch, user="4242"):
    """@`user`'s I have it, made by the press's second half, whose @original edit is on its way: held, landed by
    the returned function (its edit of the message, then its count, as `answers.finish` does)."""
    [message] = world.chat.messages("discord")
    press = read_discord(world.chat.discord_interaction(
        message, f"ev:{world.run.id}:{world.cue.id}:acknowledge", roles=[GM_ROLE], user=user), world.settings)
    real_edit_original, held = DiscordApi.edit_original, []

    def on_its_way(self, *args):
        held.append((self, args))
        raise ChannelError("discord: still on its way")

    monkeypatch.setattr(DiscordApi, "edit_original", on_its_way)
    finish({"press": press.event()})
    monkeypatch.setattr(DiscordApi, "edit_original", real_edit_original)

    def lands():
        api, args = held.pop()
        real_edit_original(api, *args)
        world.db.autocommit(lambda tx: chat_messages.edited_by_a_press(
            tx, "discord", message.id, world.run.id, world.cue.id))

    return message, lands


def test_a_press_edit_that_lands_after_a_take_over_was_shown_is_corrected_by_the_next_tick(world, monkeypatch):
    """@4242's I have it, finished late: its edit ("<@4242> has it") lands after a moderator took the cue over and
    the tick had named them. The message was left naming @4242."""
    world.run, world.cue = world.cue_posted()
    message, lands = _held_press(world, monkeypatch)
    world.control("take-over", {"note": "Mira is away from the bonfire"})
    world.tick()
    world.shows_held_by(message, "mod-mia")
    lands()
    world.shows_held_by(message, "<@4242>")  # the press's older picture
    world.tick()
    world.shows_held_by(message, "mod-mia")
    every_discord_body_valid(world.chat)


def test_a_press_edit_that_lands_while_the_tick_edits_the_hold_is_corrected_by_the_next_tick(world, monkeypatch):
    """The same late edit, landing between the tick's edit naming the moderator and its record of that: the
    record took the message as naming the moderator, over the press's older picture."""
    world.run, world.cue = world.cue_posted()
    message, lands = _held_press(world, monkeypatch)
    world.control("take-over", {"note": "Mira is away from the bonfire"})
    real_edit = DiscordApi.edit

    def the_ticks_edit_then_the_press_lands(self, *args):
        real_edit(self, *args)
        lands()

    monkeypatch.setattr(DiscordApi, "edit", the_ticks_edit_then_the_press_lands)
    world.tick()
    world.shows_held_by(message, "<@4242>")
    monkeypatch.setattr(DiscordApi, "edit", real_edit)
    world.tick()
    world.shows_held_by(message, "mod-mia")
    every_discord_body_valid(world.chat)


def test_a_hold_edit_rate_limited_waits_its_retry_after_and_then_names_the_holder(world):
    """A hold's edit goes the way of any edit of the chore: a 429 is waited out past the tick, never given up."""
    message = world.claimed_in_chat()
    world.control("release")
    world.chat.script(Scripted(429, {"message": "You are being rate limited.", "retry_after": 64.0, "global": False}))
    world.tick()
    world.shows_held_by(message, "<@4242>")
    [failed] = [e.detail for e in _log(world) if e.kind == "chat.edit_failed"]
    assert failed["again_at"] is not None
    world.clock.advance(30)
    world.tick()
    world.shows_held_by(message, "<@4242>")  # not before its retry_after
    world.clock.advance(40)
    world.tick()
    world.shows_nobody_has_it(message)
    every_discord_body_valid(world.chat)


def test_a_message_whose_step_waits_is_not_settled_by_a_chore_that_read_its_wait_ended(world):
    """A chore read a step ended, and the step waits again (a Resend sent it, the game's answer lost, parked
    again) when it settles the message: a settled message is never edited again, so it would keep what the chore
    showed, whatever became of the step."""
    world.run, world.cue = world.cue_posted()
    [message] = world.chat.messages("discord")
    [read] = world.db.autocommit(lambda tx: chat_messages.of_step(tx, world.cue.id))
    assert not world.db.autocommit(lambda tx: chat_messages.settle(tx, read, "Sent to the game again", world.clock.now()))
    world.control("confirm")
    world.tick()
    shown = world.chat.message(message.id)
    assert "Confirmed by mod-mia" in shown.text and shown.custom_ids == []


def _log(world):
    return log_of(world.db, world.run.id)

