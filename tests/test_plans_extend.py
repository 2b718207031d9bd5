"""Extend a live phase: the deadline of the phase a run is at (an `after` phase's end, a phase's time limit) and
a parked cue's timeout moved later, or earlier but not into the past, by a person: logged in the same
transaction, kept on the phase (who moved it), the run woken so its wake time follows the new deadline. Refused
into the past (400), for a phase with no deadline, one the run is not at, or a run not live (409)."""

from datetime import timedelta

import pymysql
import pytest

from chalicelib.events import commands
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.model import iso
from chalicelib.events.store import phases, steps
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.factory import document, make_run
from tests.support.interference import log_rows_refused
from tests.support.runner_kit import make_runner, schedule, step, tick
from tests.support.scenes import log_rows, snapshot


def _market(seconds=1200):
    """A run whose first phase lasts `seconds` whatever is left (an `after` phase), then a second phase."""
    doc = document([[step("core.announce", message="The market opens")], [step("core.announce", message="Closed")]])
    doc["phases"][0]["advance"] = {"when": "after", "seconds": seconds}
    return doc


def _started(db, clock, doc):
    run = schedule(db, clock.now(), doc)
    runner = make_runner(db, clock, None)
    try:
        tick(runner)
    finally:
        runner.close()
    return run, runner


def _row(db, run_id):
    return db.autocommit(lambda tx: tx.one("SELECT status, current_phase, wake_at FROM event_runs WHERE id = %s", (run_id,)))


def _phase(db, run_id, number=1):
    return db.autocommit(lambda tx: phases.get(tx, run_id, number))


def test_an_after_phases_deadline_moved_later_is_kept_with_who_moved_it_logged_and_followed_by_the_wake_time(api, db, clock):
    run, _ = _started(db, clock, _market())
    deadline = clock.now() + timedelta(seconds=1200)
    assert _phase(db, run.id).deadline == deadline and _row(db, run.id)["wake_at"] == deadline
    answer = api.post(f"/runs/{run.id}/phases/1/extend", {"seconds": 600, "reason": "the boss runs long"}, auth=MODERATOR)
    assert answer.status == 200, answer.body
    moved = deadline + timedelta(seconds=600)
    shown = api.get(f"/runs/{run.id}", auth=GM).body
    phase = next(p for p in shown["phases"] if p["number"] == 1)
    assert (phase["deadline"], phase["deadline_moved_by"], phase["deadline_moved_reason"]) == (
        iso(moved), "mod-mia", "the boss runs long")
    assert [(e["actor"], e["phase"], e["detail"]) for e in log_rows(db, run.id) if e["kind"] == "run.deadline_moved"] == [
        ("mod-mia", 1, {"control": "extend", "phase": 1, "from": iso(deadline), "to": iso(moved), "seconds": 600,
                        "reason": "the boss runs long"})]
    assert _row(db, run.id)["wake_at"] == clock.now()  # woken now: its walk writes the wake time the rows give
    runner = make_runner(db, clock, None)
    try:
        tick(runner)
        assert _row(db, run.id)["wake_at"] == moved
        clock.advance(1200)
        tick(runner)  # the old deadline passes: the phase holds on
        assert _row(db, run.id)["current_phase"] == 1
        clock.advance(600)
        tick(runner)
        assert _row(db, run.id)["status"] == "completed"
    finally:
        runner.close()


def test_a_control_held_to_the_tag_seen_before_an_extend_is_412_naming_the_extend(api, db, clock):
    """The run's tag moved with the extend: a press held to the tag seen before it is told what changed (the
    deadline, to when, by whom and why), not who last moved the run's status."""
    run, _ = _started(db, clock, _market())
    seen = api.get(f"/runs/{run.id}", auth=GM).headers["ETag"]
    assert api.post(f"/runs/{run.id}/phases/1/extend", {"seconds": 600, "reason": "the boss runs long"},
                    auth=MODERATOR).status == 200
    stale = api.post(f"/runs/{run.id}/pause", {"reason": "a look"}, auth=ADMIN, headers={"If-Match": seen})
    assert stale.status == 412
    moved = clock.now() + timedelta(seconds=1800)
    assert (f", phase 1's deadline moved to {moved:%H:%M} UTC on {moved:%Y-%m-%d} by mod-mia at {clock.now():%H:%M} UTC:"
            " the boss runs long") in stale.body["errors"][0]


