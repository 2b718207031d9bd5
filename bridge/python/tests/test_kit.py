"""The Python bridge kit on its own: signatures, at most once, the fence, answers' shapes, signals' retries."""

from __future__ import annotations

import http.client
import io
import json
import logging
import re
import socket
import socketserver
import sqlite3
import sys
import threading
import time
from contextlib import closing
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from wsgiref.simple_server import WSGIRequestHandler
from wsgiref.simple_server import make_server as make_wsgi_server

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the kit's source tree, not an installed copy

from event_bridge import (
    Answer,
    BadAnswer,
    Begun,
    Bridge,
    Delivery,
    Gone,
    MemoryStore,
    Resource,
    Revert,
    SignalNotDelivered,
    SignalRefused,
    done,
    refused,
    send_signal,
)
from event_bridge import signals as signals_module
from event_bridge.server import make_server, wsgi_app
from event_bridge.signing import signed_headers, status_signed

KEY = "kit-key"
NOW = 1_800_000_000.0


def delivery(action="world.spawn", key="k1", attempt=1, **extra):
    body = json.dumps({"run_id": 7, "step_id": 21, "phase": 1, "action": action, "version": 1, "params": {},
                       "idempotency_key": key, "attempt": attempt, **extra}).encode()
    return {**signed_headers(KEY, body, NOW), "Idempotency-Key": key}, body


def bridge_counting(store=None):
    applied = []
    bridge = Bridge(KEY, store, clock=lambda: NOW)

    @bridge.action("world.spawn")
    def spawn(d):
        applied.append(d.key)
        return done(Resource("npc", f"dragon-{len(applied)}", Revert("world.despawn", {"id": len(applied)})))

    return bridge, applied


def status(bridge, key, attempt):
    target = f"/actions/world.spawn/status/{key}?attempt={attempt}"
    return bridge.handle("GET", target, signed_headers(KEY, status_signed(target), NOW), b"")


def test_a_delivery_is_applied_once_and_its_answer_replayed():
    bridge, applied = bridge_counting()
    headers, body = delivery()
    first = bridge.handle("POST", "/actions/world.spawn", headers, body)
    again = bridge.handle("POST", "/actions/world.spawn", headers, body)
    assert applied == ["k1"] and first.body == again.body
    assert first.body["resources"][0]["id"] == "dragon-1"
    assert status(bridge, "k1", 2).body == {"status": "applied", "resources": first.body["resources"]}


@pytest.mark.parametrize("tamper", ["signature", "timestamp", "body", "stale"])
def test_a_request_that_does_not_verify_is_401_and_applies_nothing(tamper):
    bridge, applied = bridge_counting()
    headers, body = delivery()
    if tamper == "signature":
        headers["X-Event-Signature"] = "sha256=" + "0" * 64
    elif tamper == "timestamp":
        headers["X-Event-Timestamp"] = str(int(NOW) + 1)
    elif tamper == "body":
        body = body.replace(b'"params":{}', b'"params":{"boss":1}').replace(b'"params": {}', b'"params": {"boss": 1}')
    else:
        headers.update(signed_headers(KEY, body, NOW - 301))
    answer = bridge.handle("POST", "/actions/world.spawn", headers, body)
    assert answer.status == 401 and applied == []


@pytest.mark.parametrize("keys", [["new-key", KEY], ("new-key", KEY), lambda: ["new-key", KEY]], ids=["list", "tuple", "function"])
def test_during_a_rotation_a_bridge_takes_requests_signed_with_either_key_and_no_other(keys):
    bridge = Bridge(keys, clock=lambda: NOW)
    for key in ("new-key", KEY):
        body = json.dumps({"run_id": 7, "step_id": 21, "action": "test.noop", "idempotency_key": key, "attempt": 1}).encode()
        answer = bridge.handle("POST", "/actions/test.noop", {**signed_headers(key, body, NOW), "Idempotency-Key": key}, body)
        assert answer.status == 200, key
        target = f"/actions/test.noop/status/{key}?attempt=2"
        assert bridge.handle("GET", target, signed_headers(key, status_signed(target), NOW), b"").body == {"status": "applied"}
    body = json.dumps({"run_id": 7, "step_id": 21, "action": "test.noop", "idempotency_key": "k9", "attempt": 1}).encode()
    other = bridge.handle("POST", "/actions/test.noop", {**signed_headers("another", body, NOW), "Idempotency-Key": "k9"}, body)
    assert other.status == 401 and other.body["reason"] == "the signature does not verify with this bridge's keys"
    keyless = Bridge([], clock=lambda: NOW)
    assert keyless.handle("POST", "/actions/test.noop", {**signed_headers("", body, NOW), "Idempotency-Key": "k9"}, body).status == 401


def test_a_signed_body_must_name_what_the_request_carries():
    bridge, applied = bridge_counting()
    headers, body = delivery()
    headers["Idempotency-Key"] = "another"
    answer = bridge.handle("POST", "/actions/world.spawn", headers, body)
    assert answer.status == 400 and "Idempotency-Key" in answer.body["reason"] and applied == []


def test_the_status_endpoint_raises_the_fence_and_a_lower_attempt_is_refused():
    bridge, applied = bridge_counting()
    assert status(bridge, "k1", 3).body == {"status": "not_applied"}
    headers, body = delivery(attempt=2)
    answer = bridge.handle("POST", "/actions/world.spawn", headers, body)
    assert answer.status == 409 and answer.body["outcome"] == "refused" and applied == []
    headers, body = delivery(attempt=3)
    assert bridge.handle("POST", "/actions/world.spawn", headers, body).status == 200 and applied == ["k1"]


