"""Attempts only rise (issue 39, item 1): a person's retry or resend gives the step a fresh allowance of
attempts without lowering the attempt number the game sees, so a game that keeps the status endpoint's
attempt fence (having answered for attempt n, it refuses any lower one) never refuses a person's retry;
the ceiling counts only the attempts since, in the outcome and in the sweep."""

from chalicelib.events import commands
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.store import steps
from devtools.kit.game_bridge import Answer, ApplyingGame
from tests.support.factory import make_run, materialise, run_row, specs, step_row
from tests.support.runner_kit import RULES, log_of, make_runner, schedule, step, tick
from tests.test_runner_doubt import _parked_in_doubt

SPAWN = step("world.spawn", npc="scarecrow")


def _spawn_run(db, clock):
    return schedule(db, clock.now(), {"name": "Scarecrow night", "phases": [{"name": "opening", "steps": [SPAWN]}]})


def _the_step(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[0]


def _dispatches(db, run_id):
    return [(e.detail["attempt"], e.detail["outcome"], e.detail.get("probe")) for e in log_of(db, run_id)
            if e.kind == "step.dispatch"]


def test_a_retry_after_a_probe_and_a_failure_sends_the_next_attempt_and_the_fencing_game_takes_it(db, clock, game_bridge):
    """The issue's reproduction: a 504, a probe at attempt 2 (the game fences off attempt 1), a failure; Retry
    sends attempt 3, which the game applies, and the run completes."""
    game = ApplyingGame(game_bridge)
    game_bridge.script("world.spawn", Answer(504, ""), Answer(400, {"outcome": "failed", "reason": "the square is full"}))
    probing = make_runner(db, clock, game_bridge, asks_status=True)
    try:
        run = _spawn_run(db, clock)
        tick(probing)  # attempt 1: a proxy's 504, in doubt
        clock.advance(RULES.retry_seconds)
        tick(probing)  # asked before attempt 2 (not applied: the fence is at 2), sent, failed: the run pauses
        failed = _the_step(db, run.id)
        assert (failed.status, failed.attempts, run_row(db, run.id).status) == (StepStatus.FAILED, 2, RunStatus.PAUSED)

        retried = commands.retry(db, run.id, failed.id, actor="mod-mia", now=clock.advance(5))
        tick(probing)
    finally:
        probing.close()

    spawn = _the_step(db, run.id)
    assert [r.json["attempt"] for r in game_bridge.received("world.spawn")] == [1, 2, 3]
    assert [p.attempt for p in game_bridge.probes()] == [2]
    assert game.fenced == {} and game.applied == {spawn.idempotency_key: 1}
    assert (retried.step.attempts, retried.step.attempts_allowed_from) == (2, 2)
    assert (spawn.status, spawn.attempts) == (StepStatus.DONE, 3)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert _dispatches(db, run.id) == [(1, "retry", None), (2, "failed", "not_applied"), (3, "done", None)]
    (row,) = [e for e in log_of(db, run.id) if e.kind == "step.status" and e.detail.get("control") == "retry"]
    assert row.detail["attempts"] == 2  # the count the retry kept


def test_a_retried_step_gets_the_whole_allowance_again_and_gives_up_saying_so(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", *[Answer(500, {"error": "busy"})] * (2 * RULES.max_attempts))
    run = _spawn_run(db, clock)
    for _ in range(RULES.max_attempts):
        tick(runner)
        clock.advance(RULES.retry_seconds)
    gave_up = _the_step(db, run.id)
    assert (gave_up.status, gave_up.attempts) == (StepStatus.FAILED, 3)
    assert gave_up.last_error == "gave up after 3 attempts: HTTP 500"

    commands.retry(db, run.id, gave_up.id, actor="mod-mia", now=clock.now())
    for attempt in (4, 5):
        tick(runner)
        retrying = _the_step(db, run.id)
        assert (retrying.status, retrying.attempts) == (StepStatus.PENDING, attempt)  # below the renewed ceiling
        clock.advance(RULES.retry_seconds)
    tick(runner)
    again = _the_step(db, run.id)
    assert (again.status, again.attempts) == (StepStatus.FAILED, 6)
    assert again.last_error == "gave up after 3 attempts since a person sent it again (6 in all): HTTP 500"
    assert [r.json["attempt"] for r in game_bridge.received("world.spawn")] == [1, 2, 3, 4, 5, 6]


def test_a_resent_step_gets_a_fresh_allowance(db, clock, runner, game_bridge):
    """Parked in doubt at attempt 2 and re-sent by a person, its next attempt (3, at the ceiling of a step
    never re-sent) that asks for a retry is retried, not given up."""
    run, spawn = _parked_in_doubt(db, clock, runner, game_bridge)
    assert spawn.attempts == 2
    resent = commands.resend(db, run.id, spawn.id, actor="mod-mia", now=clock.now())
    assert (resent.attempts, resent.attempts_allowed_from) == (2, 2)
    game_bridge.script("world.spawn", Answer(500, {"error": "busy"}))
    tick(runner)
    after = _the_step(db, run.id)
    assert (after.status, after.attempts) == (StepStatus.PENDING, 3)
    assert [r.json["attempt"] for r in game_bridge.received("world.spawn")] == [1, 3]


def _lapsed_at(db, clock, attempts, allowed_from):
    """A step claimed at `attempts` (after a retry at `allowed_from`), whose lease then lapsed."""
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    (s,) = materialise(db, run, 1, specs("world.spawn"))
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET attempts = %s, attempts_allowed_from = %s"
                                        " WHERE id = %s", (attempts - 1, allowed_from, s.id)))
    assert db.autocommit(lambda tx: steps.claim(tx, step_row(db, s.id), clock.now(), 60)) is not None
    clock.advance(61)
    return s


def test_the_sweep_counts_the_attempts_since_the_retry(db, clock):
    below = _lapsed_at(db, clock, attempts=4, allowed_from=3)  # the first attempt after a retry at 3
    spent = _lapsed_at(db, clock, attempts=6, allowed_from=3)  # the third
    swept = db.transaction(lambda tx: steps.reclaim_stale(tx, clock.now(), RULES.max_attempts))
    assert [s.id for s in swept.requeued] == [below.id] and [s.id for s in swept.gave_up] == [spent.id]
    assert (step_row(db, below.id).status, step_row(db, below.id).attempts) == (StepStatus.PENDING, 4)
    assert (step_row(db, spent.id).status, step_row(db, spent.id).attempts) == (StepStatus.FAILED, 6)
