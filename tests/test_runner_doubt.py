"""Steps in doubt (issue 26, item 4): an attempt whose outcome nobody knows is marked on its step's row by
the statement that ends it — the sweep's, a timeout or a lost connection after the first byte left, a proxy's
5xx — while an answer from the game (a 429, a 5xx with a JSON object) and a failure before sending are not."""

import json
import re
import socket
import struct
import threading
from datetime import timedelta

import pytest

from chalicelib.errors import Forbidden
from chalicelib.events import commands
from chalicelib.events.actions.perform import Actions
from chalicelib.events.adapters.bridge import BridgeClient
from chalicelib.events.errors import Conflict
from chalicelib.events.lifecycle import OnDoubt, ParkReason, RunStatus, StepStatus, WaitingFor
from chalicelib.events.model import StepSpec
from chalicelib.events.runner import Runner
from chalicelib.events.runner.reclaim import reclaim
from chalicelib.events.store import phases, steps
from chalicelib.events.waiting import waiting
from chalicelib.roles import CONTROLLERS
from devtools.kit.game_bridge import SECRET, Answer
from tests.support.api import GM
from tests.support.factory import document, make_run, materialise, run_row, specs, step_row
from tests.support.runner_kit import RULES, RecordingChannel, log_of, make_runner, schedule, step, tick


def _spawn_run(db, clock):
    return schedule(db, clock.now(), document([[step("world.spawn", npc="scarecrow")]]))


