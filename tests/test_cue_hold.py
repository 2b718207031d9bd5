"""A claimed wait stays owned or comes back (issue 39), on the real database: an acknowledge holds a parked cue for
as long as the cue waits before its escalation, then lapses and the cue is reminded and escalated again naming
who had it; whoever has it may release it (its reminders resume), a moderator may release anyone's, and
another person may take it over with a note. Every refusal is clear and writes nothing."""

from datetime import timedelta

import pymysql
import pytest

from chalicelib.events import commands
from chalicelib.events.actions.context import ActionContext
from chalicelib.events.actions.core import cue_attention
from chalicelib.events.actions.perform import Actions
from chalicelib.events.errors import Conflict, Invalid
from chalicelib.events.lifecycle import StepStatus
from chalicelib.events.model import Step, StepSpec, iso
from chalicelib.events.runner import Budget, Runner
from chalicelib.events.runner.attention import Attender
from chalicelib.events.store import runs, steps
from tests.support.api import GM, MODERATOR, token
from tests.support.factory import document, step_row
from tests.support.interference import log_rows_refused
from tests.support.runner_kit import RULES, RecordingChannel, log_of, schedule, step
from tests.support.scenes import snapshot
from tests.support.together import at_once

ROWAN = token("gm", sub="Rowan")
SAM = token("gm", sub="Sam")


@pytest.fixture
def channels():
    return RecordingChannel("cue"), RecordingChannel("escalation")


@pytest.fixture
def runner(db, clock, channels):
    cue, escalation = channels
    actions = Actions(bridge=None, cue_channel=cue, announce_channel=RecordingChannel("announce"),
                      escalation_channel=escalation, escalate_after_seconds=900)
    made = Runner(db, clock, actions, RULES, concurrency=1)
    yield made
    made.close()


def _tick(runner):
    report = runner.tick(Budget.for_seconds(60))
    assert report.errors == 0
    return report


def _parked_cue(db, clock, runner, **attention):
    run = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire", **attention)]]))
    _tick(runner)
    (cue,) = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))
    assert cue.parked
    return run, cue


def _press(api, run, cue, control, auth, body=None):
    return api.post(f"/runs/{run.id}/steps/{cue.id}/{control}", body or {}, auth=auth)


def _rows(db, run_id, kind):
    return [e for e in log_of(db, run_id) if e.kind == kind]


def _keys(channel, kind):
    return [n.idempotency_key for n in channel.notices if n.kind == kind]


# ── an acknowledge lapses ──────────────────────────────────────────────────
def test_an_acknowledge_that_lapses_is_reminded_and_escalated_again_naming_who_had_it(db, clock, runner, channels, api):
    cue_channel, escalations = channels
    run, cue = _parked_cue(db, clock, runner, remind_after_seconds=60, escalate_after_seconds=300)
    clock.advance(30)
    acknowledged_at = clock.now()
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    held = step_row(db, cue.id)
    assert held.held_until == acknowledged_at + timedelta(seconds=300)  # as long as the cue waits before its escalation
    assert db.autocommit(lambda tx: runs.get(tx, run.id)).wake_at <= held.held_until  # the tick comes for the lapse
    shown = api.get(f"/runs/{run.id}", auth=GM).body["waiting"]
    assert (shown["acknowledged_by"], shown["held_until"]) == ("Rowan", iso(held.held_until))
    for _ in range(4):  # silent while Rowan has it
        clock.advance(60)
        _tick(runner)
    assert cue_channel.notices[1:] == [] and escalations.notices == []

    clock.set(held.held_until)
    _tick(runner)
    said = f"Rowan acknowledged at {acknowledged_at:%H:%M} UTC and has not confirmed"
    (escalation,) = escalations.notices
    (reminder,) = [n for n in cue_channel.notices if n.kind == "reminder"]
    assert said in escalation.text and said in reminder.text and "Light the bonfire" in escalation.text
    # A round of its own: a receiver that de-duplicates drops none of them.
    assert (escalation.idempotency_key, reminder.idempotency_key) == (f"{cue.idempotency_key}:h1:e", f"{cue.idempotency_key}:h1:r1")
    (lapsed,) = _rows(db, run.id, "step.hold_lapsed")
    assert lapsed.actor == "runner"
    assert lapsed.detail == {"action": "core.cue", "had_by": "Rowan", "had_since": iso(acknowledged_at),
                             "held_until": iso(held.held_until)}
    after = step_row(db, cue.id)
    assert (after.acknowledged_by, after.lapsed_by, after.held_until, after.parked) == (None, "Rowan", None, True)
    waiting = api.get("/runs?waiting=cue", auth=GM).body["runs"][0]["waiting"]
    assert (waiting["lapsed_by"], waiting["lapsed_acknowledged_at"]) == ("Rowan", iso(acknowledged_at))
    assert "acknowledged_by" not in waiting
    clock.advance(60)
    _tick(runner)
    assert _keys(cue_channel, "reminder") == [f"{cue.idempotency_key}:h1:r1", f"{cue.idempotency_key}:h1:r2"]

    # Nobody has it now: anyone may say they have it, and the lapse is forgotten.
    assert _press(api, run, cue, "acknowledge", SAM).status == 200
    again = step_row(db, cue.id)
    assert (again.acknowledged_by, again.lapsed_by, again.remind_at, again.escalate_at) == ("Sam", None, None, None)


