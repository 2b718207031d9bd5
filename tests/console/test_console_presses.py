"""Every press says what it will do, and the words after it stay true (issue 40, items 4 and 5), in real
Chromium: the Advance dialog lists the steps it skips; Resume over another person's reasoned pause shows that
reason and takes a note; I have it takes a note; a press refused because the run moved says the new state once
and gives back what was typed; a cancelled run's reason is a reason, not an error; a retried step's attempts
rise as the game saw them."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from devtools.kit.game_bridge import Answer
from tests.console.browser import eventually, text_of
from tests.console.pages import cue_banner, log_rows, notice_text, open_run, press, schedule_now, sign_in, wait_for_status
from tests.support.api import ADMIN, MODERATOR


def _cue_run(api_client, name: str, *after: dict) -> int:
    """A run parked at a named cue, its phase's first step, with `after` steps pending behind it."""
    _, run_id = schedule_now(api_client, {"name": name, "grace_seconds": 300, "phases": [
        {"name": "opening", "steps": [
            {"action": "core.cue", "name": "light_the_bonfire", "params": {"instruction": "Light the bonfire"}}, *after]},
        {"name": "contest", "steps": [{"action": "core.announce", "params": {"message": "The contest begins"}}]}]})
    return run_id


def _dialog(driver) -> str:
    return eventually(lambda: driver.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the dialog")[0].text


def test_the_advance_dialog_lists_each_step_it_skips_and_what_becomes_of_the_run(browser, server, api_client):
    run_id = _cue_run(api_client, "Bonfire (advance)", {"action": "core.announce", "params": {"message": "Lit!"}})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    press(browser, "advance")
    asked = _dialog(browser)
    skips = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#advance-skips li")]
    assert skips == [f"Run {run_id} · Phase 1 · step 1 (light the bonfire): a cue waiting for a game master, is skipped",
                     f"Run {run_id} · Phase 1 · step 2 (core.announce): not begun yet, is skipped"], skips
    assert "Advancing ends phase 1" in asked and "The next phase begins." in asked, asked
    browser.find_element(By.ID, "ask-text").send_keys("the bonfire is lit already")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    eventually(lambda: any("Phase 1 advanced by mod-mia" in text for _, text in log_rows(browser)), "the advance's row")


def test_resume_over_another_persons_reasoned_pause_shows_the_reason_and_takes_a_note(browser, server, api_client):
    run_id = _cue_run(api_client, "Bonfire (resume)")
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    api_client.call("POST", f"/runs/{run_id}/pause", {"reason": "boss bugged"}, ADMIN)
    wait_for_status(browser, "paused")
    # From the inbox's row first: the same words, read from the run's waiting (the row's dialog named no pause).
    browser.get(f"{server.console_url}#/runs")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"#inbox tr[data-inbox='{run_id}'] [data-control='resume']"),
               "the paused run's row")[0].click()
    said = eventually(lambda: text_of(browser, "#ask-pause-reason"), "the pause's reason in the row's resume dialog")
    assert said.startswith("root-admin paused it ") and said.endswith(" ago: “boss bugged”. Resume over it?"), said
    browser.find_element(By.CSS_SELECTOR, "dialog[open] [data-ask='back']").click()
    open_run(browser, server.url, run_id)
    press(browser, "resume")
    eventually(lambda: browser.find_elements(By.ID, "ask-pause-reason"), "the pause's reason in the resume dialog")
    said = text_of(browser, "#ask-pause-reason")
    assert said.startswith("root-admin paused it ") and said.endswith(" ago: “boss bugged”. Resume over it?"), said
    assert browser.find_element(By.CSS_SELECTOR, "label[for='ask-text']").text == "Note (optional)"
    browser.find_element(By.ID, "ask-text").send_keys("boss fixed by the devs")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    wait_for_status(browser, "running")
    eventually(lambda: any("by resume" in text and "note: “boss fixed by the devs”" in text for _, text in log_rows(browser)),
               "the resume's note in the log")


