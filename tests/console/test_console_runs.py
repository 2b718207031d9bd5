"""The console in real Chromium, against the real API, a real database, the demo game bridge and a running tick loop."""

from __future__ import annotations

import dataclasses
import re
import time
from datetime import UTC, datetime, timedelta

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from chalicelib.db import ConnectionParams, Database
from chalicelib.events.lifecycle import RunStatus
from devtools.kit.game_bridge import Answer
from tests.console.browser import PHONE, doc_screenshot, eventually, screenshot, text_of
from tests.console.pages import (
    CUE_WAITING,
    cue_banner,
    demo_document,
    listed,
    log_rows,
    notice_text,
    open_run,
    press,
    run_status,
    schedule_now,
    sign_in,
    wait_for_status,
)
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.factory import insert_run, make_definition, make_run

LIVE_SECONDS = 2  # poll.js LIVE_MS: how often a page with something live asks


def _utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _goes_quiet(server, path: str, what: str, seconds: float = 2 * LIVE_SECONDS + 1, timeout: float = 20) -> None:
    """Waits until nothing starting with `path` has been asked for in the last `seconds`. A page that still polls
    it every LIVE_SECONDS never goes that quiet, and the wait fails saying `what`; a read that was already on its
    way (a loaded machine delivers it late) only delays the quiet."""
    eventually(lambda: server.requested(path, time.monotonic() - seconds) == [], what, timeout)


def _bridge_document(name: str) -> dict:
    return {"name": name, "grace_seconds": 300, "phases": [{"name": "only", "steps": [
        {"action": "core.announce", "params": {"message": "The scarecrow rises"}},
        {"action": "world.spawn", "params": {"npc": "scarecrow"}, "on_failure": "pause"},
        {"action": "core.announce", "params": {"message": "Done"}},
    ]}]}


def test_the_demo_run_parks_at_its_cue_a_confirm_from_the_page_completes_it_and_the_log_names_who(browser, server, api_client):
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (confirm)"))
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run_id)
    step_id, banner = cue_banner(browser)
    assert CUE_WAITING.search(banner), banner
    # Each phase named, kind and state as GET /runs/{id} lists them (no definition document read).
    heads = "return [...document.querySelectorAll('#run-phases h3')].map((h) => [h.innerText, h.dataset.kind, h.dataset.state])"
    shown = eventually(lambda: browser.execute_script(heads), "the phase headings")
    assert [(kind, state) for _, kind, state in shown] == [("main", "open"), ("main", "not_started"), ("ending", "not_started")], shown
    assert [text for text, _, _ in shown] == ["Phase 1: opening (current)", "Phase 2: contest", "Phase 3: ending"], shown
    screenshot(browser, "run-parked-at-cue")
    press(browser, "confirm", step_id, "bonfire lit")
    wait_for_status(browser, "completed")
    confirms = [(actor, text) for actor, text in log_rows(browser) if "by confirm" in text]
    assert confirms == [("root-admin", confirms[0][1])] and "bonfire lit" in confirms[0][1], log_rows(browser)
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-control]"), "a finished run offers no controls"
    screenshot(browser, "run-completed")


