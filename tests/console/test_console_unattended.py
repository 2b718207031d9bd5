"""A console page nobody uses stops asking the API (issue 37, item 2): an open tab must not keep Aurora awake.

Before, an idle page polled at least every 300 s for as long as it stayed open, and Aurora pauses only after
300 s without a connection, so a forgotten tab kept the database awake all month. Now a page nobody has touched
(pointer, keys, the tab shown or focused) for its unattended bound (10 min; `?unattended_after=` in the address
shortens it, here to 3 s) stops polling, says so with an Update now button, and is brought up to date by the
button or by its tab shown again. A page in use keeps polling however long it is watched.
"""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime, timedelta

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions import interaction
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.actions.pointer_input import PointerInput
from selenium.webdriver.common.by import By

from chalicelib.events.lifecycle import RunStatus
from tests.console.audit import dark, serious_findings
from tests.console.browser import LAPTOP, PHONE, eventually, screenshot, text_of
from tests.console.pages import cue_banner, demo_document, listed, run_status, schedule_now, sign_in, wait_for_status
from tests.support.api import GM, MODERATOR
from tests.support.factory import run_row

BOUND_SECONDS = 3
LIVE_SECONDS = 2  # poll.js LIVE_MS: how often a page with something live asks
IDLE_FIRST_SECONDS = 15  # poll.js IDLE_FIRST_MS: an idle page's first wait
LIVE_AT_SECONDS = 120  # a scheduled run makes its page live this long before its time
LEAD_SECONDS = 10  # a run scheduled this long past that: its page's idle wait is cut to it, under IDLE_FIRST_SECONDS
MARKER = "/console/config.json?page-timer="
_markers = itertools.count()


def _open(browser, server, hash_: str) -> None:
    browser.get(f"{server.console_url}?unattended_after={BOUND_SECONDS}#{hash_}")


def _state(browser) -> str:
    return browser.execute_script("return document.getElementById('freshness')?.dataset.state || ''")


def _first_read(browser, run_id: int) -> tuple[str, str] | None:
    """Run `run_id`'s page's state and its freshness line, read together, once it is idle or live (not the state
    the page before it left), else None."""
    title, state, line = browser.execute_script(
        "const text = (id) => document.getElementById(id)?.textContent || '';"
        " return [text('run-title'), document.getElementById('freshness')?.dataset.state || '', text('freshness-line')]")
    ours = title == f"Run {run_id}" or title.startswith(f"Run {run_id}:")
    return (state, line) if ours and state in ("idle", "live") else None


def _unattended(browser) -> str:
    """The page's word that it stopped, once it says it."""
    eventually(lambda: _state(browser) == "unattended", f"the page to stop once nobody has used it for {BOUND_SECONDS} s",
               timeout=BOUND_SECONDS + 20)
    return text_of(browser, "#unattended-banner")


def _page_timers_pass(browser, server, seconds: float) -> None:
    """`seconds` of the page's own timers pass: a timer set in the page fetches a marker the server then sees. A
    load the page had due before then would have started first (timers fire in the order they fall due), so the
    server's log by then holds all the page asked for meanwhile."""
    marker = f"{MARKER}{next(_markers)}"
    browser.execute_script("setTimeout(() => fetch(arguments[0]), arguments[1])", marker, int(seconds * 1000))
    eventually(lambda: server.requested(marker), f"{seconds} s of the page's own timers", timeout=seconds + 20)


def _asked_since(server, since: float) -> list[str]:
    """Everything the page asked the API for since `since`, but the markers."""
    return [path for path in server.requested("/", since, method="GET") if not path.startswith(MARKER)]


def test_a_run_page_nobody_uses_stops_asking_says_so_and_update_now_brings_it_up_to_date(browser, server, api_client,
                                                                                       console_db):
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (unattended)"))
    sign_in(browser, GM)
    _open(browser, server, f"/runs/{run_id}")
    step_id, _ = cue_banner(browser)
    eventually(lambda: _state(browser) == "live", "the page polling its live run")

    banner = _unattended(browser)
    quiet_since = time.monotonic()
    assert banner.startswith(f"Not updating: nobody has used this page for {BOUND_SECONDS} s, so it stopped asking"), banner
    assert browser.find_element(By.ID, "freshness-status").get_attribute("role") == "status", "announced to screen readers"
    for on in (False, True):
        dark(browser, on)
        assert serious_findings(browser) == [], f"axe on the unattended banner ({'dark' if on else 'light'})"
        screenshot(browser, f"run-unattended-{'dark' if on else 'light'}")
    dark(browser, False)

    # Meanwhile the run moves on: its cue confirmed by someone else, the run completed.
    api_client.call("POST", f"/runs/{run_id}/steps/{step_id}/confirm", {"note": "from another desk"})
    eventually(lambda: run_row(console_db, run_id).status == RunStatus.COMPLETED, "the run to complete")
    _page_timers_pass(browser, server, 3 * LIVE_SECONDS)
    assert _asked_since(server, quiet_since) == [], "a page nobody uses asks the API nothing"
    assert run_status(browser) != "completed" and _state(browser) == "unattended", "it shows what it had, and says so"

    pressed = time.monotonic()
    browser.find_element(By.ID, "update-now").click()
    wait_for_status(browser, "completed")
    assert server.requested(f"/runs/{run_id}", pressed, method="GET"), "Update now asks the API"
    eventually(lambda: _state(browser) == "over", "the finished run's page, no longer polling")
    assert not browser.find_elements(By.ID, "unattended-banner")