def test_a_cue_whose_timers_were_all_spent_still_wakes_its_run_for_the_lapse(db, clock, runner, channels, api):
    _, escalations = channels
    run, cue = _parked_cue(db, clock, runner, escalate_after_seconds=60)
    clock.advance(60)
    _tick(runner)
    assert len(escalations.notices) == 1 and db.autocommit(lambda tx: runs.get(tx, run.id)).wake_at is None
    clock.advance(10)
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    assert db.autocommit(lambda tx: runs.get(tx, run.id)).wake_at == clock.now() + timedelta(seconds=60)
    clock.advance(60)
    _tick(runner)
    assert [n.idempotency_key for n in escalations.notices] == [f"{cue.idempotency_key}:e", f"{cue.idempotency_key}:h1:e"]
    assert "Rowan acknowledged at" in escalations.notices[1].text


def test_the_deployments_escalation_delay_bounds_the_hold_of_a_cue_without_its_own(db, clock, runner, api):
    run, cue = _parked_cue(db, clock, runner)
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    assert step_row(db, cue.id).held_until == clock.now() + timedelta(seconds=900)  # EVENT_ESCALATE_AFTER_SECONDS


def test_with_escalation_off_an_acknowledge_holds_without_a_bound(db, clock, api):
    actions = Actions(bridge=None, cue_channel=RecordingChannel("cue"), announce_channel=RecordingChannel("announce"))
    quiet = Runner(db, clock, actions, RULES, concurrency=1)
    try:
        run, cue = _parked_cue(db, clock, quiet)
        assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
        clock.advance(7 * 24 * 3600)
        _tick(quiet)
    finally:
        quiet.close()
    held = step_row(db, cue.id)
    assert (held.acknowledged_by, held.held_until, held.hold_seconds) == ("Rowan", None, None)


def test_a_dry_runs_hold_is_on_its_clock(clock):
    for params, held in (({"instruction": "Light it", "escalate_after_seconds": 600}, 10.0), ({"instruction": "Go"}, 15.0)):
        cue = Step.new(1, 1, 1, 0, StepSpec("core.cue", params), "key")
        context = ActionContext(cue, 1, clock.now(), time_scale=1 / 60)  # a dry run at speed 60
        assert cue_attention(context, 900).hold_seconds == pytest.approx(held)


def test_a_paused_run_does_not_lapse_and_a_lapse_is_claimed_once(db, clock, runner, api):
    run, cue = _parked_cue(db, clock, runner, escalate_after_seconds=120)
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    assert api.post(f"/runs/{run.id}/pause", {}, auth=MODERATOR).status == 200
    held = step_row(db, cue.id)
    clock.advance(120)
    assert db.transaction(lambda tx: steps.lapse(tx, held, clock.now(), None)) is False  # its run is not working
    assert api.post(f"/runs/{run.id}/resume", {}, auth=MODERATOR).status == 200
    clock.advance(-1)
    assert db.transaction(lambda tx: steps.lapse(tx, held, clock.now(), None)) is False  # not before its end
    clock.advance(1)
    assert db.transaction(lambda tx: steps.lapse(tx, held, clock.now(), None)) is True
    assert db.transaction(lambda tx: steps.lapse(tx, held, clock.now(), None)) is False  # once
    assert step_row(db, cue.id).lapsed_by == "Rowan"


