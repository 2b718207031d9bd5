"""A chat message's text fits its platform however long the authored words are, and says what a reader needs.

Discord takes at most 2,000 characters of a bot's content (tests/support/chat.py holds every body to that,
not the published schema's 4,000): a cue's first post, a press's answer, the edits after it. The instruction
is what is shortened; how the step's wait ended, or why a press did not take, is never cut.
"""

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.events.chat.platforms import Message, discord_body
from tests.support.api import MODERATOR, Api, hs_settings
from tests.support.chat import GM_ROLE, chat_settings, every_discord_body_valid, valid_for_discord
from tests.support.runner_kit import step
from tests.test_chat_interactions import World

NAME = "the_" + "long_" * 11 + "name_of_it"  # 64 characters, the most a step's name holds
INSTRUCTION = "Read this aloud: " + "x" * 1983  # 2,000 characters, the most an instruction holds


@pytest.fixture
def world(db, clock, db_params, chat):
    settings = chat_settings(chat, hs_settings(db_params))
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        yield World(db, clock, chat, settings, Api(client))


def _long_cues(world: World):
    cues = [{**step("core.cue", instruction=INSTRUCTION), "name": f"{NAME[:-1]}{n}"} for n in (1, 2)]
    run, first = world.cue_posted(None, *cues)
    return run, first


def test_a_long_cue_pressed_in_discord_and_confirmed_on_the_console_keeps_every_body_within_2000(world):
    run, cue = _long_cues(world)
    [posted] = world.chat.messages("discord")
    answer = world.press(world.chat.discord_interaction(posted, f"ev:{run.id}:{cue.id}:confirm", roles=[GM_ROLE],
                                                        user="4242"))
    valid_for_discord("interaction_callback", answer.body)  # Discord showed "This interaction failed" past 2,000
    content = answer.body["data"]["content"]
    assert answer.body["type"] == 7 and answer.body["data"]["components"] == []
    assert content.startswith(f"{cue.named}: Read this aloud: xxx") and "…\nConfirmed by <@4242> at " in content
    world.tick()  # the second cue is posted; the first's message is edited by the tick as well
    second = world.steps(run.id)[1]
    world.api.post(f"/runs/{run.id}/steps/{second.id}/confirm", {}, auth=MODERATOR)
    world.tick()
    edited = world.chat.message(world.chat.messages("discord")[1].id)
    assert edited.custom_ids == [] and edited.text.startswith(f"{second.named}: Read this aloud: xxx")
    assert edited.text.split("\n")[-1].startswith("Confirmed by mod-mia at ")
    assert every_discord_body_valid(world.chat) >= 3


def test_a_refused_press_says_why_in_full_beneath_a_shortened_instruction():
    shown = Message(f"Run 1 · Phase 1 · step 1 ({NAME}): {INSTRUCTION}").noted("Confirmed by <@1> at 20:00 UTC")
    why = "Your press did not take: " + "this step is done and is not waiting on anyone " * 4
    content = discord_body(shown.noted(why))["content"]
    assert len(content) == 2000 and content.endswith(f"x…\nConfirmed by <@1> at 20:00 UTC\n{why}")
