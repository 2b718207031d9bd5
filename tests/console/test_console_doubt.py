"""A step in doubt in real Chromium: its banner says it waits for a decision — the game may or may not have
applied it — with the three choices the API offers for it (confirm, skip, resend); the cancel dialog offers no
cleanup until it is decided; resend sends it once more."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from devtools.kit.game_bridge import Answer
from tests.console.browser import eventually, text_of
from tests.console.pages import open_run, press, schedule_now, sign_in, wait_for_status
from tests.support.api import MODERATOR


def test_a_step_in_doubt_shows_its_three_choices_and_resend_sends_it_once_more(browser, server, api_client, bridge):
    bridge.script("garden.seed", Answer(504, "<html>Gateway Timeout</html>"))  # a proxy's: nobody knows
    _, run_id = schedule_now(api_client, {"name": "Seed bed", "grace_seconds": 300, "phases": [{"name": "sow", "steps": [
        {"action": "garden.seed", "params": {"bed": 3}, "on_doubt": "park"}]}]})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    read = "const b = document.querySelector('[data-decision]'); return b && [+b.dataset.decision, b.innerText]"
    step_id, text = eventually(lambda: browser.execute_script(read), "the decision banner", 40)
    assert f"Run {run_id} · Phase 1 · step 1 (garden.seed) waits for a decision" in text, text
    assert "the game may or may not have applied it" in text, text
    choices = [b.get_attribute("data-control") for b in browser.find_elements(By.CSS_SELECTOR, "[data-decision] [data-control]")]
    assert choices == ["confirm", "skip", "resend"], choices
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-cue]")  # not a cue: no reminders, no "I have it"
    assert "in doubt" in text_of(browser, f"[data-step-row='{step_id}']")

    press(browser, "cancel")  # the cancel dialog: no cleanup until the decision is made
    said = eventually(lambda: text_of(browser, "#cleanup-undecided"), "the cancel dialog's word on the undecided step")
    assert said == (f"No cleanup yet: decide Run {run_id} · Phase 1 · step 1 (garden.seed) first (the game may or may not have"
                    " applied it)."), said
    browser.find_element(By.CSS_SELECTOR, "[data-ask='back']").click()

    press(browser, "resend", step_id, text="no seed in bed 3")
    wait_for_status(browser, "completed")
    assert [r.json["attempt"] for r in bridge.received("garden.seed")] == [1, 3]
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-decision]")
