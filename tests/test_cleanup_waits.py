"""A cleanup that waits for a person is a wait like any other: a by-hand revert (a `core.cue` a cleanup parks on)
makes its run wait for a cue — listed by `?waiting=`, counted in the summary, reminded, escalated and timed out by
its own settings or the deployment's escalation — and whatever ends it moves its resource on, never `reverting` for
ever. On the real database, the game side a loopback bridge."""

from datetime import timedelta

import pytest

from chalicelib.events import commands
from chalicelib.events.actions.perform import Actions
from chalicelib.events.adapters.bridge import BridgeClient
from chalicelib.events.lifecycle import ResourceStatus, RunStatus, StepStatus
from chalicelib.events.model import Health
from chalicelib.events.runner import Runner
from chalicelib.events.store import resources, steps
from devtools.kit.game_bridge import SECRET, Answer
from tests.support.api import GM, MODERATOR
from tests.support.factory import document, run_row
from tests.support.runner_kit import RULES, RecordingChannel, log_of, schedule, step, tick

TAKE_DOWN = "Take the scarecrow down by hand"


def _by_hand(**attention) -> dict:
    return {"action": "core.cue", "params": {"instruction": TAKE_DOWN, **attention}}


@pytest.fixture
def world(db, clock, game_bridge):
    """A runner on the loopback bridge whose cue and escalation channels record what they are given."""
    made = []

    def build(escalate_after: int = 0):
        cue, escalation = RecordingChannel("cue"), RecordingChannel("escalation")
        actions = Actions(bridge=BridgeClient(game_bridge.url, SECRET, timeout=5.0), cue_channel=cue,
                          announce_channel=RecordingChannel("announce"), escalation_channel=escalation,
                          escalate_after_seconds=escalate_after)
        made.append(Runner(db, clock, actions, RULES, concurrency=1))
        return made[-1], cue, escalation

    yield build
    for runner in made:
        runner.close()


def _cleaning_up_at_the_scarecrow(db, clock, runner, game_bridge, **attention):
    """A run that made a portal (reverted by the game) then a scarecrow (reverted by hand), cancelled with cleanup
    while it waited at a cue: the scarecrow, newest, is reverted first, and its cleanup parks on it."""
    game_bridge.script("world.spawn", Answer(200, {"outcome": "done", "resources": [
        {"kind": "portal", "id": "portal", "revert": {"action": "world.undo", "params": {"what": "portal"}}},
        {"kind": "npc", "id": "scarecrow", "revert": _by_hand(**attention)}]}))
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("core.cue", instruction="wait here")]]))
    tick(runner)
    commands.cancel(db, run.id, actor="mod-mia", now=clock.now(), reason="storm", cleanup=True)
    tick(runner)
    return run, _revert(db, run.id)


def _revert(db, run_id, action="core.cue"):
    return next(s for s in db.autocommit(lambda tx: steps.list_for_run(tx, run_id))
                if s.resource_id is not None and s.action_id == action)


def _ledger(db, run_id):
    return {r.resource_id: r.status for r in db.autocommit(lambda tx: resources.page_for_run(tx, run_id, None, 500))[0]}


def _waiting(api, db, run_id):
    """What GET /runs/{id} says the run waits for, which its row and its line in GET /runs agree with."""
    derived = api.get(f"/runs/{run_id}", auth=GM).body["waiting"]
    assert run_row(db, run_id).waiting_for == (None if derived is None else derived["for"])
    listed = {r["id"]: r for r in api.get("/runs?limit=200", auth=GM).body["runs"]}
    assert listed[run_id]["waiting"] == derived
    return derived


def _kinds(db, run_id, kind):
    return [e.detail for e in log_of(db, run_id) if e.kind == kind]


def test_a_cleanup_parked_on_a_by_hand_revert_is_listed_and_counted_as_waiting_for_a_cue(db, clock, api, world, game_bridge):
    runner, cue, _ = world()
    run, revert = _cleaning_up_at_the_scarecrow(db, clock, runner, game_bridge)
    assert run_row(db, run.id).status is RunStatus.CLEANING_UP and revert.parked
    assert TAKE_DOWN in cue.notices[-1].text  # the instruction was posted when the cleanup reached it
    assert _waiting(api, db, run.id) == {"for": "cue", "phase": revert.phase, "step_id": revert.id,
                                         "since": "2026-12-04T20:00:00Z", "resource": {"kind": "npc", "id": "scarecrow"}}
    for which in ("any", "cue"):
        page = api.get(f"/runs?waiting={which}", auth=GM).body
        assert [r["id"] for r in page["runs"]] == [run.id]
    assert page["summary"] == {"waiting": {"any": 1, "cue": 1, "advance": 0, "signal": 0, "decision": 0, "resume": 0},
                               "working": 0}
    assert api.get("/runs?waiting=resume", auth=GM).body["runs"] == []
    assert _ledger(db, run.id) == {"scarecrow": ResourceStatus.REVERTING, "portal": ResourceStatus.REVERTING}  # behind it


