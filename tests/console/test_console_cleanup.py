"""Cleaning up what a run left, in real Chromium: the run page lists its live resources, the cancel dialog offers
"clean up what this run left" with the plan, and the cleanup's progress, its failed revert and the retry show; a
cleanup waiting on a revert by hand says whose, and is listed among the runs waiting for a cue. A
revert the game bridge does not declare is never sent, and the page says why it stays in the world."""

from __future__ import annotations

import re

from selenium.webdriver.common.by import By

from devtools.kit.game_bridge import Answer
from tests.console.browser import eventually, screenshot, text_of
from tests.console.pages import cue_banner, listed, open_run, press, schedule_now, sign_in, wait_for_status
from tests.support.api import MODERATOR


def _crow(name: str) -> dict:
    return {"kind": "npc", "id": name, "revert": {"action": "garden.shoo", "params": {"crow": name}}}


def _resources(driver) -> dict[str, str]:
    read = "return [...document.querySelectorAll('[data-resource]')].map(r => [r.dataset.resource, r.dataset.status])"
    return dict(driver.execute_script(read))


def test_cancel_with_cleanup_from_the_page_shows_the_plan_the_progress_and_a_retried_revert(browser, server, api_client, bridge):
    bridge.script("garden.crows", Answer(200, {"resources": [_crow("crow-1"), _crow("crow-2"), {"kind": "mark", "id": "chalk"}]}))
    bridge.script("garden.shoo", Answer(400, {"reason": "the crow will not budge"}))  # the first revert, crow-2's
    _, run_id = schedule_now(api_client, {"name": "Crow garden", "grace_seconds": 300, "phases": [{"name": "crows", "steps": [
        {"action": "garden.crows"}, {"action": "core.cue", "params": {"instruction": "Count the crows"}}]}]})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    eventually(lambda: _resources(browser) == {"npc crow-1": "live", "npc crow-2": "live", "mark chalk": "live"},
               f"the run's live resources (it shows {_resources(browser)})")
    assert text_of(browser, "#resources-live") == "3 live of 3 recorded."

    press(browser, "cancel")
    eventually(lambda: browser.find_elements(By.ID, "cleanup-plan"), "the cleanup plan in the cancel dialog")
    plan = [li.get_attribute("data-plan") for li in browser.find_elements(By.CSS_SELECTOR, "[data-plan]")]
    assert plan == ["npc crow-2", "npc crow-1"], plan  # newest first; the chalk mark has no revert
    assert browser.find_element(By.ID, "ask-cleanup").is_selected()
    # The dialog's Cancel is drawn as the button that opened it: danger, not a harmless go-ahead's blue.
    assert browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").get_attribute("class") == "danger"
    screenshot(browser, "cancel-with-cleanup")
    browser.find_element(By.ID, "ask-text").send_keys("storm coming")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()

    wait_for_status(browser, "paused")  # crow-2's revert failed; crow-1's went on
    progress = eventually(lambda: text_of(browser, "#cleanup-progress"), "the cleanup's progress")
    assert progress == "Cleanup: 1 of 2 reverted, 1 could not be reverted; then the run is cancelled.", progress
    eventually(lambda: _resources(browser)["npc crow-2"] == "revert_failed", "crow-2 revert_failed")
    # the banner's story comes from the log's pause row, which the page may read a poll after the run's status
    eventually(lambda: "1 of 2 resources could not be reverted" in text_of(browser, "#paused-banner"),
               "the banner saying why the cleanup paused")
    screenshot(browser, "cleanup-paused")

    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#paused-banner [data-control='retry']"), "the retry button")[0].click()
    wait_for_status(browser, "cancelled")
    eventually(lambda: _resources(browser) == {"npc crow-1": "reverted", "npc crow-2": "reverted", "mark chalk": "live"},
               f"every crow reverted (it shows {_resources(browser)})")
    ended = eventually(lambda: "nothing it could revert" in (text := text_of(browser, "#cleanup-progress")) and text,
                       f"the cleanup said as over (it says {text_of(browser, '#cleanup-progress')!r})")
    assert ended == "Cleanup: 2 of 2 reverted; nothing it could revert is left in the game world.", ended
    # The cleanup's phase is the engine's: the run stands where it was cancelled, its bar not empty.
    assert text_of(browser, "#run-progress-words") == "Phase 1 of 1 · step 2 of 2"
    assert browser.find_element(By.ID, "run-progress-bar").get_attribute("value") == "50"