def test_a_failing_bridge_pauses_the_run_with_its_error_and_retry_from_the_page_completes_it(browser, server, api_client, bridge):
    bridge.script("world.spawn", Answer(400, {"reason": "the scarecrow model is missing"}))
    _, run_id = schedule_now(api_client, _bridge_document("Scarecrow (failing bridge)"))
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    wait_for_status(browser, "paused")
    eventually(lambda: "the scarecrow model is missing" in text_of(browser, "#paused-banner"), "the paused banner and its error")
    assert "the scarecrow model is missing" in text_of(browser, "#run-last-error")
    # One name for the step on every surface: the banner, its buttons, the table, the log.
    name = f"Run {run_id} · Phase 1 · step 2 (world.spawn)"
    dispatched = eventually(lambda: [text for actor, text in log_rows(browser) if actor == "runner"
                                     and f"{name} dispatched, attempt 1: failed, " in text and "HTTP 400: the scarecrow" in text],
                            "the failed dispatch in the log")
    assert dispatched[0].endswith("→ failed"), f"the dispatch and the status it wrote are one line: {dispatched}"
    banner = text_of(browser, "#paused-banner")
    assert f"{name} failed: HTTP 400: the scarecrow model is missing" in banner, banner
    retry = browser.find_element(By.CSS_SELECTOR, "#paused-banner [data-control='retry']")
    assert (retry.text, retry.get_attribute("aria-label")) == ("Retry", f"Retry, {name}"), retry.text  # short, named
    go_on = browser.find_element(By.CSS_SELECTOR, "#paused-banner [data-control='resume']")
    assert go_on.text == "Go on, leaving it failed", "resume says what it does beside retry, short"
    assert not browser.find_elements(By.CSS_SELECTOR, "#run-controls [data-control='resume']"), "one resume, the explained one"
    assert name in text_of(browser, "[data-step-row] strong") and "Error: HTTP 400" in text_of(browser, "[data-said='error']")
    failed = f"[data-attempts='{retry.get_attribute('data-step')}']"
    browser.find_element(By.CSS_SELECTOR, f"{failed} summary").click()  # each attempt, from the log's dispatch rows
    assert "attempt 1: failed, " in text_of(browser, f"{failed} .attempts li"), text_of(browser, failed)
    screenshot(browser, "run-paused-by-bridge")
    retry.click()
    wait_for_status(browser, "completed")
    assert any(actor == "mod-mia" and "by retry" in text for actor, text in log_rows(browser)), log_rows(browser)


def test_pause_resume_and_cancel_with_a_reason_by_keyboard_with_focus_after_each(browser, server, api_client):
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (pause)"))
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run_id)
    cue_banner(browser)  # parked at the cue: running, and staying so

    pause = browser.find_element(By.CSS_SELECTOR, "[data-control='pause']")
    pause.send_keys(Keys.ENTER)
    reason = eventually(lambda: browser.find_elements(By.ID, "ask-text"), "the reason box")[0]
    assert browser.switch_to.active_element == reason, "the reason box takes the focus"
    reason.send_keys("investigating lag")
    browser.switch_to.active_element.send_keys(Keys.TAB)
    browser.switch_to.active_element.send_keys(Keys.ENTER)  # "Pause run", reached by keyboard
    wait_for_status(browser, "paused")
    # Focus lands on the result, read whole (a move to the heading cut a screen reader off mid-sentence).
    focused = eventually(lambda: browser.execute_script(
        "const a = document.activeElement; return a.closest('#notice') && a.innerText"), "focus on the press's result")
    assert focused.startswith("Paused run"), focused
    story = eventually(lambda: text_of(browser, "#paused-story"), "who paused it and why")
    assert re.fullmatch(r"Paused by root-admin \d+ s ago: “investigating lag”\.", story), story
    assert not browser.find_elements(By.CSS_SELECTOR, "#run-last-error"), "a person's reason is not an error"
    doc_screenshot(browser, "run-paused")

    press(browser, "resume", text="")
    wait_for_status(browser, "running")
    press(browser, "cancel")
    asked = text_of(browser, "dialog[open]")
    assert f"Run {run_id} (Harvest festival (pause)) stops for good" in asked and "cannot be resumed" in asked, asked
    browser.find_element(By.ID, "ask-text").send_keys("called off: server restart")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    wait_for_status(browser, "cancelled")
    ended = eventually(lambda: text_of(browser, "#ended-banner"), "who cancelled it and why")
    assert re.fullmatch(r"Cancelled by root-admin \d+ s ago: “called off: server restart”\.", ended), ended
    screenshot(browser, "run-cancelled-with-a-reason")
    rows = log_rows(browser)
    assert any(a == "root-admin" and "by pause" in t and "investigating lag" in t for a, t in rows), rows
    assert any(a == "root-admin" and "by resume" in t for a, t in rows), rows
    assert any(a == "root-admin" and "by cancel" in t and "called off: server restart" in t for a, t in rows), rows
    assert eventually(lambda: browser.find_element(By.ID, "freshness").get_attribute("data-state") == "over", "the page to stop polling")


