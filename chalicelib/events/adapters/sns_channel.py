"""The `sns:<topic-arn>` channel: one publish per notice, with its run, step and kind as message attributes.

Invariant: a publish that SNS did not accept raises ChannelError (the step is
retried with the same key). On a FIFO topic the idempotency key is the
deduplication id, so a retry after a lost acknowledgement is not delivered twice.
botocore retries nothing itself: the step's retry is the one retry policy. Its
deadline is botocore's: connect and each read within half the channel's timeout,
which bounds a publish that hangs but not one SNS answers a byte at a time (not
an overall deadline: `outbound.py` says why; SNS is AWS's endpoint, not a peer
a community runs, and its answers are a few hundred bytes). The subject and message fit
SNS's limits (SNS_SUBJECT, SNS_MESSAGE) by the notice's one shortening rule.
"""

from __future__ import annotations

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from ..actions.notice import Limit, Notice, shorten
from ..errors import ChannelError

MAX_ERROR = 300
SNS_SUBJECT = Limit(99)  # SNS: "less than 100 characters"
# SNS: at most 256 KiB of UTF-8 for the whole publish; the subject and attributes take far less than the margin.
SNS_MESSAGE = Limit(256 * 1024 - 4 * 1024, lambda message: len(message.encode()))


class SnsChannel:
    def __init__(self, name: str, topic_arn: str, *, timeout: float):
        self.name = name
        self.timeout = timeout
        self.topic_arn = topic_arn
        region = topic_arn.split(":")[3]  # arn:aws:sns:<region>:<account>:<topic>
        # guard: sns-client-retries-on-its-own
        # guard: sns-client-without-its-read-timeout
        # guard: sns-client-without-its-connect-timeout
        config = Config(connect_timeout=timeout / 2, read_timeout=timeout / 2, retries={"total_max_attempts": 1})
        self._client = boto3.client("sns", region_name=region, config=config)

    def post(self, notice: Notice) -> None:
        attributes = {
            "run": {"DataType": "Number", "StringValue": str(notice.run_id)},
            **({} if notice.step_id is None else {"step": {"DataType": "Number", "StringValue": str(notice.step_id)}}),
            "kind": {"DataType": "String", "StringValue": notice.kind},
            "idempotency_key": {"DataType": "String", "StringValue": notice.delivery_key},
        }
        fifo = {}
        if self.topic_arn.endswith(".fifo"):
            # guard: sns-fifo-dedup-id-not-the-steps-key
            fifo = {"MessageGroupId": f"run-{notice.run_id}", "MessageDeduplicationId": notice.delivery_key}
        # guard: sns-message-past-its-limit
        message = notice.message(SNS_MESSAGE)
        try:
            self._client.publish(
                TopicArn=self.topic_arn, Subject=shorten(notice.subject, SNS_SUBJECT), Message=message,
                MessageAttributes=attributes, **fifo,
            )
        # guard: sns-refusal-is-not-a-channel-error
        except (BotoCoreError, ClientError) as error:
            raise ChannelError(f"SNS publish failed: {error}"[:MAX_ERROR]) from None