def test_a_deadline_moved_earlier_ends_the_phase_then(api, db, clock):
    run, runner = _started(db, clock, _market())
    assert api.post(f"/runs/{run.id}/phases/1/extend", {"seconds": -1140}, auth=ADMIN).status == 200
    runner = make_runner(db, clock, None)
    try:
        tick(runner)
        assert _row(db, run.id)["wake_at"] == clock.now() + timedelta(seconds=60)
        clock.advance(60)
        tick(runner)
        assert _row(db, run.id)["status"] == "completed"
    finally:
        runner.close()


@pytest.mark.parametrize("seconds", [-1200, -1500])
def test_an_extend_into_the_past_is_400_and_changes_nothing(api, db, clock, seconds):
    run, _ = _started(db, clock, _market())
    before = snapshot(db, run.id), _phase(db, run.id)
    answer = api.post(f"/runs/{run.id}/phases/1/extend", {"seconds": seconds}, auth=MODERATOR)
    assert answer.status == 400
    assert "not into the past" in answer.body["errors"][0]
    assert (snapshot(db, run.id), _phase(db, run.id)) == before


def test_extending_a_phase_with_no_deadline_is_409(api, db, clock):
    run, _ = _started(db, clock, document([[step("core.cue", instruction="Light it")]]))
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/phases/1/extend", {"seconds": 600}, auth=MODERATOR)
    assert answer.status == 409
    assert answer.body["errors"] == [("phase 1 has no deadline to move: it is neither an `after` phase nor one with a"
                                      " time limit")]
    assert snapshot(db, run.id) == before


def test_extending_a_phase_the_run_is_not_at_is_409(api, db, clock):
    run, _ = _started(db, clock, _market())
    answer = api.post(f"/runs/{run.id}/phases/2/extend", {"seconds": 600}, auth=MODERATOR)
    assert answer.status == 409
    assert answer.body["errors"] == ["the run is at phase 1, not phase 2: only the deadline of the phase it is at can be moved"]


@pytest.mark.parametrize("status", [RunStatus.SCHEDULED, RunStatus.COMPLETED, RunStatus.CANCELLED])
def test_extending_a_phase_of_a_run_that_is_not_live_is_409_naming_its_status(api, db, clock, status):
    run = make_run(db, clock.now(), status=status)
    answer = api.post(f"/runs/{run.id}/phases/1/extend", {"seconds": 600}, auth=MODERATOR)
    assert answer.status == 409
    assert answer.body["detail"]["run_status"] == status.value
    assert status.value in answer.body["errors"][0]


@pytest.mark.parametrize("body", [{}, {"seconds": 0}, {"seconds": "10"}, {"seconds": 8 * 24 * 3600}, {"seconds": 1.5}])
def test_an_extend_without_a_whole_number_of_seconds_is_400(api, db, clock, body):
    run, _ = _started(db, clock, _market())
    assert api.post(f"/runs/{run.id}/phases/1/extend", body, auth=MODERATOR).status == 400


@pytest.mark.parametrize(("body", "said"), [
    ({}, "body.seconds is required"),
    ({"seconds": 0}, "body.seconds must not be 0"),  # not the validator's "must NOT match a disallowed definition"
])
def test_an_extends_400_says_what_to_send(api, db, clock, body, said):
    run, _ = _started(db, clock, _market())
    assert api.post(f"/runs/{run.id}/phases/1/extend", body, auth=MODERATOR).body["errors"] == [said]


