"""REHEARSAL_CHANNEL is never a live channel: a deployment whose dry runs would post where the players or the game
masters read the live event is refused at start-up, naming both settings and the fix.

Before, any channel was accepted, the announcement channel too: every dry run then posted `[REHEARSAL] The
harvest begins` to the players. Webhooks are compared as places (`sameness.same_url`, as the sandbox is with the
bridge), a Discord or Slack channel by its id, an SNS topic by its ARN. Host names are answered from a table
(`tests/support/resolver.py`), never the network.
"""

import re

import pytest

from chalicelib import sameness
from chalicelib.config import Settings
from chalicelib.events.errors import ConfigError
from tests.support.resolver import Table

PLAYERS = "webhook:https://discord.com/api/webhooks/1/players"
TOPIC = "sns:arn:aws:sns:eu-west-1:123456789012:events-announcements"


@pytest.fixture(autouse=True)
def hosts(monkeypatch) -> Table:
    table = Table({"hooks.internal": {"10.0.0.7"}})
    monkeypatch.setattr(sameness, "resolve", table)
    return table


@pytest.mark.parametrize("live, value, rehearsal", [
    ("ANNOUNCE_CHANNEL", PLAYERS, PLAYERS),
    ("ANNOUNCE_CHANNEL", PLAYERS, "webhook:HTTPS://Discord.com:443/api/webhooks/1/./players/"),  # spelled otherwise
    ("ANNOUNCE_CHANNEL", TOPIC, TOPIC),
    ("CUE_CHANNEL", "discord:100000000000000001", "discord:100000000000000001"),
    ("CUE_CHANNEL", "webhook:http://hooks.internal/gms", "webhook:http://10.0.0.7/gms"),  # the host's address
    ("ESCALATION_CHANNEL", "slack:C0ONCALL", "slack:C0ONCALL"),
])
def test_a_rehearsal_channel_that_is_a_live_one_is_refused_at_start_up_naming_it(live, value, rehearsal):
    refused = (f"REHEARSAL_CHANNEL must be a channel of its own, not {live}'s: {rehearsal} is the same place as"
               f" {value}, so every dry run would post there; set REHEARSAL_CHANNEL to a channel no live post goes to,"
               " or unset it (log)")
    with pytest.raises(ConfigError, match=f"^{re.escape(refused)}$"):
        Settings.from_env({live: value, "REHEARSAL_CHANNEL": rehearsal})


@pytest.mark.parametrize("rehearsal", [
    "log",  # every channel's default: log lines, no one's channel
    "webhook:https://discord.com/api/webhooks/2/rehearsals",
    "discord:100000000000000099",
    "slack:C0REHEARSE",
    "sns:arn:aws:sns:eu-west-1:123456789012:events-rehearsals",
])
def test_a_rehearsal_channel_of_its_own_is_accepted(rehearsal):
    live = {"CUE_CHANNEL": "discord:100000000000000001", "ANNOUNCE_CHANNEL": PLAYERS, "ESCALATION_CHANNEL": "slack:C0ONCALL"}
    assert Settings.from_env({**live, "REHEARSAL_CHANNEL": rehearsal}).rehearsal_channel == rehearsal
    assert Settings.from_env({"REHEARSAL_CHANNEL": rehearsal}).rehearsal_channel == rehearsal  # beside log's defaults
