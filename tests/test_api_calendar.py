"""The calendar: a definition's occurrences in its time zone (daylight saving included), each with its run;
skipping one (the planner never creates it; a run already scheduled is cancelled in the same transaction)
and unskipping it before it is due (it is planned after all)."""

from datetime import datetime, timedelta

import pymysql
import pytest

from chalicelib.db import must_exist
from chalicelib.events import calendar
from chalicelib.events.runner.planner import plan_occurrences
from chalicelib.events.store import definitions
from chalicelib.events.views.calendar import MAX_LISTED
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.factory import document, insert_run, make_definition, run_row
from tests.support.interference import log_rows_refused
from tests.support.runner_kit import log_of, tick
from tests.support.together import at_once

DAILY_BERLIN = {"cron": "0 20 * * *", "timezone": "Europe/Berlin"}
FRIDAYS_BERLIN = {"cron": "0 20 * * 5", "timezone": "Europe/Berlin"}


def _definition(api, schedule, name="Festival"):
    document = {"name": name, "phases": [{"steps": [{"action": "core.announce", "params": {"message": "on"}}]}],
                "schedule": schedule}
    answer = api.post("/definitions", document, auth=ADMIN)
    assert answer.status == 201, answer.body
    return answer.body["definition"]["id"]


def _occurrences(api, definition_id, start, end, auth=GM):
    return api.get(f"/definitions/{definition_id}/occurrences?from={start}&to={end}", auth=auth)


def _times(answer):
    assert answer.status == 200, answer.body
    return [o["scheduled_for"] for o in answer.body["occurrences"]]


def _skip(api, definition_id, when, reason="Christmas", auth=ADMIN):
    return api.post(f"/definitions/{definition_id}/occurrences/{when}/skip", {"reason": reason}, auth=auth)


def _unskip(api, definition_id, when, auth=ADMIN):
    return api.post(f"/definitions/{definition_id}/occurrences/{when}/unskip", {}, auth=auth)


def _runs_of(db, definition_id):
    return db.autocommit(lambda tx: tx.all("SELECT id, status, scheduled_for FROM event_runs WHERE definition_id = %s"
                                           " ORDER BY scheduled_for", (definition_id,)))


def _skip_rows(db):
    return db.autocommit(lambda tx: tx.all("SELECT definition_id, scheduled_for, reason, skipped_by"
                                           " FROM event_occurrence_skips"))


# ── the occurrences ──────────────────────────────────────────────────────────
def test_the_occurrences_keep_their_wall_clock_time_across_the_spring_change(api):
    definition_id = _definition(api, DAILY_BERLIN)
    answer = _occurrences(api, definition_id, "2027-03-26T00:00:00Z", "2027-03-30T00:00:00Z")
    # 20:00 in Berlin is 19:00 UTC in winter and 18:00 UTC from 28 March 2027 (summer time).
    assert _times(answer) == ["2027-03-26T19:00:00Z", "2027-03-27T19:00:00Z", "2027-03-28T18:00:00Z",
                              "2027-03-29T18:00:00Z"]
    assert all(o["run"] is None and o["skipped"] is False and o["skip"] is None for o in answer.body["occurrences"])
    assert answer.body["next_from"] is None


def test_a_time_the_clocks_skip_fires_once_at_the_jump_and_a_repeated_one_at_its_first_instance(api):
    definition_id = _definition(api, {"cron": "30 2 * * *", "timezone": "Europe/Berlin"})
    spring = _times(_occurrences(api, definition_id, "2027-03-27T00:00:00Z", "2027-03-30T00:00:00Z"))
    assert spring == ["2027-03-27T01:30:00Z", "2027-03-28T01:00:00Z", "2027-03-29T00:30:00Z"]
    autumn = _times(_occurrences(api, definition_id, "2027-10-30T00:00:00Z", "2027-11-01T00:00:00Z"))
    assert autumn == ["2027-10-30T00:30:00Z", "2027-10-31T00:30:00Z"]  # 02:30 CEST, the first of the two


