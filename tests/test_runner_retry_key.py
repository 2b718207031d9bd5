"""A person's Retry of a step whose last attempt the game answered goes with a new idempotency key, so it reaches
the game's handler again: a bridge keeps an answer under its key and replays it (docs/game-bridge.md), so the
same key could only ever be refused again. A step in doubt keeps its key: the game still applies it at most once.
Against the Python kit, served on loopback, with its own store."""

from datetime import UTC, datetime
from types import SimpleNamespace

from chalicelib.events import commands
from chalicelib.events.lifecycle import ResourceStatus, RunStatus, StepStatus
from chalicelib.events.store import resources, steps
from devtools.kit.game_bridge import SECRET, Answer
from tests.support.factory import document, run_row
from tests.support.kits import event_bridge, serving
from tests.support.runner_kit import RULES, make_runner, schedule, step, tick


def _steps(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))


def test_a_retried_revert_the_game_refused_reaches_its_handler_again_and_is_done(db, clock):
    bridge = event_bridge.Bridge(SECRET)
    despawns: list[tuple[str, int]] = []

    @bridge.action("world.spawn")
    def spawn(d):
        return event_bridge.done(event_bridge.Resource("npc", "crow", event_bridge.Revert("world.despawn", {"id": "crow"})))

    @bridge.action("world.despawn")
    def despawn(d):
        despawns.append((d.key, d.attempt))
        return event_bridge.refused("the crow is in combat") if len(despawns) == 1 else event_bridge.done()

    clock.set(datetime.now(UTC).replace(tzinfo=None))  # the kit holds the engine's signatures to its own clock
    with serving(bridge) as url:
        runner = make_runner(db, clock, SimpleNamespace(url=url))
        try:
            run = schedule(db, clock.now(), document([[step("world.spawn"), step("core.cue", instruction="wait")]]))
            tick(runner)
            commands.cancel(db, run.id, actor="mod-mia", now=clock.now(), reason="storm", cleanup=True)
            tick(runner)
            paused = run_row(db, run.id)
            assert (paused.status, paused.last_error) == (RunStatus.PAUSED, "1 of 1 resources could not be reverted")
            [revert] = [s for s in _steps(db, run.id) if s.resource_id is not None]
            assert revert.status is StepStatus.REFUSED and not revert.in_doubt
            commands.retry(db, run.id, revert.id, actor="mod-mia", now=clock.now())
            tick(runner)
        finally:
            runner.close()
    (first_key, _), (second_key, second_attempt) = despawns  # the kit called the handler again, not a replay
    assert second_key != first_key and second_attempt == 2
    assert len(second_key) == 40 and int(second_key, 16) >= 0  # a key as every key: 40 hex characters
    [left] = db.autocommit(lambda tx: resources.page_for_run(tx, run.id, None, 10))[0]
    assert left.status is ResourceStatus.REVERTED and run_row(db, run.id).status is RunStatus.CANCELLED


def test_a_retried_step_given_up_in_doubt_keeps_its_key(db, clock, runner, game_bridge):
    """Failed in doubt at the attempt ceiling (every answer a proxy's 504): the game may have applied it, so the
    retry asks under the same key, which it applies at most once."""
    game_bridge.script("world.spawn", *[Answer(504, "")] * RULES.max_attempts, Answer(200))
    run = schedule(db, clock.now(), document([[step("world.spawn", on_failure="pause")]]))
    for _ in range(RULES.max_attempts):
        tick(runner)
        clock.advance(RULES.retry_seconds)
    [spawn] = _steps(db, run.id)
    assert spawn.status is StepStatus.FAILED and spawn.in_doubt
    commands.retry(db, run.id, spawn.id, actor="mod-mia", now=clock.now())
    tick(runner)
    keys = {r.headers["idempotency-key"] for r in game_bridge.received("world.spawn")}
    assert keys == {spawn.idempotency_key} and run_row(db, run.id).status is RunStatus.COMPLETED
