"""Cleaning up after the fact, in real Chromium: a completed run that left crows in the game world offers Clean up
on its "Left in the game world" section; the dialog asks for an optional reason and says what it reverts; pressed,
the section shows the cleanup's progress until it says nothing is left, and the run stays completed."""

from __future__ import annotations

import threading

from selenium.webdriver.common.by import By

from devtools.kit.game_bridge import Answer
from tests.console.browser import eventually, screenshot, text_of
from tests.console.pages import open_run, schedule_now, sign_in, wait_for_status
from tests.console.test_console_cleanup import _crow, _resources
from tests.support.api import MODERATOR


def test_a_completed_runs_clean_up_from_its_ledger_section(browser, server, api_client, bridge):
    bridge.script("garden.crows", Answer(200, {"resources": [_crow("crow-1"), _crow("crow-2")]}))
    shooed = threading.Event()
    bridge.script("garden.shoo", Answer(200, gate=shooed), Answer(200))
    _, run_id = schedule_now(api_client, {"name": "Crow field", "grace_seconds": 300, "phases": [{"name": "crows", "steps": [
        {"action": "garden.crows"}]}]})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    wait_for_status(browser, "completed")
    eventually(lambda: _resources(browser) == {"npc crow-1": "live", "npc crow-2": "live"}, "the crows left live")
    button = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#resources-controls [data-control='cleanup']"),
                        "the Clean up button on the ledger's section")[0]
    assert button.text == "Clean up"
    assert not browser.find_elements(By.CSS_SELECTOR, "#run-controls [data-control='cleanup']")
    button.click()
    dialog = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the Clean up dialog")[0]
    assert "Each of the 2 resources run" in dialog.text and "is reverted, newest first" in dialog.text, dialog.text
    assert "the run stays completed" in dialog.text
    assert "null" not in text_of(browser, "#run-resources")
    screenshot(browser, "clean-up-a-finished-run")
    browser.find_element(By.ID, "ask-text").send_keys("crows in the square")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()

    progress = eventually(lambda: "to go" in text_of(browser, "#cleanup-progress") and text_of(browser, "#cleanup-progress"),
                          "the cleanup's progress")
    assert progress.endswith("the run stays completed."), progress
    shooed.set()
    eventually(lambda: _resources(browser) == {"npc crow-1": "reverted", "npc crow-2": "reverted"}, "both crows reverted")
    done = eventually(lambda: "nothing it could revert is left" in text_of(browser, "#cleanup-progress")
                      and text_of(browser, "#cleanup-progress"), "the section saying nothing is left")
    assert done == "Cleanup: 2 of 2 reverted; nothing it could revert is left in the game world.", done
    assert text_of(browser, "#resources-live") == "0 live of 2 recorded."
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-control='cleanup']")
    wait_for_status(browser, "completed")
    # Newest first. A revert whose lease lapsed on a loaded machine is sent again under its same key (at least
    # once, as every step): the order is that of each crow's first delivery.
    delivered = [r.json["params"]["crow"] for r in bridge.received("garden.shoo")]
    assert list(dict.fromkeys(delivered)) == ["crow-2", "crow-1"], delivered
