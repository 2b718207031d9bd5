"""A manual phase in real Chromium: the page says the run waits for a person, and advancing it from the page ends it."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from tests.console.browser import eventually, screenshot
from tests.console.pages import log_rows, open_run, phase_facts, schedule_now, sign_in, wait_for_status
from tests.support.api import MODERATOR


def _manual_document(name: str) -> dict:
    return {"name": name, "grace_seconds": 300, "phases": [
        {"name": "warm-up", "advance": {"when": "manual", "timeout_seconds": 3600},
         "steps": [{"action": "core.announce", "params": {"message": "Stretch"}}]},
        {"name": "race", "steps": [{"action": "core.announce", "params": {"message": "Go"}}]},
    ]}


def test_a_manual_phase_shows_its_banner_and_is_advanced_from_the_page_with_a_reason(browser, server, api_client):
    _, run_id = schedule_now(api_client, _manual_document("Dawn run (advance)"))
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    banner = eventually(lambda: browser.find_elements(By.ID, "advance-banner"), "the advance banner", 40)[0]
    assert "phase 1 (warm-up) is done; it ends when someone advances it, until " in banner.text, banner.text
    assert phase_facts(browser, 1).startswith("Waits for a person · at most 1 h, then advance · ends at "), phase_facts(browser, 1)
    screenshot(browser, "run-waits-to-advance")

    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-control='advance']"), "the advance button")[0].click()
    asked = eventually(lambda: browser.find_elements(By.ID, "ask-title"), "the reason dialog")[0]
    assert "phase 1 (warm-up)" in asked.text, asked.text
    browser.find_element(By.ID, "ask-text").send_keys("everyone is warm")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()

    wait_for_status(browser, "completed")
    assert not browser.find_elements(By.ID, "advance-banner")
    advanced = eventually(lambda: [t for a, t in log_rows(browser) if a == "mod-mia" and "advanced" in t], "the advance's log row")
    assert "Phase 1 advanced by mod-mia" in advanced[0] and "everyone is warm" in advanced[0], log_rows(browser)
    assert "advanced by mod-mia at " in phase_facts(browser, 1), phase_facts(browser, 1)
