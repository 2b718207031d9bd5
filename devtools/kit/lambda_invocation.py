"""What a test or a benchmark needs to call the tick Lambda's handler as Lambda would, without waiting out its minute."""

from __future__ import annotations

import functools
from types import SimpleNamespace

from chalicelib.events.runner import lambda_handler as invocation_module

SCHEDULED_EVENT = {
    "version": "0",
    "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-12-04T20:00:00Z",
    "region": "eu-west-1",
    "resources": ["arn:aws:events:eu-west-1:123456789012:rule/event-run-engine-prod-tick"],
    "detail": {},
}


def lambda_context(remaining_ms: int = 70_000) -> SimpleNamespace:
    """A tick invocation's context: its timeout of 70 s, nearly all of it left."""
    return SimpleNamespace(
        get_remaining_time_in_millis=lambda: remaining_ms, aws_request_id="c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
        function_name="event-run-engine-prod-tick", invoked_function_arn="arn:aws:lambda:eu-west-1:123456789012:function:tick",
    )


class InjectedTime:
    """The invocation's monotonic time, moved only by its sleeps (and the run clock with it)."""

    def __init__(self, clock):
        self.now, self.clock = 0.0, clock

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.clock.advance(seconds)

    def install(self, monkeypatch) -> None:
        """The tick handler's invocation runs on this time."""
        monkeypatch.setattr(invocation_module, "run_invocation", functools.partial(
            invocation_module.run_invocation, monotonic=self.monotonic, sleep=self.sleep))
