"""When plans change, in real Chromium: a moderator postpones a scheduled run from the calendar (it shows at its
new time with its original one), moves a live phase's deadline on the run page (which shows the new deadline and
who moved it), and an admin pauses a schedule from the definition page (the calendar marks its occurrences
paused by whom and why), and the run's log says each of these changes (and a finished run's Clean up) in words."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from selenium.webdriver.common.by import By

from devtools.kit.game_bridge import Answer
from tests.console.audit import serious_findings
from tests.console.browser import eventually, text_of
from tests.console.dates import clear_of_midnight, month_ahead
from tests.console.pages import cue_banner, open_run, phase_facts, schedule_now, sign_in, wait_for_status
from tests.console.test_console_calendar import _item, _weekly
from tests.support.api import ADMIN, MODERATOR


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
    ahead = month_ahead()
    occurrence = ahead.fridays()[2]  # a Friday evening two months ahead
    # Two and a half hours later, as a person types it: on the viewer's clocks (the machine's zone).
    later = f"{datetime.fromisoformat(occurrence).astimezone() + timedelta(hours=2, minutes=30):%Y-%m-%dT%H:%M}"
    definition_id, _ = _weekly(api_client)
    run = api_client.call("POST", f"/definitions/{definition_id}/runs", {"scheduled_for": occurrence})["run"]
    sign_in(browser, MODERATOR)
    browser.get(f"{server.console_url}#/calendar?month={ahead.param}")
    item = eventually(lambda: _item(browser, definition_id, occurrence), "the occurrence with its run")
    item.find_element(By.CSS_SELECTOR, "[data-occurrence-action='postpone']").click()
    _answer_dialog(browser, later, "server restart")
    moved = eventually(lambda: (i := _item(browser, definition_id, occurrence))
                       and i.find_elements(By.CSS_SELECTOR, "[data-postponed-from]") and i, "the occurrence postponed")
    expected = browser.execute_script("return new Date(arguments[0]).toISOString()", later)
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
    ahead = month_ahead()
    occurrence = ahead.fridays()[2]
    definition_id, _ = _weekly(api_client)
    sign_in(browser, ADMIN)
    browser.get(f"{server.console_url}#/definitions/{definition_id}")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-schedule-action='pause']"), "Pause schedule")[0].click()
    _answer_dialog(browser, None, "holiday break")
    mark = eventually(lambda: browser.find_elements(By.ID, "schedule-paused"), "the schedule marked paused")[0]
    assert mark.text == "⏸ paused by root-admin because holiday break"
    assert browser.find_elements(By.CSS_SELECTOR, "[data-schedule-action='resume']")
    browser.get(f"{server.console_url}#/calendar?month={ahead.param}")
    item = eventually(lambda: _item(browser, definition_id, occurrence), "the month's occurrences")
    assert "paused by root-admin because holiday break" in item.text
    assert "paused by root-admin" in text_of(browser, f"#calendar-schedules li[data-schedule='{definition_id}']")
    # Resumed from the calendar, asked whether to start the latest occurrence missed: its occurrences are marked no more.
    browser.find_element(By.CSS_SELECTOR, f"#calendar-schedules [data-schedule-action='resume'][data-definition='{definition_id}']").click()
    asked = eventually(lambda: text_of(browser, "dialog[open]"), "the resume's question")
    assert "Start the latest occurrence missed while it was paused" in asked, asked
    browser.find_element(By.ID, "plan-option").click()
    _answer_dialog(browser, None, "back from the break")
    eventually(lambda: (item := _item(browser, definition_id, occurrence)) is not None and "paused by" not in item.text,
               "the schedule resumed")
    shown = api_client.call("GET", f"/definitions/{definition_id}")
    assert shown["definition"]["schedule_paused"] is None
    resumed = next(entry for entry in shown["schedule_log"] if entry["kind"] == "schedule.resumed")
    assert resumed["actor"] == "root-admin" and resumed["detail"]["catch_up"] == "latest", resumed
    assert resumed["detail"]["reason"] == "back from the break", resumed


def _time_of_day(browser, iso: str) -> str:
    """`iso` as the log says a time: ui.js's timeOfDay, in the viewer's zone."""
    return browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "import(new URL('ui.js', document.querySelector('script[type=module]').src))"
        ".then((ui) => done(ui.timeOfDay(arguments[0])));", iso)


def _log_row(browser, kind: str, has: str = "") -> str:
    """The words of the log's row of `kind` (the first holding `has`), after its time and actor."""
    said = "return [...document.querySelectorAll(`#run-log li[data-kind='${arguments[0]}']`)].map((li) => li.lastElementChild.textContent)"
    return str(eventually(lambda: next((text for text in browser.execute_script(said, kind) if has in text), None),
                          f"the log's {kind} row"))


