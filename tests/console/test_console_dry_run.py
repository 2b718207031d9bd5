"""A dry run from the definition's page: started at a speed with the simulated bridge, watched to its end on
its run page (marked REHEARSAL) with nobody confirming its cue, and kept out of the runs list until asked for."""

from __future__ import annotations

import re
import uuid

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.console.audit import serious_findings
from tests.console.browser import eventually, text_of
from tests.console.pages import cue_banner, demo_document, open_run, sign_in
from tests.support.api import ADMIN


def _set(browser, element_id: str, value: str) -> None:
    box = browser.find_element(By.ID, element_id)
    box.clear()
    box.send_keys(value)


def test_a_dry_run_started_from_the_definition_runs_to_its_end_and_reaches_no_game(browser, server, api_client,
                                                                                    bridge):
    name = f"Harvest rehearsal {uuid.uuid4().hex[:6]}"
    definition_id = api_client.call("POST", "/definitions", demo_document(name))["definition"]["id"]
    sign_in(browser, ADMIN)
    browser.get(f"{server.console_url}#/definitions/{definition_id}")
    eventually(lambda: browser.find_elements(By.ID, "dry-run-start"), "the dry run form")
    _set(browser, "dry-run-speed", "60")
    Select(browser.find_element(By.ID, "dry-run-bridge")).select_by_value("simulate")
    _set(browser, "dry-run-confirm", "2")
    browser.find_element(By.ID, "dry-run-start").click()

    eventually(lambda: "/runs/" in browser.current_url, "the dry run's page")
    run_id = int(browser.current_url.rsplit("/", 1)[1])
    eventually(lambda: text_of(browser, "#run-rehearsal").startswith("REHEARSAL"), "the run marked REHEARSAL")
    assert "60× speed" in text_of(browser, "#run-rehearsal")
    eventually(lambda: browser.find_element(By.ID, "run-status").get_attribute("data-status") == "completed",
               "the dry run completed, its cue confirmed by the rehearsal", timeout=60)
    assert serious_findings(browser) == [], "axe on a dry run's page"
    assert not [r for r in bridge.received() if r.json["run_id"] == run_id]  # the real bridge got nothing of it

    browser.get(f"{server.console_url}#/runs?definition={definition_id}")
    eventually(lambda: "No runs match." in text_of(browser, "#runs-list"), "the list without rehearsals")
    browser.find_element(By.ID, "filter-rehearsals").click()
    row = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"#runs-list tr[data-run='{run_id}']"),
                     "the dry run listed once asked for")[0]
    assert "REHEARSAL" in row.text
    assert "rehearsals=include" in browser.current_url


def test_the_headers_count_is_the_inbox_s_and_a_dry_run_waiting_is_never_counted(browser, server, api_client):
    """Issue 39: one dry run waiting at its cue made the header say "1 run needs you" over a list that, leaving
    rehearsals out, showed nothing waiting. Issue 40: the header counts the inbox (GET /inbox: the live runs the
    person can act on), whatever the list's filters: a dry run waiting is nobody's emergency."""
    name = f"Cue rehearsal {uuid.uuid4().hex[:6]}"
    document = {"name": name, "phases": [{"name": "only", "steps": [
        {"action": "core.cue", "params": {"instruction": "Hold the gate"}}]}]}
    definition_id = api_client.call("POST", "/definitions", document)["definition"]["id"]
    dry = api_client.call("POST", f"/definitions/{definition_id}/dry-runs",
                          {"speed": 60, "bridge": "simulate", "auto_confirm_seconds": 3600})["run"]["id"]
    eventually(lambda: (api_client.call("GET", f"/runs/{dry}")["waiting"] or {}).get("for") == "cue", "the dry run at its cue")

    def header() -> int:
        words = text_of(browser, "#need-you") if browser.find_element(By.ID, "need-you").is_displayed() else ""
        return int(words.split()[0]) if words else 0

    def counted() -> int:
        return api_client.call("GET", "/inbox?limit=0")["needs_you"]

    sign_in(browser, ADMIN)
    browser.get(f"{server.console_url}#/runs?waiting=cue")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#runs-list"), "the list")
    # Compared as each is read, never with a count read before: the console's runs share one database (a run of
    # another test's schedule may start waiting meanwhile).
    eventually(lambda: header() == counted(), "the header to count the live runs waiting, as the inbox does")
    assert not browser.find_elements(By.CSS_SELECTOR, f"#runs-list tr[data-run='{dry}']"), "the dry run is not listed"
    browser.find_element(By.ID, "filter-rehearsals").click()
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"#runs-list tr[data-run='{dry}']"), "the dry run listed")
    assert dry not in [row["id"] for row in api_client.call("GET", "/inbox")["runs"]], "never in the inbox"
    # Its cue does not time out: the rehearsal confirms it, and that is not a timeout to extend.
    open_run(browser, server.url, dry)
    cue_id, _ = cue_banner(browser)
    timers = eventually(lambda: text_of(browser, f"[data-cue-timers='{cue_id}']"), "the cue's timers")
    # In an hour of real time less the minute or more since it parked (the pages between take seconds each,
    # more on a busy machine): not at 60× speed, nor a timeout.
    assert re.search(r"· confirmed by the rehearsal in 5\d min", timers) and "times out" not in timers, timers
    offered = [b.get_attribute("data-control") for b in browser.find_elements(By.CSS_SELECTOR, f"[data-cue='{cue_id}'] button")]
    assert "confirm" in offered and "extend_cue" not in offered, offered
    eventually(lambda: header() == counted(), "the header still to count the live runs alone")
    assert dry not in [row["id"] for row in api_client.call("GET", "/inbox")["runs"]], "still never in the inbox"
    api_client.call("POST", f"/runs/{dry}/cancel", {"reason": "the test is over"})
