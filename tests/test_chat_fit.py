"""A chat message's text fits its platform however long the authored words are, shows them as written, and
says what a reader needs.

Discord takes at most 2,000 characters of a bot's content (tests/support/chat.py holds every body to that,
not the published schema's 4,000): a cue's first post, a press's answer, the edits after it. The instruction
is what is shortened; how the step's wait ended, or why a press did not take, is never cut. Slack reads `<…>`
as markup (`<!channel>`, a link with text of its own): every text the engine sends it is escaped, the
first post and every edit alike, all but the engine's own mentions.
"""

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.events.chat.platforms import Button, Message, discord_body, slack_blocks
from chalicelib.events.lifecycle import StepStatus
from tests.support.api import MODERATOR, Api, hs_settings
from tests.support.chat import (
    GM_ROLE,
    SLACK_CHANNEL,
    SLACK_GM,
    chat_settings,
    every_discord_body_valid,
    every_slack_body_escaped,
    valid_for_discord,
)
from tests.support.interleaved import until
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


HOSTILE = "Ping <!channel> & see <https://evil.example|the console> <@U0BOSS>"


def test_authored_markup_reaches_slack_escaped_in_the_post_and_every_edit(world):
    settings = chat_settings(world.chat, world.settings, cue_channel=f"slack:{SLACK_CHANNEL}")
    asks = {**step("core.cue", instruction="Pick <!here>", choices=[{"value": "a", "label": "Fish & <!here>"},
                                                                      {"value": "b", "label": "Chips"}])}
    with runtime.override(settings=settings):
        run, cue = world.cue_posted(settings, step("core.cue", instruction=HOSTILE), asks)
        [posted] = world.chat.messages("slack")
        headers, body = world.chat.slack_signed(world.chat.slack_interaction(posted, f"ev:{run.id}:{cue.id}:confirm",
                                                                             user=SLACK_GM))
        assert world.api.call("POST", "/integrations/slack/interactions", raw=body, headers=headers).status == 200
        until(lambda: "Confirmed by" in world.chat.message(posted.id).text, "the press's response_url edit")
        world.tick(settings)
        second = world.steps(run.id)[1]
        assert world.api.post(f"/runs/{run.id}/steps/{second.id}/confirm", {"choice": "a"}, auth=MODERATOR).status == 200
        world.tick(settings)
        for message, step_id in zip(world.chat.messages("slack"), (cue.id, second.id), strict=True):
            late = world.chat.slack_interaction(message, f"ev:{run.id}:{step_id}:skip", user=SLACK_GM)
            headers, body = world.chat.slack_signed(late)
            assert world.api.call("POST", "/integrations/slack/interactions", raw=body, headers=headers).status == 200
        until(lambda: len(_private(world)) == 2, "both late presses told why privately")
    assert world.steps(run.id)[1].status is StepStatus.DONE
    pressed, chosen = (world.chat.message(m.id).text for m in world.chat.messages("slack"))
    first_why, second_why = sorted(_private(world), key=lambda why: "Pick" in why)
    assert "(Ping &lt;!channel&gt; &amp; see…): " in first_why and "Confirmed by <@U0MIRA> at" in first_why
    assert "(Pick &lt;!here&gt;): " in second_why and "(answer: Fish &amp; &lt;!here&gt;)" in second_why
    assert "Ping &lt;!channel&gt; &amp; see &lt;https://evil.example|the console&gt; &lt;@U0BOSS&gt;" in pressed
    assert "\nConfirmed by <@U0MIRA> at " in pressed  # the engine's own mention stays one
    assert "(answer: Fish &amp; &lt;!here&gt;)" in chosen
    assert every_slack_body_escaped(world.chat) >= 8  # the two posts, the press's edit, the tick's edits, the whys


def _private(world):
    return [r.json["text"] for r in world.chat.received("POST", "/slack/respond/") if r.json.get("response_type") == "ephemeral"]


def test_a_slack_section_is_never_cut_inside_an_entity():
    text = "&amp;" * 700  # 3,500 characters as Slack counts them
    section = slack_blocks(Message(text).noted("Skipped by mod-mia at 20:00 UTC"))[0]["text"]["text"]
    assert len(section) <= 3000 and section.endswith("&amp;…\nSkipped by mod-mia at 20:00 UTC")


def test_a_long_answer_shows_its_beginning_and_an_ellipsis_on_each_platforms_button():
    """Its label was cut to 80 and 75 characters with no sign that it was."""
    label = "Open the north gate, then " + "walk on " * 20
    shown = Message("Which gate?", (Button(label, "ev:1:2:confirm:0", primary=True),))
    [discord_button] = discord_body(shown)["components"][0]["components"]
    [_, actions] = slack_blocks(shown)
    [slack_button] = actions["elements"]
    assert discord_button["label"] == label[:79] + "…"
    assert slack_button["text"]["text"] == label[:74] + "…"
    valid_for_discord("MessageCreateRequest", discord_body(shown))


def test_an_authored_everyone_is_broken_in_a_discord_cues_post_and_in_the_answer_to_a_press(world):
    """It was broken in the post only: the press's answer and every edit after showed it whole (highlighted, though
    no message of the engine's may ping)."""
    run, cue = world.cue_posted(None, step("core.cue", instruction="Gather @everyone and @here at the gate"))
    [posted] = world.chat.messages("discord")
    answer = world.press(world.chat.discord_interaction(posted, f"ev:{run.id}:{cue.id}:confirm", roles=[GM_ROLE]))
    for content in (posted.body["content"], answer.body["data"]["content"]):
        assert "Gather @\u200beveryone and @\u200bhere at the gate" in content, content
