"""A save's warnings, in real Chromium: the API saves a document all the same and says what it could not check or
what the save does not reach. The editor used to say "Saved." and drop them, so an admin fixing a definition
before it went live never heard that the runs already scheduled would play the version they were made from."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from selenium.webdriver.common.by import By

from tests.console.browser import eventually, text_of
from tests.console.pages import listed, sign_in
from tests.support.api import ADMIN


def _announcing(name: str, message: str) -> dict:
    return {"name": name, "grace_seconds": 300,
            "phases": [{"name": "opening", "steps": [{"action": "core.announce", "params": {"message": message}}]}]}


def test_a_new_version_says_the_runs_already_scheduled_keep_theirs(browser, server, api_client):
    name = f"Lantern walk (kept) {datetime.now(UTC):%H%M%S%f}"
    definition_id = api_client.call("POST", "/definitions", _announcing(name, "The walk begins"))["definition"]["id"]
    at = (datetime.now(UTC) + timedelta(days=3)).replace(microsecond=0)
    run_id = api_client.call("POST", f"/definitions/{definition_id}/runs",
                             {"scheduled_for": at.strftime("%Y-%m-%dT%H:%M:%SZ")})["run"]["id"]
    try:
        sign_in(browser, ADMIN)
        browser.get(f"{server.console_url}#/definitions/{definition_id}")
        eventually(lambda: browser.find_elements(By.ID, "add-version"), "the definition's page")[0].click()
        eventually(lambda: browser.find_elements(By.ID, "tab-json"), "the document editor")[0].click()
        box = browser.find_element(By.ID, "document")
        browser.execute_script("arguments[0].value = arguments[1]", box,
                               json.dumps(_announcing(name, "The walk begins at the mill")))
        browser.find_element(By.ID, "save-document").click()
        said = eventually(lambda: "Saved" in (t := text_of(browser, "#notice")) and t, "the save's answer")
        assert said.startswith("Saved, with a warning:"), said
        kept = browser.find_element(By.CSS_SELECTOR, "#save-warnings li[data-code='runs_keep_their_version']").text
        assert f"run {run_id} at {at:%Y-%m-%dT%H:%M:%SZ} (version 1)" in kept and "play version 2" in kept, kept
        eventually(lambda: len(browser.find_elements(By.CSS_SELECTOR, "tr[data-version]")) == 2, "the two versions")
        browser.find_element(By.ID, "kept-runs").click()  # where they are listed, to be upgraded
        eventually(lambda: [run for run, _ in listed(browser)] == [run_id], "the run kept on version 1, listed alone")
        assert "status=scheduled" in browser.current_url and f"definition={definition_id}" in browser.current_url
    finally:
        api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})