def test_a_refusal_is_replayed_and_reported_not_applied():
    bridge = Bridge(KEY, clock=lambda: NOW, handlers={"world.spawn": lambda d: refused("the arena is full")})
    headers, body = delivery()
    assert bridge.handle("POST", "/actions/world.spawn", headers, body).body == {"outcome": "refused", "reason": "the arena is full"}
    assert status(bridge, "k1", 2).body == {"status": "not_applied"}
    assert bridge.handle("POST", "/actions/world.spawn", *delivery(attempt=2)).body["outcome"] == "refused"


def test_a_delivery_being_applied_is_in_progress_and_a_concurrent_repeat_is_told_to_retry():
    release, started = threading.Event(), threading.Event()

    def slow(d):
        started.set()
        release.wait(10)
        return done()

    bridge = Bridge(KEY, clock=lambda: NOW, handlers={"world.spawn": slow})
    worker = threading.Thread(target=bridge.handle, args=("POST", "/actions/world.spawn", *delivery()))
    worker.start()
    started.wait(10)
    assert status(bridge, "k1", 1).body == {"status": "in_progress"}
    assert bridge.handle("POST", "/actions/world.spawn", *delivery()).status == 429
    release.set()
    worker.join(10)
    assert status(bridge, "k1", 1).body == {"status": "applied"}


def test_a_key_left_in_progress_by_a_crash_is_taken_again_once_its_lease_runs_out():
    """The game died mid-delivery: its store kept the key in progress (begin ran, finish never did). Within the
    lease a re-send is told to retry and the key is in progress; after it, not applied, and the re-send applies it."""
    now = [100.0]
    store = MemoryStore(lease_seconds=60, clock=lambda: now[0])
    assert store.begin("k1", 1).decision == "new"  # the delivery that was running when the game stopped
    bridge, applied = bridge_counting(store)
    assert bridge.handle("POST", "/actions/world.spawn", *delivery(attempt=2)).status == 429
    assert status(bridge, "k1", 2).body == {"status": "in_progress"}
    now[0] += 60
    assert status(bridge, "k1", 3).body == {"status": "not_applied"}
    answer = bridge.handle("POST", "/actions/world.spawn", *delivery(attempt=3))
    assert answer.status == 200 and applied == ["k1"]
    now[0] += 600  # an answered key stays answered, whatever the time
    assert status(bridge, "k1", 3).body["status"] == "applied"
    assert bridge.handle("POST", "/actions/world.spawn", *delivery(attempt=3)).body == answer.body and applied == ["k1"]


def test_by_default_a_handler_has_a_deadline_shorter_than_the_lease():
    """Without one, a handler stalled past its key's lease (a game DB lock, a world save) is still running when the
    engine's re-send takes the key as new, and both apply (review item 5)."""
    bridge = Bridge(KEY)
    assert bridge.handler_seconds is not None and bridge.handler_seconds < MemoryStore().lease_seconds


@pytest.mark.parametrize("handler_seconds", [None, 2, 30])
def test_a_deadline_not_shorter_than_the_stores_lease_is_refused_saying_why(handler_seconds):
    with pytest.raises(ValueError) as refused:
        Bridge(KEY, MemoryStore(lease_seconds=2), handler_seconds=handler_seconds)
    assert str(refused.value) == (
        f"handler_seconds ({handler_seconds}) must be shorter than the store's lease_seconds (2): else a handler still"
        " running when its key's lease runs out is applied twice, the engine's re-send taking the key as new")
    assert Bridge(KEY, MemoryStore(lease_seconds=2), handler_seconds=1).handler_seconds == 1


def test_a_handler_past_its_deadline_is_a_json_500_and_its_key_let_go(caplog):
    release = threading.Event()
    calls = []

    def hangs_once(d):
        calls.append(d.attempt)
        if len(calls) == 1:
            release.wait(10)
        return done()

    bridge = Bridge(KEY, clock=lambda: NOW, handlers={"world.spawn": hangs_once}, handler_seconds=0.2)
    with caplog.at_level(logging.WARNING, logger="event_bridge"):
        late = bridge.handle("POST", "/actions/world.spawn", *delivery())
    release.set()
    assert late.status == 500 and late.body == {"reason": "the world.spawn handler did not answer within 0.2 s"}
    assert "world.spawn key 'k1' attempt 1: the handler did not answer within 0.2 s" in caplog.text
    assert status(bridge, "k1", 2).body == {"status": "not_applied"}
    assert bridge.handle("POST", "/actions/world.spawn", *delivery(attempt=2)).status == 200 and calls == [1, 2]
    broken = Bridge(KEY, clock=lambda: NOW, handlers={"world.spawn": lambda d: 1 / 0}, handler_seconds=5)
    assert "ZeroDivisionError" in broken.handle("POST", "/actions/world.spawn", *delivery()).body["reason"]


class FailingStore(MemoryStore):
    """A store whose database is down for the calls named in `failing`."""

    def __init__(self, *failing):
        super().__init__()
        self.failing = set(failing)

    def _maybe(self, call):
        if call in self.failing:
            raise ConnectionError("database unreachable")

    def begin(self, key, attempt):
        self._maybe("begin")
        return super().begin(key, attempt)

    def finish(self, key, answer):
        self._maybe("finish")
        super().finish(key, answer)

    def abandon(self, key):
        self._maybe("abandon")
        super().abandon(key)

    def status(self, key, attempt):
        self._maybe("status")
        return super().status(key, attempt)


