"""Clean up after the fact: a finished run that left something live in the game world is cleaned up by a
person's Clean up, its reverts sent newest first as a cancel's cleanup sends them, the run keeping its status."""

import threading

from chalicelib.events import commands, journal
from chalicelib.events.errors import Conflict
from chalicelib.events.lifecycle import LateCleanup, RunStatus
from chalicelib.events.store import resources, runs
from devtools.kit.game_bridge import Answer
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.factory import document, run_row
from tests.support.runner_kit import log_of, schedule, step, tick


def thing(name: str) -> dict:
    return {"kind": "npc", "id": name, "revert": {"action": "world.undo", "params": {"what": name}}}


def made(*names: str) -> Answer:
    return Answer(200, {"outcome": "done", "resources": [thing(n) for n in names]})


def ledger_of(api, run_id):
    return {r["id"]: r["status"] for r in api.get(f"/runs/{run_id}/resources?limit=500", auth=GM).body["resources"]}


def undone(game_bridge) -> list[str]:
    return [r.json["params"]["what"] for r in game_bridge.received("world.undo")]


def late_rows(db, run_id):
    return [(e.actor, e.detail) for e in log_of(db, run_id) if e.kind == journal.RUN_LATE_CLEANUP]


def _completed(db, clock, runner, game_bridge):
    """A run that made a scarecrow, then a storm and a portal (one answer), and completed: all three live."""
    game_bridge.script("world.spawn", made("scarecrow"))
    game_bridge.script("world.weather", made("storm", "portal"))
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("world.weather")]]))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    return run


def test_a_completed_run_is_cleaned_up_newest_first_and_stays_completed(api, db, clock, runner, game_bridge):
    run = _completed(db, clock, runner, game_bridge)
    detail = api.get(f"/runs/{run.id}", auth=ADMIN).body
    assert "cleanup" in detail["controls"]["run"] and detail["run"]["late_cleanup"] is None
    release = threading.Event()
    game_bridge.script("world.undo", Answer(200, gate=release))

    pressed = api.post(f"/runs/{run.id}/cleanup", {"reason": "the dragon stays"}, auth=MODERATOR)
    assert pressed.status == 200
    assert pressed.body["run"]["status"] == "completed" and pressed.body["run"]["late_cleanup"] == "started"
    assert (pressed.body["run"]["finished_at"], pressed.body["run"]["wake_at"]) == (
        detail["run"]["finished_at"], pressed.body["run"]["late_cleanup_at"])
    seen = {}

    def look_mid_cleanup():
        game_bridge.wait_for(3)  # the two game steps, then the first revert
        seen["run"] = api.get(f"/runs/{run.id}", auth=GM).body
        seen["live"] = [r["id"] for r in api.get("/resources?status=reverting&limit=500", auth=GM).body["resources"]
                        if r["run_id"] == run.id]
        release.set()

    looker = threading.Thread(target=look_mid_cleanup)
    looker.start()
    tick(runner)
    looker.join()
    assert seen["run"]["run"]["status"] == "completed" and seen["run"]["run"]["late_cleanup"] == "started"
    assert "cleanup" not in seen["run"]["controls"]["run"]  # in progress: not offered again
    assert seen["live"] == ["portal", "storm", "scarecrow"]
    assert undone(game_bridge) == ["portal", "storm", "scarecrow"]
    assert ledger_of(api, run.id) == dict.fromkeys(("portal", "storm", "scarecrow"), "reverted")
    assert not [r for r in api.get("/resources?status=live&limit=500", auth=GM).body["resources"] if r["run_id"] == run.id]
    after = run_row(db, run.id)
    assert (after.status, after.late_cleanup, after.finished_at, after.wake_at, after.claimed_by) == (
        RunStatus.COMPLETED, LateCleanup.DONE, run_row(db, run.id).finished_at, None, None)
    assert late_rows(db, run.id) == [
        ("mod-mia", {"state": "started", "control": "cleanup", "reason": "the dragon stays", "reverts": 3, "by_hand": 0}),
        ("runner", {"state": "done", "reverted": 3}),
    ]
    again = api.post(f"/runs/{run.id}/cleanup", {}, auth=ADMIN)
    assert again.status == 409 and again.body["errors"] == ["this run has nothing live to revert and no failed revert to send again"]
    assert "cleanup" not in api.get(f"/runs/{run.id}", auth=ADMIN).body["controls"]["run"]


