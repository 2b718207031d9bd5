"""The definition editor in real Chromium, as an admin: a two-phase event built from forms, saved and run; the
JSON tab one click away, round-tripping exactly (keys the form does not know kept); the API's problems beside
their fields; the differences between two versions; a duplicate as a new definition. axe-core audits the editor
at 0 serious or critical findings."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.console.audit import dark, serious_findings
from tests.console.browser import LAPTOP, PHONE, eventually, text_of
from tests.console.pages import confirm_dialog, editor_field, listed, new_definition, sign_in
from tests.support.api import ADMIN


def _unique(name: str) -> str:
    return f"{name} {datetime.now(UTC):%H%M%S%f}"


def _new_definition(browser, server) -> None:
    new_definition(browser, server.url, ADMIN)


def _input(browser, path: str):
    return editor_field(browser, path)


def _type(browser, path: str, text: str) -> None:
    box = _input(browser, path)
    box.clear()
    box.send_keys(text)


def _choose(browser, path: str, value: str) -> None:
    Select(_input(browser, path)).select_by_value(value)


def _click(browser, css: str) -> None:
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, css), css)[0].click()


def _json_tab(browser) -> dict:
    _click(browser, "#tab-json")
    return json.loads(browser.find_element(By.ID, "document").get_attribute("value"))


def _set_json(browser, document: dict) -> None:
    """Types a document into the JSON tab as a person would (the textarea's input event fires)."""
    _click(browser, "#tab-json")
    browser.execute_script("const t = document.getElementById('document'); t.value = arguments[0];"
                           " t.dispatchEvent(new Event('input', {bubbles: true}))", json.dumps(document, indent=2))


def _audited(browser, page: str) -> None:
    findings = serious_findings(browser)
    assert not findings, f"axe on {page}: {findings}"


def _saved_definition_id(browser) -> int:
    eventually(lambda: browser.find_elements(By.ID, "add-version"), "the saved definition's page")
    return int(browser.current_url.rsplit("/", 1)[-1])


def test_an_admin_builds_a_two_phase_event_from_forms_saves_it_and_runs_it(browser, server, api_client):
    name = _unique("Lantern parade")
    _new_definition(browser, server)
    _type(browser, "name", name)
    _type(browser, "grace_seconds", "120")
    _type(browser, "phases[0].name", "gathering")
    _type(browser, "phases[0].steps[0].params.message", "The parade gathers at the mill")

    _click(browser, "[data-add-step='phases[0].steps']")  # a second step, then moved first
    _choose(browser, "phases[0].steps[1].action", "core.announce")
    _type(browser, "phases[0].steps[1].params.message", "Lanterns are handed out")
    _click(browser, "[data-step-path='phases[0].steps[1]'] [data-move='-1']")
    focused = browser.switch_to.active_element.get_attribute("aria-label")
    assert focused == "Move Phase 1 · step 1 (core.announce) down", "focus follows the moved step, now at the top"

    _click(browser, "[data-add-phase]")
    _type(browser, "phases[1].name", "march")
    _choose(browser, "phases[1].advance.when", "after")
    _type(browser, "phases[1].advance.seconds", "2")
    _type(browser, "phases[1].steps[0].params.seconds", "1")  # the new step's action is the catalogue's first
    _click(browser, "[data-add-step='ending']")
    _choose(browser, "ending[0].action", "core.announce")
    _type(browser, "ending[0].params.message", "Good night")
    assert "Ending · step 1 (core.announce)" in text_of(browser, "[data-step-path='ending[0]'] legend")
    _audited(browser, "the editor's form")

    _click(browser, "#save-document")
    definition_id = _saved_definition_id(browser)
    saved = api_client.call("GET", f"/definitions/{definition_id}/versions/1")["version"]["document"]
    assert saved["name"] == name and saved["grace_seconds"] == 120
    assert [p["name"] for p in saved["phases"]] == ["gathering", "march"]
    assert [s["params"] for s in saved["phases"][0]["steps"]] == [
        {"message": "Lanterns are handed out"}, {"message": "The parade gathers at the mill"}]
    assert saved["phases"][1]["advance"] == {"when": "after", "seconds": 2}
    assert saved["phases"][1]["steps"][0] == {"action": "core.wait", "params": {"seconds": 1}, "version": 1, "on_failure": "pause"}
    assert saved["ending"][0]["params"] == {"message": "Good night"}

    _click(browser, "#schedule-now")
    confirm_dialog(browser)
    run_id = int(eventually(lambda: browser.find_elements(By.ID, "scheduled-run"), "the run scheduled now")[0].text.split()[-1])
    browser.get(f"{server.console_url}#/runs?definition={definition_id}")
    eventually(lambda: run_id in {run for run, _ in listed(browser)}, "the run on the runs list")
    eventually(lambda: api_client.call("GET", f"/runs/{run_id}")["run"]["status"] == "completed", "the run to finish", 40)


def test_the_json_tab_round_trips_exactly_and_keeps_keys_the_form_does_not_know(browser, server):
    _new_definition(browser, server)
    browser.execute_script("window.edits = []; document.querySelector('.doc-editor').addEventListener('documentchange',"
                           " (e) => window.edits.push(e.detail.document?.name))")
    written = {
        "name": "Round trip", "x_author_note": {"kept": [1, 2]},
        "phases": [{"name": "only", "x_colour": "amber", "advance": {"when": "signal", "name": "gate_open"},
                    "steps": [{"action": "world.spawn", "params": {"npc": "scarecrow", "at": {"x": 1}}, "on_failure": "explode"},
                              {"action": "core.cue", "params": {"instruction": "Open the gate", "remind_after_seconds": 60}}]}],
        "schedule": {"cron": "0 20 * * 5", "timezone": "Europe/Berlin"},
    }
    _set_json(browser, written)
    _click(browser, "#tab-form")
    assert _input(browser, "phases[0].steps[0].action").get_attribute("value") == "world.spawn"
    assert json.loads(_input(browser, "phases[0].steps[0].params").get_attribute("value")) == {"npc": "scarecrow", "at": {"x": 1}}
    assert _input(browser, "schedule.timezone").get_attribute("value") == "Europe/Berlin"
    stray = Select(_input(browser, "phases[0].steps[0].on_failure")).first_selected_option.text
    assert stray == "explode (not one of the choices)", "a value the schema does not offer is shown as it is"
    assert _json_tab(browser) == written, "form → JSON without an edit is the same document"

    _click(browser, "#tab-form")
    _type(browser, "name", "Round trip, edited")
    _type(browser, "phases[0].steps[1].params.remind_limit", "2")
    assert _json_tab(browser) == {**written, "name": "Round trip, edited", "phases": [{
        **written["phases"][0], "steps": [written["phases"][0]["steps"][0], {
            "action": "core.cue", "params": {"instruction": "Open the gate", "remind_after_seconds": 60, "remind_limit": 2}}]}]}
    edits = browser.execute_script("return window.edits")
    assert edits[0] == "Round trip" and edits[-1] == "Round trip, edited", "both tabs change the document through one event"
    browser.execute_script("window.edits = []; const t = document.getElementById('document'); t.value = '{ not json';"
                           " document.querySelector('.doc-editor').addEventListener('documentchange', (e) => window.edits.push(e.detail),"
                           " {once: true}); t.dispatchEvent(new Event('input', {bubbles: true}))")
    unreadable = browser.execute_script("return window.edits")[-1]
    assert unreadable["document"] is None and "not valid JSON" in unreadable["problem"], unreadable
    _click(browser, "#tab-form")
    assert browser.find_element(By.ID, "panel-json").is_displayed(), "the form waits for JSON that parses"
    assert "not valid JSON" in text_of(browser, "#document-problem")
    _audited(browser, "the JSON tab")


def test_a_save_with_a_bad_field_shows_the_problem_beside_that_field(browser, server, console_db):
    _new_definition(browser, server)
    _type(browser, "name", _unique("Bad fields"))
    _type(browser, "grace_seconds", "5")
    _click(browser, "[data-add-step='phases[0].steps']")
    _type(browser, "phases[0].steps[1].params.seconds", "-3")
    _click(browser, "#save-document")
    beside = eventually(lambda: text_of(browser, "[data-path='grace_seconds'] .field-problem"), "the problem beside grace_seconds")
    assert beside == "Grace before a missed start (seconds) must be bigger than or equal to 60", beside
    assert text_of(browser, "[data-path='phases[0].steps[1].params.seconds'] .field-problem") == (
        "Phase 1 · step 2 (core.wait) · Wait (seconds) must be bigger than or equal to 0")
    assert _input(browser, "grace_seconds").get_attribute("aria-invalid") == "true"
    assert browser.switch_to.active_element.get_attribute("id") == _input(browser, "grace_seconds").get_attribute("id"), \
        "focus goes to the first field with a problem"
    listed_problems = text_of(browser, "#problems li[data-problem-path='grace_seconds']")
    assert "(JSON: document.grace_seconds)" in listed_problems, "the JSON path in a hint"
    assert "2 problems; nothing was saved" in text_of(browser, "#notice")
    _audited(browser, "the editor with its problems")
    dark(browser, True)
    try:
        _audited(browser, "the editor with its problems, dark")
    finally:
        dark(browser, False)

    browser.find_element(By.CSS_SELECTOR, "#problems li[data-problem-path='grace_seconds'] button").click()
    assert browser.switch_to.active_element.get_attribute("id") == _input(browser, "grace_seconds").get_attribute("id")

    document = _json_tab(browser)
    _set_json(browser, {**document, "grace_seconds": 300, "colour": "amber",
                        "phases": [{**document["phases"][0], "steps": [{"action": "core.announce", "params": {"mesage": "hi"}}]}]})
    _click(browser, "#save-document")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#problems li[data-unmapped]"), "the unmapped problem at the top")
    assert "`colour` is not a field of document" in text_of(browser, "#problems li[data-unmapped]")
    params = "[data-step-path='phases[0].steps[0]'] [data-path='phases[0].steps[0].params'] > .field-problem"
    assert "did you mean `message`?" in text_of(browser, params), "the stray field is named beside the step's params"

    # JSON that does not parse: the notice says so, not the last save's count.
    browser.execute_script("const t = document.getElementById('document'); t.value = '{\"name\": ';"
                           " t.dispatchEvent(new Event('input', {bubbles: true}))")
    _click(browser, "#save-document")
    said = eventually(lambda: "not valid JSON" in (text := text_of(browser, "#notice")) and text, "the notice on broken JSON")
    assert "problems" not in said, said


def test_a_step_is_offered_only_the_fields_its_action_takes(browser, server):
    """A core step takes no static revert, and a wait or a cue no on_doubt: a save refuses them, saying why. The form
    used to offer them on every step, so an author could fill one in only to be told to take it out; now it offers
    them where they mean something, and one the JSON brings still shows, with the save's reason beside it."""
    _new_definition(browser, server)
    _type(browser, "name", _unique("Fields offered"))

    def offered() -> set[str]:
        return {name for name in ("revert", "on_doubt")
                if browser.find_elements(By.CSS_SELECTOR, f"[data-path='phases[0].steps[0].{name}']")}

    eventually(lambda: offered() == {"on_doubt"}, "an announcement: on_doubt (a post in doubt), no revert")
    _choose(browser, "phases[0].steps[0].action", "core.wait")
    eventually(lambda: offered() == set(), "a wait: neither")
    Select(browser.find_element(By.CSS_SELECTOR, "[data-step-action='phases[0].steps[0]']")).select_by_value("module.action")
    eventually(lambda: offered() == {"revert", "on_doubt"}, "a module action: both")

    document = _json_tab(browser)
    waiting = {"action": "core.wait", "params": {"seconds": 5}, "on_doubt": "park"}
    _set_json(browser, {**document, "phases": [{**document["phases"][0], "steps": [waiting]}]})
    _click(browser, "#tab-form")
    eventually(lambda: offered() == {"on_doubt"}, "the wait's on_doubt the JSON brought, shown to be taken out")
    _click(browser, "#save-document")
    beside = eventually(lambda: text_of(browser, "[data-path='phases[0].steps[0].on_doubt'] .field-problem"),
                        "the save's reason beside it")
    assert "core.wait sends nothing anywhere" in beside and "leave on_doubt out" in beside, beside


def test_the_differences_of_two_versions_show_an_added_step_and_a_changed_field(browser, server, api_client):
    first = {"name": _unique("Harvest diff"), "phases": [{"name": "opening", "steps": [
        {"action": "core.announce", "params": {"message": "The harvest begins"}},
        {"action": "core.cue", "params": {"instruction": "Light the bonfire"}}]}]}
    definition_id = api_client.call("POST", "/definitions", first)["definition"]["id"]
    second = json.loads(json.dumps(first))
    second["phases"][0]["steps"][0]["params"]["message"] = "The harvest begins at the mill"
    second["phases"][0]["steps"].insert(1, {"action": "core.wait", "params": {"seconds": 10}})
    api_client.call("PUT", f"/definitions/{definition_id}", second)

    sign_in(browser, ADMIN)
    browser.get(f"{server.console_url}#/definitions/{definition_id}")
    _click(browser, "#diff-compare")
    lines = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#diff-lines > li"), "the differences")
    assert [line.get_attribute("data-change") for line in lines] == ["changed", "added"]
    changed = text_of(browser, "#diff-lines > [data-change='changed']")
    assert "Phase 1 · step 1 (core.announce)" in changed
    assert 'params.message: "The harvest begins" → "The harvest begins at the mill"' in changed, changed
    assert "Phase 1 · step 2 (core.wait)" in text_of(browser, "#diff-lines > [data-change='added']")
    assert text_of(browser, "#diff-lines [data-change='removed']") == "", "the cue that moved down is not removed"
    _audited(browser, "the differences")

    Select(browser.find_element(By.ID, "diff-from")).select_by_value("2")
    _click(browser, "#diff-compare")
    eventually(lambda: text_of(browser, "#diff-lines") == "The two documents are the same.", "no differences")


def test_a_definition_is_duplicated_as_a_new_one(browser, server, api_client):
    original = {"name": _unique("Market day"), "grace_seconds": 600, "phases": [{"name": "stalls", "steps": [
        {"action": "core.announce", "params": {"message": "The market opens"}}]}]}
    definition_id = api_client.call("POST", "/definitions", original)["definition"]["id"]
    sign_in(browser, ADMIN)
    browser.get(f"{server.console_url}#/definitions/{definition_id}")
    _click(browser, "#duplicate-definition")
    assert _input(browser, "name").get_attribute("value") == f"{original['name']} (copy)"
    browser.set_window_size(*PHONE)
    try:
        overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the editor is {overflow} px wider than a phone"
    finally:
        browser.set_window_size(*LAPTOP)
    _click(browser, "#save-document")
    copy_id = _saved_definition_id(browser)
    assert copy_id != definition_id
    copied = api_client.call("GET", f"/definitions/{copy_id}/versions/1")["version"]["document"]
    stored = api_client.call("GET", f"/definitions/{definition_id}/versions/1")["version"]["document"]
    assert copied == {**stored, "name": f"{original['name']} (copy)"}


def test_a_module_step_offers_only_the_actions_the_game_bridge_declares(browser, server, api_client):
    declared = dataclasses.replace(server.settings, module_actions=frozenset({"world.spawn", "world.give_item"}))
    with server.answering_with(settings=declared):
        _new_definition(browser, server)
        browser.refresh()  # a fresh page: the catalogue is read once per page
        _type(browser, "name", _unique("Declared"))
        _choose(browser, "phases[0].steps[0].action", "module.action")
        offered = [o.get_attribute("value") for o in Select(_input(browser, "phases[0].steps[0].action")).options][1:]
        assert offered == ["world.give_item", "world.spawn"], "a choice among the declared actions, not a free id"
        Select(_input(browser, "phases[0].steps[0].action")).select_by_value("world.spawn")
        _click(browser, "#save-document")
        definition_id = _saved_definition_id(browser)
    saved = api_client.call("GET", f"/definitions/{definition_id}/versions/1")["version"]["document"]
    assert saved["phases"][0]["steps"][0]["action"] == "world.spawn"


def test_a_branching_event_is_built_from_forms_its_choices_and_only_if_typed_as_json(browser, server, api_client):
    name = _unique("Arena night")
    _new_definition(browser, server)
    _type(browser, "name", name)
    _choose(browser, "phases[0].steps[0].action", "core.cue")
    _type(browser, "phases[0].steps[0].params.instruction", "Which arena is free?")
    _type(browser, "phases[0].steps[0].params.choices",
          '[{"value": "north", "label": "North arena"}, {"value": "south", "label": "South arena"}]')
    assert "A JSON list of {\"value\": …, \"label\": …}, at most 10." in text_of(
        browser, "[data-path='phases[0].steps[0].params.choices'] .field-help")
    _type(browser, "phases[0].steps[0].name", "arena")
    _click(browser, "[data-add-phase]")
    _type(browser, "phases[1].name", "north")
    _type(browser, "phases[1].only_if.choice", "arena")
    _type(browser, "phases[1].only_if.in", '["north"]')
    _choose(browser, "phases[1].steps[0].action", "core.announce")
    _type(browser, "phases[1].steps[0].params.message", "To the north arena")
    _audited(browser, "the editor's branching fields")

    _click(browser, "#save-document")
    definition_id = _saved_definition_id(browser)
    saved = api_client.call("GET", f"/definitions/{definition_id}/versions/1")["version"]["document"]
    assert saved["phases"][0]["steps"][0]["name"] == "arena"
    assert [c["value"] for c in saved["phases"][0]["steps"][0]["params"]["choices"]] == ["north", "south"]
    assert saved["phases"][1]["only_if"] == {"choice": "arena", "in": ["north"]}
