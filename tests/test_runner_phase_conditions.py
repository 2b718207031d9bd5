"""Phases that follow the game (issue 24): `after`, signals and time limits, on the real database.

Each test authors the phase as a definition would, runs the real tick, and reads
what a person would see: the steps' statuses and causes, the run's status,
health and wake time, the log. A signal is received as the route receives it
(`_signalled`: `commands.receive_signal`); the route itself is tested in
tests/test_api_signals.py.
"""

import threading
from dataclasses import replace
from datetime import timedelta

import pytest

from chalicelib.events import commands
from chalicelib.events.actions.outcome import Outcome
from chalicelib.events.errors import Conflict
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import iso
from chalicelib.events.store import definitions, phases, runs, steps
from chalicelib.events.store.steps import PHASE_ENDED
from devtools.kit.game_bridge import Answer
from tests.support.api import MODERATOR
from tests.support.factory import run_row
from tests.support.runner_kit import RULES, apply_outcome, log_of, schedule, step, tick
from tests.support.torture import late_wakes

CUE = step("core.cue", instruction="Ring the bell")
BYE = step("core.announce", message="Goodnight")


def _doc(*phases_, ending=()):
    return {"name": "Boss night", "grace_seconds": 300, "phases": list(phases_), "ending": list(ending)}


def _phase(name, *steps_, advance=None):
    return {"name": name, "steps": list(steps_), **({"advance": advance} if advance else {})}


def _steps(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))


def _row(db, run_id, number):
    return db.autocommit(lambda tx: phases.get(tx, run_id, number))


def _signalled(db, run_id, now, by="game"):
    """The signal its phase waits for, received as the route receives it (`commands.receive_signal`)."""
    run = run_row(db, run_id)
    document = db.autocommit(lambda tx: definitions.get_version(tx, run.definition_id, run.definition_version)).document
    [name] = commands.declared(document)
    return commands.receive_signal(db, run_id, name, actor=by, now=now)


def _answer_after_the_signal(db, clock, runner, game_bridge, run, answer):
    """world.spawn is in flight when the signal comes; its answer arrives after it; two ticks run."""
    release = threading.Event()
    game_bridge.script("world.spawn", replace(answer, gate=release))

    def boss_dies():
        game_bridge.wait_for(1)
        _signalled(db, run.id, clock.now())
        release.set()

    threading.Thread(target=boss_dies).start()
    tick(runner)
    tick(runner)


def _causes(db, run_id):
    return [(e.step_id, e.detail["to"], e.detail.get("cause")) for e in log_of(db, run_id)
            if e.kind == "step.status" and e.detail["to"] == "cancelled"]


# ── after ────────────────────────────────────────────────────────────────
def test_an_after_phase_lasts_exactly_its_time_and_closes_what_is_still_open(db, clock, runner):
    run = schedule(db, clock.now(), _doc(_phase("market", CUE, advance={"when": "after", "seconds": 1200}),
                                         _phase("finale", BYE)))
    opened = clock.now()
    tick(runner)  # the cue parks
    assert run_row(db, run.id).wake_at == opened + timedelta(seconds=1200)  # the phase's end, not never
    assert _row(db, run.id, 1).deadline == opened + timedelta(seconds=1200)
    clock.advance(1199)
    tick(runner)
    assert _steps(db, run.id)[0].parked  # a second early: nothing closes
    clock.advance(1)
    tick(runner)
    cue, bye = _steps(db, run.id)
    assert (cue.status, cue.last_error) == (StepStatus.CANCELLED, "phase 1 (market) lasted its 1200 s")
    assert bye.status is StepStatus.DONE
    ran = run_row(db, run.id)
    assert ran.status is RunStatus.COMPLETED and ran.health == "ok"  # a phase ending on purpose is no failure
    closed = _row(db, run.id, 1)
    assert (closed.closed_by, closed.met_by, closed.closed_at) == ("after", "timer", clock.now())
    [phase_2] = [e for e in log_of(db, run.id) if e.kind == "run.phase" and e.phase == 2]
    assert phase_2.detail["ended_by"] == {"by": "timer", "at": clock.now().isoformat() + "Z", "closed_by": "after"}


