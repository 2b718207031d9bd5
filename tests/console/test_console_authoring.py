"""Authoring in people's words (issue 40, item 6): every field of the editor labelled in words with its JSON
name in a hint; a name another definition holds refused at the name field, listed in Problems and focused
(not only a notice at the top); a `core.wait` that ends its phase warned of beside it in the form and in
rehearsal's timeline."""

from __future__ import annotations

import re
import uuid

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.console.browser import eventually, text_of
from tests.console.pages import editor_field, new_definition, sign_in
from tests.support.api import ADMIN

# A label that is a JSON name rather than words: lower case joined by underscores ("grace_seconds").
JSON_NAME = re.compile(r"^[a-z]+(?:_[a-z]+)+$")


def _labels(browser) -> list[str]:
    return browser.execute_script(
        "return [...document.querySelectorAll('#panel-form label, #panel-form legend')]"
        ".map(l => l.innerText.replace(/ \\(required\\)$/, '').trim())")


def test_every_field_is_labelled_in_words_with_its_json_name_in_a_hint(browser, server):
    new_definition(browser, server.url, ADMIN)
    browser.find_element(By.CSS_SELECTOR, "[data-add-step='phases[0].steps']").click()  # a core.wait, its params
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-path='phases[0].steps[1].params.seconds']"), "the wait")
    grace = editor_field(browser, "grace_seconds")
    label = browser.find_element(By.CSS_SELECTOR, f"label[for='{grace.get_attribute('id')}']").text
    assert label == "Grace before a missed start (seconds)", label
    assert "JSON: grace_seconds" in text_of(browser, "[data-path='grace_seconds'] .field-help")
    assert "JSON: grace_seconds" in browser.execute_script(
        "return arguments[0].getAttribute('aria-describedby').split(' ').map(id => document.getElementById(id).innerText).join(' ')",
        grace), "the hint is the field's description"
    labels = _labels(browser)
    assert "Wait (seconds)" in labels and "When the phase ends" in labels and "If it fails" in labels, labels
    assert [label for label in labels if JSON_NAME.match(label)] == [], labels
    Select(browser.find_element(By.CSS_SELECTOR, "[data-step-action='phases[0].steps[1]']")).select_by_value("core.cue")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-path='phases[0].steps[1].params.remind_after_seconds']"),
               "the cue's fields")
    labels = _labels(browser)
    assert "Remind after (seconds)" in labels and "When nobody answers" in labels, labels
    assert [label for label in labels if JSON_NAME.match(label)] == [], labels


def test_a_name_another_definition_holds_is_marked_at_its_field_listed_and_focused(browser, server, api_client):
    taken = f"Harvest moon {uuid.uuid4().hex[:6]}"
    holder = api_client.call("POST", "/definitions", {"name": taken, "phases": [
        {"steps": [{"action": "core.announce", "params": {"message": "on"}}]}]})["definition"]["id"]
    new_definition(browser, server.url, ADMIN)
    name = editor_field(browser, "name")
    name.clear()
    name.send_keys(taken.upper())
    browser.find_element(By.ID, "save-document").click()
    beside = eventually(lambda: text_of(browser, "[data-path='name'] > .field-problem"), "the refusal beside the name")
    assert beside.startswith(f"Name: the name '{taken.upper()}' is taken by definition {holder}"), beside
    assert name.get_attribute("aria-invalid") == "true"
    listed = browser.find_elements(By.CSS_SELECTOR, "#problems li[data-problem-path='name']")
    assert len(listed) == 1 and "is taken by definition" in listed[0].text and "(JSON: document.name)" in listed[0].text
    assert not browser.find_element(By.ID, "problems-none").is_displayed(), "Problems no longer says none were found"
    assert browser.switch_to.active_element.get_attribute("id") == name.get_attribute("id"), "focus is on the name"
    assert "1 problem; nothing was saved" in text_of(browser, "#notice")


def _wait_warning(browser, step_path: str) -> str:
    return text_of(browser, f"[data-step-path='{step_path}'] [data-warning='wait_ends_phase']")


def test_a_wait_that_ends_its_phase_is_warned_of_in_the_form(browser, server):
    new_definition(browser, server.url, ADMIN)
    assert browser.find_elements(By.CSS_SELECTOR, "[data-warning]") == []
    browser.find_element(By.CSS_SELECTOR, "[data-add-step='phases[0].steps']").click()  # a core.wait, last
    warned = eventually(lambda: _wait_warning(browser, "phases[0].steps[1]"), "the warning beside the last wait")
    assert "This wait ends its phase, so it holds nothing" in warned, warned
    browser.find_element(By.CSS_SELECTOR, "[data-step-path='phases[0].steps[1]'] [data-move='-1']").click()  # moved first
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-warning]") == [], "no warning once it holds a step")


def test_a_wait_that_ends_its_phase_is_warned_of_in_rehearsal(browser, server, api_client):
    document = {"name": f"Quiet close {uuid.uuid4().hex[:6]}", "phases": [{"name": "opening", "steps": [
        {"action": "core.announce", "params": {"message": "Welcome"}}, {"action": "core.wait", "params": {"seconds": 45}}]}]}
    definition_id = api_client.call("POST", "/definitions", document)["definition"]["id"]
    sign_in(browser, ADMIN)
    browser.get(f"{server.console_url}#/definitions/{definition_id}")
    eventually(lambda: browser.find_elements(By.ID, "add-version"), "the definition's page")[0].click()
    eventually(lambda: text_of(browser, "#timeline-length") == "Shortest 0 s; longest 0 s.", "the projection")
    warning = eventually(lambda: text_of(browser, "#timeline-warnings li[data-code='wait_ends_phase']"), "the rehearsal's warning")
    assert warning == ("phase 1 (opening), step 2: the core.wait of 45 s ends its phase, so it holds nothing and the run"
                       " goes on at once; put it before the step it should hold back"), warning
    assert "This wait ends its phase" in _wait_warning(browser, "phases[0].steps[1]"), "and beside the step in the form"