def test_a_game_master_may_not_extend(api, db, clock):
    run, _ = _started(db, clock, _market())
    assert api.post(f"/runs/{run.id}/phases/1/extend", {"seconds": 60}, auth=GM).status == 403


def test_an_extend_and_its_log_row_commit_together(db, clock):
    run, _ = _started(db, clock, _market())
    before = snapshot(db, run.id), _phase(db, run.id)
    with log_rows_refused(db, "NEW.kind = 'run.deadline_moved'"), pytest.raises(pymysql.err.OperationalError):
        commands.extend(db, run.id, 1, 600, actor="mod", now=clock.now())
    assert (snapshot(db, run.id), _phase(db, run.id)) == before


def test_a_paused_runs_phase_deadline_may_be_moved(api, db, clock):
    run, _ = _started(db, clock, _market())
    commands.pause(db, run.id, actor="mod", now=clock.now())
    assert api.post(f"/runs/{run.id}/phases/1/extend", {"seconds": 60}, auth=MODERATOR).status == 200
    assert _row(db, run.id)["wake_at"] is None  # a paused run has no timer: only its resume wakes it


# ── a cue's timeout ────────────────────────────────────────────────────────
def _parked_cue(db, clock, timeout=600):
    run, _ = _started(db, clock, document([[step("core.cue", instruction="Light it", timeout_seconds=timeout),
                                             step("core.announce", message="lit")]]))
    cue = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]
    assert cue.parked and cue.times_out_at == clock.now() + timedelta(seconds=timeout)
    return run, cue


def test_a_cues_timeout_moved_later_is_logged_and_the_cue_times_out_then(api, db, clock):
    run, cue = _parked_cue(db, clock)
    answer = api.post(f"/runs/{run.id}/steps/{cue.id}/extend_cue", {"seconds": 900, "reason": "gm on the way"},
                      auth=MODERATOR)
    assert answer.status == 200, answer.body
    moved = cue.times_out_at + timedelta(seconds=900)
    assert answer.body["step"]["times_out_at"] == iso(moved)
    assert [(e["actor"], e["step_id"], e["detail"]) for e in log_rows(db, run.id) if e["kind"] == "step.timeout_moved"] == [
        ("mod-mia", cue.id, {"control": "extend_cue", "action": "core.cue", "from": iso(cue.times_out_at),
                             "to": iso(moved), "seconds": 900, "reason": "gm on the way"})]
    runner = make_runner(db, clock, None)
    try:
        clock.advance(600)
        tick(runner)  # its old timeout: it still waits
        assert db.autocommit(lambda tx: steps.get(tx, cue.id)).parked
        clock.advance(900)
        tick(runner)
        timed_out = db.autocommit(lambda tx: steps.get(tx, cue.id))
        assert not timed_out.parked
        # said by the timeout it had, not the authored one ("within 600 s" after 1,500 s)
        assert timed_out.last_error == f"no one confirmed by {moved:%H:%M} UTC (its timeout, moved by mod-mia)"
    finally:
        runner.close()


def test_a_cues_timeout_moved_earlier_wakes_its_run_for_it(api, db, clock):
    run, cue = _parked_cue(db, clock)
    assert api.post(f"/runs/{run.id}/steps/{cue.id}/extend_cue", {"seconds": -540}, auth=MODERATOR).status == 200
    assert _row(db, run.id)["wake_at"] <= clock.now() + timedelta(seconds=60)


def test_a_cues_timeout_into_the_past_is_400_and_one_without_a_timeout_409(api, db, clock):
    run, cue = _parked_cue(db, clock)
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/steps/{cue.id}/extend_cue", {"seconds": -600}, auth=MODERATOR)
    assert answer.status == 400 and "not into the past" in answer.body["errors"][0]
    assert snapshot(db, run.id) == before
    other, _ = _started(db, clock, document([[step("core.cue", instruction="No rush")]]))
    untimed = db.autocommit(lambda tx: steps.list_for_run(tx, other.id))[0]
    answer = api.post(f"/runs/{other.id}/steps/{untimed.id}/extend_cue", {"seconds": 60}, auth=MODERATOR)
    assert answer.status == 409 and answer.body["errors"][0].endswith(": this cue has no timeout to move")


