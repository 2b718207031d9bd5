"""A run from scheduled to completed, the log telling the whole story in order."""

from datetime import timedelta

from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import Health
from chalicelib.events.store import steps
from tests.support.factory import document, run_row
from tests.support.runner_kit import log_of, run_story, schedule, step, tick

THREE_PHASES = document(
    [
        [step("core.announce", message="The harvest begins"), step("core.wait", seconds=60), step("world.spawn", npc="scarecrow")],
        [step("core.cue", instruction="Light the bonfire")],
        [step("world.reward", item="pumpkin")],
    ],
    ending=[step("core.announce", message="Thanks for coming")],
)


def _steps(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))


def test_three_phases_with_wait_cue_and_ending_go_all_the_way_to_completed(db, clock, runner, game_bridge):
    start = clock.now()
    run = schedule(db, start, THREE_PHASES)

    tick(runner)  # starts, announces, waits: the spawn is held for 60 s
    assert run_row(db, run.id).status is RunStatus.RUNNING
    spawn = next(s for s in _steps(db, run.id) if s.action_id == "world.spawn")
    assert spawn.status is StepStatus.PENDING and spawn.due_at == start + timedelta(seconds=60)

    clock.advance(30)
    assert tick(runner).dispatched == 0 and game_bridge.received() == []

    clock.advance(31)  # the spawn is due: it goes, phase 2 opens, the cue parks
    tick(runner)
    assert [r.action_id for r in game_bridge.received()] == ["world.spawn"]
    cue = next(s for s in _steps(db, run.id) if s.action_id == "core.cue")
    assert cue.parked

    for _ in range(3):  # a parked cue is never re-dispatched, however many ticks pass
        clock.advance(300)
        assert tick(runner).dispatched == 0
    assert runner.actions.cue_channel.posts == ["Light the bonfire"]

    assert db.transaction(lambda tx: steps.confirm_parked(tx, cue.id, clock.now(), "lit"))
    clock.advance(1)
    tick(runner)

    final = run_row(db, run.id)
    assert final.status is RunStatus.COMPLETED and final.health is Health.OK
    assert final.current_phase == 4 and final.claimed_by is None and final.finished_at == clock.now()  # its ending
    assert all(s.status is StepStatus.DONE for s in _steps(db, run.id))
    assert runner.actions.announce_channel.posts == ["The harvest begins", "Thanks for coming"]
    assert [r.action_id for r in game_bridge.received()] == ["world.spawn", "world.reward"]

    assert run_story(db, run.id) == [
        ("scheduled", "starting"), ("starting", "running"), ("running", "ending"), ("ending", "completed")
    ]
    story = [
        (e.kind, e.phase, e.detail.get("action") or e.detail.get("to") or e.detail.get("name"))
        for e in log_of(db, run.id)
        if e.kind != "step.status"
    ]
    assert story == [
        ("run.status", None, "starting"),
        ("run.status", 1, "running"),
        ("run.phase", 1, "phase 1"),
        ("step.dispatch", 1, "core.announce"),
        ("step.dispatch", 1, "core.wait"),
        ("step.dispatch", 1, "world.spawn"),
        ("run.phase", 2, "phase 2"),
        ("step.dispatch", 2, "core.cue"),
        ("run.phase", 3, "phase 3"),
        ("step.dispatch", 3, "world.reward"),
        ("run.status", 3, "ending"),
        ("run.phase", 4, "ending"),
        ("step.dispatch", 4, "core.announce"),
        ("run.status", 4, "completed"),
    ]
    assert all(e.actor == "runner" for e in log_of(db, run.id))
    done_rows = [e for e in log_of(db, run.id) if e.kind == "step.status"]
    assert [(e.detail["from"], e.detail["to"]) for e in done_rows] == [("running", "done")] * 5  # the cue's done is the confirm's


def test_a_definition_without_ending_steps_still_passes_through_ending(db, clock, runner):
    run = schedule(db, clock.now(), document([[step("core.announce", message="hi")]]))
    tick(runner)
    assert run_story(db, run.id)[-2:] == [("running", "ending"), ("ending", "completed")]
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_an_ending_step_that_fails_degrades_the_run_which_still_completes(db, clock, runner, game_bridge):
    from devtools.kit.game_bridge import Answer

    game_bridge.script("world.cleanup", Answer(400, {"reason": "no such area"}))
    run = schedule(
        db,
        clock.now(),
        document([[step("core.announce", message="hi")]], ending=[step("world.cleanup"), step("core.announce", message="bye")]),
    )
    tick(runner)
    final = run_row(db, run.id)
    assert final.status is RunStatus.COMPLETED and final.health is Health.DEGRADED
    assert "no such area" in final.last_error
    assert [s.status for s in _steps(db, run.id) if s.phase == 2] == [StepStatus.FAILED, StepStatus.DONE]
    assert ("running", "paused") not in run_story(db, run.id)
