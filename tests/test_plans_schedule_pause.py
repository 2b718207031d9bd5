"""Pause a schedule: a recurring definition's schedule paused and resumed with a reason. While paused the planner
creates no occurrence (across a daylight-saving change too) and the calendar marks them paused by whom and why;
a resume creates none of the occurrences missed meanwhile unless asked for the latest, and then only within the
definition's grace window. Each change and its schedule log row commit together."""

import contextlib
from datetime import timedelta

import pymysql
import pytest

from chalicelib.events import schedules
from chalicelib.events.model import iso
from chalicelib.events.runner.planner import plan_occurrences
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.factory import document, make_definition
from tests.support.runner_kit import step, tick

HELLO = [[step("core.announce", message="hi")]]
HORIZON = timedelta(minutes=15)


def _recurring(db, created_at, cron, grace=300, timezone=None):
    schedule = {"cron": cron} | ({"timezone": timezone} if timezone else {})
    return make_definition(db, created_at, document(HELLO, schedule=schedule, grace_seconds=grace))


def _planned(db, definition_id):
    return [r["scheduled_for"] for r in db.autocommit(lambda tx: tx.all(
        "SELECT scheduled_for FROM event_runs WHERE definition_id = %s ORDER BY scheduled_for", (definition_id,)))]


def _schedule_log(db, definition_id):
    return db.autocommit(lambda tx: tx.all("SELECT kind, actor, detail FROM event_schedule_log WHERE definition_id = %s"
                                           " ORDER BY id", (definition_id,)))


def _definition_row(db, definition_id):
    return db.autocommit(lambda tx: tx.one("SELECT * FROM event_definitions WHERE id = %s", (definition_id,)))


@contextlib.contextmanager
def _schedule_log_refused(db):
    """While inside, the database refuses every schedule log row."""
    conn = db.connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute("""CREATE TRIGGER test_schedule_log_refused BEFORE INSERT ON event_schedule_log FOR EACH ROW
                              SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'schedule log row refused by the test'""")
        yield
    finally:
        with conn.cursor() as cursor:
            cursor.execute("DROP TRIGGER IF EXISTS test_schedule_log_refused")
        conn.close()


def test_a_paused_schedule_is_shown_with_who_paused_it_and_why_and_logged(api, db, clock):
    definition = _recurring(db, clock.now(), "0 21 * * *")
    answer = api.post(f"/definitions/{definition.id}/schedule/pause", {"reason": "holiday break"}, auth=MODERATOR)
    assert answer.status == 200, answer.body
    paused = {"by": "mod-mia", "at": iso(clock.now()), "reason": "holiday break"}
    assert answer.body["definition"]["schedule_paused"] == paused
    detail = api.get(f"/definitions/{definition.id}", auth=GM).body
    assert detail["definition"]["schedule_paused"] == paused
    assert [(e["kind"], e["actor"], e["detail"]) for e in detail["schedule_log"]] == [
        ("schedule.paused", "mod-mia", {"reason": "holiday break"})]
    calendar = api.get(f"/definitions/{definition.id}/occurrences?from={iso(clock.now())}"
                       f"&to={iso(clock.now() + timedelta(days=2))}", auth=GM).body
    assert calendar["schedule"]["paused"] == paused
    assert [(o["scheduled_for"], o["paused"]) for o in calendar["occurrences"]] == [
        (iso(clock.now() + timedelta(hours=1)), True), (iso(clock.now() + timedelta(hours=25)), True)]