def test_a_moderator_sees_no_definition_editing_and_a_gm_sees_only_their_cue_s_controls(browser, server, api_client):
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (roles)"))
    sign_in(browser, MODERATOR)
    assert not browser.find_element(By.ID, "nav-definitions").is_displayed()
    browser.get(f"{server.url}/console#/definitions/new")
    eventually(lambda: "managed by admins" in text_of(browser, "main"), "the admins-only note")
    screenshot(browser, "moderator-without-definitions")
    assert not browser.find_elements(By.ID, "document") and not browser.find_elements(By.ID, "save-document")
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    offered = {b.get_attribute("data-control") for b in browser.find_elements(By.CSS_SELECTOR, "[data-control]")}
    assert offered >= {"pause", "cancel", "confirm", "skip"}

    browser.find_element(By.ID, "sign-out").click()
    eventually(lambda: browser.find_elements(By.ID, "token-input"), "the sign-in page")
    sign_in(browser, GM)
    open_run(browser, server.url, run_id)
    _, banner = cue_banner(browser)
    assert CUE_WAITING.search(banner), banner
    time.sleep(2.5)  # a poll or two: still only the cue's own controls (its cue_roles), no run control
    offered = {b.get_attribute("data-control") for b in browser.find_elements(By.CSS_SELECTOR, "[data-control]")}
    assert offered == {"confirm", "skip", "acknowledge"}, offered
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-control]:not([data-step])")
    assert not browser.find_element(By.ID, "nav-definitions").is_displayed()
    screenshot(browser, "gm-sees-their-cue-s-controls")


def test_a_refusal_names_the_role_it_needs(browser, server, api_client):
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (403)"))
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    # The API stops reading roles from `roles`: the same token now carries none.
    with server.answering_with(settings=dataclasses.replace(server.settings, jwt_roles_claim="groups")):
        press(browser, "pause", text="x")
        eventually(lambda: "needs the role admin or moderator" in notice_text(browser), "the 403 naming the roles", timeout=10)
    assert run_status(browser) == "running"


def test_a_token_the_api_stops_accepting_leads_back_to_sign_in(browser, server, api_client):
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (401)"))
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    with server.answering_with(settings=dataclasses.replace(server.settings, jwt_secret="a-rotated-secret-0123456789abcdef")):
        reason = eventually(lambda: text_of(browser, "#sign-in-reason"), "the sign-in page after a 401")
    assert "no longer accepted" in reason and "Sign in again" in reason
    assert browser.execute_script("return sessionStorage.getItem('events.console.token')") is None


def test_two_tabs_one_cancels_and_the_others_confirm_shows_the_moved_state(browser, server, api_client):
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (two tabs)"))
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run_id)
    step_id, _ = cue_banner(browser)
    first = browser.current_window_handle
    # Tab one: a game master starts confirming, and is still typing the note...
    press(browser, "confirm", step_id)
    eventually(lambda: browser.find_elements(By.ID, "ask-text"), "the note box")[0].send_keys("bonfire lit")

    # ...while tab two cancels the run.
    browser.switch_to.new_window("tab")
    browser.get(server.console_url)
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    press(browser, "cancel", text="wrong night")
    wait_for_status(browser, "cancelled")

    browser.switch_to.window(first)
    wait_for_status(browser, "cancelled")  # back in view, the page reads the run again under the open dialog
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    eventually(lambda: "This run has moved: it is now cancelled" in notice_text(browser), "the moved-state notice")
    wait_for_status(browser, "cancelled")
    assert "error" not in notice_text(browser).lower().split(":")[0]
    screenshot(browser, "two-tabs-moved")


