"""A chat message always ends up saying how its step's wait ended, whatever became of the press's own edit.

Before, a press settled its message in its own transaction, before its edit (Slack's `response_url`, Discord's
`@original`, a type 7 answer) had reached the platform: an edit that then failed left the message's buttons live
for good, as the tick's chore passes over a settled message.
"""

import pytest

from chalicelib import runtime
from chalicelib.events.chat.answers import finish
from chalicelib.events.chat.interactions import read_discord, read_slack
from chalicelib.events.lifecycle import StepStatus
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.store import steps
from devtools.kit.fake_chat import Scripted
from tests.support.api import hs_settings
from tests.support.chat import GM_ROLE, SLACK_CHANNEL, SLACK_GM, chat_settings
from tests.support.factory import document
from tests.support.runner_kit import schedule, step, tick


@pytest.fixture
def world(db, clock, db_params, chat):
    settings = chat_settings(chat, hs_settings(db_params))
    with runtime.override(database=db, clock=clock, settings=settings):
        yield World(db, clock, chat, settings)


class World:
    def __init__(self, db, clock, chat, settings):
        self.db, self.clock, self.chat, self.settings = db, clock, chat, settings

    def cue_posted(self, settings=None):
        run = schedule(self.db, self.clock.now(), document([[step("core.cue", instruction="Light the bonfire")]]))
        self.tick(settings)
        return run, self.db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]

    def tick(self, settings=None):
        runner = build_runner(settings or self.settings, self.db, self.clock)
        try:
            return tick(runner)
        finally:
            runner.close()

    def status(self, run_id):
        return self.db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[0].status


def test_a_deferred_discord_press_whose_original_edit_fails_is_edited_by_the_tick(world):
    run, cue = world.cue_posted()
    [message] = world.chat.messages("discord")
    press = read_discord(world.chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:confirm", roles=[GM_ROLE]),
                         world.settings)
    world.chat.script(Scripted(500, {"message": "Internal Server Error"}))  # the @original PATCH
    finish({"press": press.event()})
    assert world.status(run.id) is StepStatus.DONE
    assert world.chat.message(message.id).custom_ids  # the press's own edit did not land
    world.tick()
    shown = world.chat.message(message.id)
    assert "Confirmed by <@4242>" in shown.text and shown.custom_ids == []


def test_a_slack_press_whose_response_url_fails_is_edited_by_the_tick(world):
    settings = chat_settings(world.chat, world.settings, cue_channel=f"slack:{SLACK_CHANNEL}")
    run, cue = world.cue_posted(settings)
    [message] = world.chat.messages("slack")
    payload = world.chat.slack_interaction(message, f"ev:{run.id}:{cue.id}:confirm", user=SLACK_GM)
    payload["response_url"] = f"{world.chat.url}/slack/respond/lapsed"  # Slack answers 404 expired_url
    press = read_slack(world.chat.slack_signed(payload)[1], settings)
    finish({"press": press.event()})
    assert world.status(run.id) is StepStatus.DONE
    assert world.chat.message(message.id).custom_ids
    world.tick(settings)
    shown = world.chat.message(message.id)
    assert "Confirmed by <@U0MIRA>" in shown.text and shown.custom_ids == []