def test_the_log_says_each_change_of_plan_in_words_with_times_in_the_viewers_zone(browser, server, api_client, bridge):
    """A postponed run, a phase's deadline and a cue's timeout moved, and a finished run's Clean up begun and done:
    each log row in words, never the kind and its fields."""
    clear_of_midnight()  # a time of today is written without its date: the row's and the one read after share a day
    bridge.script("garden.crows", Answer(200, {"resources": [
        {"kind": "npc", "id": "crow-1", "revert": {"action": "garden.shoo", "params": {"crow": "crow-1"}}}]}))
    document = {"name": f"Crow count {uuid.uuid4().hex[:6]}", "grace_seconds": 300, "phases": [
        {"name": "garden", "advance": {"when": "steps_done", "timeout_seconds": 900}, "steps": [
            {"action": "garden.crows"},
            {"action": "core.cue", "params": {"instruction": "Count the crows", "timeout_seconds": 600}}]}]}
    definition_id, run_id = schedule_now(api_client, document)
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_id, _ = cue_banner(browser)
    api_client.call("POST", f"/runs/{run_id}/phases/1/extend", {"seconds": 600, "reason": "slow crows"},
                               token=MODERATOR)
    moved_phase = next(e for e in api_client.call("GET", f"/runs/{run_id}/log")["entries"] if e["kind"] == "run.deadline_moved")
    said = _log_row(browser, "run.deadline_moved")
    assert said == (f"Phase 1's deadline moved 10 min later, from {_time_of_day(browser, moved_phase['detail']['from'])}"
                    f" to {_time_of_day(browser, moved_phase['detail']['to'])} by extend reason: “slow crows”"), said
    api_client.call("POST", f"/runs/{run_id}/steps/{cue_id}/extend_cue", {"seconds": -120}, token=MODERATOR)
    moved_cue = next(e for e in api_client.call("GET", f"/runs/{run_id}/log")["entries"] if e["kind"] == "step.timeout_moved")
    said = _log_row(browser, "step.timeout_moved")
    assert said.endswith(f": its timeout moved 2 min sooner, from {_time_of_day(browser, moved_cue['detail']['from'])}"
                         f" to {_time_of_day(browser, moved_cue['detail']['to'])} by extend_cue"), said
    assert said.startswith(f"Run {run_id} · Phase 1 · step 2 (Count the crows)"), said

    api_client.call("POST", f"/runs/{run_id}/steps/{cue_id}/confirm", {"note": "twelve"})
    wait_for_status(browser, "completed")
    api_client.call("POST", f"/runs/{run_id}/cleanup", {"reason": "crows in the square"}, token=MODERATOR)
    eventually(lambda: [e for e in api_client.call("GET", f"/runs/{run_id}/log")["entries"]
                        if e["kind"] == "run.late_cleanup" and e["detail"]["state"] == "done"], "the cleanup done")
    browser.refresh()  # a finished run's page no longer polls
    said = _log_row(browser, "run.late_cleanup", "began")
    assert said == ("Clean up began: 1 thing to revert, newest first; the run keeps its status by cleanup"
                    " reason: “crows in the square”"), said
    said = _log_row(browser, "run.late_cleanup", "done")
    assert said == "Clean up done: 1 reverted", said

    occurrence = month_ahead().fridays()[2]
    moved_to = f"{datetime.fromisoformat(occurrence) + timedelta(hours=2, minutes=30):%Y-%m-%dT%H:%M:%SZ}"
    later = api_client.call("POST", f"/definitions/{definition_id}/runs", {"scheduled_for": occurrence})["run"]["id"]
    api_client.call("POST", f"/runs/{later}/postpone", {"to": moved_to, "reason": "server restart"}, token=MODERATOR)
    open_run(browser, server.url, later)
    said = _log_row(browser, "run.postponed")
    assert said == (f"Run postponed from {_time_of_day(browser, occurrence)} to"
                    f" {_time_of_day(browser, moved_to)} by postpone reason: “server restart”"), said
