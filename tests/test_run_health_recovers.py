"""A run's health says whether anything of it stands failed: degraded by a failed step, it is ok again once a person
retried that step and the game did it, and stays degraded while another step of it stands failed. On the real
database, the game side a loopback bridge."""

from chalicelib.events import commands
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.model import Health
from chalicelib.events.store import steps
from devtools.kit.game_bridge import Answer
from tests.support.factory import document, run_row
from tests.support.runner_kit import schedule, step, tick


def _retry_the_failed(db, clock, runner, run_id, action):
    failed = next(s for s in db.autocommit(lambda tx: steps.list_for_run(tx, run_id))
                  if s.action_id == action and s.last_error)
    commands.retry(db, run_id, failed.id, actor="mod-mia", now=clock.now())
    tick(runner)


def test_a_run_degraded_by_a_failed_step_is_ok_again_once_its_retry_succeeds(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(400, {"reason": "the square is full"}))
    run = schedule(db, clock.now(), document([[step("world.spawn", on_failure="pause"), step("core.announce", message="on")]]))
    tick(runner)
    stopped = run_row(db, run.id)
    assert (stopped.status, stopped.health) == (RunStatus.PAUSED, Health.DEGRADED)
    game_bridge.script("world.spawn", Answer(200, {"outcome": "done"}))
    _retry_the_failed(db, clock, runner, run.id, "world.spawn")
    done = run_row(db, run.id)
    assert (done.status, done.health) == (RunStatus.COMPLETED, Health.OK)


def test_a_run_with_another_step_still_failed_stays_degraded_after_a_retry_succeeds(db, clock, runner, game_bridge):
    game_bridge.script("world.give_item", Answer(400, {"reason": "no such item"}))
    game_bridge.script("world.spawn", Answer(400, {"reason": "the square is full"}))
    run = schedule(db, clock.now(), document([[step("world.give_item", on_failure="skip"),
                                               step("world.spawn", on_failure="pause")]]))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.PAUSED
    game_bridge.script("world.spawn", Answer(200, {"outcome": "done"}))
    _retry_the_failed(db, clock, runner, run.id, "world.spawn")
    done = run_row(db, run.id)
    assert (done.status, done.health) == (RunStatus.COMPLETED, Health.DEGRADED)