def test_a_store_failing_before_the_handler_ran_is_a_json_503_and_nothing_applied(caplog):
    bridge, applied = bridge_counting(FailingStore("begin", "status"))
    with caplog.at_level(logging.WARNING, logger="event_bridge"):
        answer = bridge.handle("POST", "/actions/world.spawn", *delivery())
        asked = status(bridge, "k1", 1)
    assert answer.status == 503 and "database unreachable" in answer.body["reason"] and applied == []
    assert asked.status == 503 and "database unreachable" in asked.body["reason"]
    assert "world.spawn key 'k1' attempt 1: the store failed in begin" in caplog.text


def test_a_store_failing_to_record_the_answer_is_a_502_the_engine_reads_as_in_doubt(caplog):
    """The handler ran; its answer is not recorded. A 5xx with a JSON body would tell the engine "not applied";
    a 502 is in doubt, whatever its body (chalicelib/events/adapters/bridge.py, classify)."""
    bridge, applied = bridge_counting(FailingStore("finish"))
    with caplog.at_level(logging.WARNING, logger="event_bridge"):
        answer = bridge.handle("POST", "/actions/world.spawn", *delivery())
    assert answer.status == 502 and "the outcome is unknown" in answer.body["reason"] and applied == ["k1"]
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    assert "world.spawn key 'k1' attempt 1: the store failed in finish" in caplog.text
    assert "database unreachable" in caplog.text  # the traceback


def test_a_store_failing_to_let_a_key_go_still_answers_the_handlers_failure(caplog):
    bridge = Bridge(KEY, FailingStore("abandon"), clock=lambda: NOW, handlers={"world.spawn": lambda d: 1 / 0})
    with caplog.at_level(logging.WARNING, logger="event_bridge"):
        answer = bridge.handle("POST", "/actions/world.spawn", *delivery())
    assert answer.status == 500 and "ZeroDivisionError" in answer.body["reason"]
    assert "the store failed in abandon" in caplog.text


@pytest.mark.parametrize("begun", [Begun("replay"), Begun("Fenced"), Begun("replayed"), Begun(None)])  # type: ignore[arg-type]
def test_the_handler_runs_only_when_the_store_decided_new(caplog, begun):
    class Odd(MemoryStore):
        def begin(self, key, attempt):
            return begun

    bridge, applied = bridge_counting(Odd())
    with caplog.at_level(logging.WARNING, logger="event_bridge"):
        answer = bridge.handle("POST", "/actions/world.spawn", *delivery())
    assert answer.status == 500 and "the action was not run" in answer.body["reason"] and applied == []
    assert "world.spawn key 'k1' attempt 1: the store's begin decided" in caplog.text


class ContextMemoryStore(MemoryStore):
    """Gives each new delivery a context, and says what finish and abandon were handed."""

    def __init__(self):
        super().__init__()
        self.handed = []

    def begin(self, key, attempt):
        begun = super().begin(key, attempt)
        return replace(begun, context={"tx": f"{key}/{attempt}"}) if begun.decision == "new" else begun

    def finish(self, key, answer, context):
        self.handed.append(("finish", context))
        super().finish(key, answer)

    def abandon(self, key, context):
        self.handed.append(("abandon", context))
        super().abandon(key)


def test_a_stores_context_reaches_the_handler_then_finish_or_abandon():
    seen = []

    def spawn(d):
        seen.append(d.context)
        if d.attempt == 1:
            raise RuntimeError("the world server is restarting")
        return done()

    store = ContextMemoryStore()
    bridge = Bridge(KEY, store, clock=lambda: NOW, handlers={"world.spawn": spawn})
    assert bridge.handle("POST", "/actions/world.spawn", *delivery()).status == 500
    assert bridge.handle("POST", "/actions/world.spawn", *delivery(attempt=2)).status == 200
    assert seen == [{"tx": "k1/1"}, {"tx": "k1/2"}]
    assert store.handed == [("abandon", {"tx": "k1/1"}), ("finish", {"tx": "k1/2"})]
    assert bridge_counting()[0].handle("POST", "/actions/world.spawn", *delivery()).status == 200  # no context: as ever


README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


class WallClock:
    """`time` for the README's code, which reads `time.time()`: the wall clock's, until a test moves it on."""

    def __init__(self) -> None:
        self.now = time.time()

    def time(self) -> float:
        return self.now


def readme_store(tmp_path, lease_seconds=60.0, clock: WallClock | None = None):
    """The README's SqliteStore and its handler, as written there, over a game database with an npcs table; its
    `time.time()` is `clock`'s if given."""
    blocks = re.findall(r"^```python\n(.*?)^```", README, re.S | re.M)
    assert len(blocks) == 2
    scope: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), scope)  # noqa: S102 — the README's own example
    if clock is not None:
        assert scope["time"] is time, "the README's store reads the clock through `time`"
        scope["time"] = clock
    path = str(tmp_path / "game.db")
    store = scope["SqliteStore"](path, lease_seconds)
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE npcs (id TEXT PRIMARY KEY)")
    bridge = Bridge(KEY, store, clock=lambda: NOW)
    exec(compile(blocks[1], "README.md", "exec"), {"bridge": bridge, "done": done, "Resource": Resource, "Revert": Revert})  # noqa: S102

    def npcs():
        with closing(sqlite3.connect(path)) as db:
            return [row[0] for row in db.execute("SELECT id FROM npcs")]

    return store, bridge, npcs