def test_a_later_phases_deadline_is_written_by_the_move_that_opens_it(db, clock, runner):
    run = schedule(db, clock.now(), _doc(_phase("gather", CUE), _phase("market", CUE, advance={"when": "after", "seconds": 90}),
                                         _phase("finale", BYE)))
    tick(runner)
    clock.advance(45)
    assert db.transaction(lambda tx: steps.confirm_parked(tx, _steps(db, run.id)[0].id, clock.now()))
    tick(runner)  # phase 2 opens now: its 90 s run from here, not from the run's start
    assert _row(db, run.id, 2).deadline == clock.now() + timedelta(seconds=90)
    assert run_row(db, run.id).wake_at == clock.now() + timedelta(seconds=90)
    clock.advance(90)
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_an_after_phase_whose_steps_finish_sooner_holds_until_its_time_at_no_cost(db, clock, runner):
    run = schedule(db, clock.now(), _doc(_phase("market", step("core.announce", message="Stalls open"),
                                                advance={"when": "after", "seconds": 600}), _phase("finale", BYE)))
    opened = clock.now()
    tick(runner)
    held = run_row(db, run.id)
    assert held.status is RunStatus.RUNNING and held.current_phase == 1 and held.wake_at == opened + timedelta(seconds=600)
    clock.advance(600)
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert _causes(db, run.id) == []  # nothing was left to close


def test_a_step_in_flight_when_its_phase_ends_is_left_to_its_answer_and_its_failure_only_degrades(
        db, clock, runner, game_bridge):
    """The boss dies while world.spawn is in flight: the phase's cue is cancelled at once, and the spawn's
    failure (on_failure pause) degrades the run, which does not pause: the phase it would pause is over."""
    run = schedule(db, clock.now(), _doc(_phase("arena", step("world.spawn", on_failure="pause"), CUE,
                                                advance={"when": "signal", "name": "boss_down"}), _phase("finale", BYE)))
    _answer_after_the_signal(db, clock, runner, game_bridge, run, Answer(400, body={"error": "the arena is full"}))
    spawn, cue, bye = _steps(db, run.id)
    assert spawn.status is StepStatus.FAILED and cue.status is StepStatus.CANCELLED and bye.status is StepStatus.DONE
    ran = run_row(db, run.id)
    assert ran.status is RunStatus.COMPLETED and ran.health == "degraded"


def test_a_retry_answer_in_a_phase_that_ended_cancels_the_step(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), _doc(_phase("arena", step("world.spawn"), advance={"when": "signal", "name": "boss_down"}),
                                         _phase("finale", BYE)))
    _answer_after_the_signal(db, clock, runner, game_bridge, run, Answer(503))
    spawn, bye = _steps(db, run.id)
    assert (spawn.status, spawn.last_error) == (StepStatus.CANCELLED, PHASE_ENDED)
    assert bye.status is StepStatus.DONE and run_row(db, run.id).status is RunStatus.COMPLETED
    clock.advance(3600)
    tick(runner)
    assert len(game_bridge.received("world.spawn")) == 1  # never sent again


def test_a_cue_whose_phase_ended_before_it_parked_is_cancelled_not_parked(db, clock, runner):
    """A worker claimed the cue (it is in flight: posting to the cue channel) when the signal came; its
    parked answer lands after the phase ended, and nobody will ever confirm it: cancelled instead."""
    run = schedule(db, clock.now(), _doc(_phase("boss fight", step("core.wait", seconds=60), CUE,
                                                advance={"when": "signal", "name": "boss_defeated"}),
                                         _phase("finale", BYE)))
    tick(runner)
    clock.advance(60)
    cue = _steps(db, run.id)[1]
    claim = db.autocommit(lambda tx: steps.claim(tx, cue, clock.now(), 60))
    _signalled(db, run.id, clock.now())
    applied = db.transaction(lambda tx: apply_outcome(tx, cue, claim, Outcome.parked("posted"), clock.now(), RULES))
    assert applied.status is StepStatus.CANCELLED
    cue = _steps(db, run.id)[1]
    assert (cue.status, cue.last_error, cue.parked) == (StepStatus.CANCELLED, PHASE_ENDED, False)


