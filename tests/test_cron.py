"""Schedules are standard five-field cron, read the same on every tick, in an IANA time zone across DST changes."""

from datetime import datetime

import pytest

from chalicelib.events.cron import Schedule, cron_problems, in_words
from chalicelib.events.document import validate
from chalicelib.events.errors import Invalid, InvalidCron
from tests.support.api import ADMIN
from tests.test_definitions_validate import SPEC_EXAMPLE


def _with_schedule(**schedule) -> dict:
    return {**SPEC_EXAMPLE, "schedule": schedule}


@pytest.mark.parametrize(
    ("cron", "field"),
    [
        ("R * * * *", "minute"),  # croniter's random token: a new minute at every read
        ("H * * * *", "minute"),  # a hash token
        ("0 0 31 R *", "month"),
        ("0 0 ? * *", "day-of-month"),
        ("0 0 L * *", "day-of-month"),
        ("0 0 15W * *", "day-of-month"),
        ("0 0 * * 5L", "day-of-week"),
        ("0 0 * * 5#2", "day-of-week"),
        ("60 * * * *", "minute"),
        ("0 24 * * *", "hour"),
        ("*/0 * * * *", "minute"),
        ("5/15 * * * *", "minute"),
        ("30-10 * * * *", "minute"),
    ],
)
def test_a_non_standard_cron_field_is_refused_naming_the_field(cron, field):
    with pytest.raises(Invalid) as invalid:
        validate(_with_schedule(cron=cron))
    (message,) = invalid.value.messages
    assert message.startswith(f"document.schedule.cron: the {field} field "), message


@pytest.mark.parametrize("cron", ["0 0 * * * *", "0 0 * * * * 2027", "@daily", "0 0 * *"])
def test_a_cron_that_is_not_five_fields_is_refused(cron):
    with pytest.raises(Invalid, match="standard five-field cron"):
        validate(_with_schedule(cron=cron))


@pytest.mark.parametrize("cron", ["0 20 * * 5", "0 20 * * FRI", "*/15 8-22 * jan-MAR mon-fri", "0,30 1-5/2 1,15 * 7", "0 0 29 2 *"])
def test_standard_cron_with_names_ranges_lists_and_steps_is_accepted(cron):
    assert validate(_with_schedule(cron=cron))["schedule"] == {"cron": cron}


def test_a_cron_that_never_fires_is_refused_every_time():
    for _ in range(20):  # deterministic: the same answer on every read
        assert cron_problems("0 0 30 2 *") == ["'0 0 30 2 *' never fires (no such day in those months)"]


def test_a_random_token_over_http_is_400_naming_the_field_and_stores_nothing(api):
    answer = api.post("/definitions", _with_schedule(cron="R * * * *"), auth=ADMIN)
    assert answer.status == 400
    assert answer.body["errors"][0].startswith("document.schedule.cron: the minute field 'R' is not standard cron")
    assert api.get("/definitions", auth=ADMIN).body["definitions"] == []


@pytest.mark.parametrize("zone", ["Mars/Olympus", "localtime", "../etc/passwd", "utc", "+02:00"])
def test_a_time_zone_that_is_not_an_iana_name_is_refused(zone):
    with pytest.raises(Invalid) as invalid:
        validate(_with_schedule(cron="0 20 * * 5", timezone=zone))
    assert invalid.value.messages == [
        f"document.schedule.timezone: {zone!r} is not an IANA time zone name (such as 'Europe/Berlin' or 'UTC')"
    ]


def test_a_time_zone_is_kept_with_the_schedule():
    valid = validate(_with_schedule(cron="0 20 * * 5", timezone="Europe/Berlin"))
    assert valid["schedule"] == {"cron": "0 20 * * 5", "timezone": "Europe/Berlin"}


def test_a_schedule_that_is_not_standard_cannot_be_built():
    with pytest.raises(InvalidCron, match="the minute field 'R'"):
        Schedule("R * * * *")


def _between(cron, zone, after, until):
    return [t.strftime("%m-%d %H:%M") for t in Schedule(cron, zone).between(after, until)]


def test_every_twenty_minutes_in_berlin_collapses_the_skipped_hour_into_the_jump():
    # 28 March 2027: 02:00 CET becomes 03:00 CEST at 01:00 UTC. 02:00, 02:20 and 02:40 do
    # not exist: they fire once, at the jump, which is also 03:00's instant.
    assert _between("*/20 * * * *", "Europe/Berlin", datetime(2027, 3, 28, 0, 30), datetime(2027, 3, 28, 1, 50)) == [
        "03-28 00:40", "03-28 01:00", "03-28 01:20", "03-28 01:40"]


