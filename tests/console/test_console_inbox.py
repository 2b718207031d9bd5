"""The runs list as an inbox, in real Chromium against the real API, tick loop and game bridge: what needs the
person first (an escalated wait, then the longest wait), each row one line of its story and its likely controls
pressed from the row with the run page's dialog; a list that keeps focus while it refreshes; the needs-you count on
every page, a run opened by a direct link included; a gm's inbox; notices that stay with their page; an escalation
that stays in the banner; health back to ok after a retry that took, and a completed run's progress full."""

from __future__ import annotations

import re
import time

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from devtools.kit.game_bridge import Answer
from tests.console.browser import eventually, text_of
from tests.console.pages import confirm_dialog, cue_banner, escalate, notice_text, open_run, press, schedule_now, sign_in, wait_for_status
from tests.support.api import ADMIN, GM, MODERATOR

_ANNOUNCE = {"action": "core.announce", "params": {"message": "on"}}  # a wait that ends its phase waits 0 s


def _one_phase(name: str, steps_: list[dict], **phase) -> dict:
    return {"name": name, "grace_seconds": 300, "phases": [{"name": "first", "steps": steps_, **phase}], "ending": []}


def _cue(instruction: str) -> dict:
    return {"action": "core.cue", "params": {"instruction": instruction}}


def _waiting(api_client, run_id: int, kind: str) -> dict:
    return eventually(lambda: (w := api_client.call("GET", f"/runs/{run_id}")["waiting"]) and w["for"] == kind and w,
                      f"run {run_id} to wait for a {kind}", 40)


def _cancel(api_client, *run_ids: int) -> None:
    """The test's runs that are still live, cancelled: they would fill the next tests' inboxes."""
    for run_id in run_ids:
        if api_client.call("GET", f"/runs/{run_id}")["run"]["finished_at"] is None:
            api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})


def _pause_once_running(api_client, run_id: int, reason: str) -> None:
    eventually(lambda: api_client.call("GET", f"/runs/{run_id}")["run"]["status"] == "running", f"run {run_id} to start", 40)
    api_client.call("POST", f"/runs/{run_id}/pause", {"reason": reason})


def _rows(browser) -> dict[int, dict]:
    """The inbox as shown: each row's run, what it waits for, its story line, its escalation and its buttons."""
    read = """return [...document.querySelectorAll('#inbox tr[data-inbox]')].map(r => ({
        run: +r.dataset.inbox, waiting: r.dataset.waiting, story: r.querySelector('[data-story]').innerText,
        escalation: r.querySelector('[data-escalation]')?.innerText || '', text: r.innerText,
        controls: [...r.querySelectorAll('[data-control]')].map(b => b.dataset.control)}))"""
    return {row["run"]: {**row, "at": at} for at, row in enumerate(browser.execute_script(read))}


