"""A keyboard user's focus survives a live run's page being redrawn: the control they are on stays focused when
anything on the run changes (another person's press, a log row), as the runs list keeps it; a dialog gone back
from gives focus back to the button that opened it, even one a redraw behind the dialog replaced, and so does a moved
time once sent (Extend); what a person opened on a step (its attempts, its details) stays open through a redraw."""

from __future__ import annotations

from datetime import UTC, datetime

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from chalicelib.events import journal
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.model import StepSpec
from chalicelib.events.store import log
from tests.console.browser import eventually
from tests.console.pages import cue_banner, open_run, schedule_now, sign_in
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.factory import make_run, materialise

STEPS_SHOWN = 200  # steps.js

BONFIRE = {"grace_seconds": 300, "phases": [
    {"name": "opening", "steps": [{"action": "core.cue", "params": {"instruction": "Light the bonfire"}}]}]}


def test_the_focused_control_stays_focused_when_the_run_changes_under_it(browser, server, api_client):
    _, run_id = schedule_now(api_client, {**BONFIRE, "name": "Bonfire (focus kept)"})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    step_id, _ = cue_banner(browser)
    pause = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#run-controls [data-control='pause']"), "Pause")[0]
    browser.execute_script("arguments[0].focus()", pause)
    api_client.call("POST", f"/runs/{run_id}/steps/{step_id}/acknowledge", {}, token=ADMIN)  # another person
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-has-it]"), "the page redrawn with who has the cue")
    focused = browser.execute_script(
        "const a = document.activeElement; return a === document.body ? null : [a.dataset.control, a.closest('#run-controls') !== null]")
    assert focused == ["pause", True], f"focus dropped: {focused}"
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})


FOCUSED = "const a = document.activeElement; return a === document.body || !a ? null : [a.dataset.control, a.disabled]"


def test_a_dialog_gone_back_from_gives_focus_back_to_its_button_even_when_the_page_was_redrawn_under_it(
        browser, server, api_client):
    _, run_id = schedule_now(api_client, {**BONFIRE, "name": "Bonfire (focus after a dialog)"})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    step_id, _ = cue_banner(browser)

    def open_pause_dialog():
        pause = eventually(lambda: [b for b in browser.find_elements(By.CSS_SELECTOR, "#run-controls [data-control='pause']")
                                    if b.is_enabled()], "Pause, ready")[0]
        browser.execute_script("arguments[0].focus(); arguments[0].click()", pause)
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the dialog")
        return pause

    def go_back():
        browser.find_element(By.CSS_SELECTOR, "dialog[open] [data-ask='back']").click()
        return eventually(lambda: browser.execute_script(FOCUSED), "focus back on a control", 10)

    open_pause_dialog()
    assert go_back() == ["pause", False]
    browser.execute_script("window.firstPause = arguments[0]", open_pause_dialog())
    api_client.call("POST", f"/runs/{run_id}/steps/{step_id}/acknowledge", {}, token=ADMIN)  # another person
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-has-it]"), "the page redrawn under the dialog")
    assert go_back() == ["pause", False]
    assert browser.execute_script("return document.activeElement.closest('#run-controls') !== null")
    assert browser.execute_script("return window.firstPause.isConnected") is False, "the redraw replaced the button"
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})


def test_a_steps_opened_attempts_and_details_stay_open_when_the_run_changes_under_them(browser, server, api_client):
    _, run_id = schedule_now(api_client, {"name": "Bonfire (details kept open)", "grace_seconds": 300, "phases": [
        {"name": "opening", "steps": [{"action": "core.announce", "params": {"message": "The bonfire is lit soon"}},
                                      {"action": "core.cue", "params": {"instruction": "Light the bonfire"}}]}]})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    step_id, _ = cue_banner(browser)
    attempts = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "details[data-attempts] summary"), "a sent step's attempts")[0]
    announce_row = attempts.find_element(By.XPATH, "ancestor::tr")
    attempts.click()
    announce_row.find_element(By.CSS_SELECTOR, "details[id^='step-facts-'] summary").click()
    browser.execute_script("window.openedRow = arguments[0]", announce_row)
    api_client.call("POST", f"/runs/{run_id}/steps/{step_id}/acknowledge", {}, token=ADMIN)  # another person
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-has-it]"), "the page redrawn with who has the cue")
    assert browser.execute_script("return window.openedRow.isConnected") is False, "the redraw replaced the row"
    still_open = browser.execute_script(
        "return [...document.querySelectorAll('details[open]')].map((d) => d.id.replace(/-\\d+$/, ''))")
    assert sorted(still_open) == ["attempts", "step-facts"], still_open
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})