def test_a_failed_revert_ends_the_cleanup_failed_with_what_is_left(api, db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", made("crow-1", "crow-2"))
    game_bridge.script("world.break", Answer(400, {"outcome": "failed"}))
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("world.break", on_failure="abort_run")]]))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.FAILED
    game_bridge.script("world.undo", Answer(200), Answer(422, {"outcome": "refused"}))
    assert api.post(f"/runs/{run.id}/cleanup", {}, auth=ADMIN).status == 200
    tick(runner)
    assert undone(game_bridge) == ["crow-2", "crow-1"]
    after = run_row(db, run.id)
    assert (after.status, after.late_cleanup, after.wake_at) == (RunStatus.FAILED, LateCleanup.FAILED, None)
    assert ledger_of(api, run.id) == {"crow-2": "reverted", "crow-1": "revert_failed"}
    assert late_rows(db, run.id)[-1] == (
        "runner", {"state": "failed", "reverted": 1, "failed": 1, "cause": "1 of 2 resources could not be reverted"})
    left = api.get("/resources?status=revert_failed&limit=500", auth=GM).body["resources"]
    assert [r["id"] for r in left if r["run_id"] == run.id] == ["crow-1"]

    # Clean up again, once the game takes it: the refused revert is sent again, and the run is clean.
    assert "cleanup" in api.get(f"/runs/{run.id}", auth=ADMIN).body["controls"]["run"]
    game_bridge.script("world.undo", Answer(200))
    clock.advance(60)
    assert api.post(f"/runs/{run.id}/cleanup", {"reason": "the game is back"}, auth=ADMIN).status == 200
    tick(runner)
    assert undone(game_bridge) == ["crow-2", "crow-1", "crow-1"]
    assert ledger_of(api, run.id) == {"crow-2": "reverted", "crow-1": "reverted"}
    after = run_row(db, run.id)
    assert (after.status, after.late_cleanup) == (RunStatus.FAILED, LateCleanup.DONE)
    assert late_rows(db, run.id)[-2:] == [
        ("root-admin", {"state": "started", "control": "cleanup", "reason": "the game is back", "reverts": 1, "by_hand": 0}),
        ("runner", {"state": "done", "reverted": 1})]
    assert "cleanup" not in api.get(f"/runs/{run.id}", auth=ADMIN).body["controls"]["run"]


def test_a_cancelled_run_whose_cleanup_failed_earlier_is_cleaned_up(api, db, clock, runner, game_bridge):
    """A cleanup's first revert fails; the person cancels without cleanup while the next is in flight (the
    cleanup abandoned: its resources live again); Clean up later sends the abandoned reverts after all."""
    game_bridge.script("world.spawn", made("crow-1", "crow-2", "crow-3"))
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("core.cue", instruction="wait")]]))
    tick(runner)
    release = threading.Event()
    game_bridge.script("world.undo", Answer(400, {"outcome": "failed"}), Answer(500, gate=release))
    commands.cancel(db, run.id, actor="alice", now=clock.now(), cleanup=True)

    def abandon_mid_revert():
        game_bridge.wait_for(3)  # the spawn, crow-3's revert (failed), then crow-2's in flight
        assert api.post(f"/runs/{run.id}/cancel", {"reason": "give up"}, auth=ADMIN).status == 200
        release.set()

    abandoner = threading.Thread(target=abandon_mid_revert)
    abandoner.start()
    tick(runner)
    abandoner.join()
    assert run_row(db, run.id).status is RunStatus.CANCELLED
    assert ledger_of(api, run.id) == {"crow-3": "revert_failed", "crow-2": "live", "crow-1": "live"}
    assert "cleanup" in api.get(f"/runs/{run.id}", auth=ADMIN).body["controls"]["run"]

    game_bridge.script("world.undo", Answer(200))
    clock.advance(60)
    plan = api.get(f"/runs/{run.id}/cleanup-plan", auth=ADMIN).body
    assert plan["counts"]["reverts"] == 3 and [r["id"] for r in plan["reverts"]] == ["crow-3", "crow-2", "crow-1"]
    assert api.post(f"/runs/{run.id}/cleanup", {}, auth=ADMIN).status == 200
    tick(runner)
    # crow-3's revert, which failed in the cancel's cleanup, is sent again with those the cancel abandoned
    assert sorted(undone(game_bridge)[2:]) == ["crow-1", "crow-2", "crow-3"]
    assert ledger_of(api, run.id) == {"crow-3": "reverted", "crow-2": "reverted", "crow-1": "reverted"}
    after = run_row(db, run.id)
    assert (after.status, after.late_cleanup, after.health.value) == (RunStatus.CANCELLED, LateCleanup.DONE, "degraded")
    assert late_rows(db, run.id) == [
        ("root-admin", {"state": "started", "control": "cleanup", "reason": None, "reverts": 3, "by_hand": 0}),
        ("runner", {"state": "done", "reverted": 3}),
    ]