def test_i_have_it_takes_a_note_and_its_button_is_short(browser, server, api_client):
    run_id = _cue_run(api_client, "Bonfire (I have it)")
    name = f"Run {run_id} · Phase 1 · step 1 (light the bonfire)"
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_id, _ = cue_banner(browser)
    button = browser.find_element(By.CSS_SELECTOR, f"[data-cue='{cue_id}'] [data-control='acknowledge']")
    assert (button.text, button.get_attribute("aria-label")) == ("I have it", f"I have it, {name}")
    press(browser, "acknowledge", cue_id, text="on my way to the square")
    eventually(lambda: any(f"{name} acknowledged: mod-mia has it" in text and "note: “on my way to the square”" in text
                           for _, text in log_rows(browser)), "the acknowledge's note in the log")


def test_a_press_refused_because_the_run_moved_says_the_new_state_once_and_keeps_the_typed_note(
        browser, server, api_client):
    run_id = _cue_run(api_client, "Bonfire (race)")
    name = f"Run {run_id} · Phase 1 · step 1 (light the bonfire)"
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_id, _ = cue_banner(browser)
    press(browser, "confirm", cue_id)
    eventually(lambda: browser.find_elements(By.ID, "ask-text"), "the note box")[0].send_keys("bonfire lit")
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "wrong night"}, ADMIN)  # someone else, meanwhile
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    said = eventually(lambda: "did nothing" in notice_text(browser) and notice_text(browser), "the refusal's notice")
    assert said == (f"This run has moved: it is now cancelled, so Confirm ({name}) did nothing."
                    " Your note, not sent: “bonfire lit”."), said


def test_a_cancelled_runs_reason_is_a_reason_not_an_error_even_after_its_cleanup(browser, server, api_client, bridge):
    bridge.script("garden.crows_reason", Answer(200, {"resources": [
        {"kind": "npc", "id": "crow-7", "revert": {"action": "garden.scare", "params": {"crow": "crow-7"}}}]}))
    _, run_id = schedule_now(api_client, {"name": "Crows (cancelled)", "grace_seconds": 300, "phases": [{"name": "crows", "steps": [
        {"action": "garden.crows_reason"}, {"action": "core.cue", "params": {"instruction": "Count the crows"}}]}]})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "storm coming", "cleanup": True}, ADMIN)
    wait_for_status(browser, "cancelled")
    eventually(lambda: text_of(browser, "#run-reason") == "storm coming", "the reason, as a reason")
    assert not browser.find_elements(By.ID, "run-last-error")
    ended = browser.find_element(By.ID, "ended-banner")
    assert "banner-ended" in ended.get_attribute("class") and not ended.find_elements(By.CSS_SELECTOR, ".error-text")
    assert ended.text.startswith("Cancelled by root-admin") and ended.text.endswith("“storm coming”."), ended.text


def test_a_retried_steps_attempts_rise_as_the_game_saw_them(browser, server, api_client, bridge):
    bridge.script("garden.plant_again", Answer(400, {"reason": "the soil is frozen"}))  # then done
    _, run_id = schedule_now(api_client, {"name": "Garden (retried)", "grace_seconds": 300, "phases": [{"name": "plant", "steps": [
        {"action": "garden.plant_again"}, {"action": "core.cue", "params": {"instruction": "Water it"}}]}]})
    name = f"Run {run_id} · Phase 1 · step 1 (garden.plant_again)"
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    wait_for_status(browser, "paused")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#paused-banner [data-control='retry']"), "Retry")[0].click()
    cue_banner(browser)
    sent = [text.split(f"{name} dispatched, ")[1] for _, text in log_rows(browser) if f"{name} dispatched, " in text]
    assert [text.split(":")[0] for text in sent] == ["attempt 1", "attempt 2"], sent
    assert [r.json["attempt"] for r in bridge.received("garden.plant_again")][-2:] == [1, 2]