# ── signals ──────────────────────────────────────────────────────────────
def test_a_signal_during_its_phase_closes_it_and_the_run_goes_on(db, clock, runner):
    run = schedule(db, clock.now(), _doc(_phase("boss fight", CUE, step("core.announce", message="Loot!"),
                                                advance={"when": "signal", "name": "boss_defeated"}),
                                         _phase("finale", BYE)))
    tick(runner)
    assert run_row(db, run.id).wake_at is None  # parked at its cue, waiting for the game: no timer at all
    clock.advance(30)
    _signalled(db, run.id, clock.now())
    tick(runner)
    cue, loot, bye = _steps(db, run.id)
    cause = "phase 1 (boss fight) ended on the signal boss_defeated"
    assert [(s.status, s.last_error) for s in (cue, loot)] == [(StepStatus.CANCELLED, cause)] * 2
    assert _causes(db, run.id) == [(cue.id, "cancelled", cause), (loot.id, "cancelled", cause)]
    assert bye.status is StepStatus.DONE and run_row(db, run.id).health == "ok"


def test_a_signal_that_lands_while_a_worker_holds_the_run_still_wakes_it_at_the_release(db, clock, runner):
    """The route's wake of now can be overwritten by the release of a worker that held the run lease as the
    signal came: the release's own wake time must say now for a phase whose condition is met."""
    run = schedule(db, clock.now(), _doc(_phase("boss fight", CUE, advance={"when": "signal", "name": "boss_defeated"}),
                                         _phase("finale", BYE)))
    tick(runner)
    assert db.autocommit(lambda tx: runs.take_lease(tx, run.id, "worker", clock.now(), 60))
    _signalled(db, run.id, clock.now())  # the route wakes the run now; the worker's release comes after
    assert db.autocommit(lambda tx: runs.release_lease(tx, run.id, "worker", clock.now()))
    assert run_row(db, run.id).wake_at == clock.now()
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_a_signal_received_before_the_run_started_ends_its_phase_as_soon_as_it_opens(db, clock, runner):
    run = schedule(db, clock.now(), _doc(_phase("boss fight", CUE, advance={"when": "signal", "name": "boss_defeated"}),
                                         _phase("finale", BYE)))
    assert _signalled(db, run.id, clock.now()).signal.effect.value == "kept_for_phase"  # the run has not started
    tick(runner)
    cue, bye = _steps(db, run.id)
    assert cue.status is StepStatus.CANCELLED and bye.status is StepStatus.DONE
    assert _row(db, run.id, 1).met_by == "game"


def test_a_signal_of_a_held_phase_leaves_it(db, clock, runner):
    run = schedule(db, clock.now(), _doc(_phase("boss fight", step("core.announce", message="Fight!"),
                                                advance={"when": "signal", "name": "boss_defeated"}),
                                         _phase("finale", BYE)))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.RUNNING and run_row(db, run.id).wake_at is None
    _signalled(db, run.id, clock.now())
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED and _causes(db, run.id) == []


# ── time limits ──────────────────────────────────────────────────────────
def test_a_signal_phase_that_times_out_with_advance_closes_and_degrades_the_run(db, clock, runner):
    run = schedule(db, clock.now(), _doc(
        _phase("boss fight", CUE, advance={"when": "signal", "name": "boss_defeated", "timeout_seconds": 300}),
        _phase("finale", BYE)))
    tick(runner)
    assert run_row(db, run.id).wake_at == clock.now() + timedelta(seconds=300)
    clock.advance(300)
    tick(runner)
    cue, bye = _steps(db, run.id)
    assert bye.status is StepStatus.DONE
    assert (cue.status, cue.last_error) == (StepStatus.CANCELLED, "phase 1 (boss fight) timed out after 300 s")
    ran = run_row(db, run.id)
    assert ran.status is RunStatus.COMPLETED and ran.health == "degraded"