def test_the_runs_list_filters_pages_and_updates_itself(browser, server, api_client, console_db):
    definition_id, run_id = schedule_now(api_client, demo_document("Harvest festival (list)"))
    base = _utc_now().replace(microsecond=0) + timedelta(days=2)
    for n in range(27):
        api_client.call("POST", f"/definitions/{definition_id}/runs",
                        {"scheduled_for": (base + timedelta(hours=n)).strftime("%Y-%m-%dT%H:%M:%SZ")})
    sign_in(browser, MODERATOR)
    browser.get(f"{server.console_url}#/runs?definition={definition_id}")
    ids = [run for run, _ in eventually(lambda: listed(browser), "the runs")]
    assert len(ids) == 25 and ids == sorted(ids, reverse=True), "newest first, a page at a time"
    eventually(lambda: browser.find_element(By.ID, "older").click() or True, "the older page")  # the list may re-render
    older = eventually(lambda: listed(browser) if not browser.find_elements(By.ID, "older") else None, "the last page")
    assert len(older) == 3 and older[-1][0] == run_id and older[-1][1] in ("scheduled", "starting", "running"), older
    cue = eventually(lambda: next((s for s in api_client.call("GET", f"/runs/{run_id}")["steps"] if s["parked"]), None),
                     "the demo run to park at its cue")
    api_client.call("POST", f"/runs/{run_id}/steps/{cue['id']}/confirm", {"note": "from a script"})
    eventually(lambda: (run_id, "completed") in listed(browser), "the list to show the run completed without a reload")

    browser.get(f"{server.console_url}#/runs?definition={definition_id}&status=completed")
    eventually(lambda: listed(browser) == [(run_id, "completed")], "the completed demo run alone")
    assert browser.find_element(By.ID, "filter-status").get_attribute("value") == "completed"
    eventually(lambda: "Nothing live here: next check in 15 s" in text_of(browser, "#freshness"), "the list to back off")
    # Its next read is 15 s after the last: 5 s without one come well before it.
    _goes_quiet(server, "/runs?", "a list with nothing live not to be polled every 2 s", timeout=10)


def test_an_idle_runs_list_is_read_again_when_its_first_scheduled_run_nears(browser, server, api_client):
    """A list with nothing live waits 15 s, then longer each time; a run scheduled soon cuts the wait to when the run
    is 2 min from its time (as a run's own page does), so the list goes live then. It used to wait its idle pace
    whatever the runs it showed, and showed a run starting up to 5 min late."""
    document = {"name": f"Harvest festival (nearing) {_utc_now():%H%M%S%f}", "grace_seconds": 300,
                "phases": [{"name": "opening", "steps": [{"action": "core.announce", "params": {"message": "Hello"}}]}]}
    definition_id = api_client.call("POST", "/definitions", document)["definition"]["id"]
    lead = 9  # seconds until the run is 2 min from its time: under the list's first idle wait (15 s)
    near = _utc_now().replace(microsecond=0) + timedelta(seconds=120 + lead)
    run_id = api_client.call("POST", f"/definitions/{definition_id}/runs",
                             {"scheduled_for": near.strftime("%Y-%m-%dT%H:%M:%SZ")})["run"]["id"]
    try:
        sign_in(browser, MODERATOR)
        browser.get(f"{server.console_url}#/runs?definition={definition_id}")
        pace = eventually(lambda: re.search(r"Live: updating|next check in (\d+) s", text_of(browser, "#freshness")),
                          "the list's first pace")
        if pace[1] is not None:  # read before the run neared (else the list was live at once)
            assert int(pace[1]) <= lead, f"the idle wait is cut to when the run nears: {pace[0]}"
        eventually(lambda: "Live: updating every 2 s" in text_of(browser, "#freshness"), "the list live as the run nears")
    finally:
        api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})


