"""Acknowledge a cue: a person has a parked cue, on the real database. The first acknowledge stands (a
compare-and-set on the step being parked and nobody having it); the same person again is 200 and writes
nothing; anyone else is 409 naming who has it and since when; a step that is not a parked cue is 409. Every
refusal writes nothing.
"""

from datetime import timedelta

from chalicelib.events import commands
from chalicelib.events.errors import Conflict
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.model import Claim, iso
from chalicelib.events.store import steps
from tests.support.api import ADMIN, GM, MODERATOR, token
from tests.support.factory import run_row, step_row
from tests.support.scenes import log_rows, put_step_in, run_with_steps, set_step, snapshot
from tests.support.together import at_once

ROWAN = token("gm", sub="Rowan")


def _parked(db, clock):
    run, (cue, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    return run, put_step_in(db, cue, "parked", clock.now())


def test_a_game_master_has_a_parked_cue_and_the_step_and_the_log_say_so(api, db, clock):
    run, cue = _parked(db, clock)
    answer = api.post(f"/runs/{run.id}/steps/{cue.id}/acknowledge", {"note": "  on my way  "}, auth=ROWAN)
    assert answer.status == 200, answer.body
    assert answer.body["step"]["acknowledged_by"] == "Rowan"
    assert answer.body["step"]["acknowledged_at"] == iso(clock.now())
    assert answer.body["step"]["status"] == "running" and answer.body["step"]["parked"] is True
    (row,) = [r for r in log_rows(db, run.id) if r["kind"] == "step.acknowledged"]
    assert (row["actor"], row["step_id"]) == ("Rowan", cue.id)
    assert row["detail"] == {"control": "acknowledge", "action": "world.spawn", "note": "on my way"}
    shown = api.get(f"/runs/{run.id}", auth=GM).body
    assert shown["waiting"]["acknowledged_by"] == "Rowan"
    assert "acknowledge" not in shown["controls"]["steps"][str(cue.id)]  # had: not offered again
    assert "confirm" in shown["controls"]["steps"][str(cue.id)]


def test_the_same_person_again_is_200_and_writes_nothing(api, db, clock):
    run, cue = _parked(db, clock)
    first = api.post(f"/runs/{run.id}/steps/{cue.id}/acknowledge", {}, auth=ROWAN).body["step"]
    before = snapshot(db, run.id)
    again = api.post(f"/runs/{run.id}/steps/{cue.id}/acknowledge", {"note": "still me"}, auth=ROWAN)
    assert again.status == 200 and again.body["step"] == first
    assert snapshot(db, run.id) == before


def test_another_person_is_409_naming_who_has_it_and_since_when(api, db, clock):
    run, cue = _parked(db, clock)
    clock.set(clock.now().replace(hour=20, minute=14, second=5) + timedelta(days=1))
    assert api.post(f"/runs/{run.id}/steps/{cue.id}/acknowledge", {}, auth=ROWAN).status == 200
    before = snapshot(db, run.id)
    for other in (GM, MODERATOR, ADMIN):
        answer = api.post(f"/runs/{run.id}/steps/{cue.id}/acknowledge", {"note": "mine"}, auth=other)
        assert answer.status == 409
        held = f"{cue.named}: Rowan has it since 20:14 UTC; to have it yourself, take it over with a note"
        assert answer.body == {"errors": [held],
                               "detail": {"run_status": "running", "step_status": "running", "step_parked": True}}
    assert snapshot(db, run.id) == before
    assert step_row(db, cue.id).acknowledged_by == "Rowan"


def test_three_people_acknowledging_at_once_leave_one_holder_one_row_and_the_others_told_who_has_it(db, db_params, clock):
    """Rowan, Sam and Ivy press I have it together, each on a connection of their own, on five parked cues: the first
    stands; the other two are refused naming the one who has it, and neither writes a row."""
    people = ("Rowan", "Sam", "Ivy")
    for _ in range(5):
        run, cue = _parked(db, clock)
        answers = at_once(db_params, *(lambda own, who=who: commands.acknowledge(own, run.id, cue.id, actor=who, now=clock.now())
                                      for who in people))
        [holder] = [a.acknowledged_by for a in answers if not isinstance(a, Exception)]
        refusals = [str(a) for a in answers if isinstance(a, Conflict)]
        said = f"{cue.named}: {holder} has it since {clock.now():%H:%M} UTC; to have it yourself, take it over with a note"
        assert refusals == [said] * 2
        assert step_row(db, cue.id).acknowledged_by == holder
        assert [r["actor"] for r in log_rows(db, run.id) if r["kind"] == "step.acknowledged"] == [holder]


def test_only_a_parked_cue_can_be_acknowledged(api, db, clock):
    run, (first, second, third) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    for target, state in ((first, "pending"), (second, "leased"), (third, "done")):
        put_step_in(db, target, state, clock.now())
        before = snapshot(db, run.id)
        answer = api.post(f"/runs/{run.id}/steps/{target.id}/acknowledge", {}, auth=GM)
        shown = {"leased": "running under a live lease"}.get(state, state)
        assert answer.status == 409
        assert answer.body["errors"] == [f"{target.named}: this step is {shown}; only a parked cue can be acknowledged"]
        assert snapshot(db, run.id) == before


def test_the_store_acknowledges_a_parked_step_once_and_nothing_else(db, clock):
    _, (cue, pending, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, cue, "parked", clock.now())
    assert not db.transaction(lambda tx: steps.acknowledge(tx, pending.id, "Rowan", clock.now()))
    assert db.transaction(lambda tx: steps.acknowledge(tx, cue.id, "Rowan", clock.now()))
    assert not db.transaction(lambda tx: steps.acknowledge(tx, cue.id, "Sam", clock.now()))
    assert not db.transaction(lambda tx: steps.acknowledge(tx, cue.id, "Rowan", clock.now()))
    assert (step_row(db, cue.id).acknowledged_by, step_row(db, pending.id).acknowledged_by) == ("Rowan", None)


def test_a_cue_answered_while_its_run_is_paused_leaves_it_waiting_for_its_resume(db, clock):
    run, (cue, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    leased = put_step_in(db, cue, "leased", clock.now())
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET status = 'paused', waiting_for = 'resume' WHERE id = %s",
                                        (run.id,)))
    assert db.transaction(lambda tx: steps.park(tx, Claim(leased.id, "tick-token", leased.attempts), "cue"))
    assert run_row(db, run.id).waiting_for == "resume"