def test_a_run_with_nothing_to_revert_offers_no_cleanup(browser, server, api_client):
    _, run_id = schedule_now(api_client, {"name": "Quiet garden", "grace_seconds": 300, "phases": [{"name": "wait", "steps": [
        {"action": "core.cue", "params": {"instruction": "Listen"}}]}]})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    assert "Nothing recorded" in eventually(lambda: text_of(browser, "#run-resources"), "the empty ledger")
    press(browser, "cancel")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-plan-read='false']"), "the plan read: no cleanup")
    assert not browser.find_elements(By.ID, "ask-cleanup")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    wait_for_status(browser, "cancelled")


def test_a_cleanup_waiting_on_a_by_hand_revert_names_the_revert_on_its_banner_and_the_runs_list(
        browser, server, api_client, bridge):
    shoo_by_hand = {"action": "core.cue", "params": {"instruction": "Shoo the crow off the roof by hand"}}
    bridge.script("garden.roost", Answer(200, {"resources": [{"kind": "npc", "id": "crow-9", "revert": shoo_by_hand}]}))
    _, run_id = schedule_now(api_client, {"name": "Roof garden", "grace_seconds": 300, "phases": [{"name": "roost", "steps": [
        {"action": "garden.roost"}, {"action": "core.cue", "params": {"instruction": "Count the crows"}}]}]})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    eventually(lambda: _resources(browser) == {"npc crow-9": "live"}, "the crow recorded live")
    press(browser, "cancel")
    eventually(lambda: browser.find_elements(By.ID, "ask-cleanup"), "the cleanup option")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()

    wait_for_status(browser, "cleaning_up")
    banner = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-revert='npc crow-9']"), "the revert's banner")[0]
    text = banner.text
    assert re.search(r"Waiting for a game master for \d+ (s|min) to revert npc crow-9: Shoo the crow off the roof by hand", text), text
    revert_id = int(banner.get_attribute("data-cue"))
    # the step the revert is, named as everywhere
    assert f"Run {run_id} · Phase 3 · step 1 (Shoo the crow off the roof by hand)" in text, text
    assert {b.get_attribute("data-control") for b in banner.find_elements(By.CSS_SELECTOR, "[data-control]")} >= {"confirm", "skip"}
    screenshot(browser, "cleanup-waiting-on-a-revert-by-hand")

    browser.get(f"{server.url}/console#/runs?waiting=cue")
    eventually(lambda: (run_id, "cleaning_up") in listed(browser), "the cleanup among the runs waiting for a cue")

    open_run(browser, server.url, run_id)
    press(browser, "confirm", revert_id, text="shooed")
    wait_for_status(browser, "cancelled")
    eventually(lambda: _resources(browser) == {"npc crow-9": "reverted"}, f"the crow reverted (it shows {_resources(browser)})")


def test_a_revert_the_bridge_does_not_declare_is_never_sent_and_the_page_says_why(browser, server, api_client, bridge):
    scarecrow = {"kind": "npc", "id": "scarecrow", "revert": {"action": "garden.scare", "params": {"away": True}}}
    ban = {"kind": "ban", "id": "gus", "revert": {"action": "admin.ban_player", "params": {"player": "gus"}}}
    bridge.script("garden.bait", Answer(200, {"resources": [scarecrow, ban]}))
    _, run_id = schedule_now(api_client, {"name": "Baited garden", "grace_seconds": 300, "phases": [{"name": "bait", "steps": [
        {"action": "garden.bait"}, {"action": "core.cue", "params": {"instruction": "Watch the bait"}}]}]})
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_banner(browser)
    eventually(lambda: _resources(browser) == {"npc scarecrow": "live", "ban gus": "live"},
               f"the run's live resources (it shows {_resources(browser)})")
    why = "cannot revert: undeclared action admin.ban_player"
    assert why in text_of(browser, "[data-resource='ban gus']")

    press(browser, "cancel")
    eventually(lambda: browser.find_elements(By.ID, "cleanup-plan"), "the cleanup plan in the cancel dialog")
    assert [li.get_attribute("data-plan") for li in browser.find_elements(By.CSS_SELECTOR, "[data-plan]")] == ["npc scarecrow"]
    assert text_of(browser, "#cleanup-left") == f"It leaves in the world: 1 ({why})."
    screenshot(browser, "cancel-leaving-an-undeclared-revert")
    browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()

    wait_for_status(browser, "cancelled")
    eventually(lambda: _resources(browser) == {"npc scarecrow": "reverted", "ban gus": "live"},
               f"the scarecrow reverted, the ban left (it shows {_resources(browser)})")
    assert [r.json["params"] for r in bridge.received("garden.scare")] == [{"away": True}]
    assert bridge.received("admin.ban_player") == []