@pytest.mark.parametrize("answer", ["confirm", "skip"])
def test_a_by_hand_revert_a_person_confirms_or_skips_moves_its_resource_on(db, clock, api, world, game_bridge, answer):
    runner, _, _ = world()
    run, revert = _cleaning_up_at_the_scarecrow(db, clock, runner, game_bridge)
    body = {"note": "taken down"} if answer == "confirm" else {"reason": "it is nailed to the barn"}
    assert api.post(f"/runs/{run.id}/steps/{revert.id}/{answer}", body, auth=GM).status == 200
    assert _waiting(api, db, run.id) is None
    summary = api.get("/runs", auth=GM).body["summary"]
    assert (summary["waiting"]["any"], summary["working"]) == (0, 1)  # cleaning up, waiting for nobody
    answered = _revert(db, run.id)
    if answer == "confirm":
        assert (answered.status, _ledger(db, run.id)["scarecrow"]) == (StepStatus.DONE, ResourceStatus.REVERTED)
    else:  # left, with why: the skip's reason on its revert, the run pausing over it at the cleanup's end
        assert (answered.status, answered.last_error) == (StepStatus.SKIPPED, "it is nailed to the barn")
        assert _ledger(db, run.id)["scarecrow"] is ResourceStatus.REVERT_FAILED
    tick(runner)
    assert [r.json["params"]["what"] for r in game_bridge.received("world.undo")] == ["portal"]  # then the next revert
    assert _ledger(db, run.id)["portal"] is ResourceStatus.REVERTED
    ended = run_row(db, run.id)
    if answer == "confirm":
        assert ended.status is RunStatus.CANCELLED
    else:
        assert (ended.status, ended.last_error) == (RunStatus.PAUSED, "1 of 2 resources could not be reverted")
    assert ResourceStatus.REVERTING not in _ledger(db, run.id).values()


def test_a_by_hand_revert_is_reminded_and_escalated_by_its_own_settings(db, clock, world, game_bridge):
    runner, cue, escalation = world(escalate_after=3600)
    run, revert = _cleaning_up_at_the_scarecrow(db, clock, runner, game_bridge, remind_after_seconds=60, remind_limit=2,
                                                escalate_after_seconds=300)
    assert revert.remind_at == clock.now() + timedelta(seconds=60)
    assert run_row(db, run.id).wake_at == revert.remind_at  # the tick comes for the reminder
    reminders = 0
    for _ in range(6):
        clock.advance(60)
        reminders += tick(runner).reminders
    assert reminders == 2
    sent = [n for n in cue.notices if n.kind == "reminder"]
    assert [n.idempotency_key for n in sent] == [f"{revert.idempotency_key}:r1", f"{revert.idempotency_key}:r2"]
    assert all(TAKE_DOWN in n.text for n in sent)
    (escalated,) = escalation.notices
    assert escalated.idempotency_key == f"{revert.idempotency_key}:e" and TAKE_DOWN in escalated.text
    assert [d["n"] for d in _kinds(db, run.id, "step.reminder")] == [1, 2]
    assert [d["attempt"] for d in _kinds(db, run.id, "step.escalated")] == [1]
    assert run_row(db, run.id).wake_at is None  # nothing left to wake for: the deployment may sleep
    assert run_row(db, run.id).status is RunStatus.CLEANING_UP and _revert(db, run.id).parked


def test_a_by_hand_revert_without_its_own_escalation_is_escalated_after_the_deployments(db, clock, world, game_bridge):
    runner, _, escalation = world(escalate_after=600)
    run, revert = _cleaning_up_at_the_scarecrow(db, clock, runner, game_bridge)
    assert run_row(db, run.id).wake_at == revert.escalate_at == clock.now() + timedelta(seconds=600)
    clock.advance(599)
    tick(runner)
    assert escalation.notices == []
    clock.advance(1)
    assert tick(runner).escalations == 1
    (escalated,) = escalation.notices
    assert escalated.idempotency_key == f"{revert.idempotency_key}:e"


