"""A dialog says what its action will do to a screen reader as focus enters it: the words between its title and its
text box (a cancel's "stops for good", a moved time's current deadline) are the dialog's description. Before, focus
went straight to the text box and those words were only found by reading backwards."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from tests.console.browser import eventually
from tests.console.pages import cue_banner, open_run, schedule_now, sign_in
from tests.support.api import MODERATOR

DESCRIBED = """const d = document.querySelector('dialog[open]'); if (!d) return null;
const ids = (d.getAttribute('aria-describedby') || '').split(' ').filter(Boolean);
return [ids.map((id) => document.getElementById(id)?.innerText || '').join(' '), document.activeElement.id]"""


def _described(browser, control: str) -> tuple[str, str]:
    """The dialog `control` opens: its description as a screen reader gets it, and what has focus; then gone back from."""
    eventually(lambda: [b for b in browser.find_elements(By.CSS_SELECTOR, f"#run-banners [data-control='{control}'],"
                                                          f" #run-controls [data-control='{control}']") if b.is_enabled()],
               f"{control}, ready")[0].click()
    said, focused = eventually(lambda: browser.execute_script(DESCRIBED), f"{control}'s dialog")
    browser.find_element(By.CSS_SELECTOR, "dialog[open] [data-ask='back']").click()
    return said, focused


def test_a_costly_dialog_describes_what_it_will_do(browser, server, api_client):
    _, run_id = schedule_now(api_client, {"name": "Described", "grace_seconds": 300, "phases": [
        {"name": "opening", "steps": [{"action": "core.cue", "params": {"instruction": "Light the bonfire", "timeout_seconds": 600}}]}]})
    try:
        sign_in(browser, MODERATOR)
        open_run(browser, server.url, run_id)
        cue_banner(browser)
        said, focused = _described(browser, "cancel")
        assert "stops for good" in said and focused == "ask-text", (said, focused)
        said, focused = _described(browser, "extend_cue")
        assert said.startswith("Its deadline is ") and focused == "plan-value", (said, focused)
    finally:
        api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})
