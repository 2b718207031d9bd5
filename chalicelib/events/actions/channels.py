"""Where core.cue and core.announce post: one small interface, one channel per setting.

`log` writes a structured log line (CloudWatch keeps it). SNS topics and
webhooks are accepted by the settings but not built yet: asking for one fails
at start-up with a clear message instead of dropping messages at run time.
"""

from __future__ import annotations

import logging
from typing import Protocol

from ...config import ConfigError

log = logging.getLogger(__name__)


class ChannelError(Exception):
    """A post did not go through; `retryable` says whether a later attempt may."""

    def __init__(self, message: str, *, retryable: bool):
        super().__init__(message)
        self.retryable = retryable


class Channel(Protocol):
    name: str

    def post(self, text: str, context: dict) -> None:
        """Deliver `text`; raise ChannelError if it was not delivered."""


class LogChannel:
    """Posts as log lines: the channel of a deployment without SNS or a webhook."""

    def __init__(self, name: str):
        self.name = name

    def post(self, text: str, context: dict) -> None:
        log.info("%s: %s", self.name, text, extra={"channel": self.name, **context})


def channel_for(setting: str, name: str) -> Channel:
    """The channel a CUE_CHANNEL / ANNOUNCE_CHANNEL setting names."""
    if setting == "log":
        return LogChannel(name)
    raise ConfigError(f"{name} channel {setting!r}: only 'log' is available in this version")