def _the_step(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[0]


def waiting_of(db, run_id):
    """What GET /runs/{id} says the run waits for, derived from its rows."""
    run = run_row(db, run_id)
    head = db.autocommit(lambda tx: steps.open_steps(tx, run_id, run.current_phase, 1))
    phase = db.autocommit(lambda tx: phases.get(tx, run_id, run.current_phase))
    return waiting(run, head[0] if head else None, phase)


def _dispatches(db, run_id):
    return [e.detail for e in log_of(db, run_id) if e.kind == "step.dispatch"]


@pytest.mark.parametrize(("answer", "in_doubt"), [
    (Answer(504, "<html>Gateway Timeout</html>"), True),
    (Answer(502, {"message": "bad gateway"}), True),  # a gateway's own status, even with a JSON body
    (Answer(503, "Service Unavailable"), True),  # a 5xx without a JSON object: a proxy answered
    (Answer(500, {"error": "database locked"}), False),  # the game itself answered: it did not act
    (Answer(429, "slow down"), False),
])
def test_a_proxys_5xx_puts_the_step_in_doubt_and_the_games_own_answer_does_not(db, clock, runner, game_bridge,
                                                                                answer, in_doubt):
    game_bridge.script("world.spawn", answer)
    run = _spawn_run(db, clock)
    tick(runner)
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.PENDING and spawn.in_doubt is in_doubt
    (dispatch,) = _dispatches(db, run.id)
    assert dispatch["outcome"] == "retry" and dispatch.get("in_doubt", False) is in_doubt


def test_the_next_attempts_answer_clears_the_mark(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(504, ""), Answer(200))
    run = _spawn_run(db, clock)
    tick(runner)
    assert _the_step(db, run.id).in_doubt
    clock.advance(RULES.retry_seconds)
    tick(runner)
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.DONE and not spawn.in_doubt


def test_a_timeout_after_sending_is_in_doubt(db, clock, game_bridge):
    quick = make_runner(db, clock, game_bridge, timeout=0.2)
    try:
        game_bridge.script("world.spawn", Answer(200, delay=5))
        run = _spawn_run(db, clock)
        tick(quick)
    finally:
        quick.close()
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.PENDING and spawn.in_doubt and spawn.last_error.startswith("timed out")
    assert _dispatches(db, run.id)[0]["in_doubt"] is True


def test_a_connection_refused_before_sending_is_not_in_doubt(db, clock):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()

    class Nowhere:
        url = f"http://127.0.0.1:{port}"

    unreachable = make_runner(db, clock, Nowhere())
    try:
        run = _spawn_run(db, clock)
        tick(unreachable)
    finally:
        unreachable.close()
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.PENDING and spawn.last_error.startswith("connection error")
    assert not spawn.in_doubt and "in_doubt" not in _dispatches(db, run.id)[0]


class ResettingGame:
    """A game side on loopback that reads each delivery whole and then resets the connection (an RST, no
    answer): it may have applied it. A status probe (GAME_BRIDGE_STATUS) is answered `{"status": "applied"}`."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.deliveries: list[str] = []
        self.probes: list[str] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # closed
            with connection:
                line = self._read_request(connection)
                if line.startswith("GET "):
                    self.probes.append(line)
                    body = json.dumps({"status": "applied"}).encode()
                    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                       b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                else:
                    self.deliveries.append(line)
                    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close: RST

    @staticmethod
    def _read_request(connection) -> str:
        """The whole request (its headers and its Content-Length of body); its request line."""
        received = b""
        while b"\r\n\r\n" not in received:
            received += connection.recv(65536)
        head, _, body = received.partition(b"\r\n\r\n")
        declared = re.search(rb"(?im)^content-length: *(\d+)", head)
        length = int(declared.group(1)) if declared else 0
        while len(body) < length:
            body += connection.recv(65536)
        return head.split(b"\r\n", 1)[0].decode()

    def close(self):
        self.listener.close()


@pytest.fixture
def resetting_game():
    game = ResettingGame()
    yield game
    game.close()


def test_a_connection_reset_after_the_request_was_sent_is_in_doubt_and_under_park_never_sent_again(
        db, clock, resetting_game):
    resetting = make_runner(db, clock, resetting_game)
    try:
        run = _park_run(db, clock)
        tick(resetting)
        spawn = _the_step(db, run.id)
        assert spawn.status is StepStatus.PENDING and spawn.in_doubt and spawn.last_error.startswith("connection error")
        assert _dispatches(db, run.id)[0]["in_doubt"] is True
        clock.advance(RULES.retry_seconds)
        tick(resetting)
    finally:
        resetting.close()
    assert _the_step(db, run.id).parked_in_doubt  # a person decides: the game may have applied it
    assert len(resetting_game.deliveries) == 1


def test_a_connection_reset_after_the_request_was_sent_is_asked_about_before_anything_is_sent_again(
        db, clock, resetting_game):
    asking = make_runner(db, clock, resetting_game, asks_status=True)
    try:
        run = _spawn_run(db, clock)
        tick(asking)
        clock.advance(RULES.retry_seconds)
        tick(asking)
    finally:
        asking.close()
    assert _the_step(db, run.id).status is StepStatus.DONE  # the game said it applied the first delivery
    assert len(resetting_game.deliveries) == 1 and len(resetting_game.probes) == 1
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_a_429_after_an_attempt_in_doubt_keeps_the_doubt_to_the_ceiling(db, clock, runner, game_bridge):
    """The kits answer 429 while the first delivery of the key is still being applied: that says this attempt
    did nothing, not the first. Given up at the ceiling, the step is failed in doubt (the game may have acted)."""
    game_bridge.script("world.spawn", Answer(504, ""), *[Answer(429, {"reason": "being applied now"})] * (RULES.max_attempts - 1))
    run = _spawn_run(db, clock)
    for _ in range(RULES.max_attempts):
        tick(runner)
        assert _the_step(db, run.id).in_doubt
        clock.advance(RULES.retry_seconds)
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.FAILED and spawn.in_doubt
    failed = [e.detail for e in log_of(db, run.id) if e.kind == "step.status" and e.detail["to"] == "failed"]
    assert failed[0]["in_doubt"] is True


def test_giving_up_on_a_step_in_doubt_keeps_the_mark(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", *[Answer(504, "")] * RULES.max_attempts)
    run = _spawn_run(db, clock)
    for _ in range(RULES.max_attempts):
        tick(runner)
        clock.advance(RULES.retry_seconds)
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.FAILED and spawn.in_doubt
    failed = [e.detail for e in log_of(db, run.id) if e.kind == "step.status" and e.detail["to"] == "failed"]
    assert failed[0]["in_doubt"] is True


def test_a_lease_the_sweep_takes_back_is_in_doubt(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    (pending,) = materialise(db, run, 1, specs("world.spawn"))
    assert not pending.in_doubt
    assert db.autocommit(lambda tx: steps.claim(tx, pending, clock.now(), RULES.lease_seconds)) is not None
    clock.advance(RULES.lease_seconds + 1)
    db.transaction(lambda tx: reclaim(tx, clock.now(), RULES.max_attempts))
    swept = _the_step(db, run.id)
    assert swept.status is StepStatus.PENDING and swept.in_doubt
    taken_back = [e.detail for e in log_of(db, run.id) if e.kind == "step.status" and e.detail.get("cause") == "lease expired"]
    assert taken_back[0]["in_doubt"] is True


# ── on_doubt: park, and a person's decision ───────────────────────────────
def _park_run(db, clock, *more_steps, phases_after=()):
    spawn = {**step("world.spawn", npc="scarecrow"), "on_doubt": "park"}
    return schedule(db, clock.now(), document([[spawn, *more_steps], *phases_after]))


def _parked_in_doubt(db, clock, runner, game_bridge, *more_steps, phases_after=()):
    """A run whose first step's first attempt got a 504, and whose next claim parked it for a decision."""
    game_bridge.script("world.spawn", Answer(504, ""))
    run = _park_run(db, clock, *more_steps, phases_after=phases_after)
    tick(runner)
    clock.advance(RULES.retry_seconds)
    tick(runner)
    return run, _the_step(db, run.id)


def test_a_step_in_doubt_under_park_is_parked_for_a_decision_and_not_sent_again(db, clock, runner, game_bridge):
    run, spawn = _parked_in_doubt(db, clock, runner, game_bridge)
    assert spawn.parked_in_doubt and spawn.in_doubt and spawn.park_reason is ParkReason.DOUBT
    assert spawn.remind_at is None and spawn.times_out_at is None  # cue reminders do not apply
    assert len(game_bridge.received("world.spawn")) == 1
    waiting = waiting_of(db, run.id)
    assert (waiting["for"], waiting["step_id"]) == ("decision", spawn.id)
    assert run_row(db, run.id).waiting_for == "decision"
    offer = commands.offered(run_row(db, run.id), [spawn], None, caller=commands.Caller("mod-mia", CONTROLLERS))
    assert offer["steps"][str(spawn.id)] == ["confirm", "skip", "resend"]


def test_confirming_a_step_in_doubt_is_done_and_the_run_goes_on(db, clock, runner, game_bridge):
    run, spawn = _parked_in_doubt(db, clock, runner, game_bridge)
    commands.confirm(db, run.id, spawn.id, actor="mod-mia", now=clock.now(), note="the scarecrow is out")
    tick(runner)
    assert _the_step(db, run.id).status is StepStatus.DONE
    assert run_row(db, run.id).status is RunStatus.COMPLETED and run_row(db, run.id).waiting_for is None
    assert len(game_bridge.received("world.spawn")) == 1


def test_resend_sends_a_step_in_doubt_once_more_without_asking(db, clock, runner, game_bridge):
    run, spawn = _parked_in_doubt(db, clock, runner, game_bridge)
    resent = commands.resend(db, run.id, spawn.id, actor="mod-mia", now=clock.now(), reason="no scarecrow in sight")
    assert resent.status is StepStatus.PENDING and not resent.in_doubt and resent.attempts == spawn.attempts
    assert run_row(db, run.id).waiting_for is None
    tick(runner)
    assert _the_step(db, run.id).status is StepStatus.DONE
    assert [r.json["attempt"] for r in game_bridge.received("world.spawn")] == [1, 3]
    (row,) = [e for e in log_of(db, run.id) if e.kind == "step.status" and e.detail.get("control") == "resend"]
    assert row.actor == "mod-mia" and row.detail["reason"] == "no scarecrow in sight"


def test_resend_is_only_for_a_step_parked_in_doubt_and_acknowledge_only_for_a_cue(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(500, {"error": "busy"}))
    run = _park_run(db, clock)
    tick(runner)
    pending = _the_step(db, run.id)
    with pytest.raises(Conflict, match="only a step parked in doubt can be re-sent"):
        commands.resend(db, run.id, pending.id, actor="mod-mia", now=clock.now())
    clock.advance(RULES.retry_seconds)
    game_bridge.script("world.spawn", Answer(504, ""))
    tick(runner)
    clock.advance(RULES.retry_seconds)
    tick(runner)
    parked = _the_step(db, run.id)
    assert parked.parked_in_doubt
    with pytest.raises(Conflict, match="only a parked cue can be acknowledged"):
        commands.acknowledge(db, run.id, parked.id, actor="gm-gus", now=clock.now())
    with pytest.raises(Forbidden):  # a gm confirms a cue; whether the game applied a step, a moderator decides
        commands.confirm(db, run.id, parked.id, actor="gm-gus", now=clock.now(), cue_only=frozenset({"gm"}))


def test_a_step_parked_in_doubt_holds_its_phase_against_an_advance_and_a_close(db, clock, runner, game_bridge):
    run, _ = _parked_in_doubt(db, clock, runner, game_bridge, step("world.spawn", npc="crow"))
    with pytest.raises(Conflict, match=r"Run \d+ · Phase 1 · step 1 \(world.spawn\) waits for a decision"):
        commands.advance(db, run.id, 1, actor="mod-mia", now=clock.now())
    closed = db.transaction(lambda tx: steps.cancel_phase(tx, run.id, 1, clock.now(), "phase 1 lasted its 60 s"))
    assert [s.id for s in closed] == [db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[1].id]
    assert _the_step(db, run.id).parked_in_doubt


def test_a_cancel_closes_a_step_in_doubt_saying_so_and_a_cancel_with_cleanup_waits_for_the_decision(
        db, clock, runner, game_bridge):
    run, _ = _parked_in_doubt(db, clock, runner, game_bridge)
    with pytest.raises(Conflict, match=r"decide Run \d+ · Phase 1 · step 1 \(world.spawn\) first"):
        commands.cancel(db, run.id, actor="mod-mia", now=clock.now(), cleanup=True)
    assert run_row(db, run.id).status is RunStatus.RUNNING
    commands.cancel(db, run.id, actor="mod-mia", now=clock.now())
    assert _the_step(db, run.id).status is StepStatus.CANCELLED
    (row,) = [e for e in log_of(db, run.id) if e.kind == "step.status" and e.detail.get("control") == "cancel"]
    assert row.detail["in_doubt"] is True and row.detail["to"] == "cancelled"


def test_at_the_attempt_ceiling_under_park_the_sweep_parks_an_expired_step_instead_of_failing_it(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    (pending,) = materialise(db, run, 1, [StepSpec("world.spawn", on_doubt=OnDoubt.PARK)])
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET attempts = %s WHERE id = %s",
                                        (RULES.max_attempts - 1, pending.id)))
    assert db.autocommit(lambda tx: steps.claim(tx, _the_step(db, run.id), clock.now(), RULES.lease_seconds))
    clock.advance(RULES.lease_seconds + 1)
    swept = db.transaction(lambda tx: reclaim(tx, clock.now(), RULES.max_attempts, escalate_after_seconds=900))
    assert (swept.parked, swept.gave_up) == (1, 0)
    parked = _the_step(db, run.id)
    assert parked.parked_in_doubt and parked.in_doubt and parked.escalate_at == clock.now() + timedelta(minutes=15)
    assert run_row(db, run.id).waiting_for == "decision"


