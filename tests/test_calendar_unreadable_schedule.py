"""A definition whose stored schedule no longer reads (a version saved before today's cron rules: `L`, six fields, a
zone tzdata does not know): its calendar, its skips, a catch-up and its projected timeline are a 409 that names
the schedule, what is wrong with it and what to do (save a corrected schedule), never a 500; what does not need
the schedule (a pause, a resume without catch-up, a run by hand) works, and every other definition's calendar
is untouched."""

from datetime import datetime

import pytest

from tests.support.api import ADMIN, GM, MODERATOR

ANNOUNCE = [{"steps": [{"action": "core.announce", "params": {"message": "on"}}]}]
LEGACY = [("0 0 L * *", "Europe/London", "the day-of-month field 'L' is not standard cron"),
          ("0 20 * * 5 *", "Europe/London", "has 6 field(s)"),
          ("0 20 * * 5", "Europe/Kyiv2", "'Europe/Kyiv2' is not an IANA time zone name")]


def _saved_before_the_rules(api, db, cron: str, zone: str) -> int:
    """A definition saved through the API, its stored schedule then set as an older version would have written it."""
    document = {"name": f"Legacy {cron} {zone}", "phases": ANNOUNCE,
                "schedule": {"cron": "0 20 * * 5", "timezone": "Europe/London"}}
    definition_id = api.post("/definitions", document, auth=ADMIN).body["definition"]["id"]

    def legacy(tx):
        tx.execute("UPDATE event_definition_versions SET document = JSON_SET(document, '$.schedule.cron', %s,"
                   " '$.schedule.timezone', %s) WHERE definition_id = %s", (cron, zone, definition_id))
        tx.execute("UPDATE event_definitions SET schedule_cron = %s, schedule_timezone = %s WHERE id = %s",
                   (cron, zone, definition_id))

    db.transaction(legacy)
    return definition_id


def _says_the_schedule_is_not_understood(answer, definition_id: int, problem: str) -> str:
    assert answer.status == 409, (answer.status, answer.body)
    (message,) = answer.body["errors"]
    assert message.startswith(f"definition {definition_id}'s schedule "), message
    assert "is not understood" in message and problem in message and "corrected schedule" in message, message
    assert problem in answer.body["detail"]["schedule_unreadable"], answer.body
    return message


@pytest.mark.parametrize(("cron", "zone", "problem"), LEGACY)
def test_a_stored_schedule_that_no_longer_reads_is_a_409_saying_what_to_do_never_a_500(api, db, clock, cron, zone,
                                                                                        problem):
    clock.set(datetime(2026, 12, 1, 12, 0))
    fine = api.post("/definitions", {"name": "Fine", "phases": ANNOUNCE,
                                     "schedule": {"cron": "0 20 * * *", "timezone": "UTC"}}, auth=ADMIN)
    fine_id = fine.body["definition"]["id"]
    definition_id = _saved_before_the_rules(api, db, cron, zone)

    calendar = api.get(f"/definitions/{definition_id}/occurrences", auth=GM)
    said = _says_the_schedule_is_not_understood(calendar, definition_id, problem)
    assert repr(cron) in said and zone in said
    for path in (f"/definitions/{definition_id}/occurrences/2026-12-31T00:00:00Z/skip",
                 f"/definitions/{definition_id}/occurrences/2026-12-31T00:00:00Z/unskip",
                 f"/definitions/{definition_id}/rehearse"):
        _says_the_schedule_is_not_understood(api.post(path, {}, auth=ADMIN), definition_id, problem)
    assert db.autocommit(lambda tx: tx.scalar("SELECT COUNT(*) FROM event_occurrence_skips")) == 0

    # What does not need the schedule works: a pause, a run by hand, and a resume without catch-up. A resume
    # that would catch up reads the schedule: refused, the schedule still paused, nothing logged.
    assert api.post(f"/definitions/{definition_id}/schedule/pause", {"reason": "x"}, auth=MODERATOR).status == 200
    logged = api.get(f"/definitions/{definition_id}", auth=GM).body["schedule_log"]
    caught = api.post(f"/definitions/{definition_id}/schedule/resume", {"catch_up": "latest"}, auth=MODERATOR)
    assert "catch_up none" in _says_the_schedule_is_not_understood(caught, definition_id, problem)
    after = api.get(f"/definitions/{definition_id}", auth=GM).body
    assert after["definition"]["schedule_paused"] is not None and after["schedule_log"] == logged
    assert api.post(f"/definitions/{definition_id}/schedule/resume", {}, auth=MODERATOR).status == 200
    assert api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": "2026-12-02T00:00:00Z"},
                    auth=ADMIN).status == 201

    assert api.get(f"/definitions/{fine_id}/occurrences", auth=GM).status == 200, "every other calendar reads"

    # The way out the answer names: a corrected schedule saved, the calendar reads again.
    corrected = {"name": f"Legacy {cron} {zone}", "phases": ANNOUNCE,
                 "schedule": {"cron": "0 0 28 * *", "timezone": "Europe/London"}}
    assert api.call("PUT", f"/definitions/{definition_id}", corrected, auth=ADMIN).status == 200
    assert api.get(f"/definitions/{definition_id}/occurrences", auth=GM).status == 200
