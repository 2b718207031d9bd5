"""Postpone a run: a scheduled run moved to a new time, the same run with its occurrence key, a log row saying
from when to when and why, its wake time the new one; refused once it started (409 naming the status) and
into the past (400), nothing changed either way; the calendar shows it at its new time with its original one."""

from datetime import datetime, timedelta

import pymysql
import pytest

from chalicelib.events import commands
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.model import iso
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.factory import document, make_run
from tests.support.interference import log_rows_refused
from tests.support.runner_kit import make_runner, schedule, tick
from tests.support.scenes import log_rows, snapshot


def first_actor(api, run_id):
    """Who the run log says postponed the run."""
    entries = api.get(f"/runs/{run_id}/log", auth=MODERATOR).body["entries"]
    return next(e["actor"] for e in entries if e["kind"] == "run.postponed")


def _run_row(db, run_id):
    return db.autocommit(lambda tx: tx.one("SELECT * FROM event_runs WHERE id = %s", (run_id,)))


def test_a_scheduled_run_is_postponed_keeping_its_occurrence_key_with_a_log_row_and_its_wake_time(api, db, clock):
    run = schedule(db, clock.now(), document(), scheduled_for=clock.now() + timedelta(minutes=30))
    to = clock.now() + timedelta(hours=2)
    answer = api.post(f"/runs/{run.id}/postpone", {"to": iso(to), "reason": "server restart"}, auth=MODERATOR)
    assert answer.status == 200, answer.body
    assert answer.body["run"]["scheduled_for"] == iso(to) and answer.body["run"]["status"] == "scheduled"
    row = _run_row(db, run.id)
    assert (row["occurrence_key"], row["scheduled_for"], row["wake_at"]) == (run.occurrence_key, to, to)
    assert answer.headers["ETag"] != run.etag
    moved = [e for e in log_rows(db, run.id) if e["kind"] == "run.postponed"]
    assert [(e["actor"], e["detail"]) for e in moved] == [("mod-mia", {
        "control": "postpone", "from": iso(run.scheduled_for), "to": iso(to), "reason": "server restart"})]


def test_a_postponed_run_starts_at_its_new_time_and_not_before(db, clock):
    run = schedule(db, clock.now(), document(), scheduled_for=clock.now() + timedelta(minutes=1))
    commands.postpone(db, run.id, clock.now() + timedelta(minutes=30), actor="mod", now=clock.now())
    runner = make_runner(db, clock, None)
    try:
        clock.advance(10 * 60)  # past its first time and its grace window: still scheduled, never missed
        tick(runner)
        assert _run_row(db, run.id)["status"] == "scheduled"
        clock.advance(20 * 60)
        tick(runner)
        assert _run_row(db, run.id)["status"] == "completed"
    finally:
        runner.close()


@pytest.mark.parametrize("ahead", [timedelta(hours=1), timedelta(days=400)], ids=["an-hour", "past-366-days"])
@pytest.mark.parametrize("status", [RunStatus.RUNNING, RunStatus.PAUSED, RunStatus.COMPLETED, RunStatus.MISSED])
def test_a_run_that_started_or_ended_is_not_postponed_409_naming_its_status(api, db, clock, status, ahead):
    """Whatever the time asked for: a time too far ahead was 400 for a run that could not be postponed at all."""
    run = make_run(db, clock.now(), status=status, current_phase=1 if status in (RunStatus.RUNNING, RunStatus.PAUSED) else None)
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/postpone", {"to": iso(clock.now() + ahead)}, auth=MODERATOR)
    assert answer.status == 409
    assert answer.body["errors"] == [f"this run is {status.value}; only a scheduled run can be postponed (it has not started)"]
    assert answer.body["detail"]["run_status"] == status.value
    assert snapshot(db, run.id) == before


@pytest.mark.parametrize("to", [timedelta(0), -timedelta(minutes=5)])
def test_a_postpone_into_the_past_is_400_and_changes_nothing(api, db, clock, to):
    run = schedule(db, clock.now(), document(), scheduled_for=clock.now() + timedelta(minutes=30))
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/postpone", {"to": iso(clock.now() + to)}, auth=MODERATOR)
    assert answer.status == 400
    assert "not later than now" in answer.body["errors"][0]
    assert snapshot(db, run.id) == before


@pytest.mark.parametrize("body", [{}, {"to": "tomorrow"}, {"to": "2026-12-05T20:00:00"}, {"to": "2028-12-05T20:00:00Z"},
                                  {"to": "2026-12-05T20:00:00Z", "when": "x"}])
def test_a_postpone_without_a_readable_time_ahead_is_400(api, db, clock, body):
    run = schedule(db, clock.now(), document(), scheduled_for=clock.now() + timedelta(minutes=30))
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/postpone", body, auth=MODERATOR)
    assert answer.status == 400, answer.body
    assert snapshot(db, run.id) == before


def test_a_game_master_may_not_postpone(api, db, clock):
    run = schedule(db, clock.now(), document(), scheduled_for=clock.now() + timedelta(minutes=30))
    answer = api.post(f"/runs/{run.id}/postpone", {"to": iso(clock.now() + timedelta(hours=1))}, auth=GM)
    assert answer.status == 403
    assert api.post(f"/runs/{run.id}/postpone", {"to": iso(clock.now() + timedelta(hours=1))}, auth=ADMIN).status == 200


def test_a_postpone_and_its_log_row_commit_together(db, clock):
    run = schedule(db, clock.now(), document(), scheduled_for=clock.now() + timedelta(minutes=30))
    before = snapshot(db, run.id)
    with log_rows_refused(db, "NEW.kind = 'run.postponed'"), pytest.raises(pymysql.err.OperationalError):
        commands.postpone(db, run.id, clock.now() + timedelta(hours=1), actor="mod", now=clock.now())
    assert snapshot(db, run.id) == before