def test_the_inbox_tells_every_wait_most_urgent_first_and_a_row_presses_with_the_run_pages_dialog(
        browser, server, api_client, bridge, console_db):
    made = {}
    _, made["cue"] = schedule_now(api_client, _one_phase("Inbox cue", [_cue("Light the bonfire")]))
    _waiting(api_client, made["cue"], "cue")
    _, made["paused"] = schedule_now(api_client, _one_phase("Inbox pause", [
        {"action": "core.wait", "params": {"seconds": 600}}, _ANNOUNCE]))
    _pause_once_running(api_client, made["paused"], "boss bugged")
    bridge.script("inbox.spawn", Answer(400, {"reason": "the square is full"}))
    _, made["failed"] = schedule_now(api_client, _one_phase("Inbox failure", [
        {"action": "inbox.spawn", "params": {}, "on_failure": "pause"}]))
    _waiting(api_client, made["failed"], "resume")
    _, made["advance"] = schedule_now(api_client, _one_phase("Inbox hold", [
        {"action": "core.announce", "params": {"message": "x"}}], advance={"when": "manual"}))
    _waiting(api_client, made["advance"], "advance")
    _, made["signal"] = schedule_now(api_client, _one_phase("Inbox signal", [
        {"action": "core.announce", "params": {"message": "x"}}], advance={"when": "signal", "name": "boss_down"}))
    _waiting(api_client, made["signal"], "signal")
    bridge.script("inbox.seed", Answer(504, "<html>Gateway Timeout</html>"))
    _, made["decision"] = schedule_now(api_client, _one_phase("Inbox doubt", [
        {"action": "inbox.seed", "params": {}, "on_doubt": "park"}]))
    _waiting(api_client, made["decision"], "decision")
    bridge.script("inbox.crow", Answer(200, {"outcome": "done", "resources": [
        {"kind": "npc", "id": "crow-1", "revert": {"action": "core.cue", "params": {"instruction": "Shoo it"}}}]}))
    _, made["cleanup"] = schedule_now(api_client, _one_phase("Inbox cleanup", [
        {"action": "inbox.crow", "params": {}}, _cue("wait here")]))
    _waiting(api_client, made["cleanup"], "cue")
    api_client.call("POST", f"/runs/{made['cleanup']}/cancel", {"reason": "storm", "cleanup": True})
    eventually(lambda: (w := api_client.call("GET", f"/runs/{made['cleanup']}")["waiting"]) and w.get("resource"),
               "the cleanup to wait for a person", 40)
    _, made["escalated"] = schedule_now(api_client, _one_phase("Inbox escalated", [_cue("Open the gate")]))
    escalate(console_db, made["escalated"], _waiting(api_client, made["escalated"], "cue")["step_id"])

    sign_in(browser, ADMIN)
    browser.get(f"{server.console_url}#/runs")
    rows = eventually(lambda: (r := _rows(browser)) and all(i in r for i in made.values()) and r, "every wait in the inbox")
    mine = sorted(made.values(), key=lambda run: rows[run]["at"])
    assert mine[0] == made["escalated"], "an escalated wait first"
    since = [browser.execute_script(
        f"return document.querySelector(\"#inbox tr[data-inbox='{run}'] time\").getAttribute('datetime')") for run in mine[1:]]
    assert since == sorted(since), "then the longest wait first"

    def row(kind):
        return rows[made[kind]]

    assert row("cue")["story"] == (
        f"Waiting for a game master at Run {made['cue']} · Phase 1 · step 1 (Light the bonfire); nobody has it yet")
    assert row("cue")["controls"] == ["confirm", "acknowledge"]
    assert row("paused")["story"] == "Paused by root-admin: “boss bugged”" and row("paused")["controls"] == ["resume"]
    assert row("failed")["story"] == (f"Run {made['failed']} · Phase 1 · step 1 (inbox.spawn) failed: HTTP 400: the square is full;"
                                      " Retry is what it needs"), row("failed")
    assert row("failed")["controls"] == ["retry", "resume"]
    assert row("advance")["story"] == "Phase 1 (first) is done; it ends when someone advances it"
    assert row("signal")["story"] == "Phase 1 (first) waits for the game's signal boss_down" and row("signal")["controls"] == []
    assert row("decision")["story"] == (f"Run {made['decision']} · Phase 1 · step 1 (inbox.seed) waits for a decision:"
                                        " the game may or may not have applied it"), row("decision")
    assert row("decision")["controls"] == ["confirm", "resend"]
    assert row("cleanup")["story"] == "Waiting for a game master to revert npc crow-1 by hand: Shoo it; nobody has it yet"
    assert re.fullmatch(r"Escalated to #staff \d+ (s|min) ago, try 1 of 3", row("escalated")["escalation"]), row("escalated")
    assert "undefined" not in text_of(browser, "#inbox") and "null" not in text_of(browser, "#inbox")

    # Pressed from the row: the run page's own dialog, then the row leaves the inbox.
    browser.find_element(By.CSS_SELECTOR, f"#inbox tr[data-inbox='{made['cue']}'] [data-control='confirm']").click()
    dialog = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the confirm dialog")[0]
    assert f"Confirm this step is done? (Run {made['cue']} · Phase 1 · step 1 (Light the bonfire))" in dialog.text, dialog.text
    browser.find_element(By.ID, "ask-text").send_keys("lit from the list")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    eventually(lambda: made["cue"] not in _rows(browser), "the answered cue to leave the inbox")
    assert notice_text(browser) == f"Confirmed Run {made['cue']} · Phase 1 · step 1 (Light the bonfire)."
    # The failed step's Retry, from its row: sent at the tap on the run's page, but a row may have slid under the
    # finger, so it asks first, naming the run and the step; gone back from, nothing is sent.
    failed_step = _waiting(api_client, made["failed"], "resume")
    retry = f"#inbox tr[data-inbox='{made['failed']}'] [data-control='retry']"
    browser.find_element(By.CSS_SELECTOR, retry).click()
    dialog = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the retry's dialog")[0]
    assert f"Retry? (Run {made['failed']} · Phase 1 · step 1 (inbox.spawn))" in dialog.text, dialog.text
    browser.find_element(By.CSS_SELECTOR, "dialog[open] [data-ask='back']").click()
    assert api_client.call("GET", f"/runs/{made['failed']}")["waiting"] == failed_step, "gone back from: nothing sent"
    eventually(lambda: [b for b in browser.find_elements(By.CSS_SELECTOR, retry) if b.is_enabled()], "Retry again")[0].click()
    confirm_dialog(browser)
    eventually(lambda: made["failed"] not in _rows(browser), "the retried run to leave the inbox")
    _cancel(api_client, *made.values())