@pytest.mark.parametrize("on_timeout", ["advance", "pause"])
@pytest.mark.parametrize("held", [False, True], ids=["a-cue-open", "held"])
def test_a_signal_and_a_passed_deadline_found_by_one_tick_end_the_phase_on_the_signal_and_say_both(
        db, clock, runner, on_timeout, held):
    """The boss dies a minute before the limit, but no tick runs until after it: the signal wins (no timeout,
    no pause, the run not degraded) and the rows that tell the end say the deadline had passed too: the
    cancelled cue's cause, and the next phase's run.phase row (all a held phase, with no step left, has)."""
    first = step("core.announce", message="Fight!") if held else CUE
    run = schedule(db, clock.now(), _doc(
        _phase("boss fight", first, advance={"when": "signal", "name": "boss_defeated", "timeout_seconds": 300,
                                             "on_timeout": on_timeout}),
        _phase("finale", BYE)))
    tick(runner)  # the cue parks, or the announce is done and the phase held
    clock.advance(240)
    received = clock.now()
    _signalled(db, run.id, received)
    clock.advance(120)  # the deadline passes before the tick comes
    tick(runner)
    opening, bye = _steps(db, run.id)
    cause = "phase 1 (boss fight) ended on the signal boss_defeated (its deadline had passed too)"
    if held:
        assert opening.status is StepStatus.DONE and _causes(db, run.id) == []
    else:
        assert (opening.status, opening.last_error) == (StepStatus.CANCELLED, cause)
        assert _causes(db, run.id) == [(opening.id, "cancelled", cause)]
    assert bye.status is StepStatus.DONE
    ran = run_row(db, run.id)
    assert (ran.status, ran.health, ran.last_error) == (RunStatus.COMPLETED, "ok", None)
    ended = _row(db, run.id, 1)
    assert (ended.met_by, ended.met_at) == ("game", received)
    assert ended.closed_by == (None if held else "signal")  # a held phase is left, not closed: nothing was open
    [phase_2] = [e for e in log_of(db, run.id) if e.kind == "run.phase" and e.phase == 2]
    assert phase_2.detail["ended_by"] == {"by": "game", "at": received.isoformat() + "Z", "deadline_passed": True,
                                          **({} if held else {"closed_by": "signal"})}
    assert not [e for e in log_of(db, run.id) if e.kind == "run.status" and e.detail["to"] == "paused"]


def test_a_signal_before_its_deadline_says_nothing_of_it(db, clock, runner):
    run = schedule(db, clock.now(), _doc(
        _phase("boss fight", CUE, advance={"when": "signal", "name": "boss_defeated", "timeout_seconds": 300}),
        _phase("finale", BYE)))
    tick(runner)
    clock.advance(299)
    _signalled(db, run.id, clock.now())
    tick(runner)
    assert _steps(db, run.id)[0].last_error == "phase 1 (boss fight) ended on the signal boss_defeated"
    [phase_2] = [e for e in log_of(db, run.id) if e.kind == "run.phase" and e.phase == 2]
    assert "deadline_passed" not in phase_2.detail["ended_by"]


def test_a_timeout_with_pause_pauses_once_and_then_the_phase_waits_without_one(db, clock, runner):
    run = schedule(db, clock.now(), _doc(
        _phase("boss fight", step("core.announce", message="Fight!"),
               advance={"when": "signal", "name": "boss_defeated", "timeout_seconds": 300, "on_timeout": "pause"}),
        _phase("finale", BYE)))
    tick(runner)  # drained and held
    clock.advance(300)
    tick(runner)
    paused = run_row(db, run.id)
    assert paused.status is RunStatus.PAUSED
    assert paused.last_error == "phase 1 (boss fight) waited 300 s for the signal boss_defeated"
    assert _row(db, run.id, 1).deadline is None
    commands.resume(db, run.id, actor="alice", now=clock.now())
    tick(runner)
    clock.advance(86400)
    tick(runner)
    resumed = run_row(db, run.id)
    assert resumed.status is RunStatus.RUNNING and resumed.wake_at is None  # held again, with no timer left
    _signalled(db, run.id, clock.now())
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def _pausing_arena(*steps_, seconds):
    return _doc(_phase("arena", *steps_, advance={"when": "steps_done", "timeout_seconds": seconds, "on_timeout": "pause"}),
                _phase("finale", BYE))


def test_a_pause_time_limit_pauses_the_run_degraded_as_every_time_limit_that_passes(db, clock, runner):
    """A time limit that passes is something gone wrong, whatever it does then (contract: "Phases that follow
    the game"): `pause` degrades the run as `advance` does, and as a cue's `on_timeout: pause` does."""
    run = schedule(db, clock.now(), _pausing_arena(CUE, seconds=300))
    tick(runner)  # the cue parks
    assert run_row(db, run.id).health == "ok"
    clock.advance(300)
    tick(runner)
    paused = run_row(db, run.id)
    assert (paused.status, paused.health) == (RunStatus.PAUSED, "degraded")
    assert paused.last_error == "phase 1 (arena) waited 300 s for its steps"
    assert _steps(db, run.id)[0].parked  # its cue waits on for a person