def test_a_postpone_held_to_the_tag_seen_is_412_once_the_run_changed(api, db, clock):
    run = schedule(db, clock.now(), document(), scheduled_for=clock.now() + timedelta(minutes=30))
    first = api.post(f"/runs/{run.id}/postpone", {"to": iso(clock.now() + timedelta(hours=1))}, auth=MODERATOR,
                     headers={"If-Match": run.etag})
    assert first.status == 200
    again = api.post(f"/runs/{run.id}/postpone", {"to": iso(clock.now() + timedelta(hours=2))}, auth=MODERATOR,
                     headers={"If-Match": run.etag})
    assert again.status == 412
    assert _run_row(db, run.id)["scheduled_for"] == clock.now() + timedelta(hours=1)
    # the change the person did not see, by its own words: the postpone, to when, by whom (not how it was scheduled)
    moved_to = clock.now() + timedelta(hours=1)
    assert (f", postponed to {moved_to:%H:%M} UTC on {moved_to:%Y-%m-%d} by {first_actor(api, run.id)}"
            f" at {clock.now():%H:%M} UTC") in again.body["errors"][0]


def test_the_calendar_shows_a_postponed_occurrence_at_its_new_time_with_its_original_one(api, db, clock):
    doc = {"name": "Nightly", "phases": [{"steps": [{"action": "core.announce", "params": {"message": "on"}}]}],
           "schedule": {"cron": "10 20 * * *", "timezone": "UTC"}}
    definition = api.post("/definitions", doc, auth=ADMIN).body["definition"]["id"]
    runner = make_runner(db, clock, None)
    try:
        tick(runner)  # plans 20:10 today (inside the horizon)
    finally:
        runner.close()
    occurrence = clock.now() + timedelta(minutes=10)
    calendar = api.get(f"/definitions/{definition}/occurrences?from={iso(clock.now())}&to={iso(clock.now() + timedelta(days=2))}",
                       auth=GM).body["occurrences"]
    run = calendar[0]["run"]
    to = occurrence + timedelta(minutes=45)
    assert api.post(f"/runs/{run['id']}/postpone", {"to": iso(to), "reason": "boss patch"}, auth=MODERATOR).status == 200
    calendar = api.get(f"/definitions/{definition}/occurrences?from={iso(clock.now())}&to={iso(clock.now() + timedelta(days=2))}",
                       auth=GM).body["occurrences"]
    assert [(o["scheduled_for"], o["run"] and o["run"]["id"], o["postponed_to"]) for o in calendar] == [
        (iso(occurrence), run["id"], iso(to)), (iso(occurrence + timedelta(days=1)), None, None)]
    runner = make_runner(db, clock, None)
    try:
        clock.advance(60 * 60)
        tick(runner)  # the planner does not plan the postponed occurrence again: its key is kept
    finally:
        runner.close()
    assert db.autocommit(lambda tx: tx.one("SELECT COUNT(*) AS n FROM event_runs WHERE definition_id = %s",
                                           (definition,)))["n"] == 1


def test_a_run_postponed_into_another_month_says_so_in_both_months_and_its_occurrence_is_skipped_while_it_waits(
        api, db, clock):
    """The 30 November event moved to 12 December: November's calendar lists the occurrence with postponed_to;
    December's lists the run on its own with postponed_from (its occurrence's time); a run scheduled by hand and
    never moved says nothing. Past its original time the occurrence is still skipped (its run cancelled)."""
    clock.set(datetime(2026, 11, 30, 19, 50))
    doc = {"name": "Monthly", "phases": [{"steps": [{"action": "core.announce", "params": {"message": "on"}}]}],
           "schedule": {"cron": "0 20 30 * *", "timezone": "UTC"}}
    definition = api.post("/definitions", doc, auth=ADMIN).body["definition"]["id"]
    runner = make_runner(db, clock, None)
    try:
        tick(runner)  # plans 30 November 20:00
    finally:
        runner.close()
    run_id = db.autocommit(lambda tx: tx.scalar("SELECT id FROM event_runs WHERE definition_id = %s", (definition,)))
    assert api.post(f"/runs/{run_id}/postpone", {"to": "2026-12-12T20:00:00Z", "reason": "venue"},
                    auth=MODERATOR).status == 200
    by_hand = api.post(f"/definitions/{definition}/runs", {"scheduled_for": "2026-12-05T18:00:00Z"},
                       auth=ADMIN).body["run"]["id"]

    def month(start, end):
        answer = api.get(f"/definitions/{definition}/occurrences?from={start}&to={end}", auth=GM)
        assert answer.status == 200, answer.body
        return answer.body

    november = month("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")
    assert [(o["scheduled_for"], o["postponed_to"]) for o in november["occurrences"]] == [
        ("2026-11-30T20:00:00Z", "2026-12-12T20:00:00Z")]
    december = month("2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z")
    assert [(r["id"], r["scheduled_for"], r["postponed_from"]) for r in december["runs"]] == [
        (by_hand, "2026-12-05T18:00:00Z", None), (run_id, "2026-12-12T20:00:00Z", "2026-11-30T20:00:00Z")]

    clock.set(datetime(2026, 11, 30, 20, 30))
    skipped = api.post(f"/definitions/{definition}/occurrences/2026-11-30T20:00:00Z/skip", {"reason": "r"}, auth=ADMIN)
    assert skipped.status == 200 and skipped.body["cancelled_run"]["id"] == run_id, skipped.body