def test_a_lapse_read_before_the_holder_had_it_again_leaves_the_new_hold(db, clock, runner, api):
    run, cue = _parked_cue(db, clock, runner, escalate_after_seconds=120)
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    clock.advance(120)
    read = step_row(db, cue.id)  # what a tick read at the end of Rowan's hold
    assert _press(api, run, cue, "release", ROWAN).status == 200
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200  # Rowan has it again, for 120 s more
    assert db.transaction(lambda tx: steps.lapse(tx, read, clock.now(), None)) is False
    again = step_row(db, cue.id)
    assert (again.acknowledged_by, again.held_until) == ("Rowan", clock.now() + timedelta(seconds=120))


def _attender(db, now):
    """What a tick's walker lapses a hold with, on `db`, at `now`."""
    return Attender(db, Actions(bridge=None, cue_channel=RecordingChannel("cue"), announce_channel=RecordingChannel("announce")),
                    RULES, now, Budget.for_seconds(60))


@pytest.mark.parametrize("control", ["take_over", "release"])
def test_a_hold_lapsing_as_a_person_takes_the_cue_over_or_releases_it_ends_once_and_leaves_one_holder_at_most(
        db, db_params, clock, runner, control):
    """The tick lapses Rowan's ended hold while Sam takes the cue over (or a moderator releases it), together, each on
    a connection of its own, on six cues: one of the two ends the hold and writes its row; the other writes nothing
    (a lapse read before the take-over leaves Sam's hold; a person after the lapse is told nobody has the cue)."""
    cued = [schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire", escalate_after_seconds=120)]]))
            for _ in range(6)]
    _tick(runner)
    cues = [cue for run in cued for cue in db.autocommit(lambda tx, r=run.id: steps.list_for_run(tx, r))]
    for cue in cues:
        commands.acknowledge(db, cue.run_id, cue.id, actor="Rowan", now=clock.now())
    clock.advance(120)
    press = {"take_over": lambda own, cue: commands.take_over(own, cue.run_id, cue.id, actor="Sam", now=clock.now(),
                                                               note="Rowan went quiet"),
             "release": lambda own, cue: commands.release(own, cue.run_id, cue.id, actor="mod-mia", now=clock.now())}[control]
    ends = {"take_over": "step.taken_over", "release": "step.released"}[control]
    for read in (step_row(db, cue.id) for cue in cues):  # each as the tick read it at the end of Rowan's hold
        lapsed, pressed = at_once(db_params, lambda own, r=read: _attender(own, clock.now()).lapse(r),
                                  lambda own, r=read: press(own, r))
        rows = [e.kind for e in log_of(db, read.run_id) if e.kind in ("step.hold_lapsed", ends)]
        after = step_row(db, read.id)
        if lapsed:
            assert isinstance(pressed, Conflict) and "nobody has this cue" in str(pressed), pressed
            assert rows == ["step.hold_lapsed"]
            assert (after.acknowledged_by, after.lapsed_by) == (None, "Rowan")
        else:
            assert not isinstance(pressed, Exception), pressed
            assert rows == [ends]
            assert (after.acknowledged_by, after.lapsed_by) == ({"take_over": "Sam", "release": None}[control], None)
        assert after.holds_ended == 1 - (control == "take_over" and not lapsed)


def test_a_lapse_whose_log_row_cannot_be_written_changes_nothing(db, clock, runner, api):
    run, cue = _parked_cue(db, clock, runner, escalate_after_seconds=120)
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    clock.advance(120)
    before = snapshot(db, run.id)
    attender = _attender(db, clock.now())
    with log_rows_refused(db, "NEW.kind = 'step.hold_lapsed'"), pytest.raises(pymysql.err.MySQLError):
        attender.lapse(step_row(db, cue.id))
    assert snapshot(db, run.id) == before
    assert attender.lapse(step_row(db, cue.id)) is True  # once the log takes its row


# ── release ────────────────────────────────────────────────────────────────
def test_whoever_has_the_cue_releases_it_and_its_reminders_resume(db, clock, runner, channels, api):
    cue_channel, escalations = channels
    run, cue = _parked_cue(db, clock, runner, remind_after_seconds=60, escalate_after_seconds=600)
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    clock.advance(90)
    _tick(runner)
    assert _keys(cue_channel, "reminder") == []
    answer = _press(api, run, cue, "release", ROWAN, {"note": "called away"})
    assert answer.status == 200, answer.body
    assert (answer.body["step"]["acknowledged_by"], answer.body["step"]["holds_ended"]) == (None, 1)
    (row,) = _rows(db, run.id, "step.released")
    assert row.actor == "Rowan"
    assert row.detail == {"control": "release", "action": "core.cue", "had_by": "Rowan",
                          "had_since": iso(clock.now() - timedelta(seconds=90)), "note": "called away"}
    assert api.get(f"/runs/{run.id}", auth=GM).body["waiting"].get("acknowledged_by") is None
    _tick(runner)  # its run woke for the reminder the release made due
    (reminder,) = cue_channel.notices[1:]
    assert reminder.idempotency_key == f"{cue.idempotency_key}:h1:r1" and "nobody has it now" in reminder.text
    clock.advance(600)
    _tick(runner)
    assert _keys(escalations, "escalation") == [f"{cue.idempotency_key}:h1:e"]