def test_the_readmes_sqlite_store_applies_once_and_commits_the_world_change_with_its_answer(tmp_path):
    _, bridge, npcs = readme_store(tmp_path)
    first = bridge.handle("POST", "/actions/world.spawn", *delivery())
    assert first.status == 200 and npcs() == ["npc-k1"]
    assert bridge.handle("POST", "/actions/world.spawn", *delivery(attempt=2)).body == first.body and npcs() == ["npc-k1"]
    assert status(bridge, "k1", 3).body == {"status": "applied", "resources": first.body["resources"]}
    assert bridge.handle("POST", "/actions/world.spawn", *delivery(attempt=2)).status == 409
    assert status(bridge, "k2", 1).body == {"status": "not_applied"}


def test_the_readmes_sqlite_store_rolls_back_a_change_whose_answer_was_not_recorded(tmp_path):
    # The lease runs on a clock the test moves: on the wall clock, a 0.3 s lease could run out on a busy disk
    # before the re-send below was told 429.
    clock = WallClock()
    store, bridge, npcs = readme_store(tmp_path, lease_seconds=60.0, clock=clock)
    spawn = bridge.handlers["world.spawn"]

    def spawns_then_fails(d):
        spawn(d)
        raise RuntimeError("the world server is restarting")

    bridge.handlers["world.spawn"] = spawns_then_fails
    assert bridge.handle("POST", "/actions/world.spawn", *delivery()).status == 500
    assert npcs() == [] and status(bridge, "k1", 1).body == {"status": "not_applied"}
    # the game dies mid-delivery: begin marked the key, the handler's change was never committed
    crashed = store.begin("k2", 1)
    spawn(replace(Delivery("world.spawn", "k2", 1, 7, 21, {}, False, {}), context=crashed.context))
    crashed.context.close()  # the game stops: what it had not committed is gone
    assert status(bridge, "k2", 1).body == {"status": "in_progress"} and npcs() == []
    assert bridge.handle("POST", "/actions/world.spawn", *delivery(key="k2")).status == 429
    clock.now += 59.9
    assert status(bridge, "k2", 1).body == {"status": "in_progress"}, "the lease holds to its end"
    clock.now += 0.2  # the lease runs out
    bridge.handlers["world.spawn"] = spawn
    assert status(bridge, "k2", 2).body == {"status": "not_applied"}
    assert bridge.handle("POST", "/actions/world.spawn", *delivery(key="k2", attempt=2)).status == 200 and npcs() == ["npc-k2"]


def test_the_readmes_sqlite_store_says_in_progress_while_a_slow_delivery_runs(tmp_path):
    _, bridge, npcs = readme_store(tmp_path)
    spawn, started, release = bridge.handlers["world.spawn"], threading.Event(), threading.Event()

    def slow_spawn(d):
        answer = spawn(d)  # the world change made in the delivery's transaction, which holds SQLite's write lock
        started.set()
        release.wait(10)
        return answer

    bridge.handlers["world.spawn"] = slow_spawn
    delivered: list[Answer] = []
    worker = threading.Thread(target=lambda: delivered.append(bridge.handle("POST", "/actions/world.spawn", *delivery())))
    worker.start()
    try:
        assert started.wait(5)
        asked: list[Answer] = []
        asking = threading.Thread(target=lambda: asked.append(status(bridge, "k1", 1)), daemon=True)
        asking.start()
        asking.join(3)  # the engine waits 10 s for a status answer; the lock is held as long as the handler runs
        assert asked and asked[0].body == {"status": "in_progress"}
    finally:
        release.set()
        worker.join(10)
    assert delivered[0].status == 200 and npcs() == ["npc-k1"]
    assert status(bridge, "k1", 2).body == {"status": "applied", "resources": delivered[0].body["resources"]}
    assert bridge.handle("POST", "/actions/world.spawn", *delivery(attempt=1)).status == 409  # the fence, raised then


def test_a_handler_that_raises_is_a_json_500_and_the_key_can_be_tried_again():
    calls = []

    def flaky(d):
        calls.append(d.attempt)
        if len(calls) == 1:
            raise RuntimeError("the world server is restarting")
        return done()

    bridge = Bridge(KEY, clock=lambda: NOW, handlers={"world.spawn": flaky})
    first = bridge.handle("POST", "/actions/world.spawn", *delivery())
    assert first.status == 500 and "the world server is restarting" in first.body["reason"]
    assert bridge.handle("POST", "/actions/world.spawn", *delivery(attempt=2)).status == 200 and calls == [1, 2]


def test_a_handler_failure_is_a_warning_naming_the_action_key_and_attempt(caplog):
    def broken(d):
        raise RuntimeError("the world server is restarting")

    bridge = Bridge(KEY, clock=lambda: NOW, handlers={"world.spawn": broken})
    with caplog.at_level(logging.WARNING, logger="event_bridge"):
        assert bridge.handle("POST", "/actions/world.spawn", *delivery(attempt=2)).status == 500
    [record] = caplog.records
    assert record.name == "event_bridge" and record.levelno == logging.WARNING
    assert "world.spawn key 'k1' attempt 2: the handler failed" in record.getMessage()
    assert "the world server is restarting" in caplog.text  # the traceback


def spawn_answering(wrong):
    """A world.spawn that changes the world, then answers `wrong()`: the spawns it made."""
    spawned = []

    def spawn(d):
        spawned.append(d.attempt)
        return wrong()

    return Bridge(KEY, clock=lambda: NOW, handlers={"world.spawn": spawn}), spawned


