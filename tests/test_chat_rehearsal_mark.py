"""A dry run's cue in a Discord or Slack rehearsal channel stays marked [REHEARSAL] however its message changes.

Before, only the first post carried the mark (`Notice.message`): a game master's "I have it" and the tick's edit
after a confirm rewrote the message from the step alone, so it read as a live cue, with live buttons while it
waited. Each message here is read as its platform shows it: Discord's from the press's own answer and the fake's
copy, every body Discord was sent checked against its published schema; Slack's from the fake's copy, every text
checked for markup the engine did not write.
"""

import dataclasses

import pytest

from chalicelib import runtime
from chalicelib.events.chat.answers import finish
from chalicelib.events.chat.interactions import read_slack
from tests.support.api import ADMIN, MODERATOR
from tests.support.chat import (
    GM_ROLE,
    SLACK_GM,
    every_discord_body_valid,
    every_slack_body_escaped,
    valid_for_discord,
)
from tests.support.chat_world import ChatWorld, opened

DISCORD_INTERACTIONS = "/integrations/discord/interactions"
REHEARSAL = {"discord": "100000000000000099", "slack": "C0REHEARSE"}
MARK = "[REHEARSAL] "
CUE = {"name": "Bonfire rehearsal", "phases": [{"steps": [
    {"action": "core.cue", "params": {"instruction": "Light the bonfire"}}]}]}


@pytest.fixture(params=["discord", "slack"])
def world(request, db, clock, db_params, chat):
    """The chat world with REHEARSAL_CHANNEL on the platform under test, a channel of its own."""
    platform = request.param
    with opened(World, db, clock, db_params, chat) as opened_world:
        opened_world.platform = platform
        opened_world.settings = dataclasses.replace(opened_world.settings,
                                                    rehearsal_channel=f"{platform}:{REHEARSAL[platform]}")
        with runtime.override(settings=opened_world.settings):
            yield opened_world


class World(ChatWorld):
    platform = "discord"

    def dry_run_cue_posted(self):
        """A dry run of one cue, started on the console and ticked: its run id, its step and its message."""
        definition = self.api.post("/definitions", CUE, auth=ADMIN).body["definition"]["id"]
        started = self.api.post(f"/definitions/{definition}/dry-runs",
                                {"speed": 1, "bridge": "simulate", "auto_confirm_seconds": 3600}, auth=ADMIN)
        assert started.status == 201, started.body
        run_id = started.body["run"]["id"]
        self.tick()
        [message] = self.chat.messages(self.platform)
        assert message.channel_id == REHEARSAL[self.platform]
        return run_id, self.steps(run_id)[0], message

    def i_have_it(self, run_id, step, message) -> str:
        """A game master's "I have it" pressed on the message: the message's text as the press left it."""
        control = f"ev:{run_id}:{step.id}:acknowledge"
        if self.platform == "discord":
            headers, body = self.chat.discord_signed(self.chat.discord_interaction(message, control, roles=[GM_ROLE]))
            answer = self.api.call("POST", DISCORD_INTERACTIONS, raw=body, headers=headers)
            assert answer.status == 200 and answer.body["type"] == 7, answer.body  # the message updated at once
            valid_for_discord("interaction_callback", answer.body)
            return answer.body["data"]["content"]
        payload = self.chat.slack_interaction(message, control, user=SLACK_GM)
        finish({"press": read_slack(self.chat.slack_signed(payload)[1], self.settings).event()})
        return self.chat.message(message.id).text

    def every_body_as_its_platform_takes_it(self):
        assert every_discord_body_valid(self.chat) if self.platform == "discord" else every_slack_body_escaped(self.chat)


def test_a_dry_runs_cue_keeps_its_rehearsal_mark_after_i_have_it_and_after_the_ticks_edit(world):
    run_id, step, message = world.dry_run_cue_posted()
    assert message.text.startswith(f"{MARK}Cue: Light the bonfire")

    held = world.i_have_it(run_id, step, message)
    assert held.startswith(MARK) and "Light the bonfire" in held and held.endswith(" has it"), held
    assert world.steps(run_id)[0].acknowledged_by is not None
    assert world.chat.message(message.id).custom_ids  # still waiting: its buttons are still there, under the mark

    assert world.api.post(f"/runs/{run_id}/steps/{step.id}/confirm", {}, auth=MODERATOR).status == 200
    world.tick()
    ended = world.chat.message(message.id)
    assert ended.text.startswith(MARK) and "Confirmed by mod-mia" in ended.text, ended.text
    assert ended.custom_ids == []
    world.every_body_as_its_platform_takes_it()