def test_a_504_at_the_attempt_ceiling_under_park_parks_it(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(500, {"error": "busy"}), Answer(500, {"error": "busy"}), Answer(504, ""))
    run = _park_run(db, clock)
    for _ in range(RULES.max_attempts):
        tick(runner)
        clock.advance(RULES.retry_seconds)
    parked = _the_step(db, run.id)
    assert parked.parked_in_doubt and parked.last_error.startswith("gave up after 3 attempts: HTTP 504")
    assert run_row(db, run.id).status is RunStatus.RUNNING


def test_a_cancel_with_cleanup_of_a_run_with_something_live_waits_for_the_decision(db, clock, runner, game_bridge):
    made = {"outcome": "done", "resources": [{"kind": "npc", "id": "crow", "revert": {"action": "world.undo"}}]}
    game_bridge.script("world.spawn", Answer(200, made), Answer(504, ""))
    crow = step("world.spawn", npc="crow")
    run = schedule(db, clock.now(), document([[crow, {**step("world.spawn", npc="scarecrow"), "on_doubt": "park"}]]))
    tick(runner)
    clock.advance(RULES.retry_seconds)
    tick(runner)
    assert db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[1].parked_in_doubt
    with pytest.raises(Conflict, match=r"decide Run \d+ · Phase 1 · step 2 \(world.spawn\) first"):
        commands.cancel(db, run.id, actor="mod-mia", now=clock.now(), cleanup=True)
    assert run_row(db, run.id).status is RunStatus.RUNNING