@pytest.mark.parametrize("wrong, problem", [
    (lambda: done(Resource("npc", "x", Revert("despawn", {"id": "x"}))), "resources[0].revert.action"),  # BadAnswer in done()
    (lambda: {"outcome": "done"}, "not a dict"),
    (lambda: done(log="x" * (1024 * 1024)), "the engine reads at most 1048576"),
    (lambda: done(when=object()), "the answer is not JSON"),
    (lambda: done(at=float("nan")), "the answer is not JSON"),  # json.dumps would write NaN, which is not JSON
    (lambda: Answer({"outcome": "accepted"}, 202), "outcome: done or refused, not 'accepted'"),
])
def test_an_answer_refused_after_the_handler_ran_is_final_and_the_action_never_runs_again(caplog, wrong, problem):
    bridge, spawned = spawn_answering(wrong)
    with caplog.at_level(logging.WARNING, logger="event_bridge"):
        first = bridge.handle("POST", "/actions/world.spawn", *delivery())
    # 422 is a refusal the engine does not retry; a 500 would be "not applied, try later" and spawn again
    assert first.status == 422 and first.body["outcome"] == "refused"
    assert first.body["reason"].startswith("the world.spawn handler's answer is not one the engine takes (")
    assert problem in first.body["reason"]
    assert first.body["reason"].endswith("the action ran once and will not be applied again: fix the handler")
    assert len(first.payload()) < 1000  # what the key recorded is an answer the kit can send
    again = bridge.handle("POST", "/actions/world.spawn", *delivery(attempt=2))
    assert (again.status, again.body) == (422, first.body) and spawned == [1]
    # applied (the handler ran), and refused: a lost answer asked about keeps the step refused, not done
    assert status(bridge, "k1", 3).body == {"status": "applied", "outcome": "refused", "reason": first.body["reason"]}
    assert bridge.handle("POST", "/actions/world.spawn", *delivery(attempt=3)).status == 422 and spawned == [1]
    [record] = caplog.records
    assert record.levelno == logging.WARNING and "world.spawn key 'k1' attempt 1" in record.getMessage()
    assert problem in record.getMessage()


def test_a_revert_of_something_already_gone_is_done():
    def despawn(d):
        raise Gone

    bridge = Bridge(KEY, clock=lambda: NOW, handlers={"world.despawn": despawn})
    answer = bridge.handle("POST", "/actions/world.despawn", *delivery(action="world.despawn"))
    assert answer.status == 200 and answer.body["outcome"] == "done"


def test_an_unknown_action_is_refused_422():
    bridge = Bridge(KEY, clock=lambda: NOW, test_actions=False)
    answer = bridge.handle("POST", "/actions/test.noop", *delivery(action="test.noop"))
    assert answer.status == 422 and answer.body["reason"] == "this bridge has no action 'test.noop'"


@pytest.mark.parametrize("resource, problem", [
    (Resource("", "x"), "resources[0].kind"),
    (Resource("npc", "x" * 192), "resources[0].id"),
    (Resource("npc", "\ud800"), "resources[0].id"),
    (Resource("npc", "x", Revert("despawn")), "resources[0].revert.action"),
    (Resource("npc", "x", Revert("core.wait")), "resources[0].revert.action"),
    (Resource("npc", "x", Revert("world.despawn", {"blob": "x" * 17000})), "resources[0].revert.params"),
    (Resource("npc", "x", Revert("world.despawn", {"at": float("nan")})), "resources[0].revert.params: not JSON"),
    (Resource("npc", "x", Revert("world.despawn", {"at": [float("-inf")]})), "resources[0].revert.params: not JSON"),
    # a by-hand revert is a cue: the engine refuses one without core.cue's params, and the whole list with it
    (Resource("npc", "x", Revert("core.cue")), "resources[0].revert.params.instruction"),
    (Resource("npc", "x", Revert("core.cue", {"instruction": " \n"})), "resources[0].revert.params.instruction"),
    (Resource("npc", "x", Revert("core.cue", {"instruction": "x" * 2001})), "resources[0].revert.params.instruction"),
    (Resource("npc", "x", Revert("core.cue", {"instruction": "despawn it", "note": "x"})), "resources[0].revert.params.note"),
    (Resource("npc", "x", Revert("core.cue", {"instruction": "despawn it", "timeout_seconds": 2})),
     "resources[0].revert.params.timeout_seconds"),
    (Resource("npc", "x", Revert("core.cue", {"instruction": "despawn it", "timeout_seconds": 60.0})),
     "resources[0].revert.params.timeout_seconds"),
    (Resource("npc", "x", Revert("core.cue", {"instruction": "despawn it", "on_timeout": "pause"})),
     "resources[0].revert.params: on_timeout needs timeout_seconds"),
    (Resource("npc", "x", Revert("core.cue", {"instruction": "despawn it", "timeout_seconds": 60, "remind_after_seconds": 60})),
     "resources[0].revert.params.remind_after_seconds"),
])
def test_an_answer_the_engine_would_refuse_is_refused_here(resource, problem):
    with pytest.raises(BadAnswer, match=problem.replace("[", r"\[").replace("]", r"\]")):
        done(resource)


