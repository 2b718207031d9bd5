"""The advance control and the manual condition: a person ends the phase a run is at, on the real database.

Each guard of `runs.advance_phase` (the run at that phase, the condition not yet met, no step of the phase
in flight under a live lease, running or paused, never the ending) is refused with a 409 that names why,
and nothing is written; GET /runs/{id} offers advance exactly when it would take.
"""

from datetime import timedelta

import pytest

from chalicelib.events import commands
from chalicelib.events.errors import Conflict
from chalicelib.events.lifecycle import PhaseState, RunStatus, StepStatus
from chalicelib.events.store import phases, steps
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.factory import run_row
from tests.support.runner_kit import log_of, schedule, step, tick
from tests.support.scenes import set_run, set_step, snapshot


def _doc(first_advance=None, *, first=None, ending=()):
    phase = {"name": "warm-up", "steps": first or [step("core.announce", message="Stretch")]}
    if first_advance is not None:
        phase["advance"] = first_advance
    return {"name": "Dawn run", "grace_seconds": 300,
            "phases": [phase, {"name": "race", "steps": [step("core.announce", message="Go")]}], "ending": list(ending)}


def _phase(db, run_id, number):
    return db.autocommit(lambda tx: phases.get(tx, run_id, number))


def _steps(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))


def _held(db, clock, runner):
    run = schedule(db, clock.now(), _doc({"when": "manual"}))
    tick(runner)  # phase 1's step is done; the manual phase holds
    return run_row(db, run.id)


def test_a_manual_phase_holds_until_a_person_advances_it_and_the_next_phase_says_who_ended_it(db, clock, runner):
    run = _held(db, clock, runner)
    assert (run.status, run.current_phase, run.wake_at) == (RunStatus.RUNNING, 1, None)
    assert _phase(db, run.id, 1).state is PhaseState.HELD
    clock.advance(600)
    assert tick(runner).runs_seen == 0  # held: not even read
    assert runner.actions.announce_channel.posts == ["Stretch"]
    # The hold began once, and the cue channel was told once, naming the run and the phase.
    [told] = runner.actions.cue_channel.notices
    assert (told.kind, told.text, told.step_id) == ("advance", f"Run {run.id} waits for a person to advance phase 1 (warm-up)", None)

    done = commands.advance(db, run.id, 1, actor="mod-mia", now=clock.advance(5), reason="  everyone is warm ")
    assert (done.resumed, done.skipped_steps) == (False, 0)
    assert done.run.wake_at == clock.now() and done.run.status is RunStatus.RUNNING
    row = _phase(db, run.id, 1)
    assert (row.condition_met, row.met_by, row.met_at) == (True, "mod-mia", clock.now())
    [advanced] = [e for e in log_of(db, run.id) if e.kind == "run.advance"]
    assert advanced.actor == "mod-mia" and advanced.detail == {
        "control": "advance", "phase": 1, "reason": "everyone is warm", "skipped_steps": 0, "resumed": False}

    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert runner.actions.announce_channel.posts == ["Stretch", "Go"]
    opened = [e.detail for e in log_of(db, run.id) if e.kind == "run.phase"]
    assert opened[1]["phase"] == 2 and opened[1]["ended_by"]["by"] == "mod-mia"
    assert "ended_by" not in opened[0]


def test_a_phase_whose_steps_finish_on_their_own_says_so_in_the_next_phases_row(db, clock, runner):
    run = schedule(db, clock.now(), _doc({"when": "steps_done"}))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    opened = [e.detail for e in log_of(db, run.id) if e.kind == "run.phase"]
    assert opened[1]["ended_by"] == {"steps_done": True}