def test_a_list_in_use_keeps_polling_and_one_left_alone_catches_up_when_its_tab_is_shown_again(browser, server,
                                                                                              api_client):
    definition_id, first = schedule_now(api_client, demo_document("Harvest festival (unattended list)"))
    sign_in(browser, MODERATOR)
    _open(browser, server, f"/runs?definition={definition_id}")
    eventually(lambda: [run for run, _ in listed(browser)] == [first], "the list")
    eventually(lambda: _state(browser) == "live", "the list polling its live run")

    # Someone at the page (the pointer moving over it) for well past the bound: it keeps asking.
    in_use_since = time.monotonic()
    places = itertools.cycle([(By.CSS_SELECTOR, "h1"), (By.ID, "freshness-line")])

    def kept_polling() -> bool:
        ActionChains(browser).move_to_element(browser.find_element(*next(places))).perform()
        assert _state(browser) != "unattended", "a page in use keeps polling"
        asked = [at for at, _ in server.requested_at("/runs?", in_use_since, method="GET")]
        return len(asked) >= 2 and asked[-1] - asked[0] > 2 * BOUND_SECONDS

    eventually(kept_polling, f"the list polled for over {2 * BOUND_SECONDS} s while in use")

    # Left alone: it stops, and a run scheduled meanwhile is not seen until someone comes back.
    _unattended(browser)
    quiet_since = time.monotonic()
    later = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    second = api_client.call("POST", f"/definitions/{definition_id}/runs", {"scheduled_for": later})["run"]["id"]
    _page_timers_pass(browser, server, 3 * LIVE_SECONDS)
    assert _asked_since(server, quiet_since) == [], "a list nobody uses asks the API nothing"
    assert second not in [run for run, _ in listed(browser)]

    # Another tab, then back to this one: shown again, it updates at once.
    watched = browser.current_window_handle
    browser.switch_to.new_window("tab")
    browser.switch_to.window(watched)
    eventually(lambda: second in [run for run, _ in listed(browser)] or None, "the list brought up to date", timeout=10)


def test_a_live_run_page_polls_itself_every_two_seconds_and_the_headers_count_at_most_every_ten(browser, server,
                                                                                               api_client):
    """Each read of the header's count is one more API request (billed per request): a live run page read it with
    every poll, two requests every 2 s. Now its polls read it at most every 10 s (poll.js COUNT_MS)."""
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (count cadence)"))
    sign_in(browser, GM)
    browser.get(f"{server.console_url}#/runs/{run_id}")
    cue_banner(browser)
    eventually(lambda: _state(browser) == "live", "the page polling its live run")
    since = time.monotonic()

    def polls() -> list[float]:
        return [at for at, path in server.requested_at(f"/runs/{run_id}", since, method="GET") if path == f"/runs/{run_id}"]

    eventually(lambda: len(polls()) >= 9, "9 polls of the live run", timeout=60)
    window = polls()
    counted = [at for at, _ in server.requested_at("/inbox", since, method="GET") if at <= window[-1]]
    assert 1 <= len(counted) <= len(window) / 5 + 2, (len(window), len(counted))


def test_a_live_run_page_whose_reads_fail_keeps_its_last_update_and_tries_again_within_seconds(browser, server, api_client):
    """A failed poll once counted as an update ("Last updated" and the connection's "as of" moved on) and dropped
    the page to the idle pace, 15 s doubling to 5 min. Now both stay at the last read that worked, the line says
    the read failed, and a live page tries again 2 s doubling to 15 s: the network back, it is live in seconds."""
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (reads fail)"))
    sign_in(browser, GM)
    browser.get(f"{server.console_url}#/runs/{run_id}")
    cue_banner(browser)
    eventually(lambda: _state(browser) == "live", "the page polling its live run")

    def polls(since: float) -> list[str]:
        return [path for path in server.requested(f"/runs/{run_id}", since, method="GET") if path == f"/runs/{run_id}"]

    def last_updated() -> str:
        return text_of(browser, "#freshness-line").rpartition("Last updated ")[2]

    with server.failing(f"/runs/{run_id}", 502):
        failed_at = time.monotonic()
        line = eventually(lambda: "the last read failed" in (t := text_of(browser, "#freshness-line")) and t,
                          "the line to say the read failed", 20)
        assert line.startswith("Not updating: the last read failed; trying again in"), line
        kept = last_updated()
        eventually(lambda: len(polls(failed_at)) >= 4, "the failed read tried again within seconds", 25)
        assert last_updated() == kept, (kept, text_of(browser, "#freshness-line"))
        assert f"as of {kept.rstrip('.')}" in text_of(browser, "#connection"), text_of(browser, "#connection")
    eventually(lambda: _state(browser) == "live", "the page live again once its reads work", 20)
    assert last_updated() != kept
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})


