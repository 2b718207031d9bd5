"""When plans change, in real Chromium: a moderator postpones a scheduled run from the calendar (it shows at its
new time with its original one), moves a live phase's deadline on the run page (which shows the new deadline and
who moved it), and an admin pauses a schedule from the definition page (the calendar marks its occurrences
paused by whom and why)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from selenium.webdriver.common.by import By

from tests.console.audit import serious_findings
from tests.console.browser import eventually, text_of
from tests.console.pages import open_run, phase_facts, schedule_now, sign_in
from tests.console.test_console_calendar import _item, _weekly
from tests.support.api import ADMIN, MODERATOR

OCCURRENCE = "2027-01-15T19:00:00Z"  # a Friday of January 2027 at 20:00 in Berlin: ahead of any day these tests run on


def _answer_dialog(browser, value: str | None, reason: str) -> None:
    """Fill the plan dialog (its value set as a person's typing would leave it) and press its action."""
    if value is not None:
        field = eventually(lambda: browser.find_elements(By.ID, "plan-value"), "the dialog's field")[0]
        browser.execute_script("arguments[0].value = arguments[1]", field, value)
    eventually(lambda: browser.find_elements(By.ID, "plan-reason"), "the reason box")[0].send_keys(reason)
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()


def test_a_moderator_postpones_a_run_from_the_calendar_and_it_shows_at_its_new_time_with_its_original_one(
    browser, server, api_client
):
    definition_id, _ = _weekly(api_client)
    run = api_client.call("POST", f"/definitions/{definition_id}/runs", {"scheduled_for": OCCURRENCE})["run"]
    sign_in(browser, MODERATOR)
    browser.get(f"{server.console_url}#/calendar?month=2027-01")
    item = eventually(lambda: _item(browser, definition_id, OCCURRENCE), "the occurrence with its run")
    item.find_element(By.CSS_SELECTOR, "[data-occurrence-action='postpone']").click()
    _answer_dialog(browser, "2027-01-15T22:30", "server restart")
    moved = eventually(lambda: (i := _item(browser, definition_id, OCCURRENCE))
                       and i.find_elements(By.CSS_SELECTOR, "[data-postponed-from]") and i, "the occurrence postponed")
    expected = browser.execute_script("return new Date('2027-01-15T22:30').toISOString()")
    assert moved.find_element(By.CSS_SELECTOR, "time").get_attribute("datetime") == expected.replace(".000Z", "Z")
    assert "postponed from" in moved.text and "run " + str(run["id"]) in moved.text
    after = api_client.call("GET", f"/runs/{run['id']}")["run"]
    assert (after["scheduled_for"], after["occurrence_key"]) == (expected.replace(".000Z", "Z"), run["occurrence_key"])
    assert serious_findings(browser) == [], "axe on the calendar with a postponed run"


def test_extend_on_the_run_page_shows_the_new_deadline_and_who_moved_it(browser, server, api_client):
    document = {"name": f"Market hour {uuid.uuid4().hex[:6]}", "grace_seconds": 300, "phases": [
        {"name": "market", "advance": {"when": "after", "seconds": 600},
         "steps": [{"action": "core.announce", "params": {"message": "The market opens"}}]},
        {"name": "close", "steps": [{"action": "core.announce", "params": {"message": "The market is closed"}}]},
    ]}
    _, run_id = schedule_now(api_client, document)
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    button = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-control='extend'][data-phase='1']"),
                        "the phase's Extend beside its deadline")[0]
    before = next(p for p in api_client.call("GET", f"/runs/{run_id}")["phases"] if p["number"] == 1)["deadline"]
    button.click()
    _answer_dialog(browser, "15", "the boss runs long")
    eventually(lambda: "moved by mod-mia" in phase_facts(browser, 1), "who moved the deadline")
    assert "the boss runs long" in phase_facts(browser, 1)
    after = next(p for p in api_client.call("GET", f"/runs/{run_id}")["phases"] if p["number"] == 1)["deadline"]
    moved = datetime.fromisoformat(after) - datetime.fromisoformat(before)
    assert moved == timedelta(minutes=15)
    shown = browser.find_element(By.CSS_SELECTOR, "[data-phase-facts='1'] time").get_attribute("datetime")
    assert datetime.fromisoformat(shown) == datetime.fromisoformat(after)


def test_an_admin_pauses_a_schedule_on_the_definition_page_and_the_calendar_marks_it(browser, server, api_client):
    definition_id, _ = _weekly(api_client)
    sign_in(browser, ADMIN)
    browser.get(f"{server.console_url}#/definitions/{definition_id}")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-schedule-action='pause']"), "Pause schedule")[0].click()
    _answer_dialog(browser, None, "holiday break")
    mark = eventually(lambda: browser.find_elements(By.ID, "schedule-paused"), "the schedule marked paused")[0]
    assert mark.text == "⏸ paused by root-admin because holiday break"
    assert browser.find_elements(By.CSS_SELECTOR, "[data-schedule-action='resume']")
    browser.get(f"{server.console_url}#/calendar?month=2027-01")
    item = eventually(lambda: _item(browser, definition_id, OCCURRENCE), "the month's occurrences")
    assert "paused by root-admin because holiday break" in item.text
    assert "paused by root-admin" in text_of(browser, f"#calendar-schedules li[data-schedule='{definition_id}']")
    # Resumed from the calendar, asked whether to start the latest occurrence missed: its occurrences are marked no more.
    browser.find_element(By.CSS_SELECTOR, f"#calendar-schedules [data-schedule-action='resume'][data-definition='{definition_id}']").click()
    asked = eventually(lambda: text_of(browser, "dialog[open]"), "the resume's question")
    assert "Start the latest occurrence missed while it was paused" in asked, asked
    browser.find_element(By.ID, "plan-option").click()
    _answer_dialog(browser, None, "back from the break")
    eventually(lambda: (item := _item(browser, definition_id, OCCURRENCE)) is not None and "paused by" not in item.text,
               "the schedule resumed")
    shown = api_client.call("GET", f"/definitions/{definition_id}")
    assert shown["definition"]["schedule_paused"] is None
    resumed = next(entry for entry in shown["schedule_log"] if entry["kind"] == "schedule.resumed")
    assert resumed["actor"] == "root-admin" and resumed["detail"]["catch_up"] == "latest", resumed
    assert resumed["detail"]["reason"] == "back from the break", resumed
