"""The console in real Chromium, against the real API, a real database, the demo game bridge and a running tick loop."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from tests.console.browser import eventually, screenshot
from tests.console.pages import (
    cue_banner, demo_document, log_rows, open_run, press, schedule_now, sign_in, wait_for_status,
)
from tests.support.api import ADMIN


def test_the_demo_run_parks_at_its_cue_a_confirm_from_the_page_completes_it_and_the_log_names_who(browser, server, api_client):
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (confirm)"))
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run_id)
    banner = cue_banner(browser)
    assert "Waiting for a game master: Light the bonfire" in banner.text
    screenshot(browser, "run-parked-at-cue")
    step_id = int(banner.get_attribute("data-cue"))
    press(browser, "confirm", step_id, "bonfire lit")
    wait_for_status(browser, "completed")
    confirms = [(actor, text) for actor, text in log_rows(browser) if "by confirm" in text]
    assert confirms == [("root-admin", confirms[0][1])] and "bonfire lit" in confirms[0][1], log_rows(browser)
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-control]"), "a finished run offers no controls"
    screenshot(browser, "run-completed")
