"""Channel settings are checked at start-up: a topic ARN, an http(s) URL, or `log`; nothing else starts."""

import pytest

from chalicelib.config import Settings
from chalicelib.events.errors import ConfigError


@pytest.mark.parametrize("value", [
    "log",
    "sns:arn:aws:sns:eu-west-1:123456789012:event-cues",
    "sns:arn:aws:sns:eu-west-1:123456789012:event-cues.fifo",
    "webhook:https://discord.com/api/webhooks/1/abc",
    "webhook:https://hooks.slack.com/services/T0/B0/x",
])
def test_sns_and_webhook_channels_are_accepted_at_start_up(value):
    assert Settings.from_env({"CUE_CHANNEL": value}).cue_channel == value


@pytest.mark.parametrize("value", [
    "sns:event-cues",
    "sns:arn:aws:sqs:eu-west-1:123456789012:event-cues",
    "sns:arn:aws:sns:eu-west-1:123456789012:*",
    "webhook:ftp://example.com/h",
    "webhook:https://user:pw@example.com/h",
    "webhook:",
    "email:gm@example.com",
])
def test_a_channel_setting_that_names_no_channel_stops_the_start_with_its_name(value):
    with pytest.raises(ConfigError, match=r"ANNOUNCE_CHANNEL must be 'log', 'sns:<topic arn>', 'webhook:<http\(s\) url>',"
                                        r" 'discord:<channel id>' or 'slack:<channel id>'"):
        Settings.from_env({"ANNOUNCE_CHANNEL": value})


def test_the_console_url_must_be_an_http_url():
    assert Settings.from_env({"EVENTS_CONSOLE_URL": "https://x.example.com/api/console"}).console_url
    with pytest.raises(ConfigError, match="EVENTS_CONSOLE_URL must be an http"):
        Settings.from_env({"EVENTS_CONSOLE_URL": "console"})