def test_a_pause_time_limit_that_passed_while_the_run_was_paused_leaves_its_failed_step_retryable(
        db, clock, runner, game_bridge):
    """Unlike `advance`'s, a `pause` limit does not end its phase: past it, the failed step the run stopped at is
    still retried, and when the limit then acts (once) the step waits for the resume, never cancelled."""
    game_bridge.script("world.spawn", Answer(400, body={"error": "full"}), Answer(200))
    run = schedule(db, clock.now(), _pausing_arena(step("world.spawn", on_failure="pause"), seconds=300))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.PAUSED  # the spawn failed
    clock.advance(300)  # the arena's time limit passes while the run is paused
    [spawn] = _steps(db, run.id)
    commands.retry(db, run.id, spawn.id, actor="alice", now=clock.now())
    assert _steps(db, run.id)[0].status is StepStatus.PENDING and run_row(db, run.id).status is RunStatus.RUNNING
    tick(runner)  # the limit that came due meanwhile acts now, once: it pauses the run before the step starts
    paused = run_row(db, run.id)
    assert (paused.status, paused.last_error) == (RunStatus.PAUSED, "phase 1 (arena) waited 300 s for its steps")
    assert _steps(db, run.id)[0].status is StepStatus.PENDING
    commands.resume(db, run.id, actor="alice", now=clock.now())
    tick(runner)
    assert [s.status for s in _steps(db, run.id)] == [StepStatus.DONE, StepStatus.DONE]
    assert run_row(db, run.id).status is RunStatus.COMPLETED and _causes(db, run.id) == []


def test_a_step_whose_claimer_died_past_a_pause_time_limit_is_taken_back_not_cancelled(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), _pausing_arena(step("core.wait", seconds=30), step("world.spawn"), seconds=60))
    tick(runner)
    clock.advance(30)
    spawn = _steps(db, run.id)[1]
    assert db.autocommit(lambda tx: steps.claim(tx, spawn, clock.now(), 60)) is not None  # its claimer then dies
    clock.advance(61)  # past the arena's limit (at 60 s) and the lease (at 90 s)
    tick(runner)
    spawn = _steps(db, run.id)[1]
    assert (spawn.status, spawn.in_doubt) == (StepStatus.PENDING, True)  # requeued by the sweep, not cancelled
    assert run_row(db, run.id).status is RunStatus.PAUSED  # by the limit
    commands.resume(db, run.id, actor="alice", now=clock.now())
    tick(runner)
    assert _steps(db, run.id)[1].status is StepStatus.DONE and len(game_bridge.received("world.spawn")) == 1
    assert run_row(db, run.id).status is RunStatus.COMPLETED and _causes(db, run.id) == []


def test_a_steps_done_phase_with_a_time_limit_cancels_its_steps_left_at_the_limit(db, clock, runner):
    run = schedule(db, clock.now(), _doc(
        _phase("warm-up", step("core.wait", seconds=3600), step("core.announce", message="Go"),
               advance={"when": "steps_done", "timeout_seconds": 600}),
        _phase("finale", BYE)))
    tick(runner)
    assert run_row(db, run.id).wake_at == clock.now() + timedelta(seconds=600)  # the limit comes before the wait's end
    clock.advance(600)
    tick(runner)
    wait, go, bye = _steps(db, run.id)
    assert wait.status is StepStatus.DONE and go.status is StepStatus.CANCELLED and bye.status is StepStatus.DONE
    assert run_row(db, run.id).health == "degraded"


def test_a_paused_runs_timers_do_not_act_and_act_once_at_resume(db, clock, runner):
    run = schedule(db, clock.now(), _doc(_phase("market", CUE, advance={"when": "after", "seconds": 60}),
                                         _phase("finale", BYE)))
    tick(runner)
    commands.pause(db, run.id, actor="alice", now=clock.now(), reason="lag")
    clock.advance(120)
    tick(runner)
    assert _steps(db, run.id)[0].parked and run_row(db, run.id).status is RunStatus.PAUSED
    commands.resume(db, run.id, actor="alice", now=clock.now())
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert len(_causes(db, run.id)) == 1