def test_a_step_parked_again_is_held_by_nobody_whatever_its_last_park_was(db, clock):
    """A by-hand revert acknowledged, then ended (timed out, or abandoned by a cancel) and posted again (a Retry, a
    Clean up): the hold columns were never cleared, so the new park was "had" by someone who never saw it, its
    reminders silenced and its stale hold lapsing at once into an escalation."""
    _, (cue, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, cue, "parked", clock.now())
    assert db.transaction(lambda tx: steps.acknowledge(tx, cue.id, "Rowan", clock.now(), held_until=clock.now()))
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET status = 'pending' WHERE id = %s", (cue.id,)))
    leased = put_step_in(db, step_row(db, cue.id), "leased", clock.now())  # posted again
    assert db.transaction(lambda tx: steps.park(tx, Claim(leased.id, "tick-token", leased.attempts), "cue"))
    parked = step_row(db, cue.id)
    assert (parked.acknowledged_by, parked.acknowledged_at, parked.held_until) == (None, None, None)
    assert db.transaction(lambda tx: steps.acknowledge(tx, cue.id, "Sam", clock.now()))  # free for anyone


def test_a_hold_on_a_finished_runs_clean_up_revert_wakes_the_run_by_its_end(db, clock):
    """A completed run's Clean up parked a by-hand revert, its escalation spent (no wake left): an acknowledge
    set the hold's end but left the run without a wake, so the hold never lapsed."""
    from chalicelib.events.lifecycle import LateCleanup

    run, (revert, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, revert, "parked", clock.now())
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET status = 'completed', finished_at = %s, late_cleanup = %s,"
                                        " wake_at = NULL WHERE id = %s", (clock.now(), LateCleanup.STARTED.value, run.id)))
    until = clock.now() + timedelta(minutes=15)
    assert db.transaction(lambda tx: steps.acknowledge(tx, revert.id, "Rowan", clock.now(), held_until=until))
    assert run_row(db, run.id).wake_at == until


def test_the_store_releases_and_hands_over_only_a_parked_cue_not_one_sent_again_or_in_doubt(db, clock):
    """Release's and take-over's statements held less than their rules: a step someone had, re-claimed or parked in
    doubt, was let go or taken over all the same (guarded then only by the locks and the order of the writes)."""
    _, (cue, parked, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    for state in ("leased", "parked_in_doubt"):
        gone = set_step(db, put_step_in(db, cue, state, clock.now()), acknowledged_by="Rowan", acknowledged_at=clock.now())
        assert not db.transaction(lambda tx: steps.release(tx, gone.id, clock.now(), holder=None, remind_at=None,
                                                           escalate_at=None)), state
        assert not db.transaction(lambda tx: steps.take_over(tx, gone.id, "Sam", clock.now(), held_until=None)), state
        assert step_row(db, cue.id).acknowledged_by == "Rowan", state
    set_step(db, put_step_in(db, parked, "parked", clock.now()), acknowledged_by="Rowan", acknowledged_at=clock.now())
    assert db.transaction(lambda tx: steps.take_over(tx, parked.id, "Sam", clock.now(), held_until=None))
    assert db.transaction(lambda tx: steps.release(tx, parked.id, clock.now(), holder=None, remind_at=None,
                                                   escalate_at=None))
