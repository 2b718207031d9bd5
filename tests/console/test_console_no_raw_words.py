"""No "null", "undefined", "[object" or raw JSON in any rendering (issue 40, item 5): every page of the console,
in every state a run and its steps can be shown in, read as a person reads it — the visible text, the open
dialogs, the names given to assistive technology (aria-label, title) and the tab's title — and scanned for the
words a program leaks when it prints a value it did not mean to show."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime, timedelta

from selenium.webdriver.common.by import By

from devtools.kit.game_bridge import Answer
from tests.console.browser import eventually, text_of
from tests.console.pages import cue_banner, open_run, press, schedule_now, sign_in, wait_for_status
from tests.support.api import ADMIN, GM, MODERATOR

LEAKS = re.compile(r"\bnull\b|\bundefined\b|\bNaN\b|\[object ")
# What a person reads on the page, each with where it stands (the nearest id): the rendered text (hidden elements
# and the editors' own text boxes are not), the names and titles assistive technology reads out, the tab's title.
READ = """
const where = (e) => { const at = e.closest('[id]'); return at ? `#${at.id}` : e.tagName.toLowerCase(); };
const shown = (e) => e.getClientRects().length > 0 && !e.closest('textarea, script, style');
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const read = [[document.title, 'title']];
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  if (node.parentElement && shown(node.parentElement) && node.textContent.trim()) read.push([node.textContent, where(node.parentElement)]);
}
for (const e of document.querySelectorAll('[aria-label], [title], [placeholder]')) {
  if (!shown(e)) continue;
  for (const a of ['aria-label', 'title', 'placeholder']) if (e.getAttribute(a)) read.push([e.getAttribute(a), `${where(e)}[${a}]`]);
}
return [...read, [document.body.innerText, 'the page as a whole']];
"""


def _raw_json(text: str) -> list[str]:
    """Every stretch of `text` that parses as a JSON object or list with something in it."""
    decoder = json.JSONDecoder()
    found = []
    for start in (m.start() for m in re.finditer(r"[\[{]", text)):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict | list) and value:
            found.append(text[start:start + 80])
    return found


# The log's rows said as the console's fallback says a kind it has no words for: "run.x: field value, …".
RAW_ROWS = """
return [...document.querySelectorAll('#run-log li')].map((li) => [li.dataset.kind, li.lastElementChild.textContent])
  .filter(([kinds, text]) => kinds.split(' ').some((kind) => text.startsWith(kind)));
