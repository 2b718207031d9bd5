"""Where core.cue and core.announce post: one small interface, one channel per setting.

Invariant: a post either reaches its channel or raises ChannelError, which makes
the step a retry with the same idempotency key (and, at the attempt ceiling, a
failed step that pauses the run): a notice is never dropped silently.

    log               a WARNING line: Lambda's root logger keeps WARNING and drops INFO
    sns:<topic-arn>   one SNS publish with message attributes (sns_channel.py)
    webhook:<url>     one signed JSON POST that Discord and Slack accept (webhook_channel.py)

boto3 is imported only when an `sns:` channel is built: a cold start without one
does not pay for it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from ..errors import ConfigError
from ..model import Step

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Notice:
    """What a core action posts: the authored text and where it comes from."""

    kind: str  # "cue" or "announce"
    text: str  # the instruction or message as authored
    run_id: int
    step_id: int
    idempotency_key: str
    at: datetime  # the tick's clock: webhooks sign with it
    link: str | None = None  # the run's page in the console

    @classmethod
    def of(cls, step: Step, kind: str, text: str, at: datetime, console_url: str | None) -> Notice:
        return cls(kind, text, step.run_id, step.id, step.idempotency_key, at, console_link(console_url, step.run_id))

    def message(self, limit: int | None = None) -> str:
        """What a person reads. A cue names its run and step and links to the run, so the
        game master who reads it knows where to confirm it; an announcement is its text.
        With `limit`, the text is shortened (never the run, step or link) to fit."""
        if self.kind != "cue":
            return _shorten(self.text, limit)
        tail = f"\nRun {self.run_id}, step {self.step_id}: confirm it once done, or skip it."
        if self.link:
            tail += f"\n{self.link}"
        head = "Cue: "
        return head + _shorten(self.text, None if limit is None else limit - len(head) - len(tail)) + tail

    @property
    def subject(self) -> str:
        return f"Cue for run {self.run_id}" if self.kind == "cue" else f"Announcement from run {self.run_id}"


def console_link(console_url: str | None, run_id: int) -> str | None:
    """The run's page: the console reads the run from the fragment."""
    return f"{console_url.rstrip('/')}#/runs/{run_id}" if console_url else None


def _shorten(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + "…"


class Channel(Protocol):
    name: str
    timeout: float  # the longest one post may take

    def post(self, notice: Notice) -> None:
        """Deliver `notice`; raise ChannelError if it was not delivered."""


class LogChannel:
    """Posts as WARNING log lines: a cue needs a person, and Lambda drops INFO by default."""

    timeout = 0.0

    def __init__(self, name: str):
        self.name = name

    def post(self, notice: Notice) -> None:
        logger.warning(
            "%s channel: %s", self.name, notice.message(),
            extra={"channel": self.name, "kind": notice.kind, "run_id": notice.run_id, "step_id": notice.step_id,
                   "idempotency_key": notice.idempotency_key},
        )


def channel_for(setting: str, name: str, *, timeout: float, webhook_secret: str | None = None) -> Channel:
    """The channel a CUE_CHANNEL / ANNOUNCE_CHANNEL setting names (already checked by the settings)."""
    scheme, _, target = setting.partition(":")
    if setting == "log":
        return LogChannel(name)
    if scheme == "sns":
        from .sns_channel import SnsChannel

        return SnsChannel(name, target, timeout=timeout)
    if scheme == "webhook":
        from .webhook_channel import WebhookChannel

        if not webhook_secret:
            raise ConfigError(f"{name} channel is a webhook: set WEBHOOK_SECRET or WEBHOOK_SECRET_ARN")
        return WebhookChannel(name, target, webhook_secret, timeout=timeout)
    raise ConfigError(f"{name} channel {setting!r}: use 'log', 'sns:<topic arn>' or 'webhook:<url>'")