@pytest.mark.parametrize("params", [
    {"instruction": "despawn the boss by hand"},
    {"instruction": "despawn the boss by hand", "remind_after_seconds": 60, "remind_limit": 3, "escalate_after_seconds": 300,
     "timeout_seconds": 600, "on_timeout": "pause"},
    {"instruction": "was the boss despawned?", "choices": [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}],
     "timeout_seconds": 600, "on_timeout": "confirm", "timeout_choice": "no"},
])
def test_a_by_hand_revert_with_core_cues_params_is_taken(params):
    assert done(Resource("npc", "x", Revert("core.cue", params))).body["resources"][0]["revert"]["params"] == params


def test_at_most_a_hundred_resources():
    done(*[Resource("npc", str(i)) for i in range(100)])
    with pytest.raises(BadAnswer, match="at most 100 entries, not 101"):
        done(*[Resource("npc", str(i)) for i in range(101)])


class Engine(BaseHTTPRequestHandler):
    """A stand-in for the engine's signal route: answers what `answers` holds, in order; records each request."""

    answers: ClassVar[list[tuple]] = []  # (status, body) or (status, body, headers)
    seen: ClassVar[list[tuple[str, dict, bytes]]] = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Engine.seen.append((self.path, dict(self.headers.items()), body))
        status, answer, *headers = Engine.answers.pop(0)
        payload = json.dumps(answer).encode()
        self.send_response(status)
        for name, value in (headers[0] if headers else {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def engine():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Engine)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Engine.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}/api"
    server.shutdown()
    server.server_close()


def test_a_signal_is_retried_through_a_resume_and_signed_without_the_stage(engine):
    Engine.answers = [(503, {"error": "the database is resuming"}), (429, {"error": "slow down"}),
                      (201, {"signal": {"name": "boss_defeated"}})]
    waits = []
    answer = send_signal(engine, "sig-key", 42, "boss_defeated", {"boss": "scarecrow"}, sleep=waits.append)
    assert answer == {"signal": {"name": "boss_defeated"}} and waits == [1.0, 2.0]
    path, headers, body = Engine.seen[-1]
    assert path == "/api/runs/42/signals/boss_defeated"
    import hashlib
    import hmac
    ts = headers["X-Signal-Timestamp"]
    expected = hmac.new(b"sig-key", f"{ts}.POST./runs/42/signals/boss_defeated.".encode() + body, hashlib.sha256).hexdigest()
    assert headers["X-Signal-Signature"] == f"sha256={expected}"


def test_a_refused_signal_is_final_and_shows_the_engines_error(engine):
    Engine.answers = [(404, {"error": "run 42 has no signal 'boss_dead'"})]
    with pytest.raises(SignalRefused, match="run 42 has no signal 'boss_dead'"):
        send_signal(engine, "sig-key", 42, "boss_dead", sleep=lambda s: None)


def test_a_refused_signal_carries_the_engines_errors_as_its_error(engine):
    Engine.answers = [(409, {"errors": ["run 3 is cancelled; a finished run takes no signal"],
                             "detail": {"run_status": "cancelled"}})]
    with pytest.raises(SignalRefused) as refusal:
        send_signal(engine, "sig-key", 3, "boss_defeated", sleep=lambda s: None)
    assert refusal.value.status == 409 and refusal.value.error == "run 3 is cancelled; a finished run takes no signal"


def test_a_signal_is_never_retried_sooner_than_retry_after_says(engine):
    Engine.answers = [(503, {"errors": ["the database is resuming"]}, {"Retry-After": "30"}), (201, {"signal": {}})]
    waits = []
    assert send_signal(engine, "sig-key", 42, "boss_defeated", sleep=waits.append) == {"signal": {}}
    assert waits == [30.0]


def test_a_retry_after_past_the_retry_time_gives_up_at_once_with_the_engines_reason(engine):
    Engine.answers = [(503, {"errors": ["the database is resuming"]}, {"Retry-After": "120"})]
    waits = []
    with pytest.raises(SignalNotDelivered, match="last: HTTP 503: the database is resuming"):
        send_signal(engine, "sig-key", 42, "boss_defeated", sleep=waits.append)
    assert waits == [] and len(Engine.seen) == 1


def test_a_signal_the_engine_never_takes_gives_up_after_the_retry_time(engine):
    Engine.answers = [(503, {"error": "down"})] * 50
    clock = [0.0]

    def sleep(seconds):
        clock[0] += seconds

    with pytest.raises(SignalNotDelivered, match="not taken in 90 s; last: HTTP 503: down"):
        send_signal(engine, "sig-key", 42, "boss_defeated", sleep=sleep, monotonic=lambda: clock[0])
    assert clock[0] >= 60  # at least a minute of retries: an Aurora resume


