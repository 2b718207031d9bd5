"""What runs wait for, in real Chromium: the runs list says it and filters on it, the header counts the runs that
need someone, and a game master acknowledges and confirms their own cue from the run's page."""

from __future__ import annotations

import re

from selenium.webdriver.common.by import By

from tests.console.browser import eventually, screenshot, text_of
from tests.console.pages import CUE_WAITING, cue_banner, listed, open_run, press, schedule_now, sign_in, wait_for_status
from tests.support.api import GM, MODERATOR

NEED_YOU = re.compile(r"^\d+ runs? needs? you$")


def _cue_document(name: str) -> dict:
    return {"name": name, "grace_seconds": 300, "phases": [
        {"name": "bonfire", "steps": [{"action": "core.cue", "params": {"instruction": "Light the bonfire"}}]},
    ], "ending": [{"action": "core.announce", "params": {"message": "Good night"}}]}


def _waiting_cell(driver, run_id: int) -> str:
    return driver.execute_script(
        "const r = document.querySelector(`#runs-list tr[data-run='${arguments[0]}']`);"
        " return r ? r.querySelector('[data-waiting]')?.parentElement.innerText || '' : ''", run_id)


def test_a_gm_sees_their_cue_on_the_runs_list_acknowledges_and_confirms_it(browser, server, api_client):
    _, run_id = schedule_now(api_client, _cue_document("Bonfire night (gm)"))
    sign_in(browser, GM)
    browser.get(f"{server.url}/console#/runs")
    cell = eventually(lambda: "waiting for: cue" in (text := _waiting_cell(browser, run_id)) and text,
                      "the run waiting for its cue on the list", 40)
    assert re.search(r"waiting for: cue for \d+ (s|min)", cell), cell
    header = eventually(lambda: text_of(browser, "#need-you"), "the header's count")
    assert NEED_YOU.match(header), header
    assert browser.title.startswith(header), browser.title
    screenshot(browser, "runs-waiting-for-a-cue")

    open_run(browser, server.url, run_id)
    cue_id, banner = cue_banner(browser)
    assert CUE_WAITING.search(banner), banner
    shown = {b.get_attribute("data-control") for b in browser.find_elements(By.CSS_SELECTOR, "[data-cue] [data-control]")}
    assert {"confirm", "skip", "acknowledge"} <= shown, shown
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-control]:not([data-step])"), "run controls stay moderator's"

    press(browser, "acknowledge", cue_id, text="")
    has_it = eventually(lambda: text_of(browser, "[data-cue] [data-has-it]"), "who has the cue")
    assert re.match(r"^gm-gus has it since \d", has_it), has_it
    assert browser.find_element(By.CSS_SELECTOR, "[data-cue] [data-has-it] time").get_attribute("title").endswith(" UTC")
    eventually(lambda: not browser.find_elements(By.CSS_SELECTOR, "[data-cue] [data-control='acknowledge']"),
               "acknowledge no longer offered once someone has it")
    screenshot(browser, "run-cue-acknowledged-by-a-gm")

    press(browser, "confirm", cue_id, text="bonfire lit")
    wait_for_status(browser, "completed")
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-cue]")


def test_a_moderator_filters_the_runs_list_by_what_runs_wait_for(browser, server, api_client):
    _, waiting_run = schedule_now(api_client, _cue_document("Bonfire night (filter)"))
    sign_in(browser, MODERATOR)
    browser.get(f"{server.url}/console#/runs")
    eventually(lambda: "waiting for: cue" in _waiting_cell(browser, waiting_run), "the run waiting for its cue", 40)
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#filter-waiting option[value='cue']"), "the waiting filter")
    browser.execute_script("const s = document.getElementById('filter-waiting'); s.value = 'cue';"
                           " s.dispatchEvent(new Event('change'))")
    eventually(lambda: "waiting=cue" in browser.current_url, "the filter in the address")

    def only_cues():
        rows = listed(browser)
        cells = browser.execute_script(
            "return [...document.querySelectorAll('#runs-list tr[data-run]')].map(r => r.querySelector('[data-waiting]')?.dataset.waiting)")
        return rows and waiting_run in [run for run, _ in rows] and set(cells) == {"cue"}

    eventually(only_cues, "only runs waiting for a cue listed")
    assert browser.find_element(By.ID, "filter-waiting").get_attribute("value") == "cue"
    api_client.call("POST", f"/runs/{waiting_run}/cancel", {"reason": "the test is over"})
    eventually(lambda: waiting_run not in [run for run, _ in listed(browser)], "the cancelled run leaves the filtered list")