def test_a_paused_schedule_plans_nothing_across_a_daylight_saving_change_and_resumes_in_summer_time(api, db, clock):
    start = clock.now().replace(year=2027, month=3, day=26, hour=12, minute=0)
    clock.set(start)
    definition = _recurring(db, start, "0 20 * * *", timezone="Europe/Berlin")
    assert api.post(f"/definitions/{definition.id}/schedule/pause", {"reason": "Easter"}, auth=ADMIN).status == 200
    for hours in range(0, 4 * 24, 1):  # hourly through the spring change (2027-03-28, 01:00 UTC)
        clock.set(start + timedelta(hours=hours))
        assert plan_occurrences(db, clock.now(), HORIZON).planned == 0
    assert _planned(db, definition.id) == []
    clock.set(start.replace(day=30, hour=17, minute=50))  # ten minutes before 20:00 in Berlin, summer time
    answer = api.post(f"/definitions/{definition.id}/schedule/resume", {"reason": "back"}, auth=ADMIN)
    assert answer.status == 200 and answer.body["caught_up"] is None
    assert answer.body["definition"]["schedule_paused"] is None
    assert plan_occurrences(db, clock.now(), HORIZON).planned == 1
    assert [t.isoformat() for t in _planned(db, definition.id)] == ["2027-03-30T18:00:00"]
    assert [(e["kind"], e["detail"]) for e in _schedule_log(db, definition.id)][1] == ("schedule.resumed", (
        '{"reason": "back", "paused_by": "root-admin", "paused_at": "2027-03-26T12:00:00Z", "catch_up": "none",'
        ' "caught_up": null}'))


def test_a_resume_creates_none_of_the_occurrences_missed_even_within_their_grace(api, db, clock, runner):
    definition = _recurring(db, clock.now(), "*/10 * * * *", grace=900)
    tick(runner)  # 20:00 .. 20:15 planned
    assert api.post(f"/definitions/{definition.id}/schedule/pause", {}, auth=ADMIN).status == 200
    clock.advance(60 * 60)  # 21:00: 20:20 .. 21:00 missed while paused, 20:50 and 21:00 within the grace
    tick(runner)
    assert api.post(f"/definitions/{definition.id}/schedule/resume", {"catch_up": "none"}, auth=ADMIN).status == 200
    tick(runner)
    planned = [t.strftime("%H:%M") for t in _planned(db, definition.id)]
    assert planned == ["20:00", "20:10", "21:10"]


def test_a_resume_that_catches_up_creates_the_latest_missed_occurrence_within_the_grace(api, db, clock, runner):
    definition = _recurring(db, clock.now(), "*/10 * * * *", grace=300)
    tick(runner)
    assert api.post(f"/definitions/{definition.id}/schedule/pause", {}, auth=ADMIN).status == 200
    clock.advance(63 * 60)  # 21:03: 21:00 is the latest missed, 3 minutes into its 5-minute grace
    answer = api.post(f"/definitions/{definition.id}/schedule/resume", {"catch_up": "latest"}, auth=ADMIN)
    assert answer.status == 200, answer.body
    assert answer.body["caught_up"]["scheduled_for"] == "2026-12-04T21:00:00Z"
    tick(runner)
    planned = [t.strftime("%H:%M") for t in _planned(db, definition.id)]
    assert planned == ["20:00", "20:10", "21:00", "21:10"]
    assert db.autocommit(lambda tx: tx.one("SELECT status FROM event_runs WHERE definition_id = %s AND scheduled_for = %s",
                                           (definition.id, clock.now().replace(minute=0))))["status"] == "completed"


def test_a_catch_up_passes_over_an_occurrence_a_person_skipped_to_the_latest_one_missed(api, db, clock, runner):
    """A skipped occurrence was not missed: the catch-up takes the latest one before it, within the grace."""
    definition = _recurring(db, clock.now(), "*/10 * * * *", grace=1200)
    tick(runner)  # plans 20:00 and 20:10 (its horizon)
    assert api.post(f"/definitions/{definition.id}/schedule/pause", {}, auth=ADMIN).status == 200
    clock.advance(25 * 60)  # 20:25: a person skips 20:30 while it is ahead
    skipped = api.post(f"/definitions/{definition.id}/occurrences/2026-12-04T20:30:00Z/skip", {}, auth=ADMIN)
    assert skipped.status == 200, skipped.body
    clock.advance(8 * 60)  # 20:33: 20:20 missed while paused (within the 20-minute grace), 20:30 skipped
    answer = api.post(f"/definitions/{definition.id}/schedule/resume", {"catch_up": "latest"}, auth=ADMIN)
    assert answer.status == 200, answer.body
    assert answer.body["caught_up"]["scheduled_for"] == "2026-12-04T20:20:00Z"