class QuietWSGI(WSGIRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(params=["make_server", "wsgi_app"])
def served(request):
    """The kit's bridge on a loopback port, behind its own server or wsgi_app under wsgiref: the port."""
    bridge = Bridge(KEY, clock=lambda: NOW)
    server: socketserver.TCPServer
    if request.param == "make_server":
        server = make_server(bridge, "127.0.0.1", 0)
    else:
        server = make_wsgi_server("127.0.0.1", 0, wsgi_app(bridge), handler_class=QuietWSGI)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield request.param, server.server_address[1]
    server.shutdown()
    server.server_close()


def test_wsgi_app_mounted_under_a_prefix_verifies_the_path_the_engine_signed():
    """GAME_BRIDGE_URL http://game/bridge, the app mounted at /bridge (Werkzeug's DispatcherMiddleware, a proxy):
    the engine signs /bridge/actions/…, the app is given SCRIPT_NAME /bridge and PATH_INFO /actions/…"""
    app = wsgi_app(Bridge(KEY, clock=lambda: NOW))
    signed = "/bridge/actions/world.spawn/status/k1?attempt=1"
    environ = {"REQUEST_METHOD": "GET", "SCRIPT_NAME": "/bridge", "PATH_INFO": "/actions/world.spawn/status/k1",
               "QUERY_STRING": "attempt=1", "wsgi.input": io.BytesIO(b"")}
    environ.update({f"HTTP_{name.upper().replace('-', '_')}": value
                    for name, value in signed_headers(KEY, status_signed(signed), NOW).items()})
    started = []
    answer = b"".join(app(environ, lambda status, headers: started.append(status)))
    assert started == ["200 OK"] and json.loads(answer) == {"status": "not_applied"}


def status_through_wsgi(signed, **environ):
    """A status request signed over `signed`, given to wsgi_app as a WSGI server hands it (`environ`)."""
    app = wsgi_app(Bridge(KEY, clock=lambda: NOW))
    environ = {"REQUEST_METHOD": "GET", "QUERY_STRING": "attempt=1", "wsgi.input": io.BytesIO(b""), **environ}
    environ.update({f"HTTP_{name.upper().replace('-', '_')}": value
                    for name, value in signed_headers(KEY, status_signed(signed), NOW).items()})
    started = []
    answer = b"".join(app(environ, lambda status, headers: started.append(status)))
    return started[0], json.loads(answer)


@pytest.mark.parametrize("signed, environ", [
    # PEP 3333: SCRIPT_NAME and PATH_INFO come decoded, as latin-1 characters for their bytes
    ("/game%20bridge/actions/world.spawn/status/k1?attempt=1",
     {"SCRIPT_NAME": "/game bridge", "PATH_INFO": "/actions/world.spawn/status/k1"}),
    ("/games/caf%C3%A9/actions/world.spawn/status/k1?attempt=1",
     {"SCRIPT_NAME": "", "PATH_INFO": "/games/caf\xc3\xa9/actions/world.spawn/status/k1"}),
    # the raw target as the server got it: the engine's own spelling, lower-case escapes too
    ("/games/caf%c3%a9/actions/world.spawn/status/k1?attempt=1",
     {"SCRIPT_NAME": "/games/caf\xc3\xa9", "PATH_INFO": "/actions/world.spawn/status/k1",
      "REQUEST_URI": "/games/caf%c3%a9/actions/world.spawn/status/k1?attempt=1"}),
    ("/game%20bridge/actions/world.spawn/status/k1?attempt=1",
     {"SCRIPT_NAME": "", "PATH_INFO": "/game bridge/actions/world.spawn/status/k1",
      "RAW_URI": "/game%20bridge/actions/world.spawn/status/k1?attempt=1"}),
    # a proxy stripped the prefix and said so (SCRIPT_NAME, as ProxyFix sets it): the raw target lacks it
    ("/bridge/actions/world.spawn/status/k1?attempt=1",
     {"SCRIPT_NAME": "/bridge", "PATH_INFO": "/actions/world.spawn/status/k1",
      "RAW_URI": "/actions/world.spawn/status/k1?attempt=1"}),
])
def test_wsgi_app_verifies_a_status_request_over_the_target_the_engine_sent_not_the_decoded_path(signed, environ):
    assert status_through_wsgi(signed, **environ) == ("200 OK", {"status": "not_applied"})


def test_wsgi_app_still_refuses_a_status_request_signed_over_another_path():
    status_line, answer = status_through_wsgi("/other/actions/world.spawn/status/k1?attempt=1", SCRIPT_NAME="/game bridge",
                                              PATH_INFO="/actions/world.spawn/status/k1",
                                              REQUEST_URI="/game%20bridge/actions/world.spawn/status/k1?attempt=1")
    assert status_line == "401 Unauthorized" and "does not verify" in answer["reason"]


def test_wsgi_app_under_a_real_wsgi_server_takes_a_percent_encoded_prefix():
    server = make_wsgi_server("127.0.0.1", 0, wsgi_app(Bridge(KEY)), handler_class=QuietWSGI)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        target = "/game%20bridge/caf%C3%A9/actions/test.noop/status/k1?attempt=1"
        lines = [f"{name}: {value}".encode() for name, value in signed_headers(KEY, status_signed(target)).items()]
        head = b"\r\n".join([f"GET {target} HTTP/1.1".encode(), b"Host: bridge", b"Connection: close", *lines, b"", b""])
        assert exchange(server.server_address[1], head) == (200, {"status": "not_applied"})
    finally:
        server.shutdown()
        server.server_close()


def exchange(port, head, body=b""):
    """Sends a request as raw bytes and leaves the connection open: the whole answer, up to the server's close.
    A server that reads past what it may waits for more here, and the recv times out."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(head + body)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(payload)


@pytest.mark.parametrize("length_headers, status", [
    ([b"Content-Length: -1"], 400),  # read(-1) read until the connection closed
    ([b"Content-Length: abc"], 400),  # int() raised and the connection dropped unanswered
    ([b"Content-Length: +5"], 400),
    ([b"Content-Length: 0x10"], 400),
    ([b"Content-Length: 5 5"], 400),
    ([b"Content-Length: \xb2"], 400),  # "²": str.isdigit() takes it
    ([b"Content-Length: 5", b"Content-Length: 6"], 400),
    ([], 411),
    ([b"Transfer-Encoding: chunked"], 411),
    ([b"Content-Length: 1048577"], 413),
    ([b"Content-Length: " + b"9" * 5000], 413),  # int() refuses that many digits
])
def test_a_body_of_no_strict_length_is_refused_before_it_is_read(served, length_headers, status):
    kind, port = served
    if kind == "wsgi_app" and len(length_headers) > 1:
        pytest.skip("a WSGI server hands the application one CONTENT_LENGTH")
    head = b"\r\n".join([b"POST /actions/test.noop HTTP/1.1", b"Host: bridge", *length_headers, b"", b""])
    answer = exchange(port, head, b"5\r\n{}{}{\r\n0\r\n\r\n" if b"chunked" in head else b"{}{}{")
    assert answer[0] == status and set(answer[1]) == {"reason"}


def test_a_body_of_a_strict_length_is_read_and_delivered(served):
    _, port = served
    headers, body = delivery(action="test.noop")
    lines = [f"{name}: {value}".encode() for name, value in headers.items()]
    head = b"\r\n".join([b"POST /actions/test.noop HTTP/1.1", b"Host: bridge", b"Connection: close", *lines,
                          f"Content-Length:  {len(body)} ".encode(), b"", b""])
    status, answer = exchange(port, head, body)
    assert status == 200 and answer["outcome"] == "done"


def closed_within(conn, seconds, drip=b""):
    """Drips `drip` a byte every 50 ms, then waits: the seconds until the server closed the connection (None: it
    did not within `seconds`), and what it sent."""
    started, got = time.monotonic(), b""
    conn.settimeout(0.05)
    while time.monotonic() - started < seconds:
        if drip:
            try:
                conn.sendall(drip[:1])
            except OSError:
                return time.monotonic() - started, got
            drip = drip[1:]
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            return time.monotonic() - started, got
        if not chunk:
            return time.monotonic() - started, got
        got += chunk
    return None, got


@pytest.mark.parametrize("drip", [b"", b"GET /actions/test.noop/sta",
                                  b"POST /actions/test.noop HTTP/1.1\r\nContent-Length: 400\r\n\r\n" + b"x" * 400],
                         ids=["nothing", "a request line", "a body"])
def test_make_server_closes_a_connection_whose_request_is_not_whole_in_time(drip):
    server = make_server(Bridge(KEY), "127.0.0.1", 0, request_seconds=0.6)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5) as conn:
            took, got = closed_within(conn, 5, drip)
        assert took is not None and took < 2 and got == b""  # closed unanswered, well before the drip was whole
        # a whole request on time is answered, two on one connection too
        target = "/actions/test.noop/status/k1?attempt=1"
        client = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=5)
        for _ in range(2):
            client.request("GET", target, headers=signed_headers(KEY, status_signed(target)))
            response = client.getresponse()
            assert (response.status, json.loads(response.read())) == (200, {"status": "not_applied"})
        client.close()
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("failure, level", [(BrokenPipeError(32, "Broken pipe"), logging.DEBUG),
                                            (RuntimeError("a kit bug"), logging.WARNING)])
def test_make_server_logs_a_failed_request_on_the_kits_logger_not_as_a_traceback_on_stderr(caplog, capsys, failure, level):
    server = make_server(Bridge(KEY), "127.0.0.1", 0)
    try:
        with caplog.at_level(logging.DEBUG, logger="event_bridge"):
            try:
                raise failure  # as the server's thread meets it: the engine gave up on a slow answer and hung up
            except type(failure):
                server.handle_error(None, ("127.0.0.1", 41000))
    finally:
        server.server_close()
    assert capsys.readouterr().err == ""
    [record] = caplog.records
    assert (record.name, record.levelno, record.exc_info and record.exc_info[1]) == ("event_bridge", level, failure)


class Drip(BaseHTTPRequestHandler):
    """An engine that answers one byte at a time: the whole answer, or its head at once and then its body."""

    protocol_version = "HTTP/1.1"
    what: ClassVar[str] = "answer"
    sent_all: ClassVar[bool | None] = None
    over = threading.Event()

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b'{"signal": {"name": "boss_defeated"}}'
        head = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
        if Drip.what == "body":
            self.wfile.write(head)
        dripped = head + body if Drip.what == "answer" else body
        try:
            for i in range(len(dripped)):
                self.wfile.write(dripped[i:i + 1])
                time.sleep(0.2)
            Drip.sent_all = True
        except OSError:  # the client closed the connection before the answer was whole
            Drip.sent_all = False
        finally:
            Drip.over.set()
            self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("what, request_seconds, retry_seconds", [
    ("answer", 1, 1.5),  # the attempt's deadline ends it (a second attempt would start after the retry time)
    ("body", 1, 1.5),
    ("body", 10, 1),  # what is left of the retry time ends it
])
def test_a_dripped_answer_fails_the_attempt_at_its_deadline(monkeypatch, what, request_seconds, retry_seconds):
    monkeypatch.setattr(signals_module, "REQUEST_SECONDS", request_seconds)
    Drip.what, Drip.sent_all = what, None
    Drip.over.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        with pytest.raises(SignalNotDelivered, match="last: TimeoutError: no whole answer within"):
            send_signal(f"http://127.0.0.1:{server.server_address[1]}", "sig-key", 42, "boss_defeated",
                        retry_seconds=retry_seconds)
        assert Drip.over.wait(30) and Drip.sent_all is False  # the client hung up mid-drip
    finally:
        server.shutdown()
        server.server_close()