def test_advance_skips_the_phases_pending_and_parked_steps_with_the_reason(db, clock, runner):
    run = schedule(db, clock.now(), _doc(first=[step("core.cue", instruction="Count the runners"),
                                               step("core.announce", message="Stretch")]))
    tick(runner)  # the cue parks; the announcement waits behind it
    done = commands.advance(db, run.id, 1, actor="mod-mia", now=clock.advance(1), reason="we are late")
    assert done.skipped_steps == 2
    first = [s for s in _steps(db, run.id) if s.phase == 1]
    assert {(s.status, s.last_error) for s in first} == {(StepStatus.SKIPPED, "we are late")}
    logged = [e for e in log_of(db, run.id) if e.kind == "step.status" and e.detail.get("control") == "advance"]
    assert sorted((e.step_id, e.detail["from"], e.detail["reason"]) for e in logged) == sorted(
        (s.id, "running" if s.seq == 0 else "pending", "we are late") for s in first)
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert runner.actions.announce_channel.posts == ["Go"]  # the skipped announcement never went out


def _refused(db, run_id, phase, now, *words):
    before = snapshot(db, run_id)
    with pytest.raises(Conflict) as refused:
        commands.advance(db, run_id, phase, actor="mod-mia", now=now)
    for word in words:
        assert word in str(refused.value)
    assert snapshot(db, run_id) == before
    return refused.value


def test_advance_of_a_phase_the_run_is_not_at_is_refused_naming_the_phase_it_is_at(db, clock, runner):
    run = _held(db, clock, runner)
    _refused(db, run.id, 2, clock.now(), "the run is at phase 1, not phase 2")


def _in_flight(db, clock, runner):
    """A run at phase 1 whose cue is parked and whose second step is in flight under another tick's live lease."""
    run = schedule(db, clock.now(), _doc(first=[step("core.cue", instruction="Count the runners"),
                                               step("core.announce", message="Breathe")]))
    tick(runner)
    second = sorted((s for s in _steps(db, run.id) if s.phase == 1), key=lambda s: s.seq)[1]
    set_step(db, second, status="running", claimed_by="tick-b", claim_expires_at=clock.now() + timedelta(seconds=30))
    return run_row(db, run.id)


def test_advance_while_a_step_of_the_phase_is_in_flight_is_refused_naming_the_step(db, clock, runner):
    run = _in_flight(db, clock, runner)
    _refused(db, run.id, 1, clock.now(), f"Run {run.id} · Phase 1 · step 2 (core.announce) is in flight; try again in a few seconds")
    # Once its lease has lapsed it is no longer in flight: the advance takes, and the step cannot come back.
    done = commands.advance(db, run.id, 1, actor="mod-mia", now=clock.advance(31))
    assert done.skipped_steps == 2  # the parked cue, and the step whose lease lapsed
    assert {s.status for s in _steps(db, run.id) if s.phase == 1} == {StepStatus.SKIPPED}


def test_a_second_advance_of_the_same_phase_is_refused_naming_who_advanced_it_and_when(db, clock, runner):
    run = _held(db, clock, runner)
    at = clock.advance(1)
    commands.advance(db, run.id, 1, actor="mod-mia", now=at)
    _refused(db, run.id, 1, clock.advance(1), "already advanced by mod-mia at", at.strftime("%Y-%m-%dT%H:%M:%S"))


def test_advance_of_a_paused_run_at_that_phase_resumes_it_in_the_same_transaction(db, clock, runner):
    run = _held(db, clock, runner)
    commands.pause(db, run.id, actor="mod-mia", now=clock.advance(1), reason="rain")
    set_run(db, run.id, last_error="paused for rain")
    done = commands.advance(db, run.id, 1, actor="admin-ada", now=clock.advance(1))
    assert done.resumed and done.run.status is RunStatus.RUNNING and done.run.last_error is None
    assert done.run.wake_at == clock.now()
    kinds = [(e.kind, e.detail.get("control"), e.detail.get("to")) for e in log_of(db, run.id)][-2:]
    assert kinds == [("run.advance", "advance", None), ("run.status", "advance", "running")]
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_advance_is_refused_in_the_ending(db, clock, runner):
    run = schedule(db, clock.now(), _doc(ending=[step("core.cue", instruction="Stack the cones")]))
    tick(runner)  # phases 1 and 2 done; the ending's cue parks
    run = run_row(db, run.id)
    assert (run.status, run.current_phase) == (RunStatus.ENDING, 3)
    _refused(db, run.id, 3, clock.now(), "this run is ending")
    set_run(db, run.id, status="running")  # even a run that claims running at the ending's number
    _refused(db, run.id, 3, clock.now(), "phase 3 is the ending")