"""


def leaks(browser, where: str) -> list[str]:
    """What the page shows that a person should never read, each with where it was found: a log row in its kind's
    raw words among them."""
    found = [f"{where}, a {kind} row in raw words: {text[:160]!r}" for kind, text in browser.execute_script(RAW_ROWS)]
    for text, at in browser.execute_script(READ):
        for line in text.splitlines():
            if LEAKS.search(line) or _raw_json(line):
                found.append(f"{where}, {at}: {line.strip()[:160]!r}")
    return found


def _settled(browser, css: str, what: str) -> None:
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, css), what)
    eventually(lambda: "Loading" not in text_of(browser, "main"), f"{what}, loaded")


def _crow(name: str) -> dict:
    return {"kind": "npc", "id": name, "revert": {"action": "garden.shoo", "params": {"crow": name}}}


def _garden(name: str, *steps: dict, **more) -> dict:
    return {"name": f"{name} {uuid.uuid4().hex[:6]}", "grace_seconds": 300, **more,
            "phases": [{"name": "garden", "steps": list(steps)}]}


CUE = {"action": "core.cue", "params": {"instruction": "Count the crows"}}


def _run_page(browser, server, run_id: int, status: str, where: str) -> list[str]:
    open_run(browser, server.url, run_id)
    wait_for_status(browser, status)
    _settled(browser, "#run-log li", f"{where}'s log")
    return leaks(browser, where)


def test_no_run_page_in_any_state_shows_null_undefined_or_raw_json(browser, server, api_client, bridge):
    found: list[str] = []
    sign_in(browser, ADMIN)
    found += leaks(browser, "the runs list, signed in")

    # Parked at a cue, with a ledger of what it left (the panel, its table, its counts).
    bridge.script("garden.crows", Answer(200, {"resources": [_crow("crow-1"), {"kind": "mark", "id": "chalk"}]}))
    _, parked = schedule_now(api_client, _garden("Crow garden", {"action": "garden.crows"}, CUE))
    open_run(browser, server.url, parked)
    cue_id, _ = cue_banner(browser)
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-resource]"), "the ledger's rows")
    # Acknowledged, so the log has a row with a time in its words ("… has it until 20:15").
    api_client.call("POST", f"/runs/{parked}/steps/{cue_id}/acknowledge", {"note": "on my way"}, token=GM)
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#run-log li[data-kind='step.acknowledged']"),
               "the acknowledge in the log")
    found += leaks(browser, "a run parked at its cue, acknowledged, with its ledger")
    press(browser, "cancel")
    eventually(lambda: browser.find_elements(By.ID, "cleanup-plan"), "the cancel dialog's plan")
    found += leaks(browser, "the cancel dialog with its cleanup plan")
    browser.find_element(By.ID, "ask-text").send_keys("storm coming")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    wait_for_status(browser, "cancelled")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-resource='npc crow-1'][data-status='reverted']"),
               "the crow reverted")
    found += leaks(browser, "a run cancelled with its cleanup done")

    # Paused by a person with a reason, then resumed; a step that failed and paused the run; completed; scheduled.
    _, paused = schedule_now(api_client, _garden("Paused garden", CUE))
    open_run(browser, server.url, paused)
    cue_banner(browser)
    api_client.call("POST", f"/runs/{paused}/pause", {"reason": "a break"})
    found += _run_page(browser, server, paused, "paused", "a run paused with a reason")

    bridge.script("garden.scare", Answer(400, {"reason": "the scarecrow fell over"}))
    _, failing = schedule_now(api_client, _garden("Failing garden", {"action": "garden.scare", "on_failure": "pause"}))
    found += _run_page(browser, server, failing, "paused", "a run paused by a failed step")

    _, done = schedule_now(api_client, _garden("Done garden", {"action": "core.announce", "params": {"message": "Hello"}}))
    found += _run_page(browser, server, done, "completed", "a completed run")

    definition_id = api_client.call("POST", "/definitions", _garden("Later garden", CUE))["definition"]["id"]
    later = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    scheduled = api_client.call("POST", f"/definitions/{definition_id}/runs", {"scheduled_for": later})["run"]["id"]
    later = (datetime.now(UTC) + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    api_client.call("POST", f"/runs/{scheduled}/postpone", {"to": later, "reason": "a storm"})
    open_run(browser, server.url, scheduled)
    wait_for_status(browser, "scheduled")
    _settled(browser, "#run-log li[data-kind='run.postponed']", "the postpone in the log")
    found += leaks(browser, "a scheduled run, postponed")

    # Its phase's deadline and its cue's timeout moved, then done, and cleaned up after it finished.
    bridge.script("garden.crows", Answer(200, {"resources": [_crow("crow-3")]}))
    timed = _garden("Timed garden", {"action": "garden.crows"},
                    {"action": "core.cue", "params": {"instruction": "Count the crows", "timeout_seconds": 600}})
    timed["phases"][0]["advance"] = {"when": "steps_done", "timeout_seconds": 900}
    _, replanned = schedule_now(api_client, timed)
    open_run(browser, server.url, replanned)
    timed_cue, _ = cue_banner(browser)
    api_client.call("POST", f"/runs/{replanned}/phases/1/extend", {"seconds": 600, "reason": "slow crows"})
    api_client.call("POST", f"/runs/{replanned}/steps/{timed_cue}/extend_cue", {"seconds": 60})
    api_client.call("POST", f"/runs/{replanned}/steps/{timed_cue}/confirm", {})
    wait_for_status(browser, "completed")
    api_client.call("POST", f"/runs/{replanned}/cleanup", {})
    eventually(lambda: [e for e in api_client.call("GET", f"/runs/{replanned}/log")["entries"]
                        if e["kind"] == "run.late_cleanup" and e["detail"]["state"] == "done"], "the cleanup done")
    browser.refresh()  # a finished run's page no longer polls
    _settled(browser, "#run-log li[data-kind='step.timeout_moved']", "the moved timeout in the log")
    found += leaks(browser, "a run whose deadline and cue's timeout moved, cleaned up once completed")

    signalled = _garden("Signal garden", CUE)
    signalled["phases"] = [{"name": "wait", "advance": {"when": "signal", "name": "crows_gone"},
                            "steps": [{"action": "core.announce", "params": {"message": "Wait for it"}}]}]
    _, waiting = schedule_now(api_client, signalled)
    open_run(browser, server.url, waiting)
    eventually(lambda: "crows_gone" in text_of(browser, "main"), "the run waiting for its signal")
    found += leaks(browser, "a run waiting for the game's signal")

    dry = api_client.call("POST", f"/definitions/{definition_id}/dry-runs", {"speed": 60, "bridge": "simulate"})["run"]["id"]
    open_run(browser, server.url, dry)
    cue_banner(browser)
    found += leaks(browser, "a dry run at its cue")

    for role, token in (("admin", ADMIN), ("moderator", MODERATOR), ("gm", GM)):
        browser.execute_script("sessionStorage.clear()")
        browser.get(server.console_url)
        if role == "admin":
            found += leaks(browser, "the sign-in page")
        sign_in(browser, token)
        _settled(browser, "#runs-list tr[data-run]", f"the runs list, as {role}")
        found += leaks(browser, f"the runs list, as {role}")
        open_run(browser, server.url, parked)
        _settled(browser, "#run-log li", f"the cancelled run, as {role}")
        found += leaks(browser, f"a cancelled run, as {role}")
    assert found == [], "\n".join(found)


def test_no_definitions_editor_or_calendar_page_shows_null_undefined_or_raw_json(browser, server, api_client):
    found: list[str] = []
    document = _garden("Weekly garden", CUE, schedule={"cron": "0 20 * * 5", "timezone": "Europe/Berlin"})
    definition_id = api_client.call("POST", "/definitions", document)["definition"]["id"]
    try:
        document["phases"][0]["steps"].append({"action": "core.wait", "params": {"seconds": 30}})  # a warning, too
        api_client.call("PUT", f"/definitions/{definition_id}", document)
        sign_in(browser, ADMIN)

        browser.get(f"{server.console_url}#/definitions")
        _settled(browser, f"a[href='#/definitions/{definition_id}']", "the definitions list")
        found += leaks(browser, "the definitions list")
        single = api_client.call("POST", "/definitions", _garden("One version", CUE))["definition"]["id"]
        browser.get(f"{server.console_url}#/definitions/{single}")
        _settled(browser, "tr[data-version='1']", "a definition of one version")
        found += leaks(browser, "a definition of one version, without a schedule")
        browser.get(f"{server.console_url}#/definitions/{definition_id}")
        _settled(browser, "tr[data-version='2']", "the definition's versions")
        eventually(lambda: text_of(browser, "#schedule-words"), "the schedule in words")
        found += leaks(browser, "a definition with its versions")
        browser.find_element(By.CSS_SELECTOR, "[data-view-version='1']").click()
        eventually(lambda: "Version 1" in text_of(browser, "main") or "version 1" in text_of(browser, "main"), "version 1")
        found += leaks(browser, "a version viewed")
        browser.get(f"{server.console_url}#/definitions/{definition_id}")
        eventually(lambda: browser.find_elements(By.ID, "diff-compare"), "the compare button")[0].click()
        eventually(lambda: text_of(browser, "#diff-lines"), "the differences")
        found += leaks(browser, "the differences of two versions")

        browser.find_element(By.ID, "add-version").click()
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-warning='wait_ends_phase']"), "the editor's form")
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#timeline-warnings li"), "the timeline")
        found += leaks(browser, "the editor of a new version, with its timeline")
        name = browser.find_element(By.CSS_SELECTOR, "[data-path='grace_seconds'] > input")
        name.clear()
        name.send_keys("5")
        browser.find_element(By.ID, "save-document").click()
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#problems li"), "the problems")
        found += leaks(browser, "the editor with its problems")

        browser.get(f"{server.console_url}#/definitions/new")
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-path='name'] input"), "the new definition's form")
        found += leaks(browser, "a new definition's editor")

        browser.get(f"{server.console_url}#/calendar")
        _settled(browser, "table.calendar", "the calendar")
        found += leaks(browser, "the calendar")
        browser.find_element(By.ID, "calendar-next").click()
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"li[data-definition='{definition_id}']"), "next month's occurrences")
        found += leaks(browser, "next month's calendar")
    finally:  # its Friday evenings would park a cue in every later test's inbox
        api_client.call("POST", f"/definitions/{definition_id}/schedule/pause", {"reason": "the test is over"})
    assert found == [], "\n".join(found)