def _paused_by_its_own_limit(db, clock, doc):
    run, _ = _started(db, clock, doc)
    clock.advance(5)
    runner = make_runner(db, clock, None)
    try:
        tick(runner)
    finally:
        runner.close()
    assert _row(db, run.id)["status"] == "paused"
    return run


def test_a_cues_timeout_that_already_paused_the_run_is_named_as_such_not_as_none(api, db, clock):
    """A cue's timeout under `on_timeout: pause` acts once and is gone: extending it then says so and what to
    do, rather than that it never had one."""
    run = _paused_by_its_own_limit(db, clock, document([[step("core.cue", instruction="Open the gate",
                                                                timeout_seconds=5, on_timeout="pause")]]))
    cue = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]
    answer = api.post(f"/runs/{run.id}/steps/{cue.id}/extend_cue", {"seconds": 60}, auth=MODERATOR)
    assert answer.status == 409
    assert answer.body["errors"][0].endswith(": this cue's timeout (5 s) already acted, and it waits on without one:"
                                             " confirm or skip it")


def test_a_phase_limit_that_already_paused_the_run_is_named_as_such_not_as_none(api, db, clock):
    doc = document([[step("core.announce", message="fight")], [step("core.announce", message="won")]])
    doc["phases"][0]["advance"] = {"when": "signal", "name": "boss_down", "timeout_seconds": 5, "on_timeout": "pause"}
    run = _paused_by_its_own_limit(db, clock, doc)
    answer = api.post(f"/runs/{run.id}/phases/1/extend", {"seconds": 60}, auth=MODERATOR)
    assert answer.status == 409
    assert ("phase 1 (phase 1) had a time limit of 5 s, and it already acted (it paused the run): there is no"
            " deadline left to move. Resume the run, and the phase waits on without a limit") in answer.body["errors"][0]


def test_a_cues_timeout_and_its_log_row_commit_together(db, clock):
    run, cue = _parked_cue(db, clock)
    before = snapshot(db, run.id)
    with log_rows_refused(db, "NEW.kind = 'step.timeout_moved'"), pytest.raises(pymysql.err.OperationalError):
        commands.extend_cue(db, run.id, cue.id, 60, actor="mod", now=clock.now())
    assert snapshot(db, run.id) == before


def test_the_deadline_moved_is_only_ever_the_one_of_the_phase_asked_for(api, db, clock):
    run, _ = _started(db, clock, _market())
    deadline = _phase(db, run.id).deadline
    # Phase 2's row with the very same deadline: only the run's being at phase 2 would let its deadline move.
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_phases SET deadline = %s WHERE run_id = %s AND number = 2",
                                        (deadline, run.id)))
    answer = api.post(f"/runs/{run.id}/phases/2/extend", {"seconds": 600}, auth=MODERATOR)
    assert answer.status == 409
    assert _phase(db, run.id).deadline == deadline


def test_a_phase_whose_condition_is_met_is_over_and_its_deadline_stays(api, db, clock):
    run, _ = _started(db, clock, _market())
    commands.pause(db, run.id, actor="mod", now=clock.now())
    # Met while its run was paused (a signal, an advance): it closes when the run resumes.
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_phases SET condition_met = TRUE, met_by = 'game', met_at = %s"
                                        " WHERE run_id = %s AND number = 1", (clock.now(), run.id)))
    before = _phase(db, run.id)
    answer = api.post(f"/runs/{run.id}/phases/1/extend", {"seconds": 600}, auth=MODERATOR)
    assert (answer.status, answer.body["errors"]) == (409, ["phase 1 (phase 1) is over: its deadline no longer counts"])
    assert _phase(db, run.id) == before