def test_the_schedule_is_said_in_words_with_its_next_occurrence_in_its_zone(api, clock):
    clock.set(datetime(2026, 12, 3, 12, 0))
    definition_id = _definition(api, FRIDAYS_BERLIN)
    answer = api.get(f"/definitions/{definition_id}/occurrences", auth=GM)
    assert answer.status == 200, answer.body
    assert answer.body["schedule"] == {"cron": "0 20 * * 5", "timezone": "Europe/Berlin",
                                       "in_words": "every Friday at 20:00, Europe/Berlin; next: Fri 4 Dec, 20:00",
                                       "next": "2026-12-04T19:00:00Z", "paused": None}
    # Without from and to: from now, six weeks.
    assert _times(answer)[:2] == ["2026-12-04T19:00:00Z", "2026-12-11T19:00:00Z"] and len(answer.body["occurrences"]) == 6


def test_the_next_occurrence_said_is_one_that_will_run_never_a_skipped_one_nor_one_under_a_pause(api, clock):
    clock.set(datetime(2026, 12, 3, 12, 0))
    definition_id = _definition(api, FRIDAYS_BERLIN)
    assert _skip(api, definition_id, "2026-12-04T19:00:00Z").status == 200
    described = api.get(f"/definitions/{definition_id}/occurrences", auth=GM).body["schedule"]
    assert (described["next"], described["in_words"]) == (
        "2026-12-11T19:00:00Z", "every Friday at 20:00, Europe/Berlin; next: Fri 11 Dec, 20:00")
    assert api.post(f"/definitions/{definition_id}/schedule/pause", {"reason": "holiday break"}, auth=ADMIN).status == 200
    described = api.get(f"/definitions/{definition_id}/occurrences", auth=GM).body["schedule"]
    assert (described["next"], described["in_words"]) == (
        None, "every Friday at 20:00, Europe/Berlin; paused: no occurrence runs until it is resumed")


def test_a_schedule_whose_next_occurrence_is_years_away_still_says_when(api, clock):
    """29 February, seen in December 2026: its next run is in 2028, past the calendar's 366-day window."""
    clock.set(datetime(2026, 12, 1, 12, 0))
    definition_id = _definition(api, {"cron": "0 20 29 2 *", "timezone": "Europe/Berlin"})
    described = api.get(f"/definitions/{definition_id}/occurrences", auth=GM).body["schedule"]
    assert described["next"] == "2028-02-29T19:00:00Z" and described["in_words"].endswith("; next: Tue 29 Feb, 20:00")


def test_no_occurrence_is_listed_from_before_the_version_that_carries_the_schedule(api, clock):
    """The planner never plans one before the version was saved: the calendar does not list them as runless."""
    clock.set(datetime(2026, 12, 7, 1, 28))
    definition_id = _definition(api, {"cron": "*/15 * * * *"})
    assert _times(_occurrences(api, definition_id, "2026-12-07T01:00:00Z", "2026-12-07T02:00:00Z")) == [
        "2026-12-07T01:30:00Z", "2026-12-07T01:45:00Z"]


def test_a_definition_without_a_schedule_has_no_occurrences(api):
    document = {"name": "By hand", "phases": [{"steps": [{"action": "core.announce", "params": {"message": "on"}}]}]}
    definition_id = api.post("/definitions", document, auth=ADMIN).body["definition"]["id"]
    answer = api.get(f"/definitions/{definition_id}/occurrences", auth=GM)
    assert answer.status == 200 and answer.body == {"schedule": None, "occurrences": [], "runs": [], "next_from": None,
                                                    "runs_capped": False}


def test_a_window_lists_at_most_500_and_says_where_the_rest_begin(api):
    definition_id = _definition(api, {"cron": "*/5 * * * *"})
    answer = _occurrences(api, definition_id, "2027-01-01T00:00:00Z", "2027-01-03T00:00:00Z")
    assert len(_times(answer)) == MAX_LISTED
    assert answer.body["occurrences"][-1]["scheduled_for"] == "2027-01-02T17:35:00Z"
    assert answer.body["next_from"] == "2027-01-02T17:40:00Z"
    rest = _occurrences(api, definition_id, answer.body["next_from"], "2027-01-03T00:00:00Z")
    assert len(_times(rest)) == 76 and rest.body["next_from"] is None


