"""A phase that ends on the game's signal, in real Chromium: the page says what it waits for, and the signal ends it
whether it comes through the API while the page is open or from the page's own Send signal button."""

from __future__ import annotations

import re

from selenium.webdriver.common.by import By

from tests.console.browser import eventually, screenshot, text_of
from tests.console.pages import cue_banner, log_rows, notice_text, open_run, phase_facts, schedule_now, sign_in, wait_for_status
from tests.support.api import GM, MODERATOR


def _boss_document(name: str, signal: str, steps: list[dict], **advance) -> dict:
    return {"name": name, "grace_seconds": 300, "phases": [
        {"name": "boss fight", "advance": {"when": "signal", "name": signal, **advance}, "steps": steps},
        {"name": "loot", "steps": [{"action": "core.announce", "params": {"message": "Loot for everyone"}}]},
    ], "ending": [{"action": "core.announce", "params": {"message": "Thanks for fighting"}}]}


def _announce(message: str) -> dict:
    return {"action": "core.announce", "params": {"message": message}}


def _signal_banner(driver, timeout: float = 40) -> str:
    return eventually(lambda: text_of(driver, "#signal-banner"), "the signal banner", timeout)


def _ends_by_the_signal(driver, signal: str, sender: str) -> None:
    """The run completes; phase 1 reads closed by the signal, and the log has the signal's row."""
    wait_for_status(driver, "completed")
    assert not driver.find_elements(By.ID, "signal-banner")
    assert f"closed by the signal {signal} from {sender} at" in phase_facts(driver, 1), phase_facts(driver, 1)
    signalled = [text for actor, text in log_rows(driver) if actor == sender and f"Signal {signal} from" in text]
    assert signalled and f"Signal {signal} from {sender}: ends phase 1" in signalled[0], log_rows(driver)


def test_a_signal_sent_through_the_api_while_the_page_is_open_ends_the_phase_and_cancels_its_cue(browser, server, api_client):
    steps = [_announce("The boss appears"), {"action": "core.cue", "params": {"instruction": "Keep the crowd back"}}]
    _, run_id = schedule_now(api_client, _boss_document("Boss night (API signal)", "boss_defeated", steps))
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_id, _ = cue_banner(browser)
    banner = _signal_banner(browser)
    assert "Phase 1 (boss fight) is waiting for the game's signal boss_defeated" in banner, banner
    assert "until" not in banner, banner  # no time limit
    assert phase_facts(browser, 1) == "Ends on the signal boss_defeated.", phase_facts(browser, 1)
    screenshot(browser, "run-waits-for-a-signal")

    answer = api_client.call("POST", f"/runs/{run_id}/signals/boss_defeated", {}, token=MODERATOR)
    assert answer["effect"] == "ends_phase", answer

    _ends_by_the_signal(browser, "boss_defeated", "mod-mia")
    cancelled = browser.find_element(By.CSS_SELECTOR, f"[data-step-row='{cue_id}']")
    assert cancelled.get_attribute("data-status") == "cancelled"
    assert "phase 1 (boss fight) ended on the signal boss_defeated" in cancelled.text, cancelled.text
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-cue]")
    browser.execute_script("document.querySelector(\"h3[data-phase='1']\").scrollIntoView()")
    screenshot(browser, "run-phase-closed-by-a-signal")


def test_staff_send_the_signal_a_held_phase_waits_for_from_the_page(browser, server, api_client):
    document = _boss_document("Boss night (page signal)", "boss_slain", [_announce("The boss appears")],
                              timeout_seconds=1800, on_timeout="pause")
    _, run_id = schedule_now(api_client, document)
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    banner = eventually(lambda: "its steps are done" in (text := _signal_banner(browser)) and text, "the held phase's banner", 40)
    assert "Phase 1 (boss fight) is waiting for the game's signal boss_slain, until " in banner, banner
    assert re.search(r"\(times out in (29|30) min\); its steps are done\.", banner), banner
    until = browser.find_element(By.CSS_SELECTOR, "#signal-banner time")
    assert until.get_attribute("title").endswith(" UTC"), until.get_attribute("title")
    facts = phase_facts(browser, 1)
    assert facts.startswith("Ends on the signal boss_slain · at most 30 min, then pause · pauses the run at "), facts

    browser.find_element(By.ID, "send-signal").click()
    asked = eventually(lambda: browser.find_elements(By.ID, "ask-title"), "the confirmation")[0]
    assert "boss_slain" in asked.text and "phase 1 (boss fight)" in asked.text, asked.text
    assert not browser.find_elements(By.ID, "ask-text"), "a signal asks to confirm, not for a reason"
    screenshot(browser, "run-send-signal-confirm")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()

    eventually(lambda: "Signal boss_slain received from mod-mia: ends phase 1 (boss fight)." in notice_text(browser),
               f"the signal's effect in words (the notice reads {notice_text(browser)!r})")
    _ends_by_the_signal(browser, "boss_slain", "mod-mia")


def test_a_gm_sees_what_the_phase_waits_for_but_no_send_signal_button(browser, server, api_client):
    _, run_id = schedule_now(api_client, _boss_document("Boss night (gm)", "boss_fled", [_announce("The boss appears")]))
    sign_in(browser, GM)
    open_run(browser, server.url, run_id)
    banner = eventually(lambda: "its steps are done" in (text := _signal_banner(browser)) and text, "the held phase's banner", 40)
    assert "Phase 1 (boss fight) is waiting for the game's signal boss_fled" in banner, banner
    assert not browser.find_elements(By.ID, "send-signal")
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-control]")
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})  # held, it would wait for ever