def test_a_step_parked_in_doubt_in_a_phase_that_ended_is_not_sent_again(db, clock, runner, game_bridge):
    run, spawn = _parked_in_doubt(db, clock, runner, game_bridge)
    db.autocommit(lambda tx: tx.execute(
        "UPDATE event_run_phases SET condition_met = TRUE, met_at = %s, met_by = 'game', closed_at = %s,"
        " closed_by = 'signal', `signal` = 'boss_down' WHERE run_id = %s AND number = 1",
        (clock.now(), clock.now(), run.id)))
    with pytest.raises(Conflict, match="its steps can no longer be sent again"):
        commands.resend(db, run.id, spawn.id, actor="mod-mia", now=clock.now())
    assert _the_step(db, run.id).parked_in_doubt


def test_a_step_waiting_for_a_decision_is_escalated_as_every_wait_is(db, clock, game_bridge):
    escalations = RecordingChannel("escalation")
    client = BridgeClient(game_bridge.url, SECRET, timeout=5.0)
    actions = Actions(bridge=client, cue_channel=RecordingChannel("cue"), announce_channel=RecordingChannel("announce"),
                      escalation_channel=escalations, escalate_after_seconds=600)
    escalating = Runner(db, clock, actions, RULES, concurrency=2)
    try:
        run, spawn = _parked_in_doubt(db, clock, escalating, game_bridge)
        assert spawn.escalate_at == clock.now() + timedelta(seconds=600)
        clock.advance(599)
        tick(escalating)
        assert escalations.posts == []
        clock.advance(1)
        tick(escalating)
    finally:
        escalating.close()
    (posted,) = escalations.posts
    assert posted.startswith(f"Escalation: Run {run.id} · Phase 1 · step ") and "for a decision" in posted, posted
    assert "Phase 1 · step 1 (world.spawn)" in posted