@pytest.mark.parametrize("status", [s for s in RunStatus if s not in (RunStatus.RUNNING, RunStatus.PAUSED)])
def test_advance_is_refused_naming_the_status_from_every_other_status(db, clock, runner, status):
    run = _held(db, clock, runner)
    set_run(db, run.id, status=status.value, finished_at=clock.now() if status.terminal else None)
    _refused(db, run.id, 1, clock.now(), f"this run is {status.value}")


def test_the_api_offers_advance_exactly_when_it_would_take_and_only_to_moderators_and_admins(api, db, clock, runner):
    run = _held(db, clock, runner)
    shown = api.get(f"/runs/{run.id}", auth=MODERATOR).body
    assert "advance" in shown["controls"]["run"] and shown["waiting"]["for"] == "advance"
    assert shown["controls"]["roles"]["run"]["advance"] == ["admin", "moderator"]
    assert "advance" not in api.get(f"/runs/{run.id}", auth=GM).body["controls"]["run"]  # offered only to who may

    refused = api.post(f"/runs/{run.id}/advance", {"phase": 1}, auth=GM)
    assert refused.status == 403 and _phase(db, run.id, 1).condition_met is False
    wrong = api.post(f"/runs/{run.id}/advance", {"phase": 2, "reason": "x"}, auth=MODERATOR)
    assert wrong.status == 409 and "at phase 1" in wrong.body["errors"][0]
    missing = api.post(f"/runs/{run.id}/advance", {"reason": "x"}, auth=MODERATOR)
    assert missing.status == 400

    took = api.post(f"/runs/{run.id}/advance", {"phase": 1, "reason": "go"}, auth=ADMIN)
    assert took.status == 200 and took.body["run"]["wake_at"] is not None and took.body["skipped_steps"] == 0
    after = api.get(f"/runs/{run.id}", auth=MODERATOR).body
    assert "advance" not in after["controls"]["run"] and after["waiting"] is None
    again = api.post(f"/runs/{run.id}/advance", {"phase": 1}, auth=MODERATOR)
    assert again.status == 409 and "already advanced by root-admin" in again.body["errors"][0]


def test_the_offer_and_the_statement_agree_while_a_step_is_in_flight(api, db, clock, runner):
    run = _in_flight(db, clock, runner)
    assert "advance" not in api.get(f"/runs/{run.id}", auth=MODERATOR).body["controls"]["run"]
    assert api.post(f"/runs/{run.id}/advance", {"phase": 1}, auth=MODERATOR).status == 409
    clock.advance(31)
    assert "advance" in api.get(f"/runs/{run.id}", auth=MODERATOR).body["controls"]["run"]
    assert api.post(f"/runs/{run.id}/advance", {"phase": 1}, auth=MODERATOR).status == 200


def test_the_holds_post_carries_the_console_link_and_a_channel_that_fails_does_not_stop_the_tick(db, clock, runner, monkeypatch):
    from chalicelib.events.actions.notice import Notice
    from chalicelib.events.errors import ChannelError

    told = Notice.of_hold(42, 1, "warm-up", clock.now(), "https://console.example/console/")
    assert told.message() == "Run 42 waits for a person to advance phase 1 (warm-up)\nhttps://console.example/console#/runs/42"

    def refuse(notice):
        raise ChannelError("the webhook answered 500")

    monkeypatch.setattr(runner.actions.cue_channel, "post", refuse)
    run = _held(db, clock, runner)  # the tick raised nothing (tick() asserts no errors)
    assert run.wake_at is None and _phase(db, run.id, 1).state is PhaseState.HELD
