"""What a press does when the sign-in, the network or the person's own thumb gets in its way (review uireview D1,
D8, D9), in real Chromium.

- A sign-in that expires while a control's dialog is open: the dialog does not stay on top of the sign-in page, and
  the sign-in page says what was not sent and what was typed; so does a press the API answers 401.
- A double tap on a "Needs you" row's control opens one dialog, and the button says "Sending…" from the first tap.
- A press waiting out a 503's Retry-After is said, and the page's own polls answered meanwhile neither say
  "Live: updating every 2 s" nor wipe it.
"""

from __future__ import annotations

import dataclasses
import time

from selenium.webdriver.common.by import By

from tests.console.browser import PHONE, eventually, text_of
from tests.console.pages import cue_banner, notice_text, open_run, press, run_status, schedule_now, sign_in
from tests.support.api import GM, MODERATOR, token
from tests.support.scenes import log_rows as logged

BONFIRE = {"grace_seconds": 300, "phases": [
    {"name": "opening", "steps": [{"action": "core.cue", "params": {"instruction": "Light the bonfire"}}]},
    {"name": "contest", "steps": [{"action": "core.announce", "params": {"message": "The contest begins"}}]}]}


def test_an_expired_sign_in_closes_the_open_dialog_and_says_what_was_not_sent(browser, server, api_client):
    _, run_id = schedule_now(api_client, {**BONFIRE, "name": "Bonfire (sign-in expires in a dialog)"})
    seconds = 14
    sign_in(browser, token("gm", sub="gm-gus", ttl=seconds))
    signed_at = time.monotonic()
    open_run(browser, server.url, run_id)
    step_id, _ = cue_banner(browser)
    press(browser, "confirm", step_id)
    eventually(lambda: browser.find_elements(By.ID, "ask-text"), "the note box")[0].send_keys("lit at 20:14")
    said = eventually(lambda: text_of(browser, "#sign-in-unsent"), "the sign-in page saying what was not sent",
                      seconds + 15 - (time.monotonic() - signed_at))
    assert not browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "no dialog left on top of the sign-in page"
    assert "Not sent" in said and "Confirm" in said and "“lit at 20:14”" in said, said
    assert "expired" in text_of(browser, "#sign-in-reason")
    assert api_client.call("GET", f"/runs/{run_id}")["steps"][0]["status"] == "running"  # nothing was sent

    sign_in(browser, GM)  # once signed in again, it is said where the person can press it again
    again = eventually(lambda: "Before you signed in again" in (t := notice_text(browser)) and t, "the carried notice")
    assert "“lit at 20:14”" in again, again
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})


def test_a_press_the_api_answers_401_says_on_the_sign_in_page_it_was_not_sent_with_its_note(browser, server, api_client):
    _, run_id = schedule_now(api_client, {**BONFIRE, "name": "Bonfire (401 on a press)"})
    sign_in(browser, GM)
    open_run(browser, server.url, run_id)
    step_id, _ = cue_banner(browser)
    press(browser, "confirm", step_id)
    eventually(lambda: browser.find_elements(By.ID, "ask-text"), "the note box")[0].send_keys("lit at 20:14")
    with server.answering_with(settings=dataclasses.replace(server.settings, jwt_secret="a-rotated-secret-0123456789abcdef")):
        browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
        said = eventually(lambda: text_of(browser, "#sign-in-unsent"), "what the 401 stopped, on the sign-in page")
    assert "Confirm" in said and "was not sent" in said and "“lit at 20:14”" in said, said
    assert api_client.call("GET", f"/runs/{run_id}")["steps"][0]["status"] == "running"
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})


def test_a_double_tap_on_a_needs_you_rows_control_opens_one_dialog_and_says_sending_at_once(browser, server, api_client,
                                                                                            console_db):
    _, run_id = schedule_now(api_client, {**BONFIRE, "name": "Bonfire (double tap in the inbox)"})
    browser.set_window_size(*PHONE)
    sign_in(browser, GM)
    browser.get(f"{server.console_url}#/runs")
    css = f"#inbox-table [data-control='confirm'][data-run='{run_id}']"
    button = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, css), "the row's Confirm", 40)[0]
    with server.delaying(f"/runs/{run_id}", 2.5):  # a slow network: the run's read takes its time
        browser.execute_script("arguments[0].click()", button)
        busy = browser.execute_script(
            "const b = document.querySelector(arguments[0]); return [b.textContent, b.disabled]", css)
        time.sleep(0.3)
        browser.execute_script("const b = document.querySelector(arguments[0]); b.disabled = false; b.click()", css)
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the dialog", 15)
        time.sleep(3)
    assert busy == ["Sending…", True], busy
    assert len(browser.find_elements(By.CSS_SELECTOR, "dialog[open]")) == 1
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    eventually(lambda: notice_text(browser).startswith("Confirmed"), "the confirm's answer", 20)
    time.sleep(1)
    assert not browser.find_elements(By.CSS_SELECTOR, "dialog[open]")
    confirms = [r for r in logged(console_db, run_id) if (r["detail"] or {}).get("control") == "confirm"]
    assert len(confirms) == 1
    assert len(server.requested(f"/runs/{run_id}/steps/", method="POST")) == 1


def test_a_press_waiting_out_a_503_is_said_while_the_pages_polls_are_answered(browser, server, api_client):
    _, run_id = schedule_now(api_client, {**BONFIRE, "name": "Bonfire (503 on a press)"})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    step_id, _ = cue_banner(browser)
    with server.failing(f"/runs/{run_id}/steps/{step_id}/acknowledge", 503):
        press(browser, "acknowledge", step_id, text="on my way")
        eventually(lambda: "is not sent yet" in text_of(browser, "#connection"), "the press's wait, said", 10)
        time.sleep(4.5)  # two of the page's polls, answered, while the press waits
        waiting = text_of(browser, "#connection")
        line = text_of(browser, "#freshness-line")
    assert "Your I have it is not sent yet" in waiting and "the server answered 503" in waiting, waiting
    assert "Live: updating" not in line and "I have it" in line, line
    eventually(lambda: notice_text(browser).startswith("Acknowledged"),
               "the press, sent once the 503s stop", 20)
    eventually(lambda: not text_of(browser, "#connection"), "the wait no longer said")
    assert run_status(browser) == "running"
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})


def test_a_sign_in_that_expires_with_the_shortcuts_help_open_says_nothing_was_lost(browser, server, api_client):
    seconds = 8
    sign_in(browser, token("gm", sub="gm-gus", ttl=seconds))
    signed_at = time.monotonic()
    browser.find_element(By.TAG_NAME, "body").send_keys("?")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog#shortcuts[open]"), "the shortcuts' help")
    eventually(lambda: "expired" in text_of(browser, "#sign-in-reason"), "the sign-in page, the sign-in expired",
               seconds + 15 - (time.monotonic() - signed_at))
    assert not browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "no dialog left on top of the sign-in page"
    assert text_of(browser, "#sign-in-unsent") == "", "the help taken for a question not sent"
    sign_in(browser, GM)
    assert "Before you signed in again" not in notice_text(browser)