def test_every_twenty_minutes_in_berlin_fires_each_repeated_wall_time_once():
    # 31 October 2027: 03:00 CEST becomes 02:00 CET at 01:00 UTC; 02:00–02:59 happens twice
    # and fires at its first instance only.
    assert _between("*/20 * * * *", "Europe/Berlin", datetime(2027, 10, 30, 23, 30), datetime(2027, 10, 31, 2, 30)) == [
        "10-30 23:40", "10-31 00:00", "10-31 00:20", "10-31 00:40", "10-31 02:00", "10-31 02:20"]
    # A window that starts inside the repeated hour's second pass finds nothing there again.
    assert _between("*/20 * * * *", "Europe/Berlin", datetime(2027, 10, 31, 1, 10), datetime(2027, 10, 31, 2, 0)) == [
        "10-31 02:00"]


def test_a_daily_time_in_new_york_keeps_its_wall_clock_time_across_both_changes():
    spring = _between("30 2 * * *", "America/New_York", datetime(2027, 3, 13), datetime(2027, 3, 16))
    autumn = _between("30 1 * * *", "America/New_York", datetime(2027, 11, 6), datetime(2027, 11, 9))
    assert spring == ["03-13 07:30", "03-14 07:00", "03-15 06:30"]  # 14 March: 02:30 is skipped, fires at 03:00 EDT
    assert autumn == ["11-06 05:30", "11-07 05:30", "11-08 06:30"]  # 7 November: the first 01:30 (EDT) only


def test_a_window_holds_its_end_but_not_its_start_so_back_to_back_windows_fire_each_occurrence_once():
    """`between(after, until)` is (after, until]: the planner's next window starts where the last one ended."""
    first = _between("*/5 * * * *", "UTC", datetime(2027, 1, 1, 20, 0), datetime(2027, 1, 1, 20, 10))
    second = _between("*/5 * * * *", "UTC", datetime(2027, 1, 1, 20, 10), datetime(2027, 1, 1, 20, 20))
    assert first + second == ["01-01 20:05", "01-01 20:10", "01-01 20:15", "01-01 20:20"]


# A cron pasted from a web page, a chat or a spreadsheet: a no-break space, an em space, a line separator, an
# ideographic space, a zero-width space, a full-width digit, a tab-less control character.
PASTED = ["0 20 * * 5\u00a0", "0\u00a020 * * 5", "0\u200320 * * 5", "0 20 * * 5\u2028", "0\u3000 20 * * 5",
          "0\u200b 20 * * 5", "0 \uff12\uff10 * * 5", "0 20 * * 5\x00", "0\n20 * * 5"]


@pytest.mark.parametrize("cron", PASTED)
def test_a_cron_holding_a_character_outside_plain_cron_is_refused_naming_it_before_croniter_reads_it(cron):
    problems = cron_problems(cron)
    assert problems and all("at character" in p and "U+" in p for p in problems), problems
    with pytest.raises(InvalidCron, match="at character"):
        Schedule(cron)


def test_a_cron_with_a_no_break_space_says_where_it_is_and_what_to_type_instead():
    assert cron_problems("0 20 * * 5\u00a0") == [
        "'0 20 * * 5\\xa0' holds a no-break space (U+00A0) at character 11: separate the fields with plain spaces"]


@pytest.mark.parametrize("cron", ["0\t20 * * 5", " 0 20  * * 5 "])
def test_plain_spaces_and_tabs_between_fields_are_standard_cron(cron):
    assert cron_problems(cron) == []


@pytest.mark.parametrize("cron", PASTED)
def test_every_route_that_takes_a_schedule_answers_400_naming_the_cron_and_saves_nothing(api, cron):
    base = api.post("/definitions", {**SPEC_EXAMPLE, "name": "Base"}, auth=ADMIN).body["definition"]
    pasted = {**SPEC_EXAMPLE, "schedule": {"cron": cron, "timezone": "Europe/London"}}
    for method, path, body in [("POST", "/definitions", {**pasted, "name": "Pasted"}),
                               ("PUT", f"/definitions/{base['id']}", {**pasted, "name": "Base"}),
                               ("POST", f"/definitions/{base['id']}/rehearse", {"document": pasted})]:
        answer = api.call(method, path, body, auth=ADMIN)
        assert answer.status == 400, (method, path, answer.status, answer.body)
        assert answer.body["errors"][0].startswith("document.schedule.cron: "), answer.body
        assert "at character" in answer.body["errors"][0], answer.body
    assert [(d["name"], d["current_version"]) for d in api.get("/definitions", auth=ADMIN).body["definitions"]] == [
        ("Base", 1)]


@pytest.mark.parametrize(("expression", "said"), [
    ("*/15 * * * *", "every 15 minutes"),
    ("*/45 * * * *", "at the times of the cron '*/45 * * * *'"),  # :00 and :45: 45 minutes, then 15
    ("*/7 * * * *", "at the times of the cron '*/7 * * * *'"),
])
def test_every_n_minutes_is_said_only_where_every_gap_is_n(expression, said):
    assert in_words(expression) == said
