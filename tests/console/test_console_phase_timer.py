"""A phase that lasts a fixed time, in real Chromium: the page says how long it lasts and when it ends, and once
its time is up, that it lasted it, the cue it left open cancelled with that cause."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from tests.console.browser import eventually
from tests.console.pages import cue_banner, open_run, phase_facts, schedule_now, sign_in, wait_for_status
from tests.support.api import MODERATOR


def test_a_phase_that_lasts_its_time_says_when_it_ends_and_then_that_it_lasted_it(browser, server, api_client):
    document = {"name": "Market hour (timer)", "grace_seconds": 300, "phases": [
        {"name": "market", "advance": {"when": "after", "seconds": 6},
         "steps": [{"action": "core.cue", "params": {"instruction": "Open the stalls"}}]},
        {"name": "close", "steps": [{"action": "core.announce", "params": {"message": "The market is closed"}}]},
    ]}
    _, run_id = schedule_now(api_client, document)
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_id, _ = cue_banner(browser)
    assert phase_facts(browser, 1).startswith("Ends after 6 s · ends at "), phase_facts(browser, 1)
    assert not browser.find_elements(By.ID, "signal-banner")

    wait_for_status(browser, "completed")
    assert phase_facts(browser, 1).startswith("Ends after 6 s · lasted its 6 s (closed at "), phase_facts(browser, 1)
    cancelled = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"[data-step-row='{cue_id}']"), "the cue's row")[0]
    assert cancelled.get_attribute("data-status") == "cancelled"
    assert "phase 1 (market) lasted its 6 s" in cancelled.text, cancelled.text
