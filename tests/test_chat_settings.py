"""Presses from the chat on, with no place named where they count: refused at start, not press by press.

With DISCORD_PUBLIC_KEY set and DISCORD_GUILD_ID forgotten (or Slack's signing secret without SLACK_TEAM_ID), the
messages carried their buttons and every GM in the right server was told "Presses count only in the event's own
server, not in a direct message or another server": wrong, and nothing said what to set.
"""

import json
from urllib.parse import urlencode

import pytest

from chalicelib.config import Settings
from chalicelib.events.chat.interactions import read_discord, read_slack
from chalicelib.events.errors import ConfigError, Refused
from devtools.kit.fake_chat import GUILD_ID, TEAM_ID

KEY = "ab" * 32
SECRET_ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:slack-signing"


@pytest.mark.parametrize(("env", "said"), [
    ({"DISCORD_PUBLIC_KEY": KEY}, "DISCORD_PUBLIC_KEY turns Discord presses on: set DISCORD_GUILD_ID"),
    ({"SLACK_SIGNING_SECRET": "s3cret"}, "SLACK_SIGNING_SECRET turns Slack presses on: set SLACK_TEAM_ID"),
    ({"SLACK_SIGNING_SECRET_ARN": SECRET_ARN}, "SLACK_SIGNING_SECRET turns Slack presses on: set SLACK_TEAM_ID"),
])
def test_presses_on_without_the_place_they_count_in_is_refused_at_start(env, said):
    with pytest.raises(ConfigError, match=said):
        Settings.from_env({"CUE_CHANNEL": "discord:100000000000000001", "DISCORD_BOT_TOKEN": "x", **env})


def test_presses_on_with_their_place_load():
    settings = Settings.from_env({"DISCORD_PUBLIC_KEY": KEY, "DISCORD_GUILD_ID": GUILD_ID,
                                  "SLACK_SIGNING_SECRET": "s3cret", "SLACK_TEAM_ID": TEAM_ID})
    assert (settings.discord_guild_id, settings.slack_team_id) == (GUILD_ID, TEAM_ID)


def test_a_press_where_no_place_is_named_says_so_not_another_server():
    """Settings made without from_env (a test's, a script's) still meet the press: its refusal names the setting."""
    discord = {"type": 3, "id": "1", "guild_id": GUILD_ID, "data": {"custom_id": "ev:1:2:confirm"},
               "message": {"id": "3"}, "member": {"user": {"id": "4242"}, "roles": []}}
    with pytest.raises(Refused, match=r"names no Discord server \(DISCORD_GUILD_ID\)"):
        read_discord(discord, Settings(discord_public_key=KEY))
    slack = {"type": "block_actions", "team": {"id": TEAM_ID}, "user": {"id": "U0MIRA"},
             "actions": [{"action_id": "ev:1:2:confirm"}], "response_url": "https://hooks.slack.example/r"}
    with pytest.raises(Refused, match=r"names no Slack workspace \(SLACK_TEAM_ID\)"):
        read_slack(urlencode({"payload": json.dumps(slack)}).encode(), Settings(slack_signing_secret="s3cret"))
