"""Upgrade, in real Chromium: a fix saved after tonight's run was planned reached it only by cancelling it (and its
occurrence could not be scheduled again). A scheduled run made from an earlier version says so on its page and a
moderator upgrades it there; the save's warning links to the runs kept on their version, where the bulk bar
upgrades those ticked; the log says from which version to which, and who."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from selenium.webdriver.common.by import By

from tests.console.audit import serious_findings
from tests.console.browser import eventually, text_of
from tests.console.pages import confirm_dialog, listed, log_rows, open_run, sign_in
from tests.support.api import MODERATOR


def _announcing(name: str, message: str) -> dict:
    return {"name": name, "grace_seconds": 300,
            "phases": [{"name": "opening", "steps": [{"action": "core.announce", "params": {"message": message}}]}]}


def _scheduled(api_client, definition_id: int, days: int) -> int:
    at = (datetime.now(UTC) + timedelta(days=days)).replace(microsecond=0)
    return api_client.call("POST", f"/definitions/{definition_id}/runs",
                           {"scheduled_for": at.strftime("%Y-%m-%dT%H:%M:%SZ")})["run"]["id"]


def _kept_on_version_1(api_client, label: str) -> tuple[str, int, int]:
    """A run scheduled two days ahead on version 1 of a definition whose version 2 was saved since: (its
    definition's name, its id, the run's id)."""
    name = f"Lantern walk ({label}) {datetime.now(UTC):%H%M%S%f}"
    definition_id = api_client.call("POST", "/definitions", _announcing(name, "The walk begins"))["definition"]["id"]
    run_id = _scheduled(api_client, definition_id, days=2)
    api_client.call("PUT", f"/definitions/{definition_id}", _announcing(name, "The walk begins at the mill"))
    return name, definition_id, run_id


def _upgrade_pressed(browser, server, run_id: int) -> None:
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#run-controls [data-control='upgrade']"),
               "Upgrade")[0].click()


def test_a_moderator_upgrades_a_scheduled_run_on_its_page_and_its_log_says_so(browser, server, api_client):
    name, _, run_id = _kept_on_version_1(api_client, "upgraded")
    try:
        _upgrade_pressed(browser, server, run_id)
        said = text_of(browser, "#run-definition")
        assert said == f"{name}, version 1 (version 2 is current)", said
        asked = confirm_dialog(browser)
        assert "current version" in asked and "It plays version 2 instead of version 1" in asked, asked
        eventually(lambda: text_of(browser, "#run-definition") == f"{name}, version 2", "the run on version 2")
        assert not browser.find_elements(By.CSS_SELECTOR, "[data-control='upgrade']"), "nothing left to upgrade"
        rows = eventually(lambda: [r for r in log_rows(browser) if "upgraded" in r[1]], "the log row")
        assert rows[0][0] == "mod-mia" and "Run upgraded from version 1 to version 2" in rows[0][1], rows
        assert api_client.call("GET", f"/runs/{run_id}")["run"]["definition_version"] == 2
        assert serious_findings(browser) == [], "axe on a run page with Upgrade"
    finally:
        api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})


def test_the_saves_warning_leads_to_the_runs_kept_and_the_bulk_bar_upgrades_those_ticked(browser, server, api_client):
    name = f"Lantern walk (bulk) {datetime.now(UTC):%H%M%S%f}"
    definition_id = api_client.call("POST", "/definitions", _announcing(name, "The walk begins"))["definition"]["id"]
    runs = [_scheduled(api_client, definition_id, days) for days in (2, 3)]
    try:
        sign_in(browser, MODERATOR)
        saved = api_client.call("PUT", f"/definitions/{definition_id}", _announcing(name, "The walk begins at the mill"))
        assert [w["code"] for w in saved["warnings"]] == ["runs_keep_their_version"]
        browser.get(f"{server.console_url}#/runs?status=scheduled&definition={definition_id}")
        eventually(lambda: sorted(run for run, _ in listed(browser)) == sorted(runs), "the two runs kept on version 1")
        for run_id in runs:
            browser.find_element(By.CSS_SELECTOR, f"tr[data-run='{run_id}'] input[type='checkbox']").click()
        eventually(lambda: [b for b in browser.find_elements(By.CSS_SELECTOR, "button")
                            if b.text.strip() == "Upgrade" and b.is_enabled()], "the bulk bar's Upgrade")[0].click()
        asked = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the bulk dialog")[0].text
        assert "Upgrade 2 runs?" in asked, asked
        browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
        eventually(lambda: all(api_client.call("GET", f"/runs/{r}")["run"]["definition_version"] == 2 for r in runs),
                   "both runs on version 2")
        eventually(lambda: "v2" in text_of(browser, f"tr[data-run='{runs[0]}']"), "the list showing version 2")
    finally:
        for run_id in runs:
            api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})


def test_a_version_saved_while_the_upgrade_was_asked_is_refused_not_played(browser, server, api_client):
    """The dialog says which version the run will play; a version saved while it is open is refused by the API,
    said in the notice, and the run keeps its version: a draft saved a moment ago is never played unseen."""
    name, definition_id, run_id = _kept_on_version_1(api_client, "saved meanwhile")
    try:
        _upgrade_pressed(browser, server, run_id)
        asked = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the question")[0].text
        assert "It plays version 2 instead of version 1" in asked, asked
        api_client.call("PUT", f"/definitions/{definition_id}", _announcing(name, "A half-finished draft"))
        browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
        said = eventually(lambda: "saved since you looked" in (t := text_of(browser, "#notice")) and t, "the refusal")
        assert "version 3 was saved since you looked (you asked for version 2)" in said, said
        assert api_client.call("GET", f"/runs/{run_id}")["run"]["definition_version"] == 1
    finally:
        api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})
