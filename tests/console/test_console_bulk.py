"""The bulk bar by filter, in real Chromium (issue 41 item 5): the runs list's filters name the runs, the preview
says how many and shows the first of them before anything is pressed, a count that moved since changes nothing,
and the press says what changed and what was refused and why."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from selenium.webdriver.common.by import By

from tests.console.browser import eventually, text_of
from tests.console.dates import clear_of_midnight
from tests.console.pages import held_runs_ticked, listed, notice_text, sign_in
from tests.support.api import GM, MODERATOR


def _schedule(client, definition_id: int, at: datetime) -> int:
    return client.call("POST", f"/definitions/{definition_id}/runs", {"scheduled_for": at.strftime("%Y-%m-%dT%H:%M:%SZ")})["run"]["id"]


def test_every_run_a_filter_matches_is_previewed_then_cancelled_at_once(browser, server, api_client):
    clear_of_midnight()  # "the day after tomorrow" below is the one the page counts from when it shows them
    document = {"name": f"Bulk festival {datetime.now(UTC):%H%M%S%f}", "grace_seconds": 300,
                "phases": [{"name": "opening", "steps": [{"action": "core.announce", "params": {"message": "Hello"}}]}]}
    definition_id = api_client.call("POST", "/definitions", document)["definition"]["id"]
    # 02:00 to 21:10 of the day after tomorrow in the browser's zone (the machine's): "in 2 days" whatever the hour
    # now, and an hour's DST change in between keeps them inside that day.
    local_midnight = datetime.now().astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
    start = (local_midnight + timedelta(days=2, hours=2)).astimezone(UTC)
    runs = [_schedule(api_client, definition_id, start + timedelta(minutes=50 * i)) for i in range(24)]
    api_client.call("POST", f"/runs/{runs[3]}/cancel", {"reason": "called off earlier"})

    sign_in(browser, MODERATOR)
    browser.get(f"{server.url}/console#/runs?definition={definition_id}")
    eventually(lambda: len(listed(browser)) == 24, "the definition's runs, from the filter")
    browser.find_element(By.CSS_SELECTOR, "[data-bulk-filter='cancel']").click()
    asked = eventually(lambda: text_of(browser, "dialog[open]"), "the preview, before anything is pressed")
    assert "Cancel all 24 matching runs?" in asked and "These filters match 24 runs now" in asked, asked
    assert browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").text == "Cancel 24 runs"  # not "run 24"
    assert text_of(browser, "#bulk-preview-count") == "The first 20 of 24:"
    first = text_of(browser, "#bulk-preview li[data-run]")
    assert "scheduled in 2 days" in first and "T" not in first.split("scheduled")[1], first  # not a raw ISO time
    shown = [int(li.get_attribute("data-run")) for li in browser.find_elements(By.CSS_SELECTOR, "#bulk-preview li[data-run]")]
    assert shown == sorted(runs, reverse=True)[:20] and "and 4 more" in text_of(browser, "#bulk-preview")
    assert {status for _, status in listed(browser)} == {"scheduled", "cancelled"}, "the preview changed nothing"

    late = _schedule(api_client, definition_id, start + timedelta(hours=30))  # another tab adds a run meanwhile
    browser.find_element(By.ID, "ask-text").send_keys("the season is over")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    moved = eventually(lambda: "Not done" in (text := notice_text(browser)) and text, "the count that moved")
    assert "matches 25 runs now, not 24" in moved and "nothing was changed" in moved, moved
    assert api_client.call("GET", f"/runs/{late}")["run"]["status"] == "scheduled"

    browser.find_element(By.CSS_SELECTOR, "[data-bulk-filter='cancel']").click()
    asked = eventually(lambda: text_of(browser, "dialog[open]"), "the preview again")
    assert "all 25 matching runs?" in asked, asked
    browser.find_element(By.ID, "ask-text").send_keys("the season is over")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    summary = eventually(lambda: "Cancelled: 24 runs" in (text := notice_text(browser)) and text, "what changed")
    assert "Not done (1):" in summary, summary
    assert text_of(browser, f"#bulk-refused li[data-run='{runs[3]}']") == f"run {runs[3]}: this run is already cancelled"
    eventually(lambda: {status for _, status in listed(browser)} == {"cancelled"}, "the list, refreshed")
    entries = api_client.call("GET", f"/runs/{late}/log")["entries"]
    assert entries[-1]["actor"] == "mod-mia" and entries[-1]["detail"]["reason"] == "the season is over"



def test_the_bulk_bar_offers_each_role_the_bulk_controls_the_server_says_it_may_press(browser, server, api_client):
    """The bar reads the server: the controls GET /vocabulary marks `bulk`, for the roles each declares, as
    GET /console/session gives the signed-in person's. A gm may press none of them: no bar, no box to tick."""
    document = {"name": f"Bulk roles {datetime.now(UTC):%H%M%S%f}", "grace_seconds": 300,
                "phases": [{"name": "opening", "steps": [{"action": "core.announce", "params": {"message": "Hello"}}]}]}
    definition_id = api_client.call("POST", "/definitions", document)["definition"]["id"]
    run_id = _schedule(api_client, definition_id, datetime.now(UTC).replace(microsecond=0) + timedelta(days=2))
    controls = api_client.call("GET", "/vocabulary")["controls"]
    shown = {}
    for token in (MODERATOR, GM):
        roles = api_client.call("GET", "/console/session", token=token)["roles"]
        browser.execute_script("sessionStorage.clear()")
        browser.get(server.console_url)
        sign_in(browser, token)
        browser.get(f"{server.url}/console#/runs?definition={definition_id}")
        eventually(lambda: [run for run, _ in listed(browser)] == [run_id], "the definition's run")
        bar = [b.get_attribute("data-bulk") for b in browser.find_elements(By.CSS_SELECTOR, "[data-bulk]")]
        matching = [b.get_attribute("data-bulk-filter") for b in browser.find_elements(By.CSS_SELECTOR, "[data-bulk-filter]")]
        ticks = len(browser.find_elements(By.CSS_SELECTOR, f"[data-select='{run_id}']"))
        assert bar == matching == [c["name"] for c in controls if c["bulk"] and set(c["roles"]) & set(roles)], (roles, bar)
        shown[token] = (bar, ticks)
    assert shown == {MODERATOR: (["pause", "resume", "cancel", "upgrade"], 1), GM: ([], 0)}