def test_a_by_hand_revert_nobody_answers_fails_leaving_its_resource_and_a_retry_asks_again(db, clock, api, world, game_bridge):
    runner, cue, _ = world()
    run, revert = _cleaning_up_at_the_scarecrow(db, clock, runner, game_bridge, timeout_seconds=120)
    clock.advance(119)
    tick(runner)
    assert _revert(db, run.id).parked and not game_bridge.received("world.undo")
    clock.advance(1)
    tick(runner)
    timed_out = _revert(db, run.id)
    assert (timed_out.status, timed_out.last_error) == (StepStatus.FAILED, "no one confirmed within 120 s")
    assert _ledger(db, run.id) == {"scarecrow": ResourceStatus.REVERT_FAILED, "portal": ResourceStatus.REVERTED}
    paused = run_row(db, run.id)  # the cleanup went on, then paused over the revert left
    assert (paused.status, paused.health) == (RunStatus.PAUSED, Health.DEGRADED)
    assert paused.last_error == "1 of 2 resources could not be reverted"
    (row,) = [d for d in _kinds(db, run.id, "step.status") if d.get("on_timeout")]
    assert (row["from"], row["to"], row["on_timeout"]) == ("running", "failed", "continue")

    posted = len(cue.notices)
    assert api.post(f"/runs/{run.id}/steps/{revert.id}/retry", {}, auth=MODERATOR).status == 200
    tick(runner)
    assert len(cue.notices) == posted + 1 and TAKE_DOWN in cue.notices[-1].text  # asked again
    assert _waiting(api, db, run.id)["step_id"] == revert.id
    assert api.post(f"/runs/{run.id}/steps/{revert.id}/confirm", {"note": "down at last"}, auth=GM).status == 200
    tick(runner)
    assert _ledger(db, run.id)["scarecrow"] is ResourceStatus.REVERTED
    assert run_row(db, run.id).status is RunStatus.CANCELLED


def test_a_by_hand_revert_timing_out_under_confirm_is_assumed_reverted(db, clock, world, game_bridge):
    runner, _, _ = world()
    run, _ = _cleaning_up_at_the_scarecrow(db, clock, runner, game_bridge, timeout_seconds=60, on_timeout="confirm")
    clock.advance(60)
    tick(runner)
    assumed = _revert(db, run.id)
    assert (assumed.status, assumed.last_error) == (StepStatus.DONE, "assumed done after 60 s")
    assert _ledger(db, run.id) == {"scarecrow": ResourceStatus.REVERTED, "portal": ResourceStatus.REVERTED}
    ended = run_row(db, run.id)
    assert (ended.status, ended.health) == (RunStatus.CANCELLED, Health.DEGRADED)


def test_a_by_hand_revert_timing_out_under_pause_pauses_the_cleanup_and_a_resume_waits_for_it_again(
        db, clock, api, world, game_bridge):
    runner, cue, _ = world()
    run, revert = _cleaning_up_at_the_scarecrow(db, clock, runner, game_bridge, remind_after_seconds=30,
                                                timeout_seconds=60, on_timeout="pause")
    clock.advance(60)
    tick(runner)
    paused = run_row(db, run.id)
    assert (paused.status, paused.health) == (RunStatus.PAUSED, Health.DEGRADED)
    assert paused.last_error == f"{revert.named} no one confirmed within 60 s"  # the step's one name, not its id
    assert paused.last_error.startswith(f"Run {run.id} · Phase 3 · step 1 (Take the scarecrow down by hand) ")
    waiting = _revert(db, run.id)
    assert waiting.parked and waiting.times_out_at is None  # still there for a person, its timeout spent
    assert _waiting(api, db, run.id)["for"] == "resume"
    reminded = len(cue.notices)
    for _ in range(4):
        clock.advance(60)
        tick(runner)
    assert len(cue.notices) == reminded  # a paused cleanup neither reminds nor times out

    assert api.post(f"/runs/{run.id}/resume", {}, auth=MODERATOR).status == 200
    assert run_row(db, run.id).status is RunStatus.CLEANING_UP
    assert _waiting(api, db, run.id)["step_id"] == revert.id  # back to its revert: the resume read the rows
    assert api.post(f"/runs/{run.id}/steps/{revert.id}/confirm", {}, auth=GM).status == 200
    tick(runner)
    assert _ledger(db, run.id) == {"scarecrow": ResourceStatus.REVERTED, "portal": ResourceStatus.REVERTED}
    assert run_row(db, run.id).status is RunStatus.CANCELLED
