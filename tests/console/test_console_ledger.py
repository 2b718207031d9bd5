"""The run page's ledger panel in real Chromium (issue 38): a ledger that cannot be read (the gateway's 502, as
when an answer passed Lambda's 6 MB) is said in its panel alone while the run's steps and controls show and
work, the cancel dialog says it has no plan rather than dropping the cleanup, and the ledger is read again only
when the run's detail says it moved."""

from __future__ import annotations

import time

from selenium.webdriver.common.by import By

from devtools.kit.game_bridge import Answer
from tests.console.browser import eventually, text_of
from tests.console.pages import cue_banner, open_run, press, schedule_now, sign_in
from tests.support.api import MODERATOR


def _lantern(name: str) -> dict:
    return {"kind": "lantern", "id": name, "revert": {"action": "square.unhang", "params": {"lantern": name}}}


def _resources(driver) -> dict[str, str]:
    read = "return [...document.querySelectorAll('[data-resource]')].map(r => [r.dataset.resource, r.dataset.status])"
    return dict(driver.execute_script(read))


def _document(name: str, *steps: dict) -> dict:
    return {"name": name, "grace_seconds": 300, "phases": [{"name": "square", "steps": list(steps)}]}


def test_a_ledger_answering_502_leaves_the_steps_and_controls_and_the_cancel_dialog_says_it_has_no_plan(
        browser, server, api_client, bridge):
    bridge.script("square.hang", Answer(200, {"resources": [_lantern("lantern-1"), _lantern("lantern-2")]}))
    _, run_id = schedule_now(api_client, _document("Lanterns (ledger down)", {"action": "square.hang"},
                                                   {"action": "core.cue", "params": {"instruction": "Light the lanterns"}}))
    with server.failing(f"/runs/{run_id}/resources"), server.failing(f"/runs/{run_id}/cleanup-plan"):
        sign_in(browser, MODERATOR)
        open_run(browser, server.url, run_id)
        cue_step, _ = cue_banner(browser)  # the run's story, with its controls
        assert len(browser.find_elements(By.CSS_SELECTOR, "[data-step-row]")) == 2
        assert browser.find_elements(By.CSS_SELECTOR, f"[data-control='confirm'][data-step='{cue_step}']")
        error = eventually(lambda: text_of(browser, "#resources-error"), "the ledger's error, in its panel")
        assert error == ("What the run left could not be read: the server answered 502. It is tried again on the next"
                         " update."), error
        assert text_of(browser, "#resources-live") == "2 live of 2 recorded."  # the counts come with the run
        assert not text_of(browser, "#notice"), "the page as a whole reports nothing wrong"

        press(browser, "cancel")
        failed = eventually(lambda: text_of(browser, "#cleanup-plan-failed"), "the cancel dialog saying it has no plan")
        assert failed == ("The cleanup plan could not be read (the server answered 502), so what a cleanup would revert"
                          " is not shown."), failed
        offered = browser.find_element(By.ID, "ask-cleanup")
        assert not offered.is_selected(), "offered, not chosen for the person"
        browser.find_element(By.CSS_SELECTOR, "[data-ask='back']").click()

    # The gateway answers again: the next update reads the ledger.
    eventually(lambda: _resources(browser) == {"lantern lantern-1": "live", "lantern lantern-2": "live"},
               f"the ledger once it answers (it shows {_resources(browser)})")
    assert not browser.find_elements(By.ID, "resources-error")


def test_the_ledger_is_read_again_only_when_the_run_says_it_moved(browser, server, api_client, bridge):
    bridge.script("square.light", Answer(200, {"resources": [_lantern("lantern-1"), _lantern("lantern-2")]}),
                  Answer(200, {"resources": [_lantern("lantern-3")]}))
    _, run_id = schedule_now(api_client, _document(
        "Lanterns (polled)", {"action": "square.light"}, {"action": "core.cue", "params": {"instruction": "Count them"}},
        {"action": "square.light"}, {"action": "core.cue", "params": {"instruction": "Count them again"}}))
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_step, _ = cue_banner(browser)
    eventually(lambda: _resources(browser) == {"lantern lantern-1": "live", "lantern lantern-2": "live"}, "the first lanterns")

    since = time.monotonic()
    polls = lambda: [p for p in server.requested(f"/runs/{run_id}", since) if p == f"/runs/{run_id}"]  # noqa: E731
    eventually(lambda: len(polls()) >= 3, "three polls of the run", timeout=20)
    assert server.requested(f"/runs/{run_id}/resources", since) == [], "read again though the ledger did not move"

    api_client.call("POST", f"/runs/{run_id}/steps/{cue_step}/confirm", {"note": "counted"})
    eventually(lambda: _resources(browser).get("lantern lantern-3") == "live", "the lantern the next step hung")
    assert server.requested(f"/runs/{run_id}/resources", since), "the moved ledger was read again"
    assert text_of(browser, "#resources-live") == "3 live of 3 recorded."


def test_a_long_ledger_shows_its_newest_page_and_older_ones_on_asking(browser, server, api_client, bridge):
    bridge.script("square.bunting", Answer(200, {"resources": [{"kind": "flag", "id": f"flag-{n}"} for n in range(100)]}),
                  Answer(200, {"resources": [{"kind": "flag", "id": f"flag-{n}"} for n in range(100, 150)]}))
    _, run_id = schedule_now(api_client, _document("Bunting", {"action": "square.bunting"}, {"action": "square.bunting"},
                                                   {"action": "core.cue", "params": {"instruction": "Admire the bunting"}}))
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    eventually(lambda: len(_resources(browser)) == 100, "the newest page of the ledger")
    assert "flag flag-149" in _resources(browser) and "flag flag-0" not in _resources(browser)  # newest first
    assert text_of(browser, "#resources-live") == "150 live of 150 recorded."
    older = browser.find_element(By.ID, "resources-older")
    assert older.text == "Show older (100 of 150 shown)"
    older.click()
    eventually(lambda: len(_resources(browser)) == 150, "every flag, once the older ones are asked for")
    assert not browser.find_elements(By.ID, "resources-older")


def test_what_an_answer_listed_and_the_ledger_could_not_record_is_said_in_red_not_nothing_recorded(
        browser, server, api_client, bridge):
    """Review 1, item 1 (the console's half): an answer's resources the ledger refused (the dispatch row's
    `resources_refused`) read "Nothing recorded: no answer listed what it created", which was untrue."""
    bridge.script("square.hang", Answer(200, {"resources": [_lantern(f"lantern-{n}") for n in range(101)]}))
    _, run_id = schedule_now(api_client, _document("Lanterns (not recorded)", {"action": "square.hang"},
                                                   {"action": "core.cue", "params": {"instruction": "Light the lanterns"}}))
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    said = eventually(lambda: text_of(browser, "[data-unrecorded]"), "what could not be recorded, in the panel")
    assert said == (f"What Run {run_id} · Phase 1 · step 1 (square.hang)'s answer listed could not be recorded:"
                    " resources: at most 100 entries, not 101. It may still be in the game world, and no cleanup knows"
                    " of it."), said
    assert "no answer listed" not in text_of(browser, "#run-resources")
    assert browser.find_element(By.CSS_SELECTOR, "[data-unrecorded]").get_attribute("class") == "error-text"
    api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "the test is over"})
