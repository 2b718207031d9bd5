"""Cancel with cleanup and cleanup_on: the tick reverts what a run left, newest first, before the run reaches its target."""

import threading
from datetime import timedelta

import pytest

from chalicelib.events import commands
from chalicelib.events.errors import Conflict
from chalicelib.events.lifecycle import ResourceStatus, RunStatus, StepStatus
from chalicelib.events.model import Health, StepSpec
from chalicelib.events.runner import Rules
from chalicelib.events.store import resources, steps
from devtools.kit.clock import ManualClock
from devtools.kit.game_bridge import Answer
from tests.support.factory import document, run_row
from tests.support.runner_kit import RULES, log_of, make_runner, run_story, schedule, step, tick


def thing(kind: str, name: str) -> dict:
    return {"kind": kind, "id": name, "revert": {"action": "world.undo", "params": {"what": name}}}


def made(*things: dict) -> Answer:
    return Answer(200, {"outcome": "done", "resources": list(things)})


def ledger_of(db, run_id):
    return {r.resource_id: r.status for r in db.autocommit(lambda tx: resources.page_for_run(tx, run_id, None, 500))[0]}


def undone(game_bridge) -> list[str]:
    return [r.json["params"]["what"] for r in game_bridge.received("world.undo")]


def _steps(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))


def _waiting_at_a_cue(db, clock, runner, game_bridge, *, cleanup_on=None):
    """A run that made a scarecrow, then a storm and a portal (one answer), and waits at a cue in phase 2."""
    game_bridge.script("world.spawn", made(thing("npc", "scarecrow")))
    game_bridge.script("world.weather", made(thing("weather", "storm"), thing("portal", "portal")))
    extra = {"cleanup_on": cleanup_on} if cleanup_on else {}
    run = schedule(db, clock.now(), document(
        [[step("world.spawn"), step("world.weather")], [step("core.cue", instruction="wait here")]], **extra))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.RUNNING
    return run


def _cancel(db, clock, run, **kwargs):
    return commands.cancel(db, run.id, actor="alice", now=clock.now(), reason="storm", **kwargs)


def test_cancel_with_cleanup_reverts_newest_first_and_cancels_only_after_the_last(db, clock, runner, game_bridge):
    run = _waiting_at_a_cue(db, clock, runner, game_bridge)
    cleaning = _cancel(db, clock, run, cleanup=True)
    assert (cleaning.status, cleaning.cleanup_target, cleaning.finished_at) == (RunStatus.CLEANING_UP, RunStatus.CANCELLED, None)
    assert cleaning.wake_at == clock.now()
    assert [s.status for s in _steps(db, run.id)][-1] is StepStatus.CANCELLED  # the parked cue, as a cancel does

    release = threading.Event()
    game_bridge.script("world.undo", Answer(200, gate=release))
    seen = {}

    def look_mid_cleanup():
        game_bridge.wait_for(3)  # the two game steps, then the first revert
        seen["run"], seen["ledger"] = run_row(db, run.id).status, ledger_of(db, run.id)
        release.set()

    looker = threading.Thread(target=look_mid_cleanup)
    looker.start()
    tick(runner)
    looker.join()
    assert seen == {"run": RunStatus.CLEANING_UP, "ledger": dict.fromkeys(("portal", "storm", "scarecrow"), ResourceStatus.REVERTING)}
    assert undone(game_bridge) == ["portal", "storm", "scarecrow"]
    assert ledger_of(db, run.id) == dict.fromkeys(("portal", "storm", "scarecrow"), ResourceStatus.REVERTED)
    done = run_row(db, run.id)
    assert done.status is RunStatus.CANCELLED and done.finished_at is not None and done.health is Health.OK
    assert run_story(db, run.id)[-2:] == [("running", "cleaning_up"), ("cleaning_up", "cancelled")]
    reverts = [s for s in _steps(db, run.id) if s.resource_id is not None]
    assert len({s.idempotency_key for s in reverts}) == 3 and all(s.params == {"what": s.params["what"]} for s in reverts)
    assert [e.detail for e in log_of(db, run.id) if e.kind == "run.cleanup"] == [{"phase": 4, "reverts": 3}]