def test_a_run_scheduled_next_week_is_checked_at_the_idle_pace_not_every_two_seconds(browser, server, api_client):
    definition_id = api_client.call("POST", "/definitions", demo_document("Harvest festival (next week)"))["definition"]["id"]
    next_week = (datetime.now(UTC) + timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%SZ")
    run_id = api_client.call("POST", f"/definitions/{definition_id}/runs", {"scheduled_for": next_week})["run"]["id"]
    sign_in(browser, GM)
    browser.get(f"{server.console_url}#/runs/{run_id}")
    eventually(lambda: _state(browser) == "idle", "the far-off run's page at the idle pace")
    line = text_of(browser, "#freshness-line")
    assert line.startswith("Nothing live here: next check in 15 s."), line
    since = time.monotonic()
    _page_timers_pass(browser, server, 2 * LIVE_SECONDS + 1)
    assert [p for p in _asked_since(server, since) if p == f"/runs/{run_id}"] == [], "polled as if live"
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})

    # One due in a little over the couple of minutes: its idle wait ends when it becomes live, not 15 s later.
    # The page must first read it while it is more than 2 min away: one that took more than LEAD_SECONDS to load
    # finds it live at once, and the setup is tried again, never the assertion.
    for _ in range(3):
        soon = (datetime.now(UTC) + timedelta(seconds=LIVE_AT_SECONDS + LEAD_SECONDS)).strftime("%Y-%m-%dT%H:%M:%SZ")
        run_id = api_client.call("POST", f"/definitions/{definition_id}/runs", {"scheduled_for": soon})["run"]["id"]
        browser.get(f"{server.console_url}#/runs/{run_id}")
        state, line = eventually(lambda: _first_read(browser, run_id), "the run's page read")
        if state == "idle":
            break
        api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "read once it was live: scheduled again"})
    else:
        raise AssertionError(f"three times the page was live at once for a run {LIVE_AT_SECONDS + LEAD_SECONDS} s away")
    waits = int(line.removeprefix("Nothing live here: next check in ").split(" s.")[0])
    assert waits <= LEAD_SECONDS < IDLE_FIRST_SECONDS, line  # cut to when the run becomes live, not the idle pace
    eventually(lambda: _state(browser) == "live", "the page live once the run is due within minutes")
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})


def _tap(browser, x: int, y: int) -> None:
    """A finger's tap at (x, y) of the screen: a touch pointer down and up, as a phone sends it."""
    finger = PointerInput(interaction.POINTER_TOUCH, "finger")
    tap = ActionBuilder(browser, mouse=finger)
    tap.pointer_action.move_to_location(x, y).pointer_down().pointer_up()
    tap.perform()


def test_a_phone_left_at_a_cue_says_it_stopped_on_its_first_screen_and_a_touch_brings_it_up_to_date(
        browser, server, api_client, console_db):
    """A gm waiting on their phone for the next cue, the page scrolled down to its log, not touching it: once it
    stops it says so on the screen they look at (and in the tab's title), and the next touch anywhere updates it —
    before, the word was under the run's facts, off the first screen, and only Update now, a tab switch or a
    window focus brought it back."""
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (phone left alone)"))
    sign_in(browser, GM)
    browser.set_window_size(*PHONE)
    try:
        eventually(lambda: browser.execute_script("return window.innerWidth") <= PHONE[0], "the window at phone size")
        _open(browser, server, f"/runs/{run_id}")
        step_id, _ = cue_banner(browser)
        browser.execute_script("document.getElementById('log-title').scrollIntoView()")
        _unattended(browser)
        top, bottom, height = browser.execute_script(
            "const r = document.getElementById('unattended-banner').getBoundingClientRect(); return [r.top, r.bottom, innerHeight]")
        assert top >= 0 and bottom <= height, f"the banner at {top:.0f}–{bottom:.0f} px of a {height} px screen"
        assert browser.title.startswith("Not updating · "), browser.title
        screenshot(browser, "phone-unattended")

        api_client.call("POST", f"/runs/{run_id}/steps/{step_id}/confirm", {"note": "from another desk"})
        eventually(lambda: run_row(console_db, run_id).status == RunStatus.COMPLETED, "the run to complete")
        _page_timers_pass(browser, server, LIVE_SECONDS)
        assert run_status(browser) != "completed", "it stopped: it shows what it had"

        _tap(browser, 4, height - 60)  # the page's margin, below the banner: no button, no link
        wait_for_status(browser, "completed", timeout=15)
        assert not browser.find_elements(By.ID, "unattended-banner")
        assert not browser.title.startswith("Not updating"), browser.title
    finally:
        browser.set_window_size(*LAPTOP)
