"""The calendar in the console: a month of every definition's occurrences with skipped ones marked, an admin
skipping and unskipping one from it (each button named for its run, the notice dated), today marked, the runs
that happened shown on their days (a run scheduled by hand too), and a definition's schedule in words with its
next occurrence."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from selenium.webdriver.common.by import By

from chalicelib.events.lifecycle import RunStatus
from tests.console.audit import dark, serious_findings
from tests.console.browser import eventually, screenshot, text_of
from tests.console.dates import Month, clear_of_midnight, month_ahead, month_label, utc_z
from tests.console.pages import schedule_now, sign_in, wait_for_status
from tests.support.api import ADMIN, GM
from tests.support.factory import insert_run, make_definition

# Every Friday at 20:00 in Berlin. A test's Fridays are those of the month two ahead (tests/console/dates.py),
# taken when it runs: all still to come, and after the definition it creates today.
FRIDAYS_BERLIN = {"cron": "0 20 * * 5", "timezone": "Europe/Berlin"}


def _weekly(api_client) -> tuple[int, str]:
    name = f"Friday market {uuid.uuid4().hex[:6]}"
    document = {"name": name, "schedule": FRIDAYS_BERLIN,
                "phases": [{"steps": [{"action": "core.announce", "params": {"message": "The market opens"}}]}]}
    return api_client.call("POST", "/definitions", document)["definition"]["id"], name


def _item(browser, definition_id: int, when: str):
    found = browser.find_elements(By.CSS_SELECTOR, f"li[data-definition='{definition_id}'][data-occurrence='{when}']")
    return found[0] if found else None


def _skipped(browser, definition_id: int, when: str) -> bool | None:
    item = _item(browser, definition_id, when)
    return None if item is None else item.get_attribute("data-skipped") == "true"


def _next_month(browser, month: Month) -> None:
    """Next pressed on the calendar, which then shows `month`."""
    eventually(lambda: browser.find_elements(By.ID, "calendar-next"), "the calendar's Next")[0].click()
    label = month_label(browser, month)
    eventually(lambda: label in text_of(browser, "h1"), label)


def test_the_tests_month_ahead_and_its_fridays_are_to_come_whatever_day_they_run_on():
    """No browser: the dates the tests here and in test_console_plans.py take, as if they ran on other days (the
    days their literals used to break on among them). The month is two ahead, its Fridays at 20:00 in Berlin are
    drawn on it in this machine's zone, and all are weeks away yet inside the API's year ahead."""
    for today in (date(2026, 12, 7), date(2026, 12, 24), date(2027, 1, 1), date(2027, 1, 15), date(2027, 1, 20),
                  date(2027, 2, 28), date(2027, 8, 31), date(2027, 11, 30), date(2027, 12, 31)):
        ahead = month_ahead(2, today)
        assert (ahead.year * 12 + ahead.month) - (today.year * 12 + today.month) == 2, (today, ahead)
        assert month_ahead(1, today).next() == ahead
        fridays = [datetime.fromisoformat(f) for f in ahead.fridays()]
        assert 4 <= len(fridays) <= 5, (today, fridays)
        for friday in fridays:
            berlin = friday.astimezone(ZoneInfo("Europe/Berlin"))
            assert (berlin.weekday(), berlin.hour, berlin.minute) == (4, 20, 0), (today, friday)
            assert ahead.first() <= friday < ahead.end(), (today, friday)
            assert timedelta(days=31) < friday - datetime.combine(today, datetime.min.time(), UTC) < timedelta(days=100)


def test_the_month_marks_skipped_occurrences_and_an_admin_skips_and_unskips_one(browser, server, api_client):
    clear_of_midnight()  # the month two ahead, taken here, is where two presses of Next lead from this month's page
    following = month_ahead(1)
    ahead = following.next()
    fridays = ahead.fridays()
    skipped_by_api, skipped_here = fridays[1], fridays[2]
    definition_id, name = _weekly(api_client)
    api_client.call("POST", f"/definitions/{definition_id}/occurrences/{skipped_by_api}/skip", {"reason": "Holiday"})
    sign_in(browser, ADMIN)
    browser.find_element(By.ID, "nav-calendar").click()
    _next_month(browser, following)
    _next_month(browser, ahead)
    eventually(lambda: _item(browser, definition_id, skipped_by_api), "the skipped occurrence")
    shown = browser.find_elements(By.CSS_SELECTOR, f"li[data-definition='{definition_id}']")
    assert [f.get_attribute("data-occurrence") for f in shown] == fridays
    marked = _item(browser, definition_id, skipped_by_api)
    assert _skipped(browser, definition_id, skipped_by_api) and "skipped: Holiday" in marked.text and name in marked.text
    assert not _skipped(browser, definition_id, skipped_here)

    here = _item(browser, definition_id, skipped_here)
    day = _dated(browser, skipped_here)  # its Friday evening in the viewer's zone: "Fri 12 Feb 19:00"
    assert day.endswith(here.find_element(By.CSS_SELECTOR, "time").text), (day, here.text)
    skip = here.find_element(By.CSS_SELECTOR, "[data-occurrence-action='skip']")
    assert skip.text == "Skip" and skip.get_attribute("aria-label") == f"Skip the run of {day}: {name}"
    names = [b.get_attribute("aria-label") for b in browser.find_elements(By.CSS_SELECTOR, "[data-occurrence-action]")]
    assert len(set(names)) == len(names), "every Skip button is named apart"
    skip.click()
    eventually(lambda: browser.find_elements(By.ID, "ask-text"), "the reason box")[0].send_keys("Town fair")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    eventually(lambda: _skipped(browser, definition_id, skipped_here), "the occurrence skipped from the calendar")
    assert f"{name} on {day} is skipped." in text_of(browser, "#notice"), "the notice says which day"
    assert "skipped: Town fair" in _item(browser, definition_id, skipped_here).text
    screenshot(browser, "calendar-month")
    for scheme in (False, True):
        dark(browser, scheme)
        assert serious_findings(browser) == [], "axe on the calendar"
    dark(browser, False)

    _item(browser, definition_id, skipped_by_api).find_element(By.CSS_SELECTOR, "[data-occurrence-action='unskip']").click()
    eventually(lambda: _skipped(browser, definition_id, skipped_by_api) is False, "the occurrence unskipped")
    listed = api_client.call("GET", f"/definitions/{definition_id}/occurrences?from={utc_z(ahead.first())}"
                                    f"&to={utc_z(ahead.end())}")["occurrences"]
    assert [o["scheduled_for"] for o in listed if o["skipped"]] == [skipped_here]


def test_a_game_master_sees_the_month_without_skip_buttons(browser, server, api_client):
    ahead = month_ahead()
    definition_id, _ = _weekly(api_client)
    sign_in(browser, GM)
    browser.get(f"{server.console_url}#/calendar?month={ahead.param}")
    item = eventually(lambda: _item(browser, definition_id, ahead.fridays()[2]), "the month's occurrences")
    assert item.find_elements(By.CSS_SELECTOR, "[data-occurrence-action]") == []


def test_the_definition_page_says_the_schedule_in_words_with_its_next_occurrence(browser, server, api_client):
    definition_id, _ = _weekly(api_client)
    sign_in(browser, ADMIN)
    browser.get(f"{server.console_url}#/definitions/{definition_id}")
    words = eventually(lambda: text_of(browser, "#schedule-words") or None, "the schedule in words")
    berlin = datetime.now(UTC).astimezone(ZoneInfo("Europe/Berlin"))
    evenings = (berlin.replace(hour=20, minute=0, second=0, microsecond=0) + timedelta(days=n) for n in range(8))
    upcoming = next(d for d in evenings if d.weekday() == 4 and d > berlin)
    expected = f"every Friday at 20:00, Europe/Berlin; next: Fri {upcoming.day} {upcoming:%b}, 20:00"
    assert words == f"Schedule: {expected} (calendar)", words


def test_today_is_marked_and_the_runs_that_happened_are_on_their_days(browser, server, api_client):
    document = {"name": f"Bonfire {uuid.uuid4().hex[:6]}",
                "phases": [{"steps": [{"action": "core.announce", "params": {"message": "Lit"}}]}]}
    clear_of_midnight()  # the run's day, now, is the day the page reads as today after the run completed
    definition_id, run_id = schedule_now(api_client, document)  # no schedule: a run by hand, which runs now
    sign_in(browser, ADMIN)
    browser.get(f"{server.console_url}#/runs/{run_id}")
    wait_for_status(browser, "completed")
    browser.find_element(By.ID, "nav-calendar").click()
    today = browser.execute_script("const d = new Date(), two = (n) => String(n).padStart(2, '0');"
                                   " return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`")
    cell = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "td[aria-current='date']"), "today's day")
    assert len(cell) == 1 and cell[0].get_attribute("data-day") == today
    assert "today" in cell[0].find_element(By.CSS_SELECTOR, ".day-number").text
    happened = eventually(lambda: cell[0].find_elements(By.CSS_SELECTOR, f"li[data-run='{run_id}']"), "the run on its day")[0]
    assert document["name"] in happened.text and f"run {run_id}" in happened.text and "completed" in happened.text
    assert happened.find_element(By.CSS_SELECTOR, "a").get_attribute("href").endswith(f"#/runs/{run_id}")
    assert browser.find_elements(By.CSS_SELECTOR, f"li[data-definition='{definition_id}'] [data-occurrence-action]") == []


def _frequent(api_client, cron: str, zone: str) -> tuple[int, str]:
    name = f"Tick {uuid.uuid4().hex[:6]}"
    document = {"name": name, "schedule": {"cron": cron, "timezone": zone},
                "phases": [{"steps": [{"action": "core.announce", "params": {"message": "Tick"}}]}]}
    return api_client.call("POST", "/definitions", document)["definition"]["id"], name


def test_a_month_of_occurrences_is_whole_past_the_apis_first_page_and_a_capped_one_says_so(browser, server, api_client):
    """An hourly schedule's month (up to 744 occurrences; the API answers 500 a page) is whole; every 15 minutes
    (about 2,900) stops at the first 1,000 (two pages) and says so. Both schedules run only in the month two
    ahead, in the viewer's zone: the tick loop every console test shares plans nothing of them, and no other
    test's month shows them."""
    sign_in(browser, GM)
    zone = browser.execute_script("return Intl.DateTimeFormat().resolvedOptions().timeZone")
    year, month = browser.execute_script(
        "const d = new Date(); d.setDate(1); d.setMonth(d.getMonth() + 2); return [d.getFullYear(), d.getMonth() + 1]")
    hourly, _ = _frequent(api_client, f"0 * * {month} *", zone)
    quarterly, quarterly_name = _frequent(api_client, f"*/15 * * {month} *", zone)
    try:
        browser.get(f"{server.console_url}#/calendar?month={year}-{month:02d}")
        # The month's hours on the viewer's clocks: the hours its wall clock reads, each once. A change to summer
        # time skips one, and the cron has none to fire; the change back repeats one, which it fires once.
        expected = browser.execute_script(
            "const hours = new Set(), end = new Date(arguments[0], arguments[1], 1).getTime();"
            " for (let at = new Date(arguments[0], arguments[1] - 1, 1).getTime(); at < end; at += 3600000) {"
            "   const d = new Date(at); hours.add(`${d.getDate()} ${d.getHours()}`); }"
            " return hours.size", year, month)
        selector = f"li[data-definition='{hourly}']"
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, selector), "the month's occurrences", timeout=60)
        occurring = browser.execute_script(
            "return [...document.querySelectorAll(arguments[0])].map((li) => li.dataset.occurrence)", selector)
        assert len(occurring) == expected and len(set(occurring)) == expected, (len(occurring), expected)
        last = browser.execute_script(
            "return new Date(arguments[0], arguments[1], 1, -1).toISOString().replace('.000Z', 'Z')", year, month)
        assert last in occurring, "the month's last hour is on it"
        assert browser.find_elements(By.CSS_SELECTOR, f"[data-capped='{hourly}']") == [], "a whole month says nothing"
        capped = browser.find_elements(By.CSS_SELECTOR, f"[data-capped='{quarterly}']")
        assert len(capped) == 1 and capped[0].text.startswith(
            f"Showing the first 1000 occurrences of {quarterly_name} this month; the rest, from "), capped[0].text
        assert browser.execute_script(
            f"return document.querySelectorAll(\"li[data-definition='{quarterly}']\").length") == 1000
    finally:  # nothing of them is ever planned by a later test's tick
        for definition_id in (hourly, quarterly):
            api_client.call("POST", f"/definitions/{definition_id}/schedule/pause", {"reason": "the test is over"})


