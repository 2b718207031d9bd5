"""What a press acts on is what the person saw when they tapped, once, wherever it is pressed from: the tag of
the run as the page showed it at the tap (not as a poll read it behind the dialog), a deadline moved once however
often its button is tapped while the press is on its way, an inbox row's cue found past the first page of its
run's steps, and a bulk press or a moved deadline that a sign-in's end stopped said as not sent, its reason kept."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from selenium.webdriver.common.by import By

from chalicelib.events.lifecycle import RunStatus
from tests.console.browser import eventually, text_of
from tests.console.pages import cue_banner, log_rows, notice_text, open_run, schedule_now, sign_in, wait_for_status
from tests.support.api import ADMIN, MODERATOR
from tests.support.factory import run_row

BONFIRE = {"grace_seconds": 300, "phases": [
    {"name": "opening", "steps": [{"action": "core.cue", "params": {"instruction": "Light the bonfire"}}]},
    {"name": "contest", "steps": [{"action": "core.announce", "params": {"message": "The contest begins"}}]}]}

# Every POST of the page held 4 s before it goes out (a slow network); window.posts counts them.
SLOW_POSTS = """
const real = window.fetch.bind(window);
window.posts = 0;
window.fetch = (url, init = {}) => (init.method || 'GET') === 'GET' ? real(url, init)
  : new Promise((resolve) => { window.posts += 1; setTimeout(() => resolve(real(url, init)), 4000); });
"""


def test_a_press_carries_the_tag_of_what_the_person_saw_at_the_tap_not_what_a_poll_read_behind_its_dialog(
        browser, server, api_client, console_db):
    _, run_id = schedule_now(api_client, {**BONFIRE, "name": "Bonfire (changed behind the dialog)"})
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    api_client.call("POST", f"/runs/{run_id}/pause", {"reason": "lag spike"}, token=MODERATOR)
    wait_for_status(browser, "paused")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#run-controls [data-control='resume']"), "Resume")[0].click()
    assert "lag spike" in eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the dialog")[0].text
    # Another person, while the dialog is open: resumed, then paused again for another reason; the page reads it.
    api_client.call("POST", f"/runs/{run_id}/resume", {}, token=MODERATOR)
    api_client.call("POST", f"/runs/{run_id}/pause", {"reason": "boss bugged again"}, token=MODERATOR)
    eventually(lambda: any("boss bugged again" in text for _, text in log_rows(browser)), "the new pause read behind the dialog")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    said = eventually(lambda: "did nothing" in (t := notice_text(browser)) and t, "the press's refusal")
    assert "This changed while you were looking" in said, said
    assert run_row(console_db, run_id).status is RunStatus.PAUSED, "not resumed over a pause the person never saw"
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})


def _deadline(api_client, run_id: int) -> datetime:
    detail = api_client.call("GET", f"/runs/{run_id}")
    current = next(p for p in detail["phases"] if p["number"] == detail["run"]["current_phase"])
    return datetime.fromisoformat(current["deadline"].replace("Z", "+00:00"))


def test_extend_tapped_again_while_its_press_is_on_its_way_moves_the_deadline_once(browser, server, api_client):
    _, run_id = schedule_now(api_client, {"name": "Market (extend tapped twice)", "grace_seconds": 300, "phases": [
        {"name": "market", "advance": {"when": "after", "seconds": 1200},
         "steps": [{"action": "core.cue", "params": {"instruction": "Open the stalls"}}]},
        {"name": "close", "steps": [{"action": "core.announce", "params": {"message": "closed"}}]}]})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    before = _deadline(api_client, run_id)
    browser.execute_script(SLOW_POSTS)
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-control='extend']"), "Extend")[0].click()
    eventually(lambda: browser.find_elements(By.ID, "plan-value"), "the minutes")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    button = browser.find_element(By.CSS_SELECTOR, "[data-control='extend']")
    assert (button.text, button.get_attribute("disabled")) == ("Sending…", "true"), "the press shows on its way"
    browser.execute_script("arguments[0].click()", button)  # a second tap, forced past its disabled state
    assert not browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "no second dialog"
    said = eventually(lambda: "moved by" in (t := notice_text(browser)) and t, "the press's answer", 30)
    assert "moved by 10 min" in said, said
    assert browser.execute_script("return window.posts") == 1
    assert (_deadline(api_client, run_id) - before).total_seconds() == 600, "moved once"
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})


def test_an_inbox_rows_confirm_finds_its_cue_past_the_first_page_of_the_runs_steps(browser, server, api_client):
    bulky = [{"action": "garden.shoo", "params": {"note": "x" * 15_600}} for _ in range(66)]  # ~1 MiB: a page of 63
    doc = {"name": "Far bonfire (a cue past the first page)", "grace_seconds": 300, "ending": [], "phases": [
        {"name": "first", "steps": [*bulky, {"action": "core.cue", "params": {"instruction": "Light the far bonfire"}}]}]}
    _, run_id = schedule_now(api_client, doc)
    detail = eventually(lambda: (d := api_client.call("GET", f"/runs/{run_id}")) and (d["waiting"] or {}).get("for") == "cue" and d,
                        "the cue parked", 120)
    cue = detail["waiting"]["step_id"]
    assert all(step["id"] != cue for step in detail["steps"]), "the cue is past the first page"
    sign_in(browser, MODERATOR)
    browser.get(server.console_url + "#/runs")
    button = eventually(lambda: browser.find_elements(
        By.CSS_SELECTOR, f"#inbox tr[data-inbox='{run_id}'] [data-control='confirm']"), "the row's Confirm")[0]
    story = browser.find_element(By.ID, button.get_attribute("aria-describedby")).text
    assert "Light the far bonfire" in story or "step 67" in story, f"the button is read with its step: {story}"
    button.click()
    dialog = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the dialog")[0]
    assert "step 67" in dialog.text, dialog.text
    browser.find_element(By.ID, "ask-text").send_keys("lit")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    eventually(lambda: (api_client.call("GET", f"/runs/{run_id}")["waiting"] or {}).get("for") != "cue",
               "the cue confirmed")
    assert "Not allowed" not in notice_text(browser)


def test_a_bulk_pause_a_sign_ins_end_stopped_is_said_not_sent_with_its_reason(browser, server, api_client):
    _, run_id = schedule_now(api_client, {**BONFIRE, "name": "Bonfire (bulk pause, sign-in ended)"})
    sign_in(browser, MODERATOR)
    browser.get(server.console_url + "#/runs")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"[data-select='{run_id}']"), "the run's box")[0].click()
    browser.find_element(By.CSS_SELECTOR, "#bulk-bar [data-bulk='pause']").click()
    eventually(lambda: browser.find_elements(By.ID, "ask-text"), "the reason box")[0].send_keys("storm coming")
    rotated = dataclasses.replace(server.settings, jwt_secret="a-rotated-secret-0123456789abcdef")
    with server.answering_with(settings=rotated):
        browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
        said = eventually(lambda: text_of(browser, "#sign-in-unsent"), "the sign-in page saying what was not sent")
    assert "was not sent: your sign-in ended first" in said and "“storm coming”" in said, said
    assert api_client.call("GET", f"/runs/{run_id}")["run"]["status"] != "paused"
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})