# ── the guards around an ending phase ─────────────────────────────────────
def test_no_step_of_a_phase_past_its_deadline_is_claimed(db, clock, runner):
    run = schedule(db, clock.now(), _doc(_phase("market", step("core.wait", seconds=30), step("core.announce", message="x"),
                                                advance={"when": "after", "seconds": 20}), _phase("finale", BYE)))
    tick(runner)
    _, announce, _ = [*_steps(db, run.id), None][:3]
    clock.advance(30)  # the wait is over, and so is the phase
    assert db.autocommit(lambda tx: steps.claim(tx, announce, clock.now(), 60)) is None


def test_the_sweep_cancels_a_lapsed_step_of_an_ending_phase_instead_of_requeueing_it(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), _doc(_phase("arena", step("core.wait", seconds=600), step("world.spawn"),
                                                advance={"when": "signal", "name": "boss_down"}), _phase("finale", BYE)))
    tick(runner)
    clock.advance(600)
    spawn = _steps(db, run.id)[1]
    assert db.autocommit(lambda tx: steps.claim(tx, spawn, clock.now(), 60)) is not None  # its claimer then dies
    _signalled(db, run.id, clock.now())
    clock.advance(61)
    tick(runner)
    spawn = _steps(db, run.id)[1]
    assert (spawn.status, spawn.last_error) == (StepStatus.CANCELLED, PHASE_ENDED)
    assert run_row(db, run.id).status is RunStatus.COMPLETED and game_bridge.received("world.spawn") == []


def test_retry_of_a_step_in_a_phase_that_ends_at_resume_is_refused_naming_it(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), _doc(_phase("arena", step("world.spawn", on_failure="pause"),
                                                advance={"when": "signal", "name": "boss_down"}), _phase("finale", BYE)))
    game_bridge.script("world.spawn", Answer(400, body={"error": "full"}))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.PAUSED
    _signalled(db, run.id, clock.now())  # acts on resume
    [spawn, *_] = _steps(db, run.id)
    try:
        commands.retry(db, run.id, spawn.id, actor="alice", now=clock.now())
    except Conflict as refused:
        assert str(refused).startswith(f"{spawn.named}: phase 1 (arena) ends when the run resumes (the signal boss_down at ")
    else:
        raise AssertionError("the retry took")
    assert _steps(db, run.id)[0].status is StepStatus.FAILED  # nothing changed


def test_a_failed_step_whose_phase_reached_its_time_limit_while_paused_is_not_offered_a_retry(
        db, clock, runner, game_bridge, api):
    """The phase's `close` deadline passed while the run was paused: the guarded statement refuses a retry (its
    phase is over), so the page does not offer one, and a retry pressed anyway says why and what to do."""
    run = schedule(db, clock.now(), _doc(_phase("arena", step("world.spawn", on_failure="pause"),
                                                advance={"when": "after", "seconds": 300}), _phase("finale", BYE)))
    game_bridge.script("world.spawn", Answer(400, body={"error": "full"}))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.PAUSED
    [spawn, *_] = _steps(db, run.id)

    def offered():
        return api.get(f"/runs/{run.id}", auth=MODERATOR).body["controls"]["steps"].get(str(spawn.id), [])

    assert "retry" in offered()
    clock.advance(301)
    assert "retry" not in offered()
    with pytest.raises(Conflict) as refused:
        commands.retry(db, run.id, spawn.id, actor="alice", now=clock.now())
    assert str(refused.value) == (f"{spawn.named}: phase 1 (arena) ended at its time limit,"
                                  f" {iso(clock.now() - timedelta(seconds=1))}, while the run was paused: its steps"
                                  " can no longer be retried; resume the run instead")
    assert _steps(db, run.id)[0].status is StepStatus.FAILED  # nothing changed


def test_retry_of_a_failed_step_of_a_running_run_whose_phase_ended_names_the_runs_status_first(
        db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), _doc(_phase("arena", step("world.spawn", on_failure="skip"), CUE,
                                                advance={"when": "signal", "name": "boss_down"}), _phase("finale", CUE)))
    game_bridge.script("world.spawn", Answer(400, body={"error": "full"}))
    tick(runner)  # the spawn fails and is skipped over; the cue parks
    _signalled(db, run.id, clock.now())
    tick(runner)  # the arena closes; the finale's cue parks
    [spawn, *_] = _steps(db, run.id)
    try:
        commands.retry(db, run.id, spawn.id, actor="alice", now=clock.now())
    except Conflict as refused:
        assert str(refused) == f"{spawn.named}: this run is running; a step can only be retried while its run is paused"
    else:
        raise AssertionError("the retry took")