def _finished_runs(console_db, name: str, times: list[datetime]) -> int:
    """A definition without a schedule and a completed run at each of `times` (several at one: postponed onto
    it), in one transaction: history, which the tick loop every console test shares leaves be."""
    document = {"name": name, "phases": [{"steps": [{"action": "core.announce", "params": {"message": "Quiz"}}]}]}
    now = datetime.now(UTC).replace(tzinfo=None)
    definition = make_definition(console_db, now, document)

    def make(tx):
        for i, when in enumerate(times):
            run = insert_run(tx, definition, now, status=RunStatus.COMPLETED, scheduled_for=when + timedelta(microseconds=i))
            tx.execute("UPDATE event_runs SET scheduled_for = %s WHERE id = %s", (when, run.id))

    console_db.transaction(make)
    return definition.id


def test_a_month_of_runs_is_whole_past_the_apis_first_page_and_one_read_short_says_what_it_left_out(browser, server, console_db):
    """Three months back: 550 runs scheduled by hand (11 events of 50; the API answers 500 a page) are all on
    the month; 1,001 stop at the first 1,000 (two pages) and say from when the rest are left out; 501 postponed
    onto one moment, more than a page holds, say that moment's runs are left out."""
    sign_in(browser, GM)
    year, month = browser.execute_script(
        "const d = new Date(); d.setDate(1); d.setMonth(d.getMonth() - 3); return [d.getFullYear(), d.getMonth() + 1]")
    noon = datetime(year, month, 3, 12)  # days 3 to 26 at noon UTC: inside the month in any viewer's zone
    quiz = _finished_runs(console_db, f"Quiz night {uuid.uuid4().hex[:6]}",
                          [noon + timedelta(days=i // 50 * 2, minutes=i % 50) for i in range(550)])
    busy_name = f"Busy night {uuid.uuid4().hex[:6]}"
    busy = _finished_runs(console_db, busy_name, [noon + timedelta(days=i // 50, minutes=i % 50) for i in range(1001)])
    crowd_name = f"Crowd night {uuid.uuid4().hex[:6]}"
    crowd = _finished_runs(console_db, crowd_name, [noon] * 501 + [noon + timedelta(days=1)])
    browser.get(f"{server.console_url}#/calendar?month={year}-{month:02d}")
    count = "return document.querySelectorAll(arguments[0]).length"
    eventually(lambda: browser.execute_script(count, f"li[data-definition='{quiz}']"), "the month's runs", timeout=60)
    assert browser.execute_script(count, f"li[data-definition='{quiz}'][data-run]") == 550
    assert browser.find_elements(By.CSS_SELECTOR, f"[data-capped='{quiz}'], [data-runs-left-out='{quiz}']") == [], \
        "a whole month says nothing"

    assert browser.execute_script(count, f"li[data-definition='{busy}'][data-run]") == 1000
    # The 1,001st run's moment, as the page writes a moment in the viewer's zone ("Wed 23 Sep 12:00").
    rest = browser.execute_script(
        "const at = new Date(arguments[0]); return `${new Intl.DateTimeFormat(undefined, { weekday: 'short' }).format(at)}"
        " ${at.getDate()} ${new Intl.DateTimeFormat(undefined, { month: 'short' }).format(at)}"
        " ${new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' }).format(at)}`",
        f"{noon + timedelta(days=20):%Y-%m-%dT%H:%M:%S}Z")
    assert [c.text for c in browser.find_elements(By.CSS_SELECTOR, f"[data-capped='{busy}']")] == [
        f"Showing the first 1000 runs of {busy_name} this month; the rest, from {rest} on, are left out."]

    assert browser.execute_script(count, f"li[data-definition='{crowd}'][data-run]") == 501, "500 of the moment, and the next day's"
    moment = browser.execute_script(
        "const at = new Date(arguments[0]); return `${new Intl.DateTimeFormat(undefined, { weekday: 'short' }).format(at)}"
        " ${at.getDate()} ${new Intl.DateTimeFormat(undefined, { month: 'short' }).format(at)}"
        " ${new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' }).format(at)}`",
        f"{noon:%Y-%m-%dT%H:%M:%S}Z")
    assert [c.text for c in browser.find_elements(By.CSS_SELECTOR, f"[data-runs-left-out='{crowd}']")] == [
        f"Runs of {crowd_name} at {moment} are left out: more are scheduled for that moment than the calendar reads."]
    assert browser.find_elements(By.CSS_SELECTOR, f"[data-capped='{crowd}']") == []


def test_a_definition_whose_stored_schedule_no_longer_reads_is_said_apart_and_every_other_one_is_shown(
        browser, server, api_client, console_db):
    """A version saved before today's cron rules ('0 0 L * *'): the API answers its month 409, saying what to do.
    The calendar shows every other definition all the same and says this one is left out, in the API's words,
    linking to its page, which says it where the schedule in words would be. The tick loop every console test
    shares plans nothing of it (the planner passes an unreadable schedule over); it leaves without a schedule."""
    ahead = month_ahead()
    fine, _ = _weekly(api_client)
    legacy, legacy_name = _weekly(api_client)

    def older_version(tx):
        tx.execute("UPDATE event_definition_versions SET document = JSON_SET(document, '$.schedule.cron', '0 0 L * *')"
                   " WHERE definition_id = %s", (legacy,))
        tx.execute("UPDATE event_definitions SET schedule_cron = '0 0 L * *' WHERE id = %s", (legacy,))

    console_db.transaction(older_version)
    try:
        sign_in(browser, ADMIN)
        browser.get(f"{server.console_url}#/calendar?month={ahead.param}")
        eventually(lambda: _item(browser, fine, ahead.fridays()[2]), "the other definitions' occurrences")
        note = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"[data-unread='{legacy}']"), "the note")[0]
        assert note.text.startswith(f"{legacy_name} is left out of this month: definition {legacy}'s schedule"
                                    " ('0 0 L * *' in Europe/Berlin) is not understood: "), note.text
        assert "save a version with a corrected schedule" in note.text, note.text
        assert note.find_element(By.CSS_SELECTOR, "a").get_attribute("href").endswith(f"#/definitions/{legacy}")
        assert browser.find_elements(By.CSS_SELECTOR, f"li[data-definition='{legacy}']") == []
        assert serious_findings(browser) == [], "axe on the calendar with a definition left out"

        browser.get(f"{server.console_url}#/definitions/{legacy}")
        words = eventually(lambda: text_of(browser, "#schedule-words") or None, "the schedule's words")
        assert words.startswith(f"Schedule: definition {legacy}'s schedule ('0 0 L * *' in Europe/Berlin) is not"
                                " understood"), words
    finally:  # what the answer says to do, without a schedule: no later test's calendar reads it
        api_client.call("PUT", f"/definitions/{legacy}", {
            "name": legacy_name, "phases": [{"steps": [{"action": "core.announce", "params": {"message": "on"}}]}]})


def _dated(browser, at: str) -> str:
    """`at` as the calendar writes a moment, in the viewer's zone: "Sat 30 Jan 20:00"."""
    return browser.execute_script(
        "const at = new Date(arguments[0]); return `${new Intl.DateTimeFormat(undefined, { weekday: 'short' }).format(at)}"
        " ${at.getDate()} ${new Intl.DateTimeFormat(undefined, { month: 'short' }).format(at)}"
        " ${new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' }).format(at)}`", at)


def _without_schedule(api_client, definition_id: int, name: str) -> None:
    api_client.call("PUT", f"/definitions/{definition_id}", {
        "name": name, "phases": [{"steps": [{"action": "core.announce", "params": {"message": "on"}}]}]})


def test_a_postponed_run_says_where_it_went_in_its_old_place_and_where_it_came_from_in_its_new_one(
        browser, server, api_client):
    """The 15th and the 30th of a month ahead at 20:00 in Berlin, each run postponed: the 15th's to the 16th (both
    in the month: drawn at its new time "postponed from …", its old place "postponed to …"), the 30th's to the
    12th of the month after (left the month: drawn on its own day "postponed to …", a link to the month after,
    its buttons with it; there the run says "postponed from …", a link back). The month is the first at least two
    ahead with 31 days: its 30th's evening in Berlin is on it in any viewer's zone."""
    month = month_ahead()
    while month.days < 31:
        month = month.next()
    after = month.next()
    name = f"Moon fair {uuid.uuid4().hex[:6]}"
    document = {"name": name, "schedule": {"cron": "0 20 15,30 * *", "timezone": "Europe/Berlin"},
                "phases": [{"steps": [{"action": "core.announce", "params": {"message": "The fair opens"}}]}]}
    definition_id = api_client.call("POST", "/definitions", document)["definition"]["id"]
    fifteenth, thirtieth = utc_z(month.at(15, 20)), utc_z(month.at(30, 20))
    sixteenth, twelfth_after = utc_z(month.at(16, 20)), utc_z(after.at(12, 20))
    try:
        runs = {}
        for occurrence, to in ((fifteenth, sixteenth), (thirtieth, twelfth_after)):
            runs[occurrence] = api_client.call("POST", f"/definitions/{definition_id}/runs", {"scheduled_for": occurrence})["run"]["id"]
            api_client.call("POST", f"/runs/{runs[occurrence]}/postpone", {"to": to, "reason": "the venue"})
        sign_in(browser, ADMIN)
        browser.get(f"{server.console_url}#/calendar?month={month.param}")
        moved = eventually(lambda: _item(browser, definition_id, fifteenth), "the 15th's occurrence")
        assert moved.find_element(By.CSS_SELECTOR, "time").get_attribute("datetime") == sixteenth
        assert moved.find_element(By.CSS_SELECTOR, "[data-postponed-from]").text == f"postponed from {_dated(browser, fifteenth)}"
        old_place = browser.find_element(By.CSS_SELECTOR, f"li[data-definition='{definition_id}'][data-moved-from='{fifteenth}']")
        assert old_place.find_element(By.CSS_SELECTOR, "time").get_attribute("datetime") == fifteenth
        assert old_place.find_element(By.CSS_SELECTOR, "[data-postponed-to]").text == f"postponed to {_dated(browser, sixteenth)}"
        assert old_place.find_elements(By.CSS_SELECTOR, "button") == [], "its buttons are on the run, at its new time"

        away = _item(browser, definition_id, thirtieth)
        assert away is not None, "the 30th's occurrence is on its month's grid"
        assert away.find_element(By.CSS_SELECTOR, "time").get_attribute("datetime") == thirtieth
        went = away.find_element(By.CSS_SELECTOR, "[data-postponed-to]")
        assert went.text == f"postponed to {_dated(browser, twelfth_after)}"
        assert [b.get_attribute("data-occurrence-action") for b in away.find_elements(By.CSS_SELECTOR, "button")] == [
            "postpone", "skip"]
        assert browser.find_elements(By.CSS_SELECTOR, f"li[data-run='{runs[thirtieth]}']") == []
        assert serious_findings(browser) == [], "axe on a month with postponed runs"

        went.find_element(By.CSS_SELECTOR, "a").click()
        label = month_label(browser, after)
        eventually(lambda: label in text_of(browser, "h1"), label)
        arrived = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"li[data-run='{runs[thirtieth]}']"), "the run")[0]
        came = arrived.find_element(By.CSS_SELECTOR, "[data-postponed-from]")
        assert came.text == f"postponed from {_dated(browser, thirtieth)}"
        assert came.find_element(By.CSS_SELECTOR, "a").get_attribute("href").endswith(f"#/calendar?month={month.param}")
    finally:
        _without_schedule(api_client, definition_id, name)


def test_an_occurrence_whose_postponed_run_still_waits_is_offered_skip_after_its_own_time(
        browser, server, api_client, console_db):
    """An occurrence two days ago whose run a person postponed 20 days ahead: the API still skips it (the skip
    cancels the run), so the calendar offers Skip, past its own time as it is. Its schedule fires once a year."""
    now = datetime.now(UTC).replace(tzinfo=None, second=0, microsecond=0)
    past = now - timedelta(days=2)
    name = f"Comet night {uuid.uuid4().hex[:6]}"
    document = {"name": name, "schedule": {"cron": f"{past.minute} {past.hour} {past.day} {past.month} *", "timezone": "UTC"},
                "phases": [{"steps": [{"action": "core.announce", "params": {"message": "Look up"}}]}]}
    definition = make_definition(console_db, past - timedelta(days=1), document)

    def postponed(tx):  # inserted and moved in one transaction: the tick loop never sees it due
        run = insert_run(tx, definition, now, scheduled_for=past)
        tx.execute("UPDATE event_runs SET scheduled_for = %s, wake_at = %s WHERE id = %s",
                   (now + timedelta(days=20), now + timedelta(days=20), run.id))
        return run.id

    run_id = console_db.transaction(postponed)
    occurrence = f"{past:%Y-%m-%dT%H:%M:%S}Z"
    try:
        sign_in(browser, ADMIN)
        month = browser.execute_script(
            "const d = new Date(arguments[0]); return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}`",
            occurrence)
        browser.get(f"{server.console_url}#/calendar?month={month}")
        item = eventually(lambda: _item(browser, definition.id, occurrence), "the occurrence, past")
        item.find_element(By.CSS_SELECTOR, "[data-occurrence-action='skip']").click()
        eventually(lambda: browser.find_elements(By.ID, "ask-text"), "the reason box")[0].send_keys("Clouds")
        browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
        eventually(lambda: _skipped(browser, definition.id, occurrence), "the occurrence skipped")
        assert f"{name} on {_dated(browser, occurrence)} is skipped; its run is cancelled." in text_of(browser, "#notice")
        assert api_client.call("GET", f"/runs/{run_id}")["run"]["status"] == "cancelled"
    finally:
        _without_schedule(api_client, definition.id, name)
