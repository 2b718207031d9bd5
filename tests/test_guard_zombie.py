"""A claimer that outlived its lease changes nothing, and stops working the run once it learns so.

The realistic zombie: its attempt gave up at the ceiling, a person retried the
step, and the new claim is attempt 2 (attempts only rise: a retry renews the
allowance, never the count). Every fenced write matches the claim's token and
its attempt; a forged claim, the live attempt under another token, matches
neither, so the token alone still fences a write.
"""

import threading
from datetime import timedelta

from chalicelib.events import commands
from chalicelib.events.actions.outcome import Outcome
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import Claim
from chalicelib.events.runner import Rules
from chalicelib.events.runner.reclaim import reclaim
from chalicelib.events.store import steps
from devtools.kit.game_bridge import Answer
from tests.support.factory import document, run_row
from tests.support.runner_kit import apply_outcome, log_of, schedule, step, tick
from tests.support.scenes import run_with_steps

LEASE = 60
RULES = Rules(lease_seconds=LEASE, max_attempts=3, retry_seconds=30)


def _zombie_and_live_claim(db, clock):
    """Attempt 1 (the zombie) gave up after its lease expired; a person retried; attempt 2 is live."""
    run, (spawn, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING, n=2)
    zombie = db.autocommit(lambda tx: steps.claim(tx, spawn, clock.now(), LEASE))
    clock.advance(LEASE + 1)
    db.transaction(lambda tx: reclaim(tx, clock.now(), 1))  # at a ceiling of 1: failed, the run paused
    assert run_row(db, run.id).status is RunStatus.PAUSED
    commands.retry(db, run.id, spawn.id, actor="mod-mia", now=clock.now())
    fresh = db.autocommit(lambda tx: steps.get(tx, spawn.id))
    live = db.autocommit(lambda tx: steps.claim(tx, fresh, clock.now(), LEASE))
    assert (zombie.attempt, live.attempt) == (1, 2) and zombie.token != live.token
    return run, fresh, zombie, live


def test_a_forged_claim_at_the_live_attempt_changes_nothing_even_in_a_cancelled_run(db, clock):
    """The live claim's attempt under another token: neither the answer's write nor the cancel of a step whose
    run ended takes, so the token is checked, not only the attempt."""
    run, spawn, _, live = _zombie_and_live_claim(db, clock)
    forged = Claim(spawn.id, "f" * 32, live.attempt, live.allowed_from)
    assert not _answer(db, clock, spawn, forged, Outcome.failed("HTTP 400")).written
    commands.cancel(db, run.id, actor="mod-mia", now=clock.now(), reason="storm")  # leaves the leased step alone
    assert not _answer(db, clock, spawn, forged, Outcome.retry("HTTP 503")).written
    now_ = db.autocommit(lambda tx: steps.get(tx, spawn.id))
    assert (now_.status, now_.claimed_by) == (StepStatus.RUNNING, live.token)


def _answer(db, clock, s, claim, outcome):
    return db.transaction(lambda tx: apply_outcome(tx, s, claim, outcome, clock.now(), RULES))


def test_a_zombies_late_failure_does_not_finish_the_live_claimers_step(db, clock):
    run, spawn, zombie, live = _zombie_and_live_claim(db, clock)
    applied = _answer(db, clock, spawn, zombie, Outcome.failed("HTTP 400"))
    assert not applied.written
    now_ = db.autocommit(lambda tx: steps.get(tx, spawn.id))
    assert (now_.status, now_.claimed_by) == (StepStatus.RUNNING, live.token)
    assert run_row(db, run.id).status is RunStatus.RUNNING
    assert log_of(db, run.id)[-1].detail.get("fenced_out") is True


def test_a_zombies_late_retry_does_not_cancel_the_live_claimers_step_of_a_cancelled_run(db, clock):
    run, spawn, zombie, live = _zombie_and_live_claim(db, clock)
    commands.cancel(db, run.id, actor="mod-mia", now=clock.now(), reason="storm")  # leaves the leased step alone
    assert not _answer(db, clock, spawn, zombie, Outcome.retry("HTTP 503")).written
    assert db.autocommit(lambda tx: steps.get(tx, spawn.id)).claimed_by == live.token

    assert _answer(db, clock, spawn, live, Outcome.done()).written  # the live claimer's answer is the one kept
    assert db.autocommit(lambda tx: steps.get(tx, spawn.id)).status is StepStatus.DONE


def test_a_zombies_late_park_does_not_cancel_the_live_claimers_step_of_a_cancelled_run(db, clock):
    run, spawn, zombie, live = _zombie_and_live_claim(db, clock)
    commands.cancel(db, run.id, actor="mod-mia", now=clock.now())
    assert not _answer(db, clock, spawn, zombie, Outcome.parked("a GM must look")).written
    assert db.autocommit(lambda tx: steps.get(tx, spawn.id)).claimed_by == live.token


def test_a_dispatcher_fenced_out_of_its_step_stops_working_the_run(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("world.reward")]]))
    answer_now = threading.Event()
    game_bridge.script("world.spawn", Answer(200, gate=answer_now))
    worker = threading.Thread(target=tick, args=(runner,))
    worker.start()
    try:
        game_bridge.wait_for(1)  # the worker is inside the dispatch of world.spawn, attempt 1
        # Meanwhile its lease expired and another tick took the step back and claimed attempt 2.
        later = clock.now() + timedelta(seconds=runner.rules.lease_seconds + 1)
        db.transaction(lambda tx: reclaim(tx, later, runner.rules.max_attempts))
        spawn = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]
        other = db.autocommit(lambda tx: steps.claim(tx, spawn, later, LEASE))
        assert other.attempt == 2
    finally:
        answer_now.set()
        worker.join()

    assert [r.action_id for r in game_bridge.received()] == ["world.spawn"]  # world.reward was never sent
    spawn, reward = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))
    assert (spawn.status, spawn.claimed_by) == (StepStatus.RUNNING, other.token)
    assert (reward.status, reward.attempts) == (StepStatus.PENDING, 0)
