"""Who has a wait, and handing it over, in real Chromium: the runs list and the cue's banner say who has a cue,
since when and until when; another game master takes it over with a note (the dialog will not go without
one), and then, as its holder, releases it."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from selenium.webdriver.common.by import By

from chalicelib.events import journal
from chalicelib.events.store import log, steps
from tests.console.browser import eventually, screenshot, text_of
from tests.console.dates import clear_of_midnight
from tests.console.pages import cue_banner, log_rows, open_run, press, schedule_now, sign_in
from tests.support.api import GM, token

ROWAN = token("gm", sub="Rowan")
# a hold ends at a time, or on another day at a date and time ("Dec 7, 2026, 12:13 AM": a hold taken before midnight)
UNTIL = r"(\w+ \d{1,2}, \d{4}, )?\d"


def _cue_document(name: str) -> dict:
    return {"name": name, "grace_seconds": 300, "phases": [
        {"name": "bonfire", "steps": [{"action": "core.cue", "params": {"instruction": "Light the bonfire"}}]},
    ], "ending": []}


def _cue_controls(driver) -> set[str]:
    return {b.get_attribute("data-control") for b in driver.find_elements(By.CSS_SELECTOR, "[data-cue] [data-control]")}


def _holder_in_list(driver, run_id: int) -> str:
    return driver.execute_script(
        "const r = document.querySelector(`#runs-list tr[data-run='${arguments[0]}']`);"
        " return r ? r.querySelector('[data-has-it]')?.innerText || '' : ''", run_id)


def test_a_gm_sees_who_has_a_cue_takes_it_over_with_a_note_and_releases_it(browser, server, api_client):
    clear_of_midnight()  # "since 23:59" of a hold taken before midnight reads "since Dec 7, …" after it
    _, run_id = schedule_now(api_client, _cue_document("Bonfire night (handover)"))
    cue_id = eventually(lambda: next((s["id"] for s in api_client.call("GET", f"/runs/{run_id}")["steps"] if s["parked"]), None),
                        "the cue parked", 40)
    api_client.call("POST", f"/runs/{run_id}/steps/{cue_id}/acknowledge", {"note": "on my way"}, token=ROWAN)

    sign_in(browser, GM)  # gm-gus: not the one who has it
    browser.get(f"{server.url}/console#/runs")
    listed = eventually(lambda: _holder_in_list(browser, run_id), "who has the cue, on the runs list", 40)
    assert re.match(r"^ · Rowan has it for \d+ (s|min)$", listed), listed

    open_run(browser, server.url, run_id)
    cue_banner(browser)
    has_it = eventually(lambda: text_of(browser, "[data-cue] [data-has-it]"), "who has the cue, on its banner")
    assert re.match(rf"^Rowan has it since \d[^,]*, until {UNTIL}", has_it), has_it
    shown = eventually(lambda: "take-over" in (controls := _cue_controls(browser)) and controls, "the take-over button")
    assert "release" not in shown and "acknowledge" not in shown, shown  # not theirs to release; someone has it
    screenshot(browser, "run-cue-had-by-someone-else")

    press(browser, "take-over", cue_id)
    dialog = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the take-over's question")[0]
    assert "Note (required)" in dialog.text, dialog.text
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()  # no note: the dialog will not go
    assert browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "a take-over without its note was sent"
    browser.find_element(By.ID, "ask-text").send_keys("Rowan went offline")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()

    mine = eventually(lambda: (text := text_of(browser, "[data-cue] [data-has-it]")).startswith("gm-gus") and text,
                      "the cue is gm-gus's")
    assert re.match(rf"^gm-gus has it since \d[^,]*, until {UNTIL}", mine), mine
    eventually(lambda: "release" in _cue_controls(browser) and "take-over" not in _cue_controls(browser),
               "release offered to the one who has it, take-over not")
    said = eventually(lambda: [text for actor, text in log_rows(browser) if "taken over" in text], "the take-over in the log")
    assert "taken over by gm-gus from Rowan: “Rowan went offline”" in said[0], said
    screenshot(browser, "run-cue-taken-over")

    press(browser, "release", cue_id, text="")
    eventually(lambda: not browser.find_elements(By.CSS_SELECTOR, "[data-cue] [data-has-it]"), "nobody has the cue")
    eventually(lambda: "acknowledge" in _cue_controls(browser), "I have it offered again")
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})


def test_a_cue_held_from_chat_names_the_person_and_platform_everywhere(browser, server, api_client, console_db):
    """Review 1, item 3: a cue held from Discord read "discord:4242 has it" on the run page, the runs list, the
    inbox and the log; each names the person as docs/chat.md promises, "Mira (Discord)"."""
    _, run_id = schedule_now(api_client, _cue_document("Bonfire night (held from chat)"))
    cue_id = eventually(lambda: next((s["id"] for s in api_client.call("GET", f"/runs/{run_id}")["steps"] if s["parked"]), None),
                        "the cue parked", 40)
    api_client.call("POST", f"/runs/{run_id}/steps/{cue_id}/acknowledge", {}, token=token("gm", sub="discord:4242"))
    # The chat press's own row, as the chat press writes it beside the control's.
    console_db.transaction(lambda tx: log.append(tx, journal.chat_pressed(
        steps.get_on_run(tx, run_id, cue_id), "discord:4242", "acknowledge", platform="discord", user_id="4242",
        name="Mira"), datetime.now(UTC)))

    sign_in(browser, GM)
    browser.get(f"{server.url}/console#/runs")
    listed = eventually(lambda: _holder_in_list(browser, run_id), "who has the cue, on the runs list", 40)
    assert re.match(r"^ · Mira \(Discord\) has it for \d+ (s|min)$", listed), listed
    story = eventually(lambda: text_of(browser, f"[data-story='{run_id}']"), "the inbox row")
    assert story.endswith("; Mira (Discord) has it"), story

    open_run(browser, server.url, run_id)
    cue_banner(browser)
    has_it = eventually(lambda: text_of(browser, "[data-cue] [data-has-it]"), "who has the cue, on its banner")
    assert has_it.startswith("Mira (Discord) has it since "), has_it
    said = eventually(lambda: [text for _, text in log_rows(browser) if "acknowledged:" in text], "the acknowledge in the log")
    assert "acknowledged: Mira (Discord) has it" in said[0] and "discord:4242" not in said[0], said
    # The press's own row and each row's actor name her as the API's `people` does.
    pressed = [(actor, text) for actor, text in log_rows(browser) if "pressed in chat" in text]
    assert len(pressed) == 1 and "acknowledge pressed in chat by Mira (Discord)" in pressed[0][1], pressed
    assert "Mira (Discord)" in pressed[0][1].split(" Run ")[0], "the row's actor, named"
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})


def test_a_take_over_of_a_cue_that_changed_hands_while_its_dialog_was_open_says_who_has_it_now(browser, server, api_client):
    """The page sends the holder it showed when tapped: a cue Sam acknowledged after Rowan's hold ended, while the
    take-over's note was being typed, is not taken from Sam with a note addressed to Rowan."""
    from tests.support.api import MODERATOR

    sam = token("gm", sub="Sam")
    _, run_id = schedule_now(api_client, _cue_document("Bonfire night (changed hands)"))
    cue_id = eventually(lambda: next((s["id"] for s in api_client.call("GET", f"/runs/{run_id}")["steps"] if s["parked"]), None),
                        "the cue parked", 40)
    api_client.call("POST", f"/runs/{run_id}/steps/{cue_id}/acknowledge", {}, token=ROWAN)
    sign_in(browser, GM)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    eventually(lambda: "take-over" in _cue_controls(browser), "the take-over button")
    press(browser, "take-over", cue_id)
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the take-over's question")
    api_client.call("POST", f"/runs/{run_id}/steps/{cue_id}/release", {}, token=MODERATOR)  # meanwhile
    api_client.call("POST", f"/runs/{run_id}/steps/{cue_id}/acknowledge", {}, token=sam)
    browser.find_element(By.ID, "ask-text").send_keys("Rowan went offline")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    said = eventually(lambda: "did nothing" in (t := text_of(browser, "#notice")) and t, "the take-over's refusal")
    assert "Sam has it since" in said and "not Rowan as you saw" in said, said
    assert api_client.call("GET", f"/runs/{run_id}")["waiting"]["acknowledged_by"] == "Sam"
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})
