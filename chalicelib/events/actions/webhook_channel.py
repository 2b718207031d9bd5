"""The `webhook:<url>` channel: one signed JSON POST per notice, in the shape Discord and Slack accept.

    {"content": <message, ≤ 2,000 characters>, "text": <message>, "allowed_mentions": {"parse": []}}

Discord reads `content` (and, told by `allowed_mentions`, pings nobody an
instruction happens to name), Slack reads `text`; each ignores the other's
field. A receiver of its own checks `X-Event-Signature` exactly as the game
bridge does (HMAC-SHA256 of "{X-Event-Timestamp}.{body}" with WEBHOOK_SECRET)
and can deduplicate on `Idempotency-Key`.

Invariant: only a 2xx answer within the channel's timeout is a delivery;
anything else raises ChannelError, so the step is retried with the same key.
"""

from __future__ import annotations

import json

from ..errors import ChannelError, OutboundError
from . import outbound
from .notice import Notice

DISCORD_CONTENT_LIMIT = 2000
MAX_MESSAGE = 4000  # Slack's text limit is far above; this keeps every request small
MAX_ANSWER_BYTES = 64 * 1024  # the answer is only looked at for its status


class WebhookChannel:
    def __init__(self, name: str, url: str, secret: str, *, timeout: float):
        self.name = name
        self.timeout = timeout
        self._endpoint = outbound.Endpoint.parse(url)
        self._secret = secret

    def post(self, notice: Notice) -> None:
        body = json.dumps({
            "content": notice.message(DISCORD_CONTENT_LIMIT),
            "text": notice.message(MAX_MESSAGE),
            "allowed_mentions": {"parse": []},
        }).encode()
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": notice.idempotency_key,
            "X-Event-Run": str(notice.run_id),
            "X-Event-Step": str(notice.step_id),
            "X-Event-Kind": notice.kind,
            **outbound.signed_headers(self._secret, notice.at, body),
        }
        try:
            answer = outbound.post(
                self._endpoint, self._endpoint.target(), body, headers,
                timeout=self.timeout, max_answer_bytes=MAX_ANSWER_BYTES,
            )
        except OutboundError as error:
            raise ChannelError(f"webhook: {error}") from None
        if not 200 <= answer.status < 300:
            reason = answer.body[:200].decode("utf-8", "replace").strip()
            raise ChannelError(f"webhook answered HTTP {answer.status}" + (f": {reason}" if reason else ""))