def test_tabbing_through_a_live_runs_list_reaches_its_last_row_while_polls_arrive(browser, server, api_client):
    for n in range(12):
        schedule_now(api_client, _one_phase(f"Tabbing {n}", [_cue("Hold the line")]))
    sign_in(browser, MODERATOR)
    browser.get(f"{server.console_url}#/runs")
    last = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#runs-list tbody tr:last-child a"), "the list")[0]
    last_run = last.get_attribute("href")
    browser.find_element(By.ID, "filter-search").click()
    started = time.monotonic()
    polls = 0
    for presses in range(400):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        if browser.execute_script("return document.activeElement.getAttribute('href')") == last_run.split("console")[-1]:
            break
        if presses % 10 == 9:  # a poll arrives between every ten keys
            eventually(lambda n=polls: len(server.requested("/runs?", started)) > n, "the list's next poll")
            polls = len(server.requested("/runs?", started))
        assert browser.execute_script("return document.activeElement !== document.body"), "focus dropped to the page"
    else:
        raise AssertionError("tabbing never reached the last row")
    assert polls >= 2, "the list refreshed while the keys were pressed"


def test_a_run_opened_by_a_direct_link_counts_what_needs_the_person_and_the_count_follows(browser, server, api_client):
    _, first = schedule_now(api_client, _one_phase("Direct link", [_cue("Light the bonfire")]))
    sign_in(browser, GM)
    browser.get(f"{server.console_url}#/runs/{first}")  # as from a chat message
    cue_banner(browser)
    count = api_client.call("GET", "/inbox?limit=0", token=GM)["needs_you"]
    eventually(lambda: text_of(browser, "#need-you") == f"{count} {'run needs' if count == 1 else 'runs need'} you",
               "the header's count on the run page")
    _, second = schedule_now(api_client, _one_phase("Direct link too", [_cue("Light the bonfire")]))
    _waiting(api_client, second, "cue")
    eventually(lambda: text_of(browser, "#need-you") == f"{count + 1} runs need you", "the count to follow the new wait")
    assert browser.title.startswith(f"{count + 1} runs need you · Run {first}"), browser.title
    _cancel(api_client, first, second)


def test_a_gms_inbox_holds_only_what_a_gm_can_act_on(browser, server, api_client):
    _, cue = schedule_now(api_client, _one_phase("Gm inbox", [_cue("Light the bonfire")]))
    _, paused = schedule_now(api_client, _one_phase("Gm paused", [{"action": "core.wait", "params": {"seconds": 600}}, _ANNOUNCE]))
    _pause_once_running(api_client, paused, "rain")
    _waiting(api_client, cue, "cue")
    sign_in(browser, GM)
    browser.get(f"{server.console_url}#/runs")
    rows = eventually(lambda: (r := _rows(browser)) and cue in r and r, "the gm's cue in their inbox")
    assert paused not in rows and {row["waiting"] for row in rows.values()} == {"cue"}, rows
    assert rows[cue]["controls"] == ["confirm", "acknowledge"]

    def counted() -> str:  # read afresh each time: the console's runs share one database, other tests' too
        count = api_client.call("GET", "/inbox?limit=0", token=GM)["needs_you"]
        return f"{count} {'run needs' if count == 1 else 'runs need'} you"

    eventually(lambda: text_of(browser, "#need-you") == counted(), "the header's count, the gm's inbox's")
    page = browser.find_element(By.TAG_NAME, "main").text
    assert "undefined" not in page and "null" not in page and "[object" not in page
    _cancel(api_client, cue, paused)


def test_a_notice_stays_with_its_page_and_an_escalation_stays_in_the_banner(browser, server, api_client, console_db):
    _, first = schedule_now(api_client, _one_phase("Notice one", [_cue("Light the bonfire")]))
    _, second = schedule_now(api_client, _one_phase("Notice two", [_cue("Open the gate")]))
    sign_in(browser, ADMIN)
    open_run(browser, server.url, first)
    step_id, _ = cue_banner(browser)
    press(browser, "confirm", step_id, text="lit")
    eventually(lambda: notice_text(browser).startswith(f"Confirmed Run {first} · Phase 1 · step 1"), "the confirm's notice")
    escalate(console_db, second, _waiting(api_client, second, "cue")["step_id"])
    browser.find_element(By.LINK_TEXT, "← All runs").click()
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"#runs-list a[href='#/runs/{second}']"), "the list")[0].click()
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-cue]"), "the second run's cue")
    assert notice_text(browser) == "", "no notice from run 1 on run 2's page"
    told = eventually(lambda: text_of(browser, "[data-cue] [data-escalation]"), "the escalation in the banner")
    assert re.fullmatch(r"Escalated to #staff \d+ (s|min) ago, try 1 of 3\.", told), told
    _cancel(api_client, second)


