"""Definitions in the console, as an admin: problems beside the document, versions, scheduling in the viewer's zone."""

from __future__ import annotations

import json
import re
from datetime import UTC
from zoneinfo import ZoneInfo

from selenium.webdriver.common.by import By

from tests.console.browser import eventually, screenshot, text_of
from tests.console.dates import month_ahead
from tests.console.pages import confirm_dialog, demo_document, open_run, sign_in, wait_for_status
from tests.support.api import ADMIN


def _count(db) -> int:
    return db.autocommit(lambda tx: tx.one("SELECT COUNT(*) AS n FROM event_definitions")["n"])


def _type_document(browser, document) -> None:
    eventually(lambda: browser.find_elements(By.ID, "tab-json"), "the document editor")[0].click()  # the JSON, not the form
    box = browser.find_element(By.ID, "document")
    text = document if isinstance(document, str) else json.dumps(document, indent=2)
    browser.execute_script("arguments[0].value = arguments[1]", box, text)
    browser.find_element(By.ID, "save-document").click()


def _problems(browser) -> list[str]:
    return [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#problems li")]


def test_a_bad_document_lists_its_problems_beside_it_and_saves_nothing(browser, server, console_db):
    before = _count(console_db)
    sign_in(browser, ADMIN)
    browser.find_element(By.ID, "nav-definitions").click()
    eventually(lambda: browser.find_elements(By.ID, "new-definition"), "the definitions list")[0].click()
    _type_document(browser, "{ not json")
    eventually(lambda: any("not valid JSON" in p for p in _problems(browser)), "the JSON problem")

    bad = {"name": "Bonfire night", "phases": [{"name": "x", "steps": [
        {"action": "core.fly", "params": {}}, {"action": "core.wait", "params": {"seconds": -3}}]}]}
    _type_document(browser, bad)
    problems = eventually(lambda: _problems(browser) if len(_problems(browser)) >= 2 else None, "the API's problems")
    assert any("core.fly" in p for p in problems) and any("seconds" in p for p in problems), problems
    assert "2 problems; nothing was saved" in text_of(browser, "#notice")
    assert browser.find_element(By.ID, "document").is_displayed(), "the document stays beside its problems"
    screenshot(browser, "definition-problems")
    assert _count(console_db) == before


def test_an_admin_creates_a_definition_adds_a_version_views_each_and_schedules_a_run_in_their_own_zone(browser, server, api_client):
    browser.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "Europe/Paris"})
    try:
        browser.refresh()  # the page starts in Paris
        eventually(lambda: browser.find_elements(By.ID, "token-input"), "the sign-in page")
        sign_in(browser, ADMIN)
        browser.get(f"{server.console_url}#/definitions/new")
        first = demo_document("Lantern walk")
        _type_document(browser, first)
        eventually(lambda: browser.find_elements(By.ID, "add-version"), "the new definition's page")[0].click()
        second = demo_document("Lantern walk")
        second["phases"][0]["steps"][0]["params"]["message"] = "The lantern walk begins at the mill"
        _type_document(browser, second)
        rows = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "tr[data-version]") if len(
            browser.find_elements(By.CSS_SELECTOR, "tr[data-version]")) == 2 else None, "two versions")
        assert [r.get_attribute("data-version") for r in rows] == ["1", "2"]
        browser.find_element(By.CSS_SELECTOR, "[data-view-version='1']").click()
        shown = eventually(lambda: text_of(browser, "#version-document pre"), "version 1's document")
        opening = json.loads(shown)["phases"][0]["steps"][0]["params"]["message"]
        assert opening == first["phases"][0]["steps"][0]["params"]["message"]
        browser.find_element(By.CSS_SELECTOR, "[data-view-version='2']").click()
        eventually(lambda: "at the mill" in text_of(browser, "#version-document pre"), "version 2's document")

        # 20:00 in Paris on a day two months ahead (still to come, as a run by hand must be): 19:00 UTC in winter,
        # 18:00 in summer.
        paris = month_ahead().at(15, 20, zone=ZoneInfo("Europe/Paris"))
        utc = paris.astimezone(UTC)
        at = browser.find_element(By.ID, "schedule-at")
        browser.execute_script("arguments[0].value = arguments[1]", at, f"{paris:%Y-%m-%dT%H:%M}")
        browser.find_element(By.ID, "schedule-at-submit").click()
        link = eventually(lambda: browser.find_elements(By.ID, "scheduled-run"), "the scheduled run")[0]
        run_id = int(link.text.split()[-1])
        assert api_client.call("GET", f"/runs/{run_id}")["run"]["scheduled_for"] == f"{utc:%Y-%m-%dT%H:%M:%SZ}"
        link.click()
        when = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#run-summary time[title]"), "the run's times")[0]
        hover = when.get_attribute("title")  # the local time with its zone, then UTC; the text says how far off it is
        assert re.search(rf"(20:00:00|8:00:00\sPM) .+ · {utc:%Y-%m-%d %H:%M:%S} UTC$", hover), hover
        # The time itself shows beside the words, for a phone that cannot hover and a keyboard that cannot focus a title.
        shown = text_of(browser, "#run-summary .when")
        assert re.fullmatch(r"in \d+ days \(.+(20:00|8:00\sPM)\)", shown), shown
        assert "(v2)" in text_of(browser, "#run-summary") or "version 2" in text_of(browser, "#run-summary")

        browser.back()
        eventually(lambda: browser.find_elements(By.ID, "schedule-now"), "the definition page again")[0].click()
        asked = confirm_dialog(browser)  # a live run is never one click away
        assert "Start a live run of Lantern walk (version 2) now?" in asked and "for real" in asked, asked
        now_link = eventually(lambda: browser.find_elements(By.ID, "scheduled-run"), "the run scheduled now")[0]
        now_id = int(now_link.text.split()[-1])
        open_run(browser, server.url, now_id)
        eventually(lambda: "at the mill" in text_of(browser, "#run-phases"), "the new version running")
    finally:
        browser.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ""})  # empty: the machine's zone again
    wait_for_status(browser, "running")