def test_a_cancel_with_cleanup_of_a_run_with_nothing_live_is_an_ordinary_cancel(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("core.cue", instruction="x")]]))
    tick(runner)
    cancelled = _cancel(db, clock, run, cleanup=True)
    assert (cancelled.status, cancelled.cleanup_target) == (RunStatus.CANCELLED, None)
    scheduled = schedule(db, clock.now(), document([[step("world.spawn")]]), scheduled_for=clock.now().replace(year=2027))
    assert _cancel(db, clock, scheduled, cleanup=True).status is RunStatus.CANCELLED


def test_a_resource_made_by_a_step_in_flight_at_the_cancel_is_reverted(db, clock, runner, game_bridge):
    release = threading.Event()
    game_bridge.script("world.spawn", Answer(200, {"resources": [thing("npc", "scarecrow")]}, gate=release))
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("world.reward")]]))

    def cancel_then_answer():
        game_bridge.wait_for(1)
        assert _cancel(db, clock, run, cleanup=True).status is RunStatus.CLEANING_UP  # nothing live yet: the step in flight
        other = make_runner(db, clock, game_bridge)
        tick(other)  # a tick meanwhile waits for the answer: the cleanup neither opens nor ends
        other.close()
        assert run_row(db, run.id).status is RunStatus.CLEANING_UP
        release.set()

    canceller = threading.Thread(target=cancel_then_answer)
    canceller.start()
    tick(runner)
    canceller.join()
    tick(runner)
    assert undone(game_bridge) == ["scarecrow"] and not game_bridge.received("world.reward")
    assert ledger_of(db, run.id) == {"scarecrow": ResourceStatus.REVERTED}
    assert run_row(db, run.id).status is RunStatus.CANCELLED


def test_a_fenced_out_answers_resources_are_recorded_and_reverted(db, clock, runner, game_bridge):
    """The portal's answer comes after the sweep took its lease back: fenced out, but the portal is open."""
    game_bridge.script("world.spawn", made(thing("npc", "scarecrow")))
    portal_gate, undo_gate = threading.Event(), threading.Event()
    game_bridge.script("world.portal", Answer(200, {"resources": [thing("portal", "portal")]}, gate=portal_gate))
    game_bridge.script("world.undo", Answer(200, gate=undo_gate))
    run = schedule(db, clock.now(), document([[step("world.spawn")], [step("world.portal")]]))
    late = threading.Thread(target=tick, args=(runner,))
    late.start()
    game_bridge.wait_for(2)  # the portal is in flight
    _cancel(db, clock, run, cleanup=True)
    clock.advance(RULES.lease_seconds + 1)  # its lease lapses: the sweep takes it back
    other = make_runner(db, clock, game_bridge)
    reverting = threading.Thread(target=tick, args=(other,))
    reverting.start()
    game_bridge.wait_for(3)  # the scarecrow's revert is in flight
    portal_gate.set()
    late.join()
    assert ledger_of(db, run.id) == {"portal": ResourceStatus.LIVE, "scarecrow": ResourceStatus.REVERTING}
    [dispatch] = [e.detail for e in log_of(db, run.id) if e.kind == "step.dispatch" and e.detail["action"] == "world.portal"]
    assert dispatch["fenced_out"] is True and dispatch["resources"] == 1
    undo_gate.set()
    reverting.join()
    other.close()
    assert undone(game_bridge) == ["scarecrow", "portal"]
    assert ledger_of(db, run.id) == {"portal": ResourceStatus.REVERTED, "scarecrow": ResourceStatus.REVERTED}
    assert run_row(db, run.id).status is RunStatus.CANCELLED


def _a_failed_revert(db, clock, runner, game_bridge):
    run = _waiting_at_a_cue(db, clock, runner, game_bridge)
    _cancel(db, clock, run, cleanup=True)
    game_bridge.script("world.undo", Answer(400, {"reason": "the portal is stuck"}))
    tick(runner)
    return run