def test_clean_up_is_refused_in_clear_words(api, db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", made("crow"))
    running = schedule(db, clock.now(), document([[step("world.spawn"), step("core.cue", instruction="wait")]]))
    tick(runner)
    refused = api.post(f"/runs/{running.id}/cleanup", {}, auth=ADMIN)
    assert refused.status == 409 and refused.body["errors"] == [
        ("this run is running; only a finished run (cancelled, failed, completed) can be cleaned up"
         " (to clean up a run that is not over, cancel it with cleanup)")]
    assert api.post(f"/runs/{running.id}/cleanup", {}, auth=GM).status == 403
    assert api.post("/runs/424242/cleanup", {}, auth=ADMIN).status == 404
    assert api.post(f"/runs/{running.id}/cleanup", {"reason": 7}, auth=ADMIN).status == 400

    nothing = schedule(db, clock.now(), document([[step("world.wave")]]))
    tick(runner)
    assert run_row(db, nothing.id).status is RunStatus.COMPLETED
    empty = api.post(f"/runs/{nothing.id}/cleanup", {}, auth=ADMIN)
    assert empty.status == 409 and empty.body["errors"] == ["this run has nothing live to revert and no failed revert to send again"]

    run = _completed(db, clock, runner, game_bridge)
    assert api.post(f"/runs/{run.id}/cleanup", {}, auth=GM).status == 403
    assert api.post(f"/runs/{run.id}/cleanup", {}, auth=ADMIN).status == 200
    twice = api.post(f"/runs/{run.id}/cleanup", {}, auth=MODERATOR)
    assert twice.status == 409 and twice.body["errors"][0].startswith("a cleanup of this run is already in progress (since ")
    assert [a for a, _ in late_rows(db, run.id)] == ["root-admin"]  # the refusals changed nothing
    assert run_row(db, running.id).late_cleanup is None and run_row(db, nothing.id).late_cleanup is None


def test_concurrent_presses_one_wins(db, clock, runner, game_bridge):
    run = _completed(db, clock, runner, game_bridge)
    start, answers = threading.Barrier(4), []

    def press(n):
        start.wait()
        try:
            commands.execute(db, commands.CleanUp(run.id, f"press {n}"), commands.Context(f"mod-{n}", clock.now()))
            answers.append("took")
        except Conflict as refused:
            answers.append(str(refused))

    pressers = [threading.Thread(target=press, args=(n,)) for n in range(4)]
    for t in pressers:
        t.start()
    for t in pressers:
        t.join()
    assert answers.count("took") == 1 and len(answers) == 4
    assert all(a.startswith("a cleanup of this run is already in progress") for a in answers if a != "took")
    assert len(late_rows(db, run.id)) == 1
    assert run_row(db, run.id).late_cleanup is LateCleanup.STARTED
    assert undone(game_bridge) == []


def test_a_step_in_flight_at_the_cancel_is_answered_before_a_clean_up(api, db, clock, runner, game_bridge):
    release = threading.Event()
    game_bridge.script("world.spawn", made("crow"))
    game_bridge.script("world.portal", Answer(200, {"resources": [thing("portal")]}, gate=release))
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("world.portal")]]))

    def cancel_mid_flight():
        game_bridge.wait_for(2)  # the portal is in flight
        assert api.post(f"/runs/{run.id}/cancel", {}, auth=ADMIN).status == 200
        early = api.post(f"/runs/{run.id}/cleanup", {}, auth=ADMIN)
        assert early.status == 409 and early.body["errors"] == [
            "a step of this run is still in flight; clean up once its answer is in (what it created is reverted too)"]
        assert "cleanup" not in api.get(f"/runs/{run.id}", auth=ADMIN).body["controls"]["run"]
        release.set()

    canceller = threading.Thread(target=cancel_mid_flight)
    canceller.start()
    tick(runner)
    canceller.join()
    assert run_row(db, run.id).late_cleanup is None
    assert api.post(f"/runs/{run.id}/cleanup", {}, auth=ADMIN).status == 200
    tick(runner)
    assert undone(game_bridge) == ["portal", "crow"]


