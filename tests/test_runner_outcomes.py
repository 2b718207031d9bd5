"""on_failure dispositions, and the run's status re-checked before every claim."""

import threading

from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import Health
from chalicelib.events.store import runs, steps
from devtools.kit.game_bridge import Answer
from tests.support.factory import document, run_row
from tests.support.runner_kit import log_of, run_story, schedule, step, tick


def _statuses(db, run_id):
    return [s.status for s in db.autocommit(lambda tx: steps.list_for_run(tx, run_id))]


def _failing_run(db, clock, game_bridge, on_failure):
    game_bridge.script("world.spawn", Answer(400, "no"))
    doc = document(
        [[step("core.announce", message="a"), step("world.spawn", on_failure=on_failure), step("core.announce", message="b")],
         [step("core.announce", message="c")]]
    )
    return schedule(db, clock.now(), doc)


def test_pause_pauses_the_run_with_last_error_and_degraded_health(db, clock, runner, game_bridge):
    run = _failing_run(db, clock, game_bridge, "pause")
    tick(runner)
    paused = run_row(db, run.id)
    assert paused.status is RunStatus.PAUSED and paused.health is Health.DEGRADED
    assert paused.last_error.endswith("(world.spawn) HTTP 400: no") and paused.current_phase == 1
    assert paused.claimed_by is None
    assert _statuses(db, run.id) == [StepStatus.DONE, StepStatus.FAILED, StepStatus.PENDING]
    assert run_story(db, run.id)[-1] == ("running", "paused")
    clock.advance(60)
    assert tick(runner).runs_seen == 0  # a paused run is not the tick's


def test_skip_degrades_and_the_phase_moves_on(db, clock, runner, game_bridge):
    run = _failing_run(db, clock, game_bridge, "skip")
    tick(runner)
    final = run_row(db, run.id)
    assert final.status is RunStatus.COMPLETED and final.health is Health.DEGRADED
    assert _statuses(db, run.id) == [StepStatus.DONE, StepStatus.FAILED, StepStatus.DONE, StepStatus.DONE]
    failed = [e.detail for e in log_of(db, run.id) if e.kind == "step.status" and e.detail["to"] == "failed"]
    assert failed == [
        {"action": "world.spawn", "from": "running", "to": "failed", "cause": "HTTP 400: no", "attempt": 1, "on_failure": "skip"}
    ]


def test_abort_run_cancels_pending_steps_and_fails_the_run(db, clock, runner, game_bridge):
    run = _failing_run(db, clock, game_bridge, "abort_run")
    tick(runner)
    failed = run_row(db, run.id)
    assert failed.status is RunStatus.FAILED and failed.health is Health.DEGRADED and failed.finished_at == clock.now()
    assert _statuses(db, run.id) == [StepStatus.DONE, StepStatus.FAILED, StepStatus.CANCELLED]
    last = [e.detail for e in log_of(db, run.id) if e.kind == "run.status"][-1]
    assert (last["from"], last["to"], last["cancelled_steps"]) == ("running", "failed", 1)


def test_a_pause_pressed_mid_tick_stops_the_next_claim(db, clock, runner, game_bridge):
    # The bridge answers the first step only after a person has paused the run.
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("world.reward")]]))

    release = threading.Event()

    def pause_then_answer():
        game_bridge.wait_for(1)
        db.transaction(lambda tx: runs.transition(tx, run.id, [RunStatus.RUNNING], RunStatus.PAUSED, clock.now()))
        release.set()

    game_bridge.script("world.spawn", Answer(200, gate=release))
    pauser = threading.Thread(target=pause_then_answer)
    pauser.start()
    tick(runner)
    pauser.join()
    assert [r.action_id for r in game_bridge.received()] == ["world.spawn"]
    assert _statuses(db, run.id) == [StepStatus.DONE, StepStatus.PENDING]  # the step in flight finished; no next claim
    assert run_row(db, run.id).status is RunStatus.PAUSED


def test_a_failure_after_a_person_paused_keeps_their_pause_and_degrades(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("world.reward")]]))
    release = threading.Event()
    game_bridge.script("world.spawn", Answer(400, "bad", gate=release))

    def pause_meanwhile():
        game_bridge.wait_for(1)
        db.transaction(
            lambda tx: runs.transition(
                tx, run.id, [RunStatus.RUNNING], RunStatus.PAUSED, clock.now(), last_error="by hand"
            )
        )
        release.set()

    pauser = threading.Thread(target=pause_meanwhile)
    pauser.start()
    tick(runner)
    pauser.join()
    paused = run_row(db, run.id)
    assert paused.status is RunStatus.PAUSED and paused.health is Health.DEGRADED
    assert "HTTP 400: bad" in paused.last_error
    assert [to for _, to in run_story(db, run.id)].count("paused") == 0  # the person's pause is theirs to log


def test_unreadable_definition_fails_the_run_loudly(db, clock, runner):
    run = schedule(db, clock.now(), {"name": "broken", "phases": [{"name": "p", "steps": [{"params": {}}]}]})
    tick(runner)
    failed = run_row(db, run.id)
    assert failed.status is RunStatus.FAILED and "definition document unreadable" in failed.last_error


def test_each_attempt_is_told_what_the_previous_one_came_to(db, clock, runner, game_bridge):
    told = []
    perform = runner.actions.perform

    actions = runner.actions

    class Telling:  # the runner's actions, recording the context of every attempt
        def __getattr__(self, name):
            return getattr(actions, name)

        def perform(self, context):
            told.append((context.step.action_id, context.attempt, context.previous, context.run_id, context.mode.value))
            return perform(context)

    runner.actions = Telling()
    game_bridge.script("world.spawn", Answer(503, "busy"), Answer(200, {"outcome": "done"}))
    run = schedule(db, clock.now(), document([[step("world.spawn")]]))
    tick(runner)
    clock.advance(31)  # past the retry backoff
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert told == [("world.spawn", 1, None, run.id, "live"), ("world.spawn", 2, "HTTP 503", run.id, "live")]