def test_a_failed_revert_goes_on_pauses_at_the_end_and_a_retry_finishes_the_cleanup(db, clock, runner, game_bridge):
    run = _a_failed_revert(db, clock, runner, game_bridge)
    assert undone(game_bridge) == ["portal", "storm", "scarecrow"]
    assert ledger_of(db, run.id) == {"portal": ResourceStatus.REVERT_FAILED, "storm": ResourceStatus.REVERTED,
                                     "scarecrow": ResourceStatus.REVERTED}
    paused = run_row(db, run.id)
    assert (paused.status, paused.health, paused.wake_at) == (RunStatus.PAUSED, Health.DEGRADED, None)
    assert paused.last_error == "1 of 3 resources could not be reverted"
    assert db.autocommit(resources.count_left) == 1
    failed = next(s for s in _steps(db, run.id) if s.status is StepStatus.FAILED)
    assert commands.refusal("retry", paused, failed) is None
    retried = commands.retry(db, run.id, failed.id, actor="alice", now=clock.now())
    assert retried.resumed and retried.run.status is RunStatus.CLEANING_UP
    assert ledger_of(db, run.id)["portal"] is ResourceStatus.REVERTING
    tick(runner)
    assert undone(game_bridge)[-1] == "portal"
    assert ledger_of(db, run.id)["portal"] is ResourceStatus.REVERTED
    assert run_row(db, run.id).status is RunStatus.CANCELLED
    assert db.autocommit(resources.count_left) == 0


def test_resume_accepts_the_failed_reverts_and_the_run_reaches_its_target(db, clock, runner, game_bridge):
    run = _a_failed_revert(db, clock, runner, game_bridge)
    resumed = commands.resume(db, run.id, actor="alice", now=clock.now())
    assert resumed.status is RunStatus.CANCELLED and resumed.finished_at is not None
    assert ledger_of(db, run.id)["portal"] is ResourceStatus.REVERT_FAILED
    assert db.autocommit(resources.count_left) == 1
    assert log_of(db, run.id)[-1].detail["accepted_revert_failures"] == 1


def test_pause_and_resume_during_a_cleanup_and_a_cancel_without_cleanup_abandons_it(db, clock, runner, game_bridge):
    run = _waiting_at_a_cue(db, clock, runner, game_bridge)
    _cancel(db, clock, run, cleanup=True)
    game_bridge.script("world.undo", Answer(503))
    tick(runner)  # the first revert is retried later; the others wait behind it
    assert set(ledger_of(db, run.id).values()) == {ResourceStatus.REVERTING}
    with pytest.raises(Conflict, match="already cleaning up"):
        _cancel(db, clock, run, cleanup=True)
    assert commands.pause(db, run.id, actor="alice", now=clock.now()).status is RunStatus.PAUSED
    assert commands.resume(db, run.id, actor="alice", now=clock.now()).status is RunStatus.CLEANING_UP
    with pytest.raises(Conflict, match="already cleaning up"):
        _cancel(db, clock, run, cleanup=True)
    abandoned = _cancel(db, clock, run)
    assert abandoned.status is RunStatus.CANCELLED
    assert set(ledger_of(db, run.id).values()) == {ResourceStatus.LIVE}
    assert {s.status for s in _steps(db, run.id) if s.resource_id is not None} == {StepStatus.CANCELLED}
    assert log_of(db, run.id)[-1].detail["abandoned_reverts"] == 3


def test_what_a_revert_lists_is_recorded_live_and_not_reverted(db, clock, runner, game_bridge):
    run = _waiting_at_a_cue(db, clock, runner, game_bridge)
    _cancel(db, clock, run, cleanup=True)
    game_bridge.script("world.undo", made(thing("debris", "rubble")))
    tick(runner)
    assert ledger_of(db, run.id)["rubble"] is ResourceStatus.LIVE
    assert run_row(db, run.id).status is RunStatus.CANCELLED
    assert "rubble" not in undone(game_bridge)
    kept = [e.detail for e in log_of(db, run.id) if e.kind == "step.dispatch" and "resources_kept_live" in e.detail]
    assert len(kept) == 1 and kept[0]["resources"] == 1


def test_cleanup_on_complete_reverts_after_the_ending(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", made(thing("npc", "scarecrow")))
    run = schedule(db, clock.now(), document([[step("world.spawn")]], ending=[step("world.bow")], cleanup_on=["complete"]))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.CLEANING_UP  # the move stops the worker: the next tick cleans
    tick(runner)
    assert undone(game_bridge) == ["scarecrow"]
    assert run_story(db, run.id)[-2:] == [("ending", "cleaning_up"), ("cleaning_up", "completed")]
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_cleanup_on_complete_with_nothing_live_completes_as_before(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), document([[step("world.spawn")]], cleanup_on=["complete"]))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_cleanup_on_fail_reverts_before_the_run_fails(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", made(thing("npc", "scarecrow")))
    game_bridge.script("world.boom", Answer(400, {"reason": "kaboom"}))
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("world.boom", on_failure="abort_run"),
                                               step("world.never")]], cleanup_on=["fail"]))
    tick(runner)
    cleaning = run_row(db, run.id)
    assert (cleaning.status, cleaning.cleanup_target) == (RunStatus.CLEANING_UP, RunStatus.FAILED)
    tick(runner)
    assert undone(game_bridge) == ["scarecrow"] and not game_bridge.received("world.never")
    assert run_story(db, run.id)[-2:] == [("running", "cleaning_up"), ("cleaning_up", "failed")]
    failed = run_row(db, run.id)
    assert failed.status is RunStatus.FAILED and "kaboom" in failed.last_error


