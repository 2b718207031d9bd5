"""The AWS a sleeping deployment lives in, for tests: a moto server every process reaches, and its reading.

`moto_server()` starts moto's `ThreadedMotoServer` on a free loopback port and
points the environment at it (`AWS_ENDPOINT_URL`, a region, test credentials;
`moto_endpoint()` is the same without the minute rule), so the engine's own
clients (`adapters/aws.aws_client`) reach it from this process and from any process
started after it. `Deployment` reads what a person looking at
the AWS console would see: the minute rule's state and the one-time schedules.
"""

from __future__ import annotations

import contextlib
import os
import urllib.request
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

import boto3

RULE = "events-tick"
FUNCTION = "arn:aws:lambda:eu-west-1:123456789012:function:events-tick"
ROLE = "arn:aws:iam::123456789012:role/events-wake"
ENVIRONMENT = {"AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """A moto server on 127.0.0.1, the environment pointed at it, the rule created (enabled); its URL."""
    with moto_endpoint() as url:
        boto3.client("events").put_rule(Name=RULE, ScheduleExpression="rate(1 minute)", State="ENABLED")
        yield url


@contextlib.contextmanager
def moto_endpoint() -> Iterator[str]:
    """A moto server on 127.0.0.1 holding nothing yet, the environment pointed at it; its URL."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from moto.server import ThreadedMotoServer
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    # moto's backends live in this process, shared by every server it starts: emptied, so this one holds nothing
    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"), timeout=10).close()
    saved = {name: os.environ.get(name) for name in (*ENVIRONMENT, "AWS_ENDPOINT_URL")}
    os.environ.update(ENVIRONMENT, AWS_ENDPOINT_URL=url)
    try:
        yield url
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        server.stop()


@dataclass
class Deployment:
    """The rule and the schedules as AWS holds them (read with clients of its own, never faulted)."""

    events: object
    scheduler: object

    @classmethod
    def here(cls) -> Deployment:
        return cls(boto3.client("events"), boto3.client("scheduler"))

    def rule(self) -> str:
        return self.events.describe_rule(Name=RULE)["State"]  # type: ignore[attr-defined]

    def schedules(self) -> dict[str, datetime]:
        """The standing one-time schedules: name -> when they fire."""
        found = {}
        for entry in self.scheduler.list_schedules()["Schedules"]:  # type: ignore[attr-defined]
            expression = self.scheduler.get_schedule(Name=entry["Name"])["ScheduleExpression"]  # type: ignore[attr-defined]
            found[entry["Name"]] = datetime.strptime(expression, "at(%Y-%m-%dT%H:%M:%S)")
        return found

    def schedule_names(self) -> set[str]:
        return {entry["Name"] for entry in self.scheduler.list_schedules()["Schedules"]}  # type: ignore[attr-defined]

    def reset(self) -> None:
        """The rule on and no schedule: an awake deployment."""
        self.events.enable_rule(Name=RULE)  # type: ignore[attr-defined]
        for name in self.schedule_names():
            self.scheduler.delete_schedule(Name=name)  # type: ignore[attr-defined]


class Invoke(NamedTuple):
    """One Invoke as the loopback Lambda API received it."""

    path: str  # /2015-03-31/functions/<the function's ARN, quoted>/invocations
    kind: str | None  # its X-Amz-Invocation-Type: "Event" for a nudge
    payload: dict


class LambdaInvokes:
    """A loopback stand-in for the Lambda API's Invoke: accepts each call (202) and keeps it (`calls`)."""

    def __init__(self):
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        calls = self.calls = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                calls.append(Invoke(self.path, self.headers.get("X-Amz-Invocation-Type"), json.loads(body or b"{}")))
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def take(self) -> list[str]:
        """The sources of the calls kept so far (a nudge's, a wake-up's), and none kept any more."""
        taken, self.calls[:] = [call.payload.get("source") for call in self.calls], []
        return taken

    def invoke(self, function_arn: str) -> None:
        """A nudge sent here as the engine sends one (`nudge.invoke_tick`), through boto3."""
        from chalicelib.events.adapters import aws as aws_adapter

        client = boto3.client("lambda", region_name="eu-west-1", endpoint_url=self.url,
                              aws_access_key_id="test", aws_secret_access_key="test")
        client.invoke(FunctionName=function_arn, InvocationType="Event", Payload=aws_adapter.tick_payload("events.nudge"))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class World:
    """AWS firing the tick, minute by minute, as it would: the minute rule while it is enabled, each one-time
    schedule when its time comes (then deleted, as ActionAfterCompletion=DELETE does), each nudge at once.

    An invocation is the tick's: `started`, one tick, and an attempt to sleep if nothing is due within the
    horizon. One that raises is a failed invocation (the tick has no retries): counted, nothing else."""

    def __init__(self, db, clock, runner, invokes: LambdaInvokes, horizon, escalate_after: timedelta | None = None):
        self.db, self.clock, self.runner, self.invokes, self.horizon = db, clock, runner, invokes, horizon
        self.escalate_after = escalate_after  # EVENT_ESCALATE_AFTER_SECONDS, as the tick's handler passes it
        self.deployment = Deployment.here()
        self.failed: list[tuple[str, str]] = []
        self.sources: list[str] = []

    def switches(self):
        from chalicelib.events.adapters.aws import aws_switches

        return aws_switches(RULE, FUNCTION, ROLE)

    def invoke(self, source: str) -> None:
        from chalicelib.events.runner import Budget
        from chalicelib.events.runner.sleep import Sleeper, next_work

        self.sources.append(source)
        sleeper = Sleeper(self.db, self.switches(), self.horizon, escalate_after=self.escalate_after)
        try:
            sleeper.started(self.clock.now(), source)
            self.runner.tick(Budget.for_seconds(5))
            if next_work(self.db, self.clock.now(), self.horizon, self.escalate_after) > self.clock.now() + self.horizon:
                sleeper.try_sleep(self.clock.now())
        except Exception as error:  # the invocation failed
            self.failed.append((source, repr(error)))

    def minute(self) -> None:
        """One minute of AWS: the clock moves on a minute, then whatever fires, fires."""
        self.clock.advance(60)
        now = self.clock.now()
        for name, when in sorted(self.deployment.schedules().items(), key=lambda item: item[1]):
            if when <= now:
                self.deployment.scheduler.delete_schedule(Name=name)  # type: ignore[attr-defined]
                self.invoke("events.backstop" if "-backstop-" in name else "events.wake")
        for source in self.invokes.take():
            self.invoke(source)
        if self.deployment.rule() == "ENABLED":
            self.invoke("aws.events")

    def run_until(self, until) -> None:
        """Minutes of AWS up to `until`; while the rule is off and no nudge waits, straight on to the next
        schedule's minute (nothing fires in between)."""
        while self.clock.now() < until:
            if self.deployment.rule() == "DISABLED" and not self.invokes.calls:
                upcoming = list(self.deployment.schedules().values())
                nearest = min([*upcoming, until])
                if nearest - self.clock.now() > timedelta(minutes=1):
                    self.clock.set(nearest - timedelta(minutes=1))
            self.minute()

    def deliver_nudges(self) -> None:
        for source in self.invokes.take():
            self.invoke(source)


@contextlib.contextmanager
def engine_aws() -> Iterator[LambdaInvokes]:
    """A moto server and a loopback Lambda API, with the engine's cached AWS clients and switches dropped so
    they are built against them: what a sleeping deployment's tests run in."""
    import pytest

    from chalicelib.events.adapters import aws as aws_adapter
    from chalicelib.events.runner import compose

    invokes = LambdaInvokes()
    try:
        with moto_server(), pytest.MonkeyPatch.context() as patch:
            patch.setenv("AWS_ENDPOINT_URL_LAMBDA", invokes.url)
            patch.setattr(aws_adapter, "_clients", {})
            patch.setattr(compose, "_switches", None)
            yield invokes
    finally:
        invokes.close()