def test_the_runs_list_says_who_paused_a_run_and_why(browser, server, api_client, bridge):
    """Issue 39: a pause's reason showed only in the run's log; the list row says who paused it and why, and a
    run the engine stopped says its cause."""
    _, by_hand = schedule_now(api_client, demo_document("Harvest festival (paused list)"))
    eventually(lambda: api_client.call("GET", f"/runs/{by_hand}")["run"]["status"] == "running", "the run under way")
    api_client.call("POST", f"/runs/{by_hand}/pause", {"reason": "boss bugged"}, token=MODERATOR)
    bridge.script("world.spawn", Answer(400, {"reason": "the square is full"}))
    _, stopped = schedule_now(api_client, _bridge_document("Scarecrow (paused list)"))
    eventually(lambda: api_client.call("GET", f"/runs/{stopped}")["run"]["status"] == "paused", "the engine's pause")
    sign_in(browser, MODERATOR)
    browser.get(f"{server.console_url}#/runs?status=paused")
    told = ("return Object.fromEntries([...document.querySelectorAll('#runs-list tr[data-run]')].map(r =>"
            " [r.dataset.run, r.querySelector('[data-paused-by]')?.innerText ?? null]))")
    rows = eventually(lambda: (found := browser.execute_script(told)).get(str(by_hand)) and found.get(str(stopped)) and found,
                      "both paused runs with who paused them")
    assert rows[str(by_hand)] == "paused by mod-mia: “boss bugged”", rows
    assert rows[str(stopped)] == f"stopped: Run {stopped} · Phase 1 · step 2 (world.spawn) HTTP 400: the square is full", rows
    for run_id in (by_hand, stopped):
        api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})


def test_a_503_is_retried_after_retry_after_and_the_page_says_so(browser, server, api_client, db_params):
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (503)"))
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    p = db_params
    nowhere = Database(ConnectionParams("127.0.0.1", 1, p.user, p.password, p.database, None))
    with server.answering_with(database=nowhere):
        eventually(lambda: "Retrying in 5 s" in text_of(browser, "#connection"), "the retry notice", timeout=20)
        screenshot(browser, "database-unavailable")
    eventually(lambda: text_of(browser, "#connection") == "", "the retry notice to clear once the database answers", timeout=20)
    assert cue_banner(browser), "the page is back to the run as it stands"


def test_polling_stops_for_a_finished_run_and_a_hidden_tab(browser, server, api_client, console_db):
    finished = make_run(console_db, _utc_now(), status=RunStatus.COMPLETED)
    sign_in(browser, GM)
    open_run(browser, server.url, finished.id)
    eventually(lambda: browser.find_element(By.ID, "freshness").get_attribute("data-state") == "over", "the over state")
    since = time.monotonic()
    time.sleep(5)
    assert server.requested(f"/runs/{finished.id}", since) == [], "a finished run is not polled"

    _, live_id = schedule_now(api_client, demo_document("Harvest festival (hidden)"))
    open_run(browser, server.url, live_id)
    cue_banner(browser)
    assert browser.find_element(By.ID, "freshness").get_attribute("data-state") == "live"
    watched = browser.current_window_handle
    browser.switch_to.new_window("tab")
    _goes_quiet(server, f"/runs/{live_id}", "the hidden tab to stop polling its live run")
    browser.switch_to.window(watched)
    back = time.monotonic()
    eventually(lambda: server.requested(f"/runs/{live_id}", back), "a refresh as soon as the tab is shown", timeout=10)