def test_extending_a_phase_whose_close_deadline_passed_before_the_tick_closed_it_is_409_and_changes_nothing(api, db, clock):
    """Between a `close` deadline passing and the tick closing the phase, the engine already treats it as over (a
    step answering in flight is cancelled, "its phase ended"); an extend then revived it without those steps."""
    from tests.support.plans import at_a_phase_with_a_deadline

    run = at_a_phase_with_a_deadline(db, clock.now())
    passed = clock.now() - timedelta(seconds=1)
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_phases SET on_deadline = 'close', limit_seconds = 600, deadline = %s"
                                        " WHERE run_id = %s AND number = 1", (passed, run.id)))
    before = snapshot(db, run.id), _phase(db, run.id)
    assert "extend" not in api.get(f"/runs/{run.id}", auth=MODERATOR).body["controls"]["phase"]  # nor offered
    answer = api.post(f"/runs/{run.id}/phases/1/extend", {"seconds": 600}, auth=MODERATOR)
    assert answer.status == 409, answer.body
    assert answer.body["errors"] == [(f"phase 1 (part 1) ended at its deadline, {passed:%H:%M:%S} UTC (what it had in"
                                     " flight was cancelled then), and closes at the engine's next tick: its deadline"
                                     " can no longer be moved")]
    assert (snapshot(db, run.id), _phase(db, run.id)) == before


def test_a_finished_runs_clean_up_revert_has_its_timeout_moved_as_any_cues(api, db, clock):
    """The tick acts on such a revert's timeout (it fails the revert, leaving its resource), but moving it was 409
    "this run is completed; its cues no longer time out", and the control never offered."""
    from chalicelib.events.ledger import Listed
    from chalicelib.events.lifecycle import LateCleanup
    from chalicelib.events.model import Revert
    from chalicelib.events.store import resources

    run, cue = _parked_cue(db, clock)

    def a_clean_up_revert(tx):  # the cue stands for a by-hand revert its finished run's Clean up parked
        resources.record(tx, run.id, cue.id, [Listed("npc", "crow", Revert("world.undo", {"what": "crow"}))], clock.now())
        tx.execute("UPDATE event_run_steps SET resource_id = (SELECT MAX(id) FROM event_run_resources WHERE run_id = %s)"
                   " WHERE id = %s", (run.id, cue.id))
        tx.execute("UPDATE event_runs SET status = 'completed', finished_at = %s, late_cleanup = %s WHERE id = %s",
                   (clock.now(), LateCleanup.STARTED.value, run.id))

    db.transaction(a_clean_up_revert)
    assert "extend_cue" in api.get(f"/runs/{run.id}", auth=MODERATOR).body["controls"]["steps"][str(cue.id)]
    answer = api.post(f"/runs/{run.id}/steps/{cue.id}/extend_cue", {"seconds": 900}, auth=MODERATOR)
    assert answer.status == 200, answer.body
    assert db.autocommit(lambda tx: steps.get(tx, cue.id)).times_out_at == cue.times_out_at + timedelta(seconds=900)


def test_a_cues_timeout_that_passed_while_its_run_was_paused_moved_too_little_is_400_saying_by_how_much(api, db, clock):
    """It said "a time can be moved earlier, but not into the past" to someone who had moved it later."""
    run, cue = _parked_cue(db, clock)
    commands.pause(db, run.id, actor="mod", now=clock.now())
    clock.advance(600 + 3600)  # its timeout passed an hour ago, while paused
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/steps/{cue.id}/extend_cue", {"seconds": 600}, auth=MODERATOR)
    assert answer.status == 400, answer.body
    [said] = answer.body["errors"]
    assert said.startswith("the cue's new timeout would be ") and said.endswith(
        "which passed while the run was paused (it acts once the run resumes); to move it past now, move it by more"
        " than 3600 s"), said
    assert snapshot(db, run.id) == before
    assert api.post(f"/runs/{run.id}/steps/{cue.id}/extend_cue", {"seconds": 3660}, auth=MODERATOR).status == 200