def test_cleanup_on_fail_reverts_too_when_the_sweep_gives_up_the_step(db, clock, game_bridge):
    """A step whose tick was lost at its attempt ceiling is given up by the next tick's sweep: its abort_run
    reverts what the run left first, as the step's own failure would have."""
    from chalicelib.events.runner import Rules
    from devtools.kit.clock import ManualClock

    start = clock.now()
    game_bridge.script("world.spawn", made(thing("npc", "scarecrow")))
    lost = threading.Event()
    game_bridge.script("world.boom", Answer(200, gate=lost))  # the first tick never hears back
    run = schedule(db, start, document([[step("world.spawn"), step("world.boom", on_failure="abort_run"),
                                         step("world.never")]], cleanup_on=["fail"]))
    first = make_runner(db, ManualClock(start), game_bridge)
    stuck = threading.Thread(target=lambda: tick(first))
    stuck.start()
    game_bridge.wait_for(2)
    clock.set(start + timedelta(seconds=121))  # its lease has run out
    sweeper = make_runner(db, clock, game_bridge, rules=Rules(lease_seconds=120, max_attempts=1, retry_seconds=30))
    try:
        assert tick(sweeper).gave_up == 1  # the sweep, then the same tick's cleanup
        lost.set()
        stuck.join(timeout=30)
    finally:
        first.close()
        sweeper.close()
    assert undone(game_bridge) == ["scarecrow"] and not game_bridge.received("world.never")
    assert run_story(db, run.id)[-2:] == [("running", "cleaning_up"), ("cleaning_up", "failed")]
    assert run_row(db, run.id).status is RunStatus.FAILED


def _a_revert_whose_tick_is_lost(db, clock, game_bridge):
    """A run cleaning up whose one revert was sent by a tick never heard from again (its answer held back)."""
    start = clock.now()
    game_bridge.script("world.spawn", made(thing("npc", "scarecrow")))
    run = schedule(db, start, document([[step("world.spawn")], [step("core.cue", instruction="wait here")]]))
    lost_tick = make_runner(db, ManualClock(start), game_bridge)
    tick(lost_tick)
    _cancel(db, clock, run, cleanup=True)
    lost = threading.Event()
    game_bridge.script("world.undo", Answer(200, gate=lost))
    stuck = threading.Thread(target=lambda: tick(lost_tick))
    stuck.start()
    game_bridge.wait_for(2)  # the revert is in flight
    return run, lost_tick, lost, stuck


def _swept(db, clock, game_bridge, lost_tick, lost, stuck):
    """A tick once the lost one's lease has run out, at an attempt ceiling of 1: its sweep takes the revert back."""
    clock.advance(121)
    sweeper = make_runner(db, clock, game_bridge, rules=Rules(lease_seconds=120, max_attempts=1, retry_seconds=30))
    try:
        return tick(sweeper)
    finally:
        lost.set()
        stuck.join(timeout=30)
        lost_tick.close()
        sweeper.close()


def test_a_revert_the_sweep_gives_up_is_a_failed_revert_its_cleanup_pauses_on(db, clock, game_bridge):
    run, *lost = _a_revert_whose_tick_is_lost(db, clock, game_bridge)
    assert _swept(db, clock, game_bridge, *lost).gave_up == 1
    assert ledger_of(db, run.id) == {"scarecrow": ResourceStatus.REVERT_FAILED}  # not "reverting" for ever
    paused = run_row(db, run.id)
    assert (paused.status, paused.last_error) == (RunStatus.PAUSED, "1 of 1 resources could not be reverted")
    assert db.autocommit(resources.count_left) == 1  # the ResourcesLeft alarm counts it


