"""docs/game-bridge.md's worked example signs as the engine does, and its Python quick start is a working bridge."""

from __future__ import annotations

import hashlib
import hmac
import re
from datetime import UTC, datetime
from pathlib import Path

from chalicelib import outbound
from chalicelib.events import bridge_check
from chalicelib.events.adapters.bridge import delivery_body
from chalicelib.events.bridge_check import Options
from tests.support.kits import event_bridge, serving

DOC = (Path(__file__).resolve().parent.parent / "docs" / "game-bridge.md").read_text()


def test_the_worked_examples_digests_are_the_engines():
    body = re.search(r"^BODY='(.*)'$", DOC, re.M).group(1)
    digests = re.findall(r"^# -> ([0-9a-f]{64})$", DOC, re.M)
    signed = outbound.signed_headers("dev-bridge-secret", datetime(2026, 12, 4, 20, 0), body.encode())
    assert signed["X-Event-Timestamp"] == "1796414400"
    assert signed["X-Event-Signature"] == f"sha256={digests[0]}"
    status = hmac.new(b"dev-bridge-secret", b"1796414400.GET./actions/world.spawn/status/r42-s7?attempt=2.", hashlib.sha256)
    assert status.hexdigest() == digests[1]


def test_the_worked_examples_accented_body_is_what_the_engine_sends_and_signs():
    """The line that shows a bridge its HMAC must be over the raw bytes: the engine's own JSON, escapes and all."""
    accented = re.search(r"^ACCENTED='(.*)'$", DOC, re.M).group(1)
    assert accented.encode() == delivery_body(42, 8, 1, "world.spawn", 1, {"npc": "Jörmungandr", "radius": 1.0}, "r42-s8", 1)
    signed = outbound.signed_headers("dev-bridge-secret", datetime(2026, 12, 4, 20, 0), accented.encode())
    assert signed["X-Event-Signature"] == f"sha256={re.findall(r'^# -> ([0-9a-f]{64})$', DOC, re.M)[2]}"


def test_the_python_quick_start_is_a_bridge_that_passes_the_check(monkeypatch):
    source = re.search(r"```python\n(.*?)```", DOC, re.S).group(1)
    monkeypatch.setenv("EVENT_BRIDGE_KEY", "quick-start-key")
    made = {}
    monkeypatch.setattr(event_bridge, "make_server", lambda bridge, host, port: made.setdefault("bridge", bridge) and _Idle())
    exec(compile(source, "docs/game-bridge.md", "exec"), {})  # noqa: S102 — the document's own example
    monkeypatch.undo()  # the real server again, to serve what the example built
    with serving(made["bridge"]) as url:
        report = bridge_check.run(Options(url, "quick-start-key", spawn_action="world.spawn"))
    assert [c.name for c in report.cases if c.verdict == "FAIL"] == []


class _Idle:
    def serve_forever(self) -> None:
        pass


def test_a_refused_key_is_answered_as_the_status_endpoint_paragraph_says_and_the_step_stays_refused():
    """The kits answer an ordinary refusal not_applied and replay it to the engine's re-send (review item 10: the
    page and the kits said two things): both halves the engine reads as refused."""
    from chalicelib.events.actions.outcome import Status, Verdict
    from chalicelib.events.adapters.bridge import classify, read_status

    assert "or `not_applied`, as the kits' stores and\ntheir READMEs' answer an ordinary refusal" in DOC
    bridge = event_bridge.Bridge("doc-key", handlers={"world.spawn": lambda d: event_bridge.refused("no room")})
    with serving(bridge) as url:
        sent = []
        for attempt in (1, 2):
            body = delivery_body(1, 2, 1, "world.spawn", 1, {}, "refused-key", attempt)
            endpoint = outbound.Endpoint.parse(url)
            if attempt == 2:
                target = endpoint.target("/actions/world.spawn/status/refused-key") + "?attempt=2"
                asked = outbound.get(endpoint, target=target, timeout=5, headers=outbound.signed_headers(
                    "doc-key", utc_now(), f"GET.{target}.".encode()))
                assert read_status(asked).status is Status.NOT_APPLIED
            headers = {"Content-Type": "application/json", "Idempotency-Key": "refused-key",
                       **outbound.signed_headers("doc-key", utc_now(), body)}
            sent.append(classify(outbound.post(endpoint, endpoint.target("/actions/world.spawn"), body, headers, timeout=5)))
    assert [(outcome.verdict, outcome.error) for outcome in sent] == [(Verdict.REFUSED, "refused: no room")] * 2


def utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)  # what signed_headers reads a naive time as