def test_a_signal_that_ends_the_phase_waits_for_the_decision_and_the_run_goes_on_once_it_is_made(
        db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(504, ""))
    doubtful = {**step("world.spawn", npc="scarecrow"), "on_doubt": "park"}
    run = schedule(db, clock.now(), {
        "name": "Boss", "grace_seconds": 300, "ending": [],
        "phases": [{"name": "fight", "advance": {"when": "signal", "name": "boss_down"},
                    "steps": [doubtful, step("world.spawn", npc="crow")]},
                   {"name": "after", "steps": [step("core.announce", message="well fought")]}]})
    tick(runner)
    clock.advance(RULES.retry_seconds)
    tick(runner)
    spawn, crow = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[:2]
    assert spawn.parked_in_doubt
    commands.receive_signal(db, run.id, "boss_down", actor="game", now=clock.now())
    tick(runner)  # the phase closes: its pending step is cancelled, the one in doubt is not
    assert _the_step(db, run.id).parked_in_doubt and step_row(db, crow.id).status is StepStatus.CANCELLED
    assert run_row(db, run.id).current_phase == 1 and waiting_of(db, run.id)["for"] == "decision"
    # and so says the row the runs list filters by (GET /runs?waiting=decision) and the loop looks out for
    assert run_row(db, run.id).waiting_for is WaitingFor.DECISION
    commands.confirm(db, run.id, spawn.id, actor="mod-mia", now=clock.now())
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert len(game_bridge.received("world.spawn")) == 1


def test_the_cleanup_plan_names_the_step_a_cleanup_waits_for(db, clock, runner, game_bridge, api):
    made = {"outcome": "done", "resources": [{"kind": "npc", "id": "crow", "revert": {"action": "world.undo"}}]}
    game_bridge.script("world.spawn", Answer(200, made), Answer(504, ""))
    run = schedule(db, clock.now(), document([[step("world.spawn", npc="crow"),
                                               {**step("world.spawn", npc="scarecrow"), "on_doubt": "park"}]]))
    tick(runner)
    clock.advance(RULES.retry_seconds)
    tick(runner)
    plan = api.get(f"/runs/{run.id}/cleanup-plan", auth=GM).body
    assert (plan["cleans_up"], plan["undecided"], len(plan["reverts"])) == (False, f"Run {run.id} · Phase 1 · step 2 (world.spawn)", 1)