def test_a_catch_up_past_the_grace_window_creates_nothing(api, db, clock, runner):
    definition = _recurring(db, clock.now(), "*/10 * * * *", grace=300)
    tick(runner)
    assert api.post(f"/definitions/{definition.id}/schedule/pause", {}, auth=ADMIN).status == 200
    clock.advance(68 * 60)  # 21:08: 21:00 is 8 minutes past, beyond its 5-minute grace
    answer = api.post(f"/definitions/{definition.id}/schedule/resume", {"catch_up": "latest"}, auth=ADMIN)
    assert answer.status == 200 and answer.body["caught_up"] is None
    assert [t.strftime("%H:%M") for t in _planned(db, definition.id)] == ["20:00", "20:10"]


def test_a_pause_pressed_while_the_planner_plans_the_definition_plans_nothing(db, clock):
    definition = _recurring(db, clock.now(), "*/5 * * * *")

    def pause_first():
        schedules.pause(db, definition.id, reason="now", actor="mod", now=clock.now())
        return True

    assert plan_occurrences(db, clock.now(), HORIZON, keep_going=pause_first).planned == 0
    assert _planned(db, definition.id) == []


def test_pausing_twice_is_409_naming_who_paused_it_and_the_first_pause_stands(api, db, clock):
    definition = _recurring(db, clock.now(), "0 21 * * *")
    assert api.post(f"/definitions/{definition.id}/schedule/pause", {"reason": "holiday"}, auth=ADMIN).status == 200
    again = api.post(f"/definitions/{definition.id}/schedule/pause", {"reason": "other"}, auth=MODERATOR)
    assert again.status == 409
    assert again.body["errors"] == ["this schedule is already paused, by root-admin at 2026-12-04T20:00:00Z because holiday"]
    assert _definition_row(db, definition.id)["schedule_paused_reason"] == "holiday"


def test_resuming_a_schedule_that_is_not_paused_is_409_and_changes_nothing(api, db, clock):
    definition = _recurring(db, clock.now(), "0 21 * * *")
    before = _definition_row(db, definition.id)
    answer = api.post(f"/definitions/{definition.id}/schedule/resume", {}, auth=ADMIN)
    assert (answer.status, answer.body["errors"]) == (409, ["this schedule is not paused"])
    assert _definition_row(db, definition.id) == before and _schedule_log(db, definition.id) == []


def test_a_definition_without_a_schedule_is_not_paused_400(api, db, clock):
    definition = make_definition(db, clock.now(), document(HELLO))
    answer = api.post(f"/definitions/{definition.id}/schedule/pause", {}, auth=ADMIN)
    assert answer.status == 400
    assert _definition_row(db, definition.id)["schedule_paused_at"] is None


def test_pause_and_resume_are_for_moderators_and_admins_and_name_a_definition(api, db, clock):
    definition = _recurring(db, clock.now(), "0 21 * * *")
    assert api.post(f"/definitions/{definition.id}/schedule/pause", {}, auth=GM).status == 403
    assert api.post("/definitions/999999/schedule/pause", {}, auth=ADMIN).status == 404
    assert api.post(f"/definitions/{definition.id}/schedule/resume", {"catch_up": "all"}, auth=ADMIN).status == 400


def test_a_pause_and_a_resume_commit_with_their_log_rows(db, clock):
    definition = _recurring(db, clock.now(), "0 21 * * *")
    before = _definition_row(db, definition.id)
    with _schedule_log_refused(db), pytest.raises(pymysql.err.OperationalError):
        schedules.pause(db, definition.id, reason="x", actor="mod", now=clock.now())
    assert _definition_row(db, definition.id) == before
    schedules.pause(db, definition.id, reason="x", actor="mod", now=clock.now())
    paused = _definition_row(db, definition.id)
    with _schedule_log_refused(db), pytest.raises(pymysql.err.OperationalError):
        schedules.resume(db, definition.id, reason=None, catch_up=schedules.CatchUp.NONE, actor="mod", now=clock.now())
    assert _definition_row(db, definition.id) == paused