def test_health_is_ok_again_after_a_retry_that_took_and_a_completed_runs_progress_is_full(browser, server, api_client, bridge):
    bridge.script("inbox.light", Answer(400, {"reason": "the torch is wet"}))
    _, run_id = schedule_now(api_client, _one_phase("Health", [
        {"action": "inbox.light", "params": {}, "on_failure": "pause"},
        {"action": "core.announce", "params": {"message": "lit"}}]))
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    wait_for_status(browser, "paused")
    eventually(lambda: "! degraded" in text_of(browser, "#run-summary"), "the run degraded")
    assert text_of(browser, "#run-progress-words") == "Phase 1 of 1 · step 1 of 2", "stopped at the step that failed"
    step_id = int(browser.find_element(By.CSS_SELECTOR, "[data-control='retry']").get_attribute("data-step"))
    press(browser, "retry", step_id)
    wait_for_status(browser, "completed")
    assert "✓ ok" in text_of(browser, "#run-summary") and "degraded" not in text_of(browser, "#run-summary")
    assert text_of(browser, "#run-progress-words") == "All 1 phase done"
    assert browser.find_element(By.ID, "run-progress-bar").get_attribute("value") == "100"


def test_a_cue_with_choices_is_confirmed_from_the_inbox_with_the_answer_asked_in_its_dialog(browser, server, api_client):
    cue = {"action": "core.cue", "name": "arena", "params": {"instruction": "Which arena is free?", "choices": [
        {"value": "north", "label": "North arena"}, {"value": "south", "label": "South arena"}]}}
    _, run_id = schedule_now(api_client, _one_phase("Inbox choices", [cue]))
    step_id = _waiting(api_client, run_id, "cue")["step_id"]
    try:
        sign_in(browser, GM)
        browser.get(f"{server.console_url}#/runs")
        confirm = f"#inbox tr[data-inbox='{run_id}'] [data-control='confirm']"
        eventually(lambda: [b.click() or b for b in browser.find_elements(By.CSS_SELECTOR, confirm)],  # a redraw: again
                   "the row's Confirm pressed")
        asked = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "dialog[open] #ask-choices"), "the answers asked")[0]
        assert asked.text.split("\n") == ["The answer", "North arena", "South arena"], asked.text
        browser.find_element(By.ID, "ask-text").send_keys("north is flooded")
        browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()  # no answer picked: not sent
        assert browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "sent without an answer"
        browser.find_element(By.CSS_SELECTOR, "dialog[open] input[value='south']").click()
        browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
        said = eventually(lambda: (t := notice_text(browser)).startswith("Confirmed") and t, "the confirm's answer", 20)
        assert said.endswith(": South arena."), said
        step = next(s for s in api_client.call("GET", f"/runs/{run_id}")["steps"] if s["id"] == step_id)
        assert (step["status"], step["choice"]) == ("done", "south"), step
    finally:
        _cancel(api_client, run_id)


def test_a_row_stays_under_the_finger_when_another_run_escalates(browser, server, api_client, console_db):
    """The inbox puts an escalated wait first, and a refresh once moved the rows: a card that jumped to the top put
    another run's Confirm where the finger was. Now the rows shown keep their place; the escalation says itself on
    its own row."""
    _, first = schedule_now(api_client, _one_phase("Under the finger 1", [_cue("Light the bonfire")]))
    _waiting(api_client, first, "cue")
    _, second = schedule_now(api_client, _one_phase("Under the finger 2", [_cue("Open the gate")]))
    second_step = _waiting(api_client, second, "cue")["step_id"]
    try:
        sign_in(browser, GM)
        browser.get(f"{server.console_url}#/runs")
        rows = eventually(lambda: (r := _rows(browser)) and first in r and second in r and r, "both cues in the inbox")
        assert rows[first]["at"] < rows[second]["at"], "the longer wait first"
        confirm_top = ("return document.querySelector(arguments[0]).getBoundingClientRect().top",
                       f"#inbox tr[data-inbox='{first}'] [data-control='confirm']")
        before = browser.execute_script(*confirm_top)
        escalate(console_db, second, second_step)
        eventually(lambda: _rows(browser)[second]["escalation"], "the escalation on its row")
        rows = _rows(browser)
        assert rows[first]["at"] < rows[second]["at"], "the escalated row jumped above the one under the finger"
        assert browser.execute_script(*confirm_top) == before, "the first run's Confirm moved"
        browser.refresh()  # opened again: the server's order, the escalated wait first
        eventually(lambda: (r := _rows(browser)) and second in r and r[second]["at"] < r[first]["at"], "the escalated wait first")
    finally:
        _cancel(api_client, first, second)