def _runs_at(db, clock, definition_id, times):
    """A live run of the definition at each of `times` (several at one time: runs postponed onto it), in one
    transaction."""
    definition = must_exist(db.autocommit(lambda tx: definitions.get(tx, definition_id)))

    def make(tx):
        made = [insert_run(tx, definition, clock.now(), scheduled_for=datetime(2026, 12, 1) + timedelta(minutes=i))
                for i in range(len(times))]
        for run, when in zip(made, times, strict=True):  # as a postpone moves it: its occurrence key kept
            tx.execute("UPDATE event_runs SET scheduled_for = %s, wake_at = %s WHERE id = %s", (when, when, run.id))
        return [run.id for run in made]

    return db.transaction(make)


def _pages(api, definition_id, start, end):
    """Every page of the window, following next_from."""
    pages = [_occurrences(api, definition_id, start, end)]
    while pages[-1].body["next_from"] is not None:
        assert len(pages) < 10, "next_from moves on"
        pages.append(_occurrences(api, definition_id, pages[-1].body["next_from"], end))
    return pages


def test_a_window_with_more_runs_than_a_page_pages_them_with_the_occurrences_and_drops_none(api, db, clock):
    """Eleven events of 50 runs scheduled by hand in a month of a weekly definition (550 runs, three at each
    instant): the first page ends before the instant of the 501st, so it lists 498 runs and the Fridays before
    that instant; the next page, from there, lists the rest of both. Every run and every Friday once."""
    definition_id = _definition(api, FRIDAYS_BERLIN)
    times = [datetime(2027, 1, 1) + timedelta(hours=2 * (i // 3)) for i in range(550)]
    made = _runs_at(db, clock, definition_id, times)
    first, second = _pages(api, definition_id, "2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z")
    cut = "2027-01-14T20:00:00Z"  # the 501st run's instant (the 167th, two hours apart), shared by the 499th and 500th
    assert first.body["next_from"] == cut and first.body["runs_capped"] is False
    assert len(first.body["runs"]) == 498 and max(r["scheduled_for"] for r in first.body["runs"]) < cut
    assert _times(first) == ["2027-01-01T19:00:00Z", "2027-01-08T19:00:00Z"]
    assert second.body["next_from"] is None and [r["scheduled_for"] for r in second.body["runs"][:3]] == [cut] * 3
    assert _times(second) == ["2027-01-15T19:00:00Z", "2027-01-22T19:00:00Z", "2027-01-29T19:00:00Z"]
    listed = [r["id"] for page in (first, second) for r in page.body["runs"]]
    assert sorted(listed) == sorted(made), "every run once"


def test_a_page_cut_by_its_occurrences_lists_no_run_from_its_next_from_on(api, db, clock):
    """The occurrences ran out first (every five minutes: 500 reach 17:40 of day 2), but the page still listed the
    window's runs after that: a run by hand at 20:00 came on both pages, and the console drew it in the part of the
    month it said it had left out."""
    definition_id = _definition(api, {"cron": "*/5 * * * *"})
    late = _runs_at(db, clock, definition_id, [datetime(2027, 1, 2, 20, 0)])
    first = _occurrences(api, definition_id, "2027-01-01T00:00:00Z", "2027-01-03T00:00:00Z")
    assert first.body["next_from"] == "2027-01-02T17:40:00Z" and first.body["runs"] == []
    second = _occurrences(api, definition_id, first.body["next_from"], "2027-01-03T00:00:00Z")
    assert [r["id"] for r in second.body["runs"]] == late and second.body["next_from"] is None


def test_more_runs_at_one_instant_than_a_page_holds_are_said_to_be_left_out(api, db, clock):
    """501 runs postponed onto one instant: no page can end inside it, so the page lists the first 500 (by id),
    says runs are left out (runs_capped), and the next page begins just after it."""
    document = {"name": "By hand", "phases": [{"steps": [{"action": "core.announce", "params": {"message": "on"}}]}]}
    definition_id = make_definition(db, clock.now(), document).id
    made = _runs_at(db, clock, definition_id, [datetime(2027, 1, 5, 19)] * 501 + [datetime(2027, 1, 6, 19)])
    first, second = _pages(api, definition_id, "2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z")
    assert first.body["runs_capped"] is True and first.body["next_from"] == "2027-01-05T19:00:00.000001Z"
    assert [r["id"] for r in first.body["runs"]] == made[:500]
    assert [r["id"] for r in second.body["runs"]] == made[501:] and second.body["runs_capped"] is False


@pytest.mark.parametrize(("query", "message"), [
    ("from=2027-01-01T00:00:00Z&to=2028-01-03T00:00:00Z", "longer than 366 days"),
    ("from=2027-01-02T00:00:00Z&to=2027-01-01T00:00:00Z", "query.to must be after query.from"),
    ("from=2027-01-01T00:00:00", "query.from must be a date and time with its zone, such as 2026-12-25T19:00:00Z"),
    ("from=yesterday", "query.from"),
    ("from=8999-12-20T00:00:00Z&to=9000-01-02T00:00:00Z", "query.to must be from 1970 to 8999"),
    ("from=0001-01-01T00:00:00Z&to=0001-02-01T00:00:00Z", "query.from must be from 1970 to 8999"),
    ("form=2027-01-01T00:00:00Z", ("`form` is not a query parameter of GET /definitions/{definition_id}/occurrences;"
                                  " did you mean `from`?")),
])
def test_a_bad_window_is_a_400_naming_it(api, query, message):
    definition_id = _definition(api, DAILY_BERLIN)
    answer = api.get(f"/definitions/{definition_id}/occurrences?{query}", auth=GM)
    assert answer.status == 400 and message in answer.body["errors"][0], answer.body


def test_a_window_from_near_the_calendars_end_ends_with_it_not_with_a_400_about_an_edge_not_sent(api):
    definition_id = _definition(api, DAILY_BERLIN)
    answer = api.get(f"/definitions/{definition_id}/occurrences?from=8999-12-31T00:00:00Z", auth=GM)
    assert answer.status == 200, answer.body


def test_no_such_definition_is_a_404(api):
    assert api.get("/definitions/999/occurrences", auth=GM).status == 404


def test_each_occurrence_carries_its_run(api, db, clock, runner):
    clock.set(datetime(2026, 12, 4, 18, 50))
    definition_id = _definition(api, FRIDAYS_BERLIN)
    assert tick(runner).planned == 1
    answer = _occurrences(api, definition_id, "2026-12-04T00:00:00Z", "2026-12-12T00:00:00Z")
    first, second = answer.body["occurrences"]
    assert first["run"]["status"] == "scheduled" and first["run"]["scheduled_for"] == "2026-12-04T19:00:00Z"
    assert second["run"] is None


def test_the_live_runs_no_occurrence_names_are_listed_on_their_days(api, db, clock, runner):
    """A run scheduled by hand is on the calendar (of a definition with a schedule or without), an occurrence's
    run only in its occurrence, a dry run nowhere, and a run outside the window not at all."""
    clock.set(datetime(2026, 12, 4, 18, 50))
    weekly = _definition(api, FRIDAYS_BERLIN)
    by_hand = api.post("/definitions", {"name": "By hand", "phases": [
        {"steps": [{"action": "core.announce", "params": {"message": "on"}}]}]}, auth=ADMIN).body["definition"]["id"]
    assert tick(runner).planned == 1
    extra = api.post(f"/definitions/{weekly}/runs", {"scheduled_for": "2026-12-05T10:00:00Z"}, auth=ADMIN).body["run"]["id"]
    once = api.post(f"/definitions/{by_hand}/runs", {"scheduled_for": "2026-12-06T10:00:00Z"}, auth=ADMIN).body["run"]["id"]
    api.post(f"/definitions/{by_hand}/runs", {"scheduled_for": "2026-12-20T10:00:00Z"}, auth=ADMIN)
    assert api.post(f"/definitions/{by_hand}/dry-runs", {"speed": 60, "bridge": "simulate"}, auth=ADMIN).status == 201
    answer = _occurrences(api, weekly, "2026-12-04T00:00:00Z", "2026-12-12T00:00:00Z")
    assert [(r["id"], r["scheduled_for"]) for r in answer.body["runs"]] == [(extra, "2026-12-05T10:00:00Z")]
    assert answer.body["occurrences"][0]["run"]["scheduled_for"] == "2026-12-04T19:00:00Z"
    answer = _occurrences(api, by_hand, "2026-12-04T00:00:00Z", "2026-12-12T00:00:00Z")
    assert answer.body["schedule"] is None and [r["id"] for r in answer.body["runs"]] == [once]


# ── skip ─────────────────────────────────────────────────────────────────────
def test_a_skipped_occurrence_is_marked_and_never_planned(api, db, clock, runner):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    answer = _skip(api, definition_id, "2026-12-25T19:00:00Z")
    assert answer.status == 200, answer.body
    assert answer.body["cancelled_run"] is None
    assert answer.body["occurrence"]["skipped"] is True
    assert answer.body["occurrence"]["skip"] == {"reason": "Christmas", "by": "root-admin", "at": "2026-12-04T20:00:00Z"}
    listed = _occurrences(api, definition_id, "2026-12-18T00:00:00Z", "2027-01-02T00:00:00Z").body["occurrences"]
    assert [(o["scheduled_for"], o["skipped"]) for o in listed] == [
        ("2026-12-18T19:00:00Z", False), ("2026-12-25T19:00:00Z", True), ("2027-01-01T19:00:00Z", False)]
    clock.set(datetime(2026, 12, 25, 18, 50))
    assert tick(runner).planned == 0  # the planner passes it by
    clock.set(datetime(2027, 1, 1, 18, 50))
    assert tick(runner).planned == 1
    assert [r["scheduled_for"] for r in _runs_of(db, definition_id)] == [datetime(2027, 1, 1, 19, 0)]


def test_skipping_an_occurrence_with_a_scheduled_run_cancels_the_run(api, db, clock, runner):
    clock.set(datetime(2026, 12, 11, 18, 50))
    definition_id = _definition(api, FRIDAYS_BERLIN)
    assert tick(runner).planned == 1
    [run] = _runs_of(db, definition_id)
    answer = _skip(api, definition_id, "2026-12-11T19:00:00Z", reason="server maintenance")
    assert answer.status == 200, answer.body
    assert answer.body["cancelled_run"]["id"] == run["id"] and answer.body["cancelled_run"]["status"] == "cancelled"
    assert answer.body["occurrence"]["run"]["status"] == "cancelled" and answer.body["occurrence"]["skipped"]
    assert run_row(db, run["id"]).last_error == "its occurrence was skipped by root-admin: server maintenance"
    last = log_of(db, run["id"])[-1]
    assert (last.kind, last.actor) == ("run.status", "root-admin")
    assert last.detail["control"] == "skip_occurrence" and last.detail["reason"] == "server maintenance"
    assert (last.detail["from"], last.detail["to"]) == ("scheduled", "cancelled")
    clock.advance(600)
    tick(runner)
    assert run_row(db, run["id"]).status.value == "cancelled"


def test_a_skip_whose_log_row_fails_cancels_nothing_and_skips_nothing(api, db, clock, runner):
    clock.set(datetime(2026, 12, 11, 18, 50))
    definition_id = _definition(api, FRIDAYS_BERLIN)
    assert tick(runner).planned == 1
    [run] = _runs_of(db, definition_id)
    with log_rows_refused(db, "JSON_VALUE(NEW.detail, '$.control') = 'skip_occurrence'"), \
            pytest.raises(pymysql.err.MySQLError, match="log row refused"):
        calendar.skip(db, definition_id, datetime(2026, 12, 11, 19, 0), reason="x", actor="root-admin", now=clock.now())
    assert run_row(db, run["id"]).status.value == "scheduled"
    assert _skip_rows(db) == []


def test_skipping_again_answers_the_first_skip_and_writes_nothing(api, db):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    assert _skip(api, definition_id, "2026-12-25T19:00:00Z").status == 200
    again = _skip(api, definition_id, "2026-12-25T19:00:00Z", reason="another reason")
    assert again.status == 200 and again.body["occurrence"]["skip"]["reason"] == "Christmas"
    assert [r["reason"] for r in _skip_rows(db)] == ["Christmas"]


@pytest.mark.parametrize(("when", "message"), [
    ("2026-12-25T20:00:00Z", ("2026-12-25T20:00:00Z is not an occurrence of '0 20 * * 5' in Europe/Berlin;"
                             " the next one after it is 2027-01-01T19:00:00Z")),
    ("2026-11-27T19:00:00Z", "the occurrence at 2026-11-27T19:00:00Z is past; only one still ahead can be skipped"),
])
def test_a_time_that_is_not_an_occurrence_ahead_is_a_400(api, db, when, message):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    answer = _skip(api, definition_id, when)
    assert answer.status == 400 and answer.body["errors"] == [message]
    assert _skip_rows(db) == []


@pytest.mark.parametrize("when", ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"])
def test_a_time_far_outside_any_calendar_is_a_400(api, when):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    for answer in (_skip(api, definition_id, when), _unskip(api, definition_id, when)):
        assert answer.status == 400 and answer.body["errors"] == ["scheduled_for must be from 1970 to 8999"]


def test_a_time_not_written_in_utc_is_a_400(api):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    answer = _skip(api, definition_id, "2026-12-25T20:00:00+01:00")
    assert answer.status == 400 and answer.body["errors"][0].startswith("scheduled_for must match")


def test_an_occurrence_whose_run_has_started_is_a_409_naming_its_status(api, db, clock, runner):
    clock.set(datetime(2026, 12, 11, 18, 50))
    definition_id = _definition(api, FRIDAYS_BERLIN)
    assert tick(runner).planned == 1
    clock.set(datetime(2026, 12, 11, 19, 0))
    tick(runner)
    answer = _skip(api, definition_id, "2026-12-11T19:00:00Z")
    assert answer.status == 409 and answer.body["detail"]["run_status"] == "completed", answer.body
    assert _skip_rows(db) == []


def test_a_definition_without_a_schedule_has_nothing_to_skip(api):
    document = {"name": "By hand", "phases": [{"steps": [{"action": "core.announce", "params": {"message": "on"}}]}]}
    definition_id = api.post("/definitions", document, auth=ADMIN).body["definition"]["id"]
    answer = _skip(api, definition_id, "2026-12-25T19:00:00Z")
    assert answer.status == 400 and "has no schedule" in answer.body["errors"][0]


def test_only_an_admin_skips_or_unskips(api, db):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    for token in (GM, MODERATOR):
        assert _skip(api, definition_id, "2026-12-25T19:00:00Z", auth=token).status == 403
        assert _unskip(api, definition_id, "2026-12-25T19:00:00Z", auth=token).status == 403
    assert _skip_rows(db) == []


def test_scheduling_a_skipped_occurrence_by_hand_is_a_409(api, db):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    assert _skip(api, definition_id, "2026-12-25T19:00:00Z").status == 200
    answer = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": "2026-12-25T19:00:00Z"}, auth=ADMIN)
    assert answer.status == 409 and answer.body["detail"] == {"skipped": True}
    assert "is skipped; unskip it" in answer.body["errors"][0]
    assert _runs_of(db, definition_id) == []


# ── unskip ───────────────────────────────────────────────────────────────────
def test_an_unskipped_occurrence_is_planned_after_all(api, db, clock, runner):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    assert _skip(api, definition_id, "2026-12-25T19:00:00Z").status == 200
    answer = _unskip(api, definition_id, "2026-12-25T19:00:00Z")
    assert answer.status == 200 and answer.body["occurrence"]["skipped"] is False and answer.body["occurrence"]["run"] is None
    clock.set(datetime(2026, 12, 25, 18, 50))
    assert tick(runner).planned == 1


def test_unskipping_an_occurrence_the_planner_passed_creates_its_run(api, db, clock, runner):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    assert _skip(api, definition_id, "2026-12-25T19:00:00Z").status == 200
    clock.set(datetime(2026, 12, 25, 18, 50))
    assert tick(runner).planned == 0
    answer = _unskip(api, definition_id, "2026-12-25T19:00:00Z")
    assert answer.status == 200, answer.body
    run = answer.body["occurrence"]["run"]
    assert run["status"] == "scheduled" and run["scheduled_for"] == "2026-12-25T19:00:00Z"
    assert log_of(db, run["id"])[0].detail["cause"] == "its occurrence was unskipped by root-admin"
    clock.set(datetime(2026, 12, 25, 19, 0))
    tick(runner)
    assert run_row(db, run["id"]).status.value == "completed"


def test_unskipping_an_occurrence_the_planner_planned_through_exactly_creates_its_run(api, db, clock, runner):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    assert _skip(api, definition_id, "2026-12-25T19:00:00Z").status == 200
    clock.set(datetime(2026, 12, 25, 18, 45))
    assert tick(runner).planned == 0  # planned through now + 15 min: the occurrence itself, passed by
    planned_through = db.autocommit(lambda tx: tx.scalar("SELECT planned_through FROM event_definitions WHERE id = %s",
                                                         (definition_id,)))
    assert planned_through == datetime(2026, 12, 25, 19, 0)
    answer = _unskip(api, definition_id, "2026-12-25T19:00:00Z")
    assert answer.status == 200, answer.body
    run = answer.body["occurrence"]["run"]
    assert run is not None and run["status"] == "scheduled", answer.body  # never a silent `run: null`
    clock.set(datetime(2026, 12, 25, 19, 0))
    tick(runner)
    assert run_row(db, run["id"]).status.value == "completed"


def test_skipping_an_occurrence_exactly_at_its_due_time_is_refused_as_past(api, db, clock):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    clock.set(datetime(2026, 12, 25, 19, 0))
    answer = _skip(api, definition_id, "2026-12-25T19:00:00Z")
    assert answer.status == 400 and answer.body["errors"] == [
        "the occurrence at 2026-12-25T19:00:00Z is past; only one still ahead can be skipped"]
    assert _skip_rows(db) == []


def test_a_skip_is_undone_only_before_its_occurrence_is_due(api, db, clock, runner):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    assert _skip(api, definition_id, "2026-12-25T19:00:00Z").status == 200
    clock.set(datetime(2026, 12, 25, 19, 0))
    answer = _unskip(api, definition_id, "2026-12-25T19:00:00Z")
    assert answer.status == 409 and answer.body["detail"] == {"skipped": True}
    assert "is due already" in answer.body["errors"][0]
    assert len(_skip_rows(db)) == 1 and _runs_of(db, definition_id) == []


def test_a_skip_that_cancelled_its_run_cannot_be_undone(api, db, clock, runner):
    clock.set(datetime(2026, 12, 11, 18, 50))
    definition_id = _definition(api, FRIDAYS_BERLIN)
    assert tick(runner).planned == 1
    assert _skip(api, definition_id, "2026-12-11T19:00:00Z").status == 200
    answer = _unskip(api, definition_id, "2026-12-11T19:00:00Z")
    assert answer.status == 409 and answer.body["detail"] == {"run_status": "cancelled"}
    assert len(_skip_rows(db)) == 1


def test_unskipping_an_occurrence_that_is_not_skipped_changes_nothing(api, db):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    answer = _unskip(api, definition_id, "2026-12-25T19:00:00Z")
    assert answer.status == 200 and answer.body["occurrence"]["skipped"] is False
    assert _skip_rows(db) == [] and _runs_of(db, definition_id) == []


def test_the_window_edges_are_from_included_and_to_excluded(api):
    definition_id = _definition(api, FRIDAYS_BERLIN)
    edge = datetime(2026, 12, 11, 19, 0)
    after = (edge + timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert _times(_occurrences(api, definition_id, "2026-12-11T19:00:00Z", after)) == ["2026-12-11T19:00:00Z"]


# ── a skip or an unskip at the moment the planner plans the occurrence ──────────
def _planning(clock):
    """A tick's planning, an hour ahead, on a connection of its own."""
    return lambda own: plan_occurrences(own, clock.now(), timedelta(hours=1))


def _half_past(db, clock):
    """A new definition recurring daily at 20:30 UTC, half an hour after now: its one occurrence in the planner's hour."""
    at = clock.now() + timedelta(minutes=30)
    doc = document(schedule={"cron": f"{at.minute} {at.hour} * * *"})
    return make_definition(db, clock.now(), doc).id, at


def test_a_skip_at_the_moment_the_planner_plans_its_occurrence_never_leaves_it_a_scheduled_run(db, db_params, clock):
    """An admin skips the occurrence as a tick plans it, together, six times: either the planner sees the skip and
    makes no run, or the skip sees the planner's run and cancels it, saying so; never a skipped occurrence that runs."""
    for _ in range(6):
        definition_id, at = _half_past(db, clock)
        planned, skipped = at_once(db_params, _planning(clock), lambda own, d=definition_id, t=at: calendar.skip(
            own, d, t, reason="server maintenance", actor="admin-ada", now=clock.now()))
        assert planned.failed == 0 and not isinstance(skipped, Exception), skipped
        assert [(r["definition_id"], r["scheduled_for"]) for r in _skip_rows(db) if r["definition_id"] == definition_id] == [
            (definition_id, at)]
        runs = _runs_of(db, definition_id)
        assert [r["status"] for r in runs] == (["cancelled"] if planned.planned else [])
        assert (skipped.cancelled_run and skipped.cancelled_run.id) == (runs[0]["id"] if runs else None)
        for run in runs:
            assert [(e.actor, e.detail.get("control"), e.detail["to"]) for e in log_of(db, run["id"])] == [
                ("runner", None, "scheduled"), ("admin-ada", "skip_occurrence", "cancelled")]


def test_an_unskip_at_the_moment_the_planner_passes_its_occurrence_always_leaves_it_one_run(db, db_params, clock):
    """An admin undoes a skip as a tick plans past the occurrence, together, six times: either the planner sees no
    skip and makes the run, or the unskip sees the planner's mark past it and makes it; one run, one row, never none."""
    for _ in range(6):
        definition_id, at = _half_past(db, clock)
        calendar.skip(db, definition_id, at, reason="maybe", actor="admin-ada", now=clock.now())
        planned, unskipped = at_once(db_params, _planning(clock), lambda own, d=definition_id, t=at: calendar.unskip(
            own, d, t, actor="admin-ada", now=clock.now()))
        assert planned.failed == 0 and not isinstance(unskipped, Exception), unskipped
        assert [r for r in _skip_rows(db) if r["definition_id"] == definition_id] == []
        made = _runs_of(db, definition_id)
        assert len(made) == 1, f"the unskipped occurrence has {len(made)} runs"
        [run] = made
        assert (run["status"], run["scheduled_for"]) == ("scheduled", at)
        made_by = "runner" if planned.planned else "admin-ada"
        assert [(e.actor, e.detail["to"]) for e in log_of(db, run["id"])] == [(made_by, "scheduled")]
        assert unskipped["run"] is None or unskipped["run"]["id"] == run["id"]
