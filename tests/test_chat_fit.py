"""A chat message's text fits its platform however long the authored words are, shows them as written, and
says what a reader needs.

Discord takes at most 2,000 characters of a bot's content (tests/support/chat.py holds every body to that,
not the published schema's 4,000): a cue's first post, a press's answer, the edits after it. The instruction
is what is shortened; how the step's wait ended, or why a press did not take, is never cut. Slack reads `<…>`
as markup (`<!channel>`, a link with text of its own): every text the engine sends it is escaped, the
first post and every edit alike, all but the engine's own mentions.
"""

import json

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


def test_a_slack_press_on_the_largest_emoji_cue_is_taken_and_a_body_past_the_cap_is_400_unread(world):
    """Slack's press carries the message it came from twice (its text, its blocks), every emoji a pair of \\u
    escapes, form-encoded: 16 bytes each. On a cue of 2,000 emoji with ten answers it was past the route's 64 KB,
    so every press of it was a 400 and its presser saw only Slack's "failed"."""
    from chalicelib.api.routes.chat import MAX_INTERACTION_BYTES, MAX_SLACK_INTERACTION_BYTES, SLACK_WORST_MESSAGE_BYTES

    settings = chat_settings(world.chat, world.settings, cue_channel=f"slack:{SLACK_CHANNEL}")
    emoji = "🎆🔥"  # outside the BMP: a surrogate pair each, escaped
    answers = [{"value": f"v{n}", "label": (f"{n}" + emoji * 100)[:200]} for n in range(10)]  # 200 characters, the most
    cue = step("core.cue", instruction=emoji * 1000, choices=answers)  # 2,000 characters, the most
    with runtime.override(settings=settings):
        run, posted_cue = world.cue_posted(settings, cue)
        [message] = world.chat.messages("slack")
        payload = world.chat.slack_interaction(message, f"ev:{run.id}:{posted_cue.id}:confirm:9", user=SLACK_GM)
        assert payload["message"]["text"].count(emoji) >= 1000 and len(payload["message"]["blocks"]) == 2
        headers, body = world.chat.slack_signed(payload)
        assert MAX_INTERACTION_BYTES < len(body) < MAX_SLACK_INTERACTION_BYTES / 2, len(body)  # 111 KB
        assert 2 * SLACK_WORST_MESSAGE_BYTES < MAX_SLACK_INTERACTION_BYTES
        answer = world.api.call("POST", "/integrations/slack/interactions", raw=body, headers=headers)
        assert answer.status == 200, answer.body  # was 400: "an interaction is at most 65536 bytes"
        until(lambda: "Confirmed by" in world.chat.message(message.id).text, "the press's response_url edit")
    assert world.steps(run.id)[0].status is StepStatus.DONE and world.steps(run.id)[0].choice == "v9"
    too_large = b"payload=" + b"x" * MAX_SLACK_INTERACTION_BYTES  # unsigned: refused before its signature is read
    answer = world.api.call("POST", "/integrations/slack/interactions", raw=too_large,
                            headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert answer.status == 400 and f"at most {MAX_SLACK_INTERACTION_BYTES} bytes" in answer.body["errors"][0]


def test_every_slack_text_is_fitted_as_its_section_is(world):
    """A press's edit (its response_url) and the tick's (chat.update) sent the message's whole text beside its
    fitted section: 10,000 characters for an instruction of 2,000 `&`, escaped, which Slack gives back in every
    press's payload after."""
    settings = chat_settings(world.chat, world.settings, cue_channel=f"slack:{SLACK_CHANNEL}")
    with runtime.override(settings=settings):
        run, cue = world.cue_posted(settings, step("core.cue", instruction="&" * 2000),
                                    step("core.cue", instruction="<" * 2000))
        first = world.chat.messages("slack")[0]
        headers, body = world.chat.slack_signed(world.chat.slack_interaction(first, f"ev:{run.id}:{cue.id}:confirm",
                                                                             user=SLACK_GM))
        assert world.api.call("POST", "/integrations/slack/interactions", raw=body, headers=headers).status == 200
        until(lambda: "Confirmed by" in world.chat.message(first.id).text, "the press's response_url edit")
        world.tick(settings)
        second = world.steps(run.id)[1]
        assert world.api.post(f"/runs/{run.id}/steps/{second.id}/confirm", {}, auth=MODERATOR).status == 200
        world.tick(settings)
    sent = {how: [r.json for r in world.chat.received("POST", how)] for how in ("/chat.postMessage", "/respond/", "/chat.update")}
    assert all(sent.values()), sent.keys()  # the posts, the press's edit, the tick's
    for body in (body for bodies in sent.values() for body in bodies):
        section = body["blocks"][0]["text"]["text"]
        assert body["text"] == section and len(body["text"]) <= 3000, (len(body["text"]), body["text"][-80:])
    edits = [body["text"] for body in sent["/respond/"] + sent["/chat.update"]]
    assert len(edits) >= 3 and all(text.split("\n")[-1].startswith("Confirmed by ") for text in edits), edits


def test_discords_limits_its_schema_does_not_say_are_checked_on_every_body_and_the_engines_largest_cue_keeps_them():
    """The published schema passes 6 action rows, 6 buttons a row, a custom_id twice, 4,000 characters of content
    and a misspelt field in an interaction's answer, all of which Discord refuses; the chat fixture checks every
    body the fake Discord receives and every answer the API gives Discord against them, at each test's teardown."""
    import urllib.request

    from chalicelib.events.actions.registry import MAX_CHOICES
    from chalicelib.events.chat.render import CUE_CONTROLS, buttons
    from devtools.kit.fake_chat import FakeChat
    from tests.support.chat import discord_problems, what_discord_would_refuse

    def row(*ids):
        return {"type": 1, "components": [{"type": 2, "style": 2, "label": i, "custom_id": i} for i in ids]}

    message = {"content": "a cue", "allowed_mentions": {"parse": []}}
    assert discord_problems("MessageCreateRequest", {**message, "components": [row(f"r{n}") for n in range(5)]}) == []
    for wrong, said in (({"components": [row(f"r{n}") for n in range(6)]}, "6 components at the top"),
                        ({"components": [row(*"abcdef")]}, "an action row of 6 components"),
                        ({"components": [row("a", "b"), row("b")]}, "custom_ids given twice: ['b']"),
                        ({"content": "x" * 2001}, "content of 2001 characters")):
        assert any(said in problem for problem in discord_problems("MessageCreateRequest", {**message, **wrong})), wrong
    answer = {"type": 7, "data": message}
    assert discord_problems("interaction_callback", answer) == []
    assert discord_problems("interaction_callback", {**answer, "flags": 64}) == [
        "an interaction's answer has only type and data, not ['flags']"]
    assert discord_problems("interaction_callback", {"type": 4, "data": {**message, "content": "y" * 2001}})

    labels = tuple(f"Answer {n}" for n in range(MAX_CHOICES))  # the most buttons a message of the engine's carries
    largest = discord_body(Message("Which?", buttons(1, 2, CUE_CONTROLS, labels)))
    assert discord_problems("MessageCreateRequest", largest) == [] and len(largest["components"]) == 3
    [actions] = [b for b in slack_blocks(Message("Which?", buttons(1, 2, CUE_CONTROLS, labels))) if b["type"] == "actions"]
    assert len(actions["elements"]) == MAX_CHOICES + 2 <= 25  # Block Kit's most elements in an actions block

    with FakeChat() as fake:  # a body Discord would refuse, received: the fixture names it
        sent = {**message, "components": [row("a"), row("a")]}
        request = urllib.request.Request(f"{fake.discord_url}/channels/1/messages", data=json.dumps(sent).encode(),
                                         headers={"Authorization": f"Bot {fake.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5):  # the loopback fake
            pass
        [problem] = what_discord_would_refuse(fake)
    assert problem.startswith("POST /discord/api/v10/channels/1/messages: custom_ids given twice"), problem