def test_the_dialog_for_ticked_runs_counts_them_and_names_no_run_number(browser, server, api_client):
    document = {"name": f"Bulk ticks {datetime.now(UTC):%H%M%S%f}", "grace_seconds": 300,
                "phases": [{"name": "opening", "steps": [{"action": "core.announce", "params": {"message": "Hello"}}]}]}
    definition_id = api_client.call("POST", "/definitions", document)["definition"]["id"]
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)
    runs = [_schedule(api_client, definition_id, start + timedelta(hours=i)) for i in range(2)]
    sign_in(browser, MODERATOR)
    browser.get(f"{server.url}/console#/runs?definition={definition_id}")
    eventually(lambda: len(listed(browser)) == 2, "the definition's runs")
    for run_id in runs:
        browser.find_element(By.CSS_SELECTOR, f"[data-select='{run_id}']").click()
    browser.find_element(By.CSS_SELECTOR, "[data-bulk='pause']").click()
    asked = eventually(lambda: text_of(browser, "#ask-title"), "the dialog")
    assert asked == "Pause 2 runs?", asked
    assert browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").text == "Pause 2 runs"


def test_a_refused_preview_says_so_in_the_notice(browser, server, api_client):
    sign_in(browser, MODERATOR)
    browser.get(f"{server.url}/console#/runs")
    button = eventually(lambda: [b for b in browser.find_elements(By.CSS_SELECTOR, "[data-bulk-filter='pause']")
                                 if b.is_enabled()], "Pause run: all matching…")[0]
    with server.failing("/runs/bulk", 400):
        button.click()
        said = eventually(lambda: notice_text(browser), "the preview's refusal said")
    assert said == "Previewing the runs these filters match did not work: the server answered 400", said
    assert not browser.find_elements(By.CSS_SELECTOR, "dialog[open]")


def test_a_bulk_press_says_sending_until_its_answer_and_a_second_tap_sends_nothing(browser, server, api_client):
    sign_in(browser, MODERATOR)
    ids = held_runs_ticked(api_client, browser, server.url, "Bulk once")
    try:
        pause = browser.find_element(By.CSS_SELECTOR, "[data-bulk='pause']")
        with server.delaying("/runs/bulk", 3):
            pause.click()
            eventually(lambda: browser.find_elements(By.ID, "ask-text"), "the reason box")[0].send_keys("server restart")
            browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
            eventually(lambda: pause.text == "Sending…" and not pause.is_enabled(), "the bar's Pause sending")
            assert not browser.find_element(By.CSS_SELECTOR, "[data-bulk-filter='pause']").is_enabled()
            browser.execute_script("arguments[0].disabled = false; arguments[0].click()", pause)  # a second tap, however it came
            said = eventually(lambda: (t := notice_text(browser)) and t, "the bulk press's answer", 20)
        assert said.startswith("Paused: 2 runs"), said
        assert not browser.find_elements(By.CSS_SELECTOR, "dialog[open]"), "a second dialog opened behind the first"
        assert len([r for r in ids if api_client.call("GET", f"/runs/{r}")["run"]["status"] == "paused"]) == 2
        eventually(lambda: pause.text == "Pause run", "the bar's Pause back")
    finally:
        for run_id in ids:
            api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})
