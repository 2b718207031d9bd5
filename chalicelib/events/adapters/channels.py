"""Where core.cue and core.announce post: one channel per setting, each the `Channel` of `actions/notice.py`.

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
from typing import TYPE_CHECKING

# guard: channels-import-boto3-with-the-app
from ..actions.notice import Channel, Notice
from ..errors import ConfigError

if TYPE_CHECKING:
    from .signing import SigningKey

logger = logging.getLogger(__name__)


class LogChannel:
    """Posts as WARNING log lines: a cue needs a person, and Lambda drops INFO by default."""

    timeout = 0.0

    def __init__(self, name: str):
        self.name = name

    def post(self, notice: Notice) -> None:
        # guard: log-channel-posts-below-warning
        logger.warning(
            "%s channel: %s", self.name, notice.message(),
            extra={"channel": self.name, "kind": notice.kind, "run_id": notice.run_id, "step_id": notice.step_id,
                   "idempotency_key": notice.delivery_key},
        )


def channel_for(setting: str, name: str, *, timeout: float, webhook_secret: str | SigningKey | None = None,
                mention_role: str | None = None) -> Channel:
    """The channel a CUE_CHANNEL / ANNOUNCE_CHANNEL / ESCALATION_CHANNEL setting names (already checked by the
    settings); `mention_role` is the Discord role a webhook channel pings (ESCALATION_MENTION)."""
    scheme, _, target = setting.partition(":")
    if setting == "log":
        return LogChannel(name)
    if scheme == "sns":
        from .sns_channel import SnsChannel

        return SnsChannel(name, target, timeout=timeout)
    if scheme == "webhook":
        from .webhook_channel import WebhookChannel

        # guard: webhook-channel-without-a-secret
        if not webhook_secret:
            raise ConfigError(f"{name} channel is a webhook: set WEBHOOK_SECRET or WEBHOOK_SECRET_ARN")
        return WebhookChannel(name, target, webhook_secret, timeout=timeout, mention_role=mention_role)
    raise ConfigError(f"{name} channel {setting!r}: use 'log', 'sns:<topic arn>' or 'webhook:<url>'")
