"""The AWS clients of sleeping and waking: the tick's Lambda invoke (the nudge), its minute rule's switch
(EventBridge: the tick's, and the nudge's fallback) and its one-time wake-ups (EventBridge Scheduler).

Invariant: every one is bounded by botocore's timeouts: `CONNECT_SECONDS` to
connect, `READ_SECONDS` per read, `ATTEMPTS` attempts in all (botocore's standard
retries), so one call that hangs takes at most `AWS_CALL_SECONDS` (per read, not
overall: an AWS endpoint answering a byte at a time would take longer, which
`outbound.py`'s own deadline exists for with peers a community runs). One client per service
and process; boto3 is imported only by a deployment that sleeps. Each
invocation these start carries the event the tick's handler reads as its
minute rule's, its `source` saying what started it (`runner/sleep.py` decides
what each means).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

CONNECT_SECONDS = 2.0
READ_SECONDS = 3.0
ATTEMPTS = 2  # botocore's total_max_attempts: the first try and one retry
# Each attempt's connect and read, and standard mode's back-off before the retry (at most 1 s).
AWS_CALL_SECONDS = ATTEMPTS * (CONNECT_SECONDS + READ_SECONDS) + 1.0

RULE_SOURCE = "aws.events"  # the minute rule's event
WAKE_SOURCE = "events.wake"
BACKSTOP_SOURCE = "events.backstop"
NUDGE_SOURCE = "events.nudge"

_clients: dict[str, Any] = {}
_client_lock = threading.Lock()


def client_config() -> Any:
    from botocore.config import Config

    # guard: aws-clients-without-timeouts
    return Config(connect_timeout=CONNECT_SECONDS, read_timeout=READ_SECONDS,
                  # guard: aws-clients-retry-without-a-cap
                  retries={"mode": "standard", "total_max_attempts": ATTEMPTS})


def aws_client(service: str) -> Any:
    """The boto3 client of `service` (events, scheduler, lambda) with the deadlines above, one per process
    (boto3 is imported only by a deployment that sleeps)."""
    with _client_lock:
        client = _clients.get(service)
        if client is None:
            import boto3

            client = _clients[service] = boto3.client(service, config=client_config())
        return client


def tick_payload(source: str) -> bytes:
    """An event the tick's Chalice handler reads as it reads the minute rule's (it wants every field of one)."""
    return json.dumps({
        "version": "0", "id": source, "detail-type": "Scheduled Event", "source": source, "account": "",
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "region": "", "resources": [],
        "detail": {},
    }).encode()


def invoke_tick(function_arn: str) -> None:
    """Start the tick function now, not waiting for it (the nudge)."""
    aws_client("lambda").invoke(FunctionName=function_arn, InvocationType="Event", Payload=tick_payload(NUDGE_SOURCE))


def invoke_chat(function_arn: str, event: dict[str, Any]) -> None:
    """Start the chat function on a press's asynchronous half (`chat/answers.finish`), not waiting for it."""
    aws_client("lambda").invoke(FunctionName=function_arn, InvocationType="Event", Payload=json.dumps(event).encode())


def turn_rule_on(rule_name: str) -> None:
    """Turn the tick's minute rule on (the nudge's fallback: a tick within the minute, whatever becomes of the
    invocation)."""
    aws_client("events").enable_rule(Name=rule_name)


@dataclass
class AwsSwitches:
    """The minute rule and the one-time schedules (`runner/sleep.Switches`), through boto3 clients the caller
    builds."""

    events: Any
    scheduler: Any
    rule_name: str
    function_arn: str
    role_arn: str

    def wake_up_name(self, sleep: int) -> str:
        return f"{self.rule_name}-wake-{sleep}"  # the tick's role may manage only schedules named after its rule

    def backstop_name(self, sleep: int) -> str:
        return f"{self.rule_name}-backstop-{sleep}"

    def rule_on(self) -> None:
        self.events.enable_rule(Name=self.rule_name)

    def rule_off(self) -> None:
        self.events.disable_rule(Name=self.rule_name)

    def set_wake_ups(self, sleep: int, wake_at: datetime, backstop_at: datetime) -> None:
        """The sleep's one-time wake-up, then its backstop; each deletes itself after firing."""
        self._put(self.wake_up_name(sleep), wake_at, WAKE_SOURCE)
        # guard: sleep-leaves-no-backstop
        self.set_backstop(sleep, backstop_at)

    def set_backstop(self, sleep: int, backstop_at: datetime) -> None:
        """The sleep's backstop alone, created or moved (a woken tick that could not wake puts it back)."""
        self._put(self.backstop_name(sleep), backstop_at, BACKSTOP_SOURCE)

    def cancel_wake_ups(self, sleep: int) -> None:
        for name in (self.wake_up_name(sleep), self.backstop_name(sleep)):
            try:
                self.scheduler.delete_schedule(Name=name)
            except self.scheduler.exceptions.ResourceNotFoundException:
                pass

    def _put(self, name: str, when: datetime, source: str) -> None:
        schedule = {
            "Name": name,
            "ScheduleExpression": f"at({when:%Y-%m-%dT%H:%M:%S})",
            "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "Target": {"Arn": self.function_arn, "RoleArn": self.role_arn, "Input": tick_payload(source).decode()},
            "ActionAfterCompletion": "DELETE",
        }
        try:
            self.scheduler.create_schedule(**schedule)
        except self.scheduler.exceptions.ConflictException:  # a retried create whose first answer was lost
            self.scheduler.update_schedule(**schedule)


def aws_switches(rule_name: str, function_arn: str, role_arn: str) -> AwsSwitches:
    return AwsSwitches(aws_client("events"), aws_client("scheduler"), rule_name, function_arn, role_arn)
