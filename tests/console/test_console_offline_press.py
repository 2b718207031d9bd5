"""A control pressed while the API does not answer (review 1, item 2: a gm at 2 a.m.), in real Chromium offline.

The press is kept and re-sent (api.js); meanwhile its button says "Sending…" and is disabled, so a second press
of it is not queued behind it; the freshness line says the page is not updating and is trying again, never
"Live: updating every 2 s"; once the network is back the press takes, once, and its notice stays: no later
refusal of a duplicate replaces it.
"""

from __future__ import annotations

import time

from selenium.webdriver.common.by import By

from tests.console.browser import eventually, screenshot, text_of
from tests.console.pages import cue_banner, notice_text, open_run, press, schedule_now, sign_in
from tests.support.api import GM
from tests.support.scenes import log_rows as logged

ONLINE = {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}


def _network(browser, offline: bool) -> None:
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.emulateNetworkConditions", {**ONLINE, "offline": offline})


def _confirm_button(browser, step_id: int):
    return browser.find_element(By.CSS_SELECTOR, f"#run-banners [data-control='confirm'][data-step='{step_id}']")


def test_a_press_while_offline_is_shown_pending_sent_once_and_its_success_stays(browser, server, api_client, console_db):
    _, run_id = schedule_now(api_client, {"name": "Bonfire (offline press)", "grace_seconds": 300, "phases": [
        {"name": "opening", "steps": [{"action": "core.cue", "params": {"instruction": "Light the bonfire"}}]},
        {"name": "contest", "steps": [{"action": "core.announce", "params": {"message": "The contest begins"}}]}]})
    sign_in(browser, GM)
    open_run(browser, server.url, run_id)
    step_id, _ = cue_banner(browser)
    try:
        _network(browser, offline=True)
        press(browser, "confirm", step_id, text="first press")
        button = eventually(lambda: (b := _confirm_button(browser, step_id)).text == "Sending…" and b, "the pending press's button")
        assert not button.is_enabled() and button.get_attribute("aria-busy") == "true"
        said = button.accessible_name  # what a screen reader says of it, not only what shows (aria-busy is rarely said)
        assert said == f"Sending… Confirm, Run {run_id} · Phase 1 · step 1 (Light the bonfire)", said
        line = eventually(lambda: "does not answer" in (t := text_of(browser, "#freshness-line")) and t,
                          "the freshness line saying it retries", timeout=15)
        assert "Live: updating" not in line, line
        screenshot(browser, "offline-press-pending")
        # A second press of the same control goes nowhere: no dialog, nothing queued behind the first.
        browser.execute_script("arguments[0].click()", button)
        time.sleep(0.5)
        assert not browser.find_elements(By.CSS_SELECTOR, "dialog[open]")
    finally:
        _network(browser, offline=False)
    said = eventually(lambda: (t := notice_text(browser)).startswith("Confirmed") and t, "the press's answer", timeout=30)
    time.sleep(4)  # two polls: a duplicate's refusal would have replaced it by now
    assert notice_text(browser) == said
    assert "Live: updating" in text_of(browser, "#freshness-line") or "over" in text_of(browser, "#freshness-line")
    confirms = [r for r in logged(console_db, run_id) if (r["detail"] or {}).get("control") == "confirm"]
    assert len(confirms) == 1 and confirms[0]["actor"] == "gm-gus"
