"""A screen-reader user on a run's page hears when the run changes: someone else takes the cue, the run moves on to
its next cue, an escalation fires. The banners are redrawn in place with no live region; a status region now says
the first banner's words (not its timers, which move every few seconds) each time what the run waits for changes."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from tests.console.browser import eventually
from tests.console.pages import cue_banner, escalate, open_run, schedule_now, sign_in
from tests.support.api import ADMIN, GM


def _said(browser) -> str:
    return browser.execute_script("const s = document.querySelector('main [role=status]#run-changed'); return s ? s.textContent : null")


def test_a_change_of_what_the_run_waits_for_is_said_once_in_a_status_region(browser, server, api_client, console_db):
    _, run_id = schedule_now(api_client, {"name": "Said", "grace_seconds": 300, "phases": [{"name": "opening", "steps": [
        {"action": "core.cue", "params": {"instruction": "Light the bonfire"}},
        {"action": "core.cue", "params": {"instruction": "Open the gate"}}]}]})
    try:
        eventually(lambda: api_client.call("GET", f"/runs/{run_id}")["waiting"], "the run at its cue", 40)
        sign_in(browser, GM)
        open_run(browser, server.url, run_id)
        step_id, _ = cue_banner(browser)
        assert _said(browser) == "", "nothing said on opening: the page is read as it is"

        api_client.call("POST", f"/runs/{run_id}/steps/{step_id}/acknowledge", {}, token=ADMIN)  # someone else
        said = eventually(lambda: "has it" in (t := _said(browser)) and t, "who has the cue said")
        assert said.startswith("Waiting for a game master for ") and "Light the bonfire (root-admin has it" in said, said

        escalate(console_db, run_id, step_id)
        said = eventually(lambda: "Escalated" in (t := _said(browser)) and t, "the escalation said")
        assert "Escalated to #staff" in said and "next reminder" not in said, said

        api_client.call("POST", f"/runs/{run_id}/steps/{step_id}/confirm", {"note": "lit"}, token=ADMIN)
        said = eventually(lambda: "Open the gate" in (t := _said(browser)) and t, "the next cue said")
        assert said.startswith("Waiting for a game master for "), said
        assert browser.find_element(By.ID, "run-changed").size["height"] <= 1, "read, not shown: the banners show it"
    finally:
        api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})
