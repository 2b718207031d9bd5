"""Offered means allowed, in real Chromium (issue 39, item 5): the page draws exactly the controls the API offers
the signed-in person. A game master looking at a step parked for a decision sees no Confirm or Skip (the server
would refuse them: whether the game applied it is a moderator's decision), nor any run control; a moderator
sees Confirm, Skip and Resend on it. Beside the deadline of the phase the run is at, Extend is drawn exactly when
the API offers it (`controls.phase`): to a moderator, not to a gm."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from devtools.kit.game_bridge import Answer
from tests.console.browser import eventually
from tests.console.pages import open_run, schedule_now, sign_in
from tests.support.api import GM, MODERATOR


def _decision(driver, server, run_id: int) -> tuple[int, list[str], list[str]]:
    """The step waiting for a decision, once its banner shows: (its id, the controls drawn for it anywhere on
    the page, the run's controls drawn)."""
    open_run(driver, server.url, run_id)
    read = "const b = document.querySelector('[data-decision]'); return b && +b.dataset.decision"
    step_id = eventually(lambda: driver.execute_script(read), "the decision banner", 40)
    drawn = [b.get_attribute("data-control") for b in driver.find_elements(By.CSS_SELECTOR, f"[data-control][data-step='{step_id}']")]
    run_controls = [b.get_attribute("data-control") for b in driver.find_elements(By.CSS_SELECTOR, "[data-control]:not([data-step])")]
    return step_id, drawn, run_controls


def test_a_gm_sees_no_control_the_server_refuses_on_a_decision_and_a_moderator_sees_them(browser, server, api_client, bridge):
    bridge.script("garden.seed", Answer(504, "<html>Gateway Timeout</html>"))  # a proxy's: nobody knows
    _, run_id = schedule_now(api_client, {"name": "Seed bed (offered)", "grace_seconds": 300, "phases": [
        {"name": "sow", "steps": [{"action": "garden.seed", "params": {"bed": 4}, "on_doubt": "park"}]}]})

    sign_in(browser, GM)
    step_id, drawn, run_controls = _decision(browser, server, run_id)
    assert drawn == [] and run_controls == [], (drawn, run_controls)
    offered = api_client.call("GET", f"/runs/{run_id}", token=GM)["controls"]
    assert offered["steps"][str(step_id)] == [] and offered["run"] == []  # the API offers the gm nothing here

    browser.execute_script("sessionStorage.clear()")
    browser.get(server.console_url)
    sign_in(browser, MODERATOR)
    step_id, drawn, run_controls = _decision(browser, server, run_id)
    # The banner's buttons, then the same three in the step's row.
    assert drawn == ["confirm", "skip", "resend"] * 2, drawn
    assert run_controls == ["pause", "cancel"], run_controls
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})


def test_the_phases_extend_is_drawn_exactly_when_the_api_offers_it(browser, server, api_client):
    _, run_id = schedule_now(api_client, {"name": "Market hour (offered)", "grace_seconds": 300, "phases": [
        {"name": "market", "advance": {"when": "after", "seconds": 600},
         "steps": [{"action": "core.announce", "params": {"message": "The market opens"}}]},
        {"name": "close", "steps": [{"action": "core.announce", "params": {"message": "Closed"}}]}]})
    drawn = {}
    for token in (GM, MODERATOR):
        browser.execute_script("sessionStorage.clear()")
        browser.get(server.console_url)
        sign_in(browser, token)
        open_run(browser, server.url, run_id)
        # The deadline and the phase's buttons are drawn in one pass: once it shows, the button is there or never.
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-phase-facts='1'] time"), "the phase's deadline", 40)
        offered = api_client.call("GET", f"/runs/{run_id}", token=token)["controls"]["phase"]
        shown = [b.get_attribute("data-phase") for b in browser.find_elements(By.CSS_SELECTOR, "[data-control='extend']")]
        drawn[token] = (offered, shown)
    assert drawn == {GM: ([], []), MODERATOR: (["extend"], ["1"])}, drawn
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})