def test_a_revert_the_sweep_abandons_leaves_its_thing_live_for_a_later_clean_up(db, clock, game_bridge):
    run, *lost = _a_revert_whose_tick_is_lost(db, clock, game_bridge)
    _cancel(db, clock, run)  # the cleanup abandoned while its revert is in flight
    assert _swept(db, clock, game_bridge, *lost).abandoned == 1
    assert ledger_of(db, run.id) == {"scarecrow": ResourceStatus.LIVE}
    cleaning = commands.cleanup(db, run.id, actor="alice", now=clock.now(), reason="the scarecrow is still there")
    assert cleaning.late_cleanup == "started"


def test_without_cleanup_on_an_abort_fails_at_once(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", made(thing("npc", "scarecrow")))
    game_bridge.script("world.boom", Answer(400, {"reason": "kaboom"}))
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("world.boom", on_failure="abort_run")]]))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.FAILED
    assert ledger_of(db, run.id) == {"scarecrow": ResourceStatus.LIVE}


def test_no_revert_is_planned_while_a_step_is_in_flight(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", made(thing("npc", "scarecrow")))
    release = threading.Event()
    game_bridge.script("world.portal", Answer(200, {"resources": [thing("portal", "portal")]}, gate=release))
    run = schedule(db, clock.now(), document([[step("world.spawn")], [step("world.portal")]]))

    def cancel_tick_then_answer():
        game_bridge.wait_for(2)
        _cancel(db, clock, run, cleanup=True)
        other = make_runner(db, clock, game_bridge)
        tick(other)
        other.close()
        assert undone(game_bridge) == [] and run_row(db, run.id).status is RunStatus.CLEANING_UP
        release.set()

    canceller = threading.Thread(target=cancel_tick_then_answer)
    canceller.start()
    tick(runner)
    canceller.join()
    tick(runner)
    assert undone(game_bridge) == ["portal", "scarecrow"]  # newest first, the one in flight included
    assert run_row(db, run.id).status is RunStatus.CANCELLED


def test_a_retry_answer_of_a_step_in_flight_at_the_cancel_ends_it_and_the_cleanup_goes_on(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", made(thing("npc", "scarecrow")))
    release = threading.Event()
    game_bridge.script("world.portal", Answer(503, gate=release))
    run = schedule(db, clock.now(), document([[step("world.spawn")], [step("world.portal")]]))

    def cancel_then_answer():
        game_bridge.wait_for(2)
        _cancel(db, clock, run, cleanup=True)
        release.set()

    canceller = threading.Thread(target=cancel_then_answer)
    canceller.start()
    tick(runner)
    canceller.join()
    portal = next(s for s in _steps(db, run.id) if s.action_id == "world.portal")
    assert (portal.status, portal.last_error) == (StepStatus.CANCELLED, steps.RUN_ENDED)
    tick(runner)
    assert undone(game_bridge) == ["scarecrow"] and run_row(db, run.id).status is RunStatus.CANCELLED


def test_a_cleanup_never_claims_a_step_that_is_not_a_revert(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), document([[step("world.spawn")]]))
    db.transaction(lambda tx: tx.execute(
        "UPDATE event_runs SET status = 'cleaning_up', cleanup_target = 'cancelled', current_phase = 1 WHERE id = %s",
        (run.id,)))
    [spawn] = db.transaction(lambda tx: steps.materialise_phase(tx, run.id, 1, [StepSpec("world.spawn")]))
    assert db.autocommit(lambda tx: steps.claim(tx, spawn, clock.now(), 60)) is None


def test_a_revert_is_retried_only_once_its_cleanup_paused(db, clock, runner, game_bridge):
    run = _waiting_at_a_cue(db, clock, runner, game_bridge)
    _cancel(db, clock, run, cleanup=True)
    game_bridge.script("world.undo", Answer(400, {"reason": "stuck"}), Answer(503))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.CLEANING_UP  # the second revert waits for its retry
    failed = next(s for s in _steps(db, run.id) if s.status is StepStatus.FAILED)
    with pytest.raises(Conflict):
        commands.retry(db, run.id, failed.id, actor="alice", now=clock.now())
    assert ledger_of(db, run.id)["portal"] is ResourceStatus.REVERT_FAILED


def test_a_paused_cleanup_neither_retries_nor_advances_the_run_s_own_steps(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", made(thing("npc", "scarecrow")))
    game_bridge.script("world.boom", Answer(400, {"reason": "kaboom"}))
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("world.boom")]]))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.PAUSED
    _cancel(db, clock, run, cleanup=True)
    game_bridge.script("world.undo", Answer(400, {"reason": "stuck"}))
    tick(runner)
    paused = run_row(db, run.id)
    assert (paused.status, paused.last_error) == (RunStatus.PAUSED, "1 of 1 resources could not be reverted")
    boom = next(s for s in _steps(db, run.id) if s.action_id == "world.boom")
    with pytest.raises(Conflict, match="only its failed reverts"):
        commands.retry(db, run.id, boom.id, actor="alice", now=clock.now())
    with pytest.raises(Conflict, match="cleaning up"):
        commands.advance(db, run.id, 1, actor="alice", now=clock.now())
    assert run_row(db, run.id).status is RunStatus.PAUSED