def test_a_moderator_releases_anyones_cue(db, clock, runner, api):
    run, cue = _parked_cue(db, clock, runner)
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    assert _press(api, run, cue, "release", MODERATOR).status == 200
    assert step_row(db, cue.id).acknowledged_by is None
    assert _rows(db, run.id, "step.released")[0].detail["had_by"] == "Rowan"


def test_a_game_master_releases_only_a_cue_they_have(db, clock, runner, api):
    run, cue = _parked_cue(db, clock, runner)
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    before = snapshot(db, run.id)
    answer = _press(api, run, cue, "release", SAM)
    assert answer.status == 403
    assert answer.body["errors"] == [
        (f"a game master may release only a cue they have; Rowan has it since {clock.now():%H:%M} UTC: take it over"
        " with a note, or ask someone with the role admin or moderator to release it")]
    assert snapshot(db, run.id) == before


@pytest.mark.parametrize("other", ["rowan", "Rówan", "ROWAN"])
def test_a_game_master_whose_name_differs_by_case_or_accent_is_another_person(db, clock, runner, api, other):
    """Identities are compared exactly (a token's sub): the database's case- and accent-blind collation took
    "rowan" for "Rowan", so another game master released Rowan's cue, and a take-over from Rowan was a 409."""
    run, cue = _parked_cue(db, clock, runner)
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    before = snapshot(db, run.id)
    assert _press(api, run, cue, "release", token("gm", sub=other)).status == 403
    assert snapshot(db, run.id) == before
    taken = _press(api, run, cue, "take-over", token("gm", sub=other), {"note": "Rowan went quiet"})
    assert taken.status == 200, taken.body
    assert step_row(db, cue.id).acknowledged_by == other


def test_a_cue_nobody_has_cannot_be_released(db, clock, runner, api):
    run, cue = _parked_cue(db, clock, runner, escalate_after_seconds=60)
    before = snapshot(db, run.id)
    for who in (ROWAN, MODERATOR):
        answer = _press(api, run, cue, "release", who)
        assert answer.status == 409 and answer.body["errors"] == [
            f"{cue.named}: nobody has this cue; there is nothing to release"]
    assert snapshot(db, run.id) == before
    acknowledged_at = clock.now()
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    clock.advance(60)
    _tick(runner)  # the hold lapsed: the refusal says whose
    answer = _press(api, run, cue, "release", MODERATOR)
    assert answer.status == 409 and answer.body["errors"] == [
        (f"{cue.named}: nobody has this cue: Rowan acknowledged at {acknowledged_at:%H:%M} UTC and has not confirmed;"
        " there is nothing to release")]


# ── take over ──────────────────────────────────────────────────────────────
def test_another_person_takes_the_cue_over_with_a_note_and_it_is_theirs(db, clock, runner, channels, api):
    _, escalations = channels
    run, cue = _parked_cue(db, clock, runner, escalate_after_seconds=300)
    acknowledged_at = clock.now()
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    clock.advance(200)
    answer = _press(api, run, cue, "take-over", SAM, {"note": "  Rowan went offline  "})
    assert answer.status == 200, answer.body
    taken = answer.body["step"]
    assert (taken["acknowledged_by"], taken["acknowledged_at"]) == ("Sam", iso(clock.now()))
    assert taken["held_until"] == iso(clock.now() + timedelta(seconds=300))  # a hold of its own
    (row,) = _rows(db, run.id, "step.taken_over")
    assert row.actor == "Sam"
    assert row.detail == {"control": "take-over", "action": "core.cue", "from": "Rowan", "had_since": iso(acknowledged_at),
                          "note": "Rowan went offline", "held_until": taken["held_until"]}
    listed = api.get("/runs?waiting=cue", auth=GM).body["runs"][0]["waiting"]
    assert (listed["acknowledged_by"], listed["acknowledged_at"]) == ("Sam", iso(clock.now()))
    clock.advance(100)  # Rowan's hold would have ended here: Sam's has not
    _tick(runner)
    assert escalations.notices == []
    clock.advance(200)
    _tick(runner)
    (escalation,) = escalations.notices
    assert "Sam acknowledged at" in escalation.text