def test_a_finished_runs_cleanup_ends_only_with_nothing_open_and_nothing_left_to_revert(db, clock, runner, game_bridge):
    run = _completed(db, clock, runner, game_bridge)
    commands.execute(db, commands.CleanUp(run.id), commands.Context("mia", clock.now()))
    # Nothing written yet: everything is left to revert.
    assert db.transaction(lambda tx: runs.end_late_cleanup(tx, run.id, clock.now())) is None
    # The reverts written, none sent: each is open.
    db.transaction(lambda tx: resources.open_reverts(tx, run.id, 3, clock.now()))  # its cleanup phase
    assert db.transaction(lambda tx: runs.end_late_cleanup(tx, run.id, clock.now())) is None
    assert run_row(db, run.id).late_cleanup is LateCleanup.STARTED
    tick(runner)
    assert run_row(db, run.id).late_cleanup is LateCleanup.DONE


def test_a_revert_by_hand_of_a_finished_run_waits_for_a_person(api, db, clock, runner, game_bridge):
    """The cleanup parks on a by-hand revert as a cancel's does: the run waits for the cue; confirmed, it is
    reverted; skipped, it is left (revert_failed) and the cleanup ends failed."""
    by_hand = {"action": "core.cue", "params": {"instruction": "Carry the scarecrow off"}}
    game_bridge.script("world.spawn", Answer(200, {"resources": [
        {"kind": "npc", "id": "scarecrow", "revert": by_hand}, {"kind": "npc", "id": "crow", "revert": by_hand}]}))
    run = schedule(db, clock.now(), document([[step("world.spawn")]]))
    tick(runner)
    assert api.post(f"/runs/{run.id}/cleanup", {}, auth=ADMIN).status == 200
    tick(runner)
    detail = api.get(f"/runs/{run.id}", auth=GM).body
    assert detail["run"]["status"] == "completed" and detail["waiting"]["for"] == "cue"
    assert detail["waiting"]["resource"] == {"kind": "npc", "id": "crow"}  # newest first
    crow = detail["waiting"]["step_id"]
    assert api.post(f"/runs/{run.id}/steps/{crow}/confirm", {"note": "shooed"}, auth=GM).status == 200
    tick(runner)
    detail = api.get(f"/runs/{run.id}", auth=GM).body
    assert detail["waiting"]["resource"] == {"kind": "npc", "id": "scarecrow"}
    assert "skip" in detail["controls"]["steps"][str(detail["waiting"]["step_id"])]
    assert api.post(f"/runs/{run.id}/steps/{detail['waiting']['step_id']}/skip", {}, auth=ADMIN).status == 200
    tick(runner)
    assert ledger_of(api, run.id) == {"crow": "reverted", "scarecrow": "revert_failed"}
    after = run_row(db, run.id)
    assert (after.status, after.late_cleanup, after.waiting_for) == (RunStatus.COMPLETED, LateCleanup.FAILED, None)