def test_a_cleanup_paused_before_it_opened_resumes_into_its_cleanup(db, clock, runner, game_bridge):
    run = _waiting_at_a_cue(db, clock, runner, game_bridge)
    _cancel(db, clock, run, cleanup=True)
    commands.pause(db, run.id, actor="alice", now=clock.now())
    with pytest.raises(Conflict, match="already cleaning up"):
        _cancel(db, clock, run, cleanup=True)
    assert commands.resume(db, run.id, actor="alice", now=clock.now()).status is RunStatus.CLEANING_UP
    tick(runner)
    assert undone(game_bridge) == ["portal", "storm", "scarecrow"]
    assert run_row(db, run.id).status is RunStatus.CANCELLED


def test_a_revert_in_flight_when_its_cleanup_is_abandoned_still_lands(db, clock, runner, game_bridge):
    run = _waiting_at_a_cue(db, clock, runner, game_bridge)
    _cancel(db, clock, run, cleanup=True)
    release = threading.Event()
    game_bridge.script("world.undo", Answer(200, gate=release))
    seen = {}

    def abandon_mid_revert():
        game_bridge.wait_for(3)
        _cancel(db, clock, run)
        seen["ledger"] = ledger_of(db, run.id)
        release.set()

    abandoner = threading.Thread(target=abandon_mid_revert)
    abandoner.start()
    tick(runner)
    abandoner.join()
    assert seen["ledger"] == {"portal": ResourceStatus.REVERTING, "storm": ResourceStatus.LIVE,
                              "scarecrow": ResourceStatus.LIVE}
    assert ledger_of(db, run.id) == {"portal": ResourceStatus.REVERTED, "storm": ResourceStatus.LIVE,
                                     "scarecrow": ResourceStatus.LIVE}
    assert undone(game_bridge) == ["portal"] and run_row(db, run.id).status is RunStatus.CANCELLED


def test_a_revert_to_be_tried_again_wakes_its_run_at_its_due_time(db, clock, runner, game_bridge):
    run = _waiting_at_a_cue(db, clock, runner, game_bridge)
    _cancel(db, clock, run, cleanup=True)
    game_bridge.script("world.undo", Answer(503))
    tick(runner)
    assert run_row(db, run.id).wake_at == clock.now() + timedelta(seconds=RULES.retry_seconds)
    clock.advance(RULES.retry_seconds)
    tick(runner)
    assert undone(game_bridge) == ["portal", "portal", "storm", "scarecrow"]
    assert run_row(db, run.id).status is RunStatus.CANCELLED


def test_ids_that_differ_only_by_case_accent_or_a_trailing_space_are_distinct_things(db, clock, runner, game_bridge):
    """Eight ids a case-insensitive, accent-folding, padding comparison merges to four: eight rows, the dispatch
    row saying eight, and eight reverts."""
    ids = ["aB3", "Ab3", "é1", "e1", "x", "x ", "ß", "ss"]
    game_bridge.script("world.spawn", made(*(thing("npc", i) for i in ids)))
    run = schedule(db, clock.now(), document([[step("world.spawn")], [step("core.cue", instruction="wait here")]]))
    tick(runner)
    assert sorted(ledger_of(db, run.id)) == sorted(ids)
    [dispatch] = [e.detail for e in log_of(db, run.id) if e.kind == "step.dispatch" and e.detail["action"] == "world.spawn"]
    assert dispatch["resources"] == 8
    _cancel(db, clock, run, cleanup=True)
    tick(runner)
    assert sorted(undone(game_bridge)) == sorted(ids)
    assert ledger_of(db, run.id) == dict.fromkeys(ids, ResourceStatus.REVERTED)