def test_a_take_over_without_a_note_is_400_and_changes_nothing(db, clock, runner, api):
    run, cue = _parked_cue(db, clock, runner)
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    before = snapshot(db, run.id)
    for body in ({}, {"note": ""}, {"note": "   "}):
        answer = _press(api, run, cue, "take-over", SAM, body)
        assert answer.status == 400 and "note" in answer.body["errors"][0], (body, answer.body)
    assert snapshot(db, run.id) == before
    with pytest.raises(Invalid, match="needs a note"):
        commands.take_over(db, run.id, cue.id, actor="Sam", now=clock.now(), note=" ")


def test_a_cue_nobody_has_is_acknowledged_not_taken_over_and_the_holders_own_take_over_writes_nothing(db, clock, runner, api):
    run, cue = _parked_cue(db, clock, runner)
    before = snapshot(db, run.id)
    answer = _press(api, run, cue, "take-over", SAM, {"note": "mine"})
    assert answer.status == 409 and answer.body["errors"] == [
        f"{cue.named}: nobody has this cue; say you have it (acknowledge) instead"]
    assert snapshot(db, run.id) == before
    first = _press(api, run, cue, "acknowledge", ROWAN).body["step"]
    clock.advance(30)
    before = snapshot(db, run.id)
    again = _press(api, run, cue, "take-over", ROWAN, {"note": "still me"})
    assert again.status == 200 and again.body["step"] == first
    assert snapshot(db, run.id) == before


def test_the_console_is_offered_release_and_take_over_only_on_a_cue_someone_has(db, clock, runner, api):
    run, cue = _parked_cue(db, clock, runner)
    offered = api.get(f"/runs/{run.id}", auth=GM).body["controls"]["steps"][str(cue.id)]
    assert "release" not in offered and "take-over" not in offered and "acknowledge" in offered
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    def offered_to(auth):
        return api.get(f"/runs/{run.id}", auth=auth).body["controls"]["steps"][str(cue.id)]

    # Each is offered exactly what their press would take: Rowan releases the cue they have, another game
    # master takes it over, a moderator does either.
    assert {"release", "confirm", "skip"} <= set(offered_to(ROWAN)) and "take-over" not in offered_to(ROWAN)
    assert {"take-over", "confirm", "skip"} <= set(offered_to(GM)) and "release" not in offered_to(GM)
    assert {"release", "take-over"} <= set(offered_to(MODERATOR)) and "acknowledge" not in offered_to(MODERATOR)
    assert _press(api, run, cue, "confirm", ROWAN, {"note": "lit"}).status == 200  # had or not, a cue is confirmed
    assert step_row(db, cue.id).status is StepStatus.DONE


@pytest.mark.parametrize("control, body", [("take-over", {"note": "Rowan is away"}), ("release", {})])
def test_a_take_over_or_release_of_the_holder_seen_is_refused_once_someone_else_has_the_cue(db, clock, runner, api,
                                                                                             control, body):
    """Rowan's hold lapsed and Sam acknowledged between a moderator's look and their press: the take-over took the
    cue from Sam with a note addressed to Rowan (the release let Sam's fresh hold go), as the step's tag leaves the
    holder out. Held to the holder the page showed (`held_by`), it is 409 naming who has it now."""
    kit = token("moderator", sub="Kit")
    run, cue = _parked_cue(db, clock, runner)
    assert _press(api, run, cue, "acknowledge", ROWAN).status == 200
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET acknowledged_by = NULL, acknowledged_at = NULL,"
                                        " held_until = NULL WHERE id = %s", (cue.id,)))  # the hold lapsed meanwhile
    assert _press(api, run, cue, "acknowledge", SAM).status == 200
    before = snapshot(db, run.id)
    answer = _press(api, run, cue, control, kit, {**body, "held_by": "Rowan"})
    assert answer.status == 409, answer.body
    assert answer.body["errors"] == [(f"Run {run.id} · Phase 1 · step 1 (Light the bonfire): Sam has it since"
                                     f" {clock.now():%H:%M} UTC, not Rowan as you saw: nothing was changed; look again"
                                     " before you press it")]
    assert snapshot(db, run.id) == before
    taken = _press(api, run, cue, control, kit, {**body, "held_by": "Sam"})
    assert taken.status == 200, taken.body
    assert taken.body["step"]["acknowledged_by"] == ("Kit" if control == "take-over" else None)
