"""Rehearsal's projected timeline beside the document being edited: drawn at once, redrawn as the person
edits (a wait lengthened moves the steps after it), warnings shown, and nothing saved by it."""

from __future__ import annotations

import json
import uuid

from selenium.webdriver.common.by import By

from tests.console.audit import dark, serious_findings
from tests.console.browser import eventually, screenshot, text_of
from tests.console.pages import demo_document, sign_in
from tests.support.api import ADMIN


def _edit(browser, text: str) -> None:
    """Type into the document as a person does: the value changes and an input event fires."""
    box = browser.find_element(By.ID, "document")
    browser.execute_script("arguments[0].value = arguments[1];"
                           " arguments[0].dispatchEvent(new Event('input', {bubbles: true}))", box, text)


def _offsets(browser) -> list[str]:
    return [li.find_element(By.CSS_SELECTOR, ".offset").text
            for li in browser.find_elements(By.CSS_SELECTOR, "#timeline-phases li[data-seq]")]


def test_the_timeline_follows_the_edits_and_saves_nothing(browser, server, api_client):
    document = demo_document(f"Lantern walk {uuid.uuid4().hex[:6]}")
    document["phases"][1]["advance"] = {"when": "signal", "name": "pumpkins_judged"}  # a wait the projection warns of
    definition_id = api_client.call("POST", "/definitions", document)["definition"]["id"]
    sign_in(browser, ADMIN)
    browser.get(f"{server.console_url}#/definitions/{definition_id}")
    eventually(lambda: browser.find_elements(By.ID, "add-version"), "the definition's page")[0].click()
    eventually(lambda: text_of(browser, "#timeline-length") == "Shortest 1 s; longest no limit.", "the first projection")
    # The demo: announce, wait 1 s, spawn, cue; then the contest (held for its signal) and the ending.
    assert _offsets(browser)[:4] == ["+0 s", "+0 s", "+1 s", "+1 s"]
    warnings = [li.get_attribute("data-code") for li in browser.find_elements(By.CSS_SELECTOR, "#timeline-warnings li")]
    assert warnings == ["unbounded_wait"], warnings

    document["phases"][0]["steps"][1]["params"]["seconds"] = 90
    _edit(browser, json.dumps(document, indent=2))
    eventually(lambda: text_of(browser, "#timeline-length") == "Shortest 1 min 30 s; longest no limit.", "the edited wait")
    assert _offsets(browser)[:4] == ["+0 s", "+0 s", "+1 min 30 s", "+1 min 30 s"]
    screenshot(browser, "definition-timeline")
    for scheme in (False, True):
        dark(browser, scheme)
        assert serious_findings(browser) == [], "axe on the timeline"
    dark(browser, False)

    _edit(browser, "{ not json")
    eventually(lambda: "Waiting for valid JSON" in text_of(browser, "#timeline-problem"), "the JSON problem")
    document["phases"][0]["steps"][1]["action"] = "core.wiat"
    _edit(browser, json.dumps(document))
    eventually(lambda: "did you mean `core.wait`?" in text_of(browser, "#timeline-problem"), "the document's problem")
    # Review 1, item 11: a problem is said in words, as the Problems list says it, and points to that list.
    document["phases"][0]["steps"][1]["action"] = "core.wait"
    document["phases"][0]["steps"][1]["params"]["seconds"] = -1
    _edit(browser, json.dumps(document))
    said = eventually(lambda: "Wait (seconds)" in (t := text_of(browser, "#timeline-problem")) and t, "the problem in words")
    assert said.startswith("No timeline until the document is valid: it has a problem, which Save lists under Problems"), said
    assert "Phase 1 · step 2 (core.wait) · Wait (seconds) must be bigger than or equal to 0" in said, said
    assert "document.phases" not in said, said
    detail = api_client.call("GET", f"/definitions/{definition_id}")
    assert [v["version"] for v in detail["versions"]] == [1]


def test_the_timeline_shows_what_each_answer_of_a_cue_runs_and_skips(browser, server, api_client):
    choices = [{"value": "north", "label": "North arena"}, {"value": "south", "label": "South arena"}]
    document = {"name": f"Arena night {uuid.uuid4().hex[:6]}", "phases": [
        {"name": "ask", "steps": [{"action": "core.cue", "name": "arena",
                                   "params": {"instruction": "Which arena?", "choices": choices}}]},
        {"name": "north", "only_if": {"choice": "arena", "in": ["north"]},
         "steps": [{"action": "core.announce", "params": {"message": "North"}}]}]}
    definition_id = api_client.call("POST", "/definitions", document)["definition"]["id"]
    sign_in(browser, ADMIN)
    browser.get(f"{server.console_url}#/definitions/{definition_id}")
    eventually(lambda: browser.find_elements(By.ID, "add-version"), "the definition's page")[0].click()
    lines = eventually(lambda: [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#timeline-branches li")],
                       "the branches")
    assert lines == ["If cue arena is North arena: runs phase 2; skips nothing.",
                     "If cue arena is South arena: runs nothing; skips phase 2.",
                     "Otherwise, for cue arena (no answer): runs nothing; skips phase 2."], lines
