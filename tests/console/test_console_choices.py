"""A cue that asks, in real Chromium (issue 39, item 3): a game master sees a button per answer where a plain
Confirm would be, presses one, and the run takes the phases that answer chose; the step shows the answer,
the phase not taken says why it was passed over, and the log names the answer."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from tests.console.browser import eventually, text_of
from tests.console.pages import cue_banner, log_rows, open_run, schedule_now, sign_in, wait_for_status
from tests.support.api import GM

ARENA_NIGHT = {"name": "Arena night (console)", "grace_seconds": 300, "phases": [
    {"name": "ask", "steps": [{"action": "core.cue", "name": "arena", "params": {
        "instruction": "Which arena is free?",
        "choices": [{"value": "north", "label": "North arena"}, {"value": "south", "label": "South arena"}]}}]},
    {"name": "north", "only_if": {"choice": "arena", "in": ["north"]},
     "steps": [{"action": "core.announce", "params": {"message": "To the north arena"}}]},
    {"name": "south", "only_if": {"choice": "arena", "in": ["south"]},
     "steps": [{"action": "core.announce", "params": {"message": "To the south arena"}}]},
]}


def test_a_cue_with_choices_is_answered_by_its_buttons_and_the_run_takes_that_branch(browser, server, api_client):
    _, run_id = schedule_now(api_client, ARENA_NIGHT)
    sign_in(browser, GM)
    open_run(browser, server.url, run_id)
    step_id, text = cue_banner(browser)
    assert "Which arena is free?" in text, text
    in_banner = f"[data-cue='{step_id}'] [data-control]"
    buttons = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, in_banner), "the cue's buttons")
    assert [(b.get_attribute("data-control"), b.get_attribute("data-choice"), b.text) for b in buttons
            if b.get_attribute("data-control") == "confirm"] == [
        ("confirm", "north", "North arena"), ("confirm", "south", "South arena")]
    assert not browser.find_elements(By.CSS_SELECTOR, f"[data-control='confirm'][data-step='{step_id}']:not([data-choice])")
    assert [b.get_attribute("data-control") for b in buttons if not b.get_attribute("data-choice")] == ["skip", "acknowledge"]

    browser.find_element(By.CSS_SELECTOR, f"[data-cue='{step_id}'] [data-choice='south']").click()
    asked = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the confirm's question")[0]
    assert "The answer: South arena." in asked.text, asked.text
    browser.find_element(By.ID, "ask-text").send_keys("north is flooded")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()

    wait_for_status(browser, "completed")
    answer = eventually(lambda: text_of(browser, f"[data-answer='{step_id}']"), "the answer on the step's row")
    assert answer == "Answer: South arena (south)", answer
    passed = eventually(lambda: text_of(browser, "[data-passed-over='2']"), "the phase passed over")
    assert passed == "Passed over: skipped: cue arena answered south, not one of [north].", passed
    rows = [text for _, text in log_rows(browser)]
    assert any("step 1 (arena) running → done by confirm answer: south note: “north is flooded”" in r for r in rows), rows
    assert any("Phase 2 “north” passed over" in r for r in rows), rows
    assert any("Phase 3 “south” began" in r for r in rows), rows