def test_the_run_page_transfers_at_most_200_kb_and_fits_a_phone(browser, server, api_client):
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (size)"))
    sign_in(browser, ADMIN)
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
    try:
        open_run(browser, server.url, run_id)
        browser.refresh()  # the whole page afresh, nothing from the cache (the token is still in this tab)
        cue_banner(browser)
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#run-log li"), "the log")
        total = browser.execute_script(
            "const nav = performance.getEntriesByType('navigation')[0];"
            "return nav.transferSize + performance.getEntriesByType('resource').reduce((n, r) => n + r.transferSize, 0);")
        names = browser.execute_script("return performance.getEntriesByType('resource').map(r => r.name)")
    finally:
        browser.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": False})
    assert any(name.endswith("/console/run.js") for name in names), names
    assert 10_000 < total <= 200_000, f"the run page transferred {total} bytes"

    browser.set_window_size(*PHONE)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow} px wider than a phone"
    assert browser.find_element(By.CSS_SELECTOR, "[data-cue] [data-control='confirm']").is_displayed()
    screenshot(browser, "run-on-a-phone")


def _set_day(browser, input_id: str, day: str) -> None:
    """A day picked in a date input, as the browser's own picker leaves it: the value, then its change."""
    browser.execute_script("const input = document.getElementById(arguments[0]); input.value = arguments[1];"
                           " input.dispatchEvent(new Event('change', { bubbles: true }))", input_id, day)


def test_the_runs_list_finds_an_old_event_by_its_days_kept_in_the_address(browser, server, console_db):
    """A year of weekly finished runs: two days picked (both included, in the viewer's zone) list that spring's
    runs alone, newest first, kept in the address, and every run matching the filters is only those; days the
    wrong way round say so and list nothing."""
    definition = make_definition(console_db, _utc_now(), {
        "name": f"Spring fair {_utc_now():%H%M%S%f}", "phases": [{"steps": [{"action": "core.announce", "params": {"message": "on"}}]}]})
    first = (_utc_now() - timedelta(days=400)).replace(hour=12, minute=0, second=0, microsecond=0)  # noon UTC: its day anywhere
    made = console_db.transaction(lambda tx: [insert_run(tx, definition, _utc_now(), status=RunStatus.COMPLETED,
                                                         scheduled_for=first + timedelta(days=7 * i)).id for i in range(52)])
    start, end = first + timedelta(days=7 * 10), first + timedelta(days=7 * 14)  # the 11th to the 15th, both days included
    sign_in(browser, MODERATOR)
    browser.get(f"{server.console_url}#/runs?definition={definition.id}")
    eventually(lambda: len(listed(browser)) == 25, "the newest page of the definition's runs")
    _set_day(browser, "filter-from", f"{start:%Y-%m-%d}")
    eventually(lambda: f"from={start:%Y-%m-%d}" in browser.current_url, "the first day in the address")
    _set_day(browser, "filter-to", f"{end:%Y-%m-%d}")
    spring = sorted(made[10:15], reverse=True)
    eventually(lambda: [run for run, _ in listed(browser)] == spring, "that spring's five runs alone, newest first")
    assert f"definition={definition.id}" in browser.current_url and f"to={end:%Y-%m-%d}" in browser.current_url

    browser.get(f"{server.console_url}#/runs")  # away, then back by the address alone
    browser.get(f"{server.console_url}#/runs?definition={definition.id}&from={start:%Y-%m-%d}&to={end:%Y-%m-%d}")
    eventually(lambda: [run for run, _ in listed(browser)] == spring, "the same five from the address")
    assert browser.find_element(By.ID, "filter-from").get_attribute("value") == f"{start:%Y-%m-%d}"
    assert browser.find_element(By.ID, "filter-to").get_attribute("value") == f"{end:%Y-%m-%d}"
    browser.find_element(By.CSS_SELECTOR, "[data-bulk-filter='cancel']").click()
    asked = eventually(lambda: text_of(browser, "dialog[open]"), "the preview of every run matching the filters")
    assert "These filters match 5 runs now" in asked, asked
    browser.find_element(By.CSS_SELECTOR, "[data-ask='back']").click()

    _set_day(browser, "filter-to", f"{start - timedelta(days=1):%Y-%m-%d}")
    eventually(lambda: text_of(browser, "#runs-none") == "No run matches: the last day is before the first.", "the days said wrong")
    assert listed(browser) == [] and notice_text(browser) == ""
