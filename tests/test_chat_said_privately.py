"""What a chat press that does not take says, and to whom: its presser alone, never the channel, and never nothing.

Before, a press the database failed on (a lost connection, an Aurora resume past the wait) was answered with a
silent acknowledgement and nothing after: the GM's confirm, and the reason typed in a Skip's modal, were thrown
away with a log line. And a press refused after its deferred answer was written into the channel's message,
one person's refusal for everyone to read, beside live buttons.
"""

import pymysql
import pytest

from chalicelib.events.chat import answers
from chalicelib.events.chat.answers import NOT_MADE, finish
from chalicelib.events.chat.interactions import read_discord, read_slack
from tests.support.chat import GM_ROLE, SLACK_CHANNEL, SLACK_GM, chat_settings, every_discord_body_valid
from tests.support.chat_world import opened
from tests.test_chat_interactions import World, _decision_escalated, _payload


@pytest.fixture
def world(db, clock, db_params, chat):
    with opened(World, db, clock, db_params, chat) as opened_world:
        yield opened_world


@pytest.fixture
def database_lost(monkeypatch):
    def lost(*args, **kwargs):
        raise pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")

    monkeypatch.setattr(answers, "perform", lost)


def test_a_press_the_database_failed_in_time_is_told_so_privately_and_changes_nothing(world, database_lost):
    run, cue = world.cue_posted()
    [message] = world.chat.messages("discord")
    answer = world.press(_payload(world, cue, roles=[GM_ROLE]))
    assert answer.body == {"type": 4, "data": {"content": NOT_MADE, "flags": 64, "allowed_mentions": {"parse": []}}}
    assert world.steps(run.id)[0].parked and not world.chat.received("PATCH")
    assert world.chat.message(message.id).edits == 0


def test_a_press_finished_after_its_answer_that_could_not_be_made_is_told_so_in_a_private_follow_up(world, database_lost):
    run, cue = world.cue_posted()
    [message] = world.chat.messages("discord")
    finish({"press": read_discord(_payload(world, cue, roles=[GM_ROLE]), world.settings).event()})
    assert world.chat.private(message.id) == [("mira", NOT_MADE)]
    assert not world.chat.received("PATCH") and world.steps(run.id)[0].parked
    every_discord_body_valid(world.chat)


def test_a_slack_press_that_could_not_be_made_is_told_so_privately(world, database_lost):
    settings = chat_settings(world.chat, world.settings, cue_channel=f"slack:{SLACK_CHANNEL}")
    run, cue = world.cue_posted(settings)
    [message] = world.chat.messages("slack")
    payload = world.chat.slack_interaction(message, f"ev:{run.id}:{cue.id}:confirm", user=SLACK_GM, name="mira")
    finish({"press": read_slack(world.chat.slack_signed(payload)[1], settings).event()})
    assert world.chat.private(message.id) == [("mira", NOT_MADE)]
    assert world.chat.message(message.id).edits == 0 and world.steps(run.id)[0].parked


def test_a_press_refused_after_its_deferred_answer_is_said_to_its_presser_and_the_message_stays_as_everyone_saw_it(
        world, game_bridge):
    _, spawn = _decision_escalated(world, game_bridge)
    [message] = world.chat.messages("discord")
    shown = world.chat.message(message.id).text
    payload = world.chat.discord_interaction(message, f"ev:{spawn.run_id}:{spawn.id}:confirm", roles=[GM_ROLE])
    finish({"press": read_discord(payload, world.settings).event()})  # a gm may not decide a step in doubt
    [(who, said)] = world.chat.private(message.id)
    assert who == "mira" and "a game master may confirm a parked cue only" in said, said
    assert not world.chat.received("PATCH", "/messages/@original")
    assert world.chat.message(message.id).text == shown and world.steps(spawn.run_id)[0].parked_in_doubt
    every_discord_body_valid(world.chat)