ACTIVE = """const a = document.activeElement;
return a === document.body || !a ? null : [a.dataset.control || a.dataset.stepsTo, a.closest('#run-banners') !== null,
  a.closest('[data-step-pager]')?.dataset.stepPager || null]"""


def test_a_steps_own_row_button_keeps_focus_not_its_copy_in_the_banner(browser, server, api_client):
    _, run_id = schedule_now(api_client, {**BONFIRE, "name": "Bonfire (row's button focused)"})
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run_id)
    step_id, _ = cue_banner(browser)
    in_row = f"#run-phases [data-control='skip'][data-step='{step_id}']"
    assert browser.find_elements(By.CSS_SELECTOR, f"#run-banners [data-control='skip'][data-step='{step_id}']"), "a copy above"
    row_skip = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, in_row), "the row's Skip")[0]
    browser.execute_script("window.focusedBefore = arguments[0]; arguments[0].focus()", row_skip)
    api_client.call("POST", f"/runs/{run_id}/steps/{step_id}/acknowledge", {}, token=GM)  # another person
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-has-it]"), "the page redrawn with who has the cue")
    assert browser.execute_script("return window.focusedBefore.isConnected") is False, "the redraw replaced the button"
    assert browser.execute_script(ACTIVE) == ["skip", False, None], "focus moved off the step's row"
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})


def test_the_second_long_phases_pager_keeps_focus_not_the_firsts(browser, server, console_db):
    now = datetime.now(UTC).replace(tzinfo=None)
    run = make_run(console_db, now, status=RunStatus.PAUSED, current_phase=1)  # no timer: the tick leaves it be
    for phase in (1, 2):
        materialise(console_db, run, phase, [StepSpec("core.announce", {"message": f"line {n}"}) for n in range(STEPS_SHOWN + 5)])
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run.id)
    later = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-step-pager='2'] [data-steps-to='later']"),
                       "the second phase's pager")[0]
    browser.execute_script("window.focusedBefore = arguments[0]; arguments[0].focus()", later)
    console_db.transaction(lambda tx: log.append(tx, journal.run_phase(run.id, 1, "a row of the log"), now))
    eventually(lambda: browser.execute_script("return window.focusedBefore.isConnected") is False, "the page redrawn")
    assert browser.execute_script(ACTIVE) == ["later", False, "2"], "focus moved to another phase's pager"


def test_extend_sent_by_keyboard_gives_focus_back_to_its_button(browser, server, api_client):
    """The button is disabled while its move is on its way, so the dialog closing could not give focus back to it:
    focus was left on the page, and the next Tab went to the header's first link."""
    _, run_id = schedule_now(api_client, {"name": "Market (focus after Extend)", "grace_seconds": 300, "phases": [
        {"name": "market", "advance": {"when": "after", "seconds": 600},
         "steps": [{"action": "core.announce", "params": {"message": "The market opens"}}]},
        {"name": "close", "steps": [{"action": "core.announce", "params": {"message": "The market is closed"}}]}]})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    extend = "[data-control='extend'][data-phase='1']"
    button = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, extend), "the phase's Extend")[0]
    assert button.accessible_name == "Extend, phase 1 (market)", "reached by Tab, it names what it extends"
    button.send_keys(Keys.ENTER)
    minutes = eventually(lambda: browser.find_elements(By.ID, "plan-value"), "the minutes asked")[0]
    minutes.send_keys(Keys.ENTER)  # the 10 minutes it offers
    eventually(lambda: "is moved by 10 min" in browser.find_element(By.ID, "notice").text, "the move's notice")
    focused = eventually(lambda: browser.execute_script(
        "const a = document.activeElement; return a.matches(arguments[0]) && !a.disabled && a.dataset.control", extend),
        "focus back on Extend", 10)
    assert focused == "extend"
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})