@pytest.mark.parametrize("answer, status", [
    (Outcome.failed("HTTP 400: the arena is full"), StepStatus.FAILED),
    (Outcome.parked("posted"), StepStatus.CANCELLED),
    (Outcome.retry("HTTP 503"), StepStatus.CANCELLED),
    (Outcome.done(), StepStatus.DONE),
])
def test_an_answer_that_lands_after_an_after_phases_time_is_applied_without_its_on_failure(
        db, clock, runner, answer, status):
    """world.spawn was claimed before the market's 60 s ran out and answers after: done is recorded, a failure
    (on_failure pause) degrades the run without pausing it, a park or a retry cancels the step."""
    run = schedule(db, clock.now(), _doc(_phase("market", step("core.wait", seconds=30), step("world.spawn", on_failure="pause"),
                                                advance={"when": "after", "seconds": 60}), _phase("finale", BYE)))
    tick(runner)
    clock.advance(30)
    spawn = _steps(db, run.id)[1]
    claim = db.autocommit(lambda tx: steps.claim(tx, spawn, clock.now(), 120))
    clock.advance(31)  # the market is over while the spawn is in flight
    db.transaction(lambda tx: apply_outcome(tx, spawn, claim, answer, clock.now(), RULES))
    assert _steps(db, run.id)[1].status is status
    ran = run_row(db, run.id)
    assert ran.status is RunStatus.RUNNING and ran.health == ("degraded" if status is StepStatus.FAILED else "ok")
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED


# ── the torture audit's own reading of deadlines (tests/support/torture.py) ─
def test_the_audit_derives_each_deadline_from_the_document_and_calls_a_phase_a_tick_left_open_late(db, clock, runner):
    """R5's oracle: the deadline is `opened_at` plus the document's seconds, not the code's column; a column
    that disagrees is a problem, and so is a phase still open after a tick that came at or past it."""
    run = schedule(db, clock.now(), _doc(_phase("market", CUE, advance={"when": "after", "seconds": 600}),
                                         _phase("finale", BYE)))
    opened = clock.now()
    tick(runner)
    assert late_wakes(db, clock.now(), ticked_at=clock.now()) == []
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_phases SET deadline = deadline + INTERVAL 1 SECOND"
                                        " WHERE run_id = %s AND number = 1", (run.id,)))
    end = opened + timedelta(seconds=600)
    assert late_wakes(db, clock.now()) == [
        (f"run {run.id}: phase 1's deadline is {end + timedelta(seconds=1)}; opened at {opened} with 600 s,"
         f" its document makes it {end}")]
    clock.advance(600)  # a tick that ran now and missed the phase (its column a second late) is caught
    assert f"run {run.id}: phase 1's deadline {end} had come, and the tick at {clock.now()} left the phase open" \
        in late_wakes(db, clock.now(), ticked_at=clock.now())
    assert db.autocommit(lambda tx: runs.take_lease(tx, run.id, "worker", clock.now(), 60))
    assert not [p for p in late_wakes(db, clock.now(), ticked_at=clock.now()) if "left the phase open" in p]  # leased


def test_the_audit_takes_a_pause_timeout_that_acted_as_leaving_its_phase_without_a_deadline(db, clock, runner):
    run = schedule(db, clock.now(), _doc(
        _phase("boss fight", CUE, advance={"when": "signal", "name": "boss_defeated", "timeout_seconds": 300,
                                           "on_timeout": "pause"}),
        _phase("finale", BYE)))
    tick(runner)
    clock.advance(300)
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.PAUSED and _row(db, run.id, 1).deadline is None
    assert late_wakes(db, clock.now(), ticked_at=clock.now()) == []
    commands.resume(db, run.id, actor="alice", now=clock.now())
    tick(runner)
    assert late_wakes(db, clock.now(), ticked_at=clock.now()) == []  # held, with no timer left, as the contract says
