"""A press whose answer is lost on the way (review uireview D2, D3, D4), in real Chromium: the API acts, then the
connection drops before its answer reaches the page, and the page sends the press again.

Every control and every bulk press carries an Idempotency-Key, the same on each re-send, so the re-send answers
the first answer and changes nothing again: a phase's deadline moved by 10 minutes is moved by 10, not 20, and the
page says at once that whether it moved is not known, then that it had; a bulk
pause says the runs it paused, not "Nothing took"; a confirm says at once that whether it took is not known yet,
then that it had taken. A run page that could not be loaded says so beside the connection, and no more once it
loads again.
"""

from __future__ import annotations

import time
from datetime import datetime

import pytest
from selenium.webdriver.common.by import By

from chalicelib.events import commands
from tests.console.browser import eventually, text_of
from tests.console.pages import (
    cue_banner,
    held_runs_ticked,
    moderator_at_bonfire_cue,
    notice_text,
    open_run,
    press,
    schedule_now,
    sign_in,
)
from tests.support.api import GM, MODERATOR
from tests.support.scenes import log_rows as logged

# The console's rule (api.js `keyed`), asked in the page of every path a control or a bulk press is sent to.
KEYED = """
const [paths, done] = [arguments[0], arguments[arguments.length - 1]];
import('./console/api.js').then((api) => done(paths.map(([method, path]) => [method, path, api.keyed(method, path)])));
"""


def _filled(path: str) -> str:
    return path.replace("{run_id}", "6").replace("{step_id}", "42").replace("{phase}", "2")


def test_every_control_path_the_console_sends_carries_an_idempotency_key(browser):
    controls = [("POST", _filled(control.path)) for control in commands.CONTROLS.values()]
    assert any("/phases/" in path for _, path in controls)  # a phase's control is among them (extend)
    pressed = [*controls, ("POST", "/runs/bulk")]
    not_presses = [("GET", "/runs/6"), ("GET", "/runs/bulk"), ("POST", "/runs/6/signals/boss_down"),
                   ("POST", "/definitions/3/rehearse")]
    answers = browser.execute_async_script(KEYED, pressed + not_presses)
    assert [path for _, path, keyed in answers[:len(pressed)] if not keyed] == []
    assert [path for _, path, keyed in answers[len(pressed):] if keyed] == []


def _phase_deadline(api_client, run_id: int) -> str:
    detail = api_client.call("GET", f"/runs/{run_id}")
    return next(p["deadline"] for p in detail["phases"] if p["number"] == detail["run"]["current_phase"])


# How a press's answer fails to arrive: lost on the way (every answer dropped until the page has said so: the
# browser itself quietly sends a POST again when a reused connection closes, so the page sees the loss only once
# those re-sends lost theirs too), or the app acted and the gateway, tired of waiting, answered 502/504 instead.
# Each with the fewest times the press is sent: the first, then at least once more as the same press.
LOST = pytest.param(lambda server, path: server.dropping(path, times=100), 2, id="answer-lost")
ANSWERED_504 = pytest.param(lambda server, path: server.answering_late(path, 504), 2, id="504-after-it-took")
ANSWERED_502 = pytest.param(lambda server, path: server.answering_late(path, 502), 2, id="502-after-it-took")


@pytest.mark.parametrize(("fault", "sent_at_least"), [LOST, ANSWERED_504])
def test_an_extend_whose_answer_never_comes_moves_the_deadline_once(browser, server, api_client, console_db, fault,
                                                                    sent_at_least, request):
    name = f"Market (extend, {request.node.callspec.id})"  # a definition's name is its own: one per case
    _, run_id = schedule_now(api_client, {"name": name, "grace_seconds": 300, "phases": [
        {"name": "market", "advance": {"when": "after", "seconds": 1200},
         "steps": [{"action": "core.cue", "params": {"instruction": "Open the stalls"}}]},
        {"name": "close", "steps": [{"action": "core.announce", "params": {"message": "The market is closed"}}]}]})
    try:
        sign_in(browser, MODERATOR)
        open_run(browser, server.url, run_id)
        cue_banner(browser)
        before = _phase_deadline(api_client, run_id)
        path = f"/runs/{run_id}/phases/1/extend"
        with fault(server, path):
            eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-control='extend']"), "Extend")[0].click()
            minutes = eventually(lambda: browser.find_elements(By.ID, "plan-value"), "the minutes")[0]
            minutes.clear()
            minutes.send_keys("10")
            browser.find_element(By.ID, "plan-reason").send_keys("the boss runs long")
            browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
            unknown = eventually(lambda: "not known" in (t := notice_text(browser)) and t, "the move said unknown", 10)
            assert "did not work" not in unknown, unknown
        said = eventually(lambda: "moved by 10 min" in (t := notice_text(browser)) and t, "the extend's answer", 40)
        assert "It had taken: only its answer was lost on the way." in said, said
        keys = server.keys_sent(path)
        assert len(keys) >= sent_at_least and keys[0] and len(set(keys)) == 1, keys  # sent again, as the same press
        moved = [r for r in logged(console_db, run_id) if r["kind"] == "run.deadline_moved"]
        assert len(moved) == 1, (said, moved)
        after = _phase_deadline(api_client, run_id)
        assert (datetime.fromisoformat(after) - datetime.fromisoformat(before)).total_seconds() == 600, (before, after)
    finally:
        api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})


@pytest.mark.parametrize(("fault", "sent_at_least"), [LOST, ANSWERED_502])
def test_a_confirm_whose_answer_never_comes_says_it_may_have_taken_then_that_it_had(browser, server, api_client,
                                                                                    console_db, fault, sent_at_least,
                                                                                    request):
    name = f"Bonfire (confirm, {request.node.callspec.id})"  # a definition's name is its own: one per case
    _, run_id = schedule_now(api_client, {"name": name, "grace_seconds": 300, "phases": [
        {"name": "opening", "steps": [{"action": "core.cue", "params": {"instruction": "Light the bonfire"}}]},
        {"name": "contest", "steps": [{"action": "core.announce", "params": {"message": "The contest begins"}}]}]})
    sign_in(browser, GM)
    open_run(browser, server.url, run_id)
    step_id, _ = cue_banner(browser)
    path = f"/runs/{run_id}/steps/{step_id}/confirm"
    with fault(server, path):
        press(browser, "confirm", step_id, text="lit")
        unknown = eventually(lambda: "not known" in (t := notice_text(browser)) and t, "the press said unknown, at once", 10)
        assert "did not work" not in unknown and "not sent" not in unknown, unknown
    said = eventually(lambda: (t := notice_text(browser)).startswith("Confirmed") and t, "what happened", 40)
    assert "It had taken: only its answer was lost on the way." in said, said
    confirms = [r for r in logged(console_db, run_id) if (r["detail"] or {}).get("control") == "confirm"]
    assert len(confirms) == 1 and confirms[0]["actor"] == "gm-gus"
    keys = server.keys_sent(path)
    assert len(keys) >= sent_at_least and len(set(keys)) == 1, keys


def test_a_bulk_pause_whose_answer_is_lost_says_the_runs_it_paused(browser, server, api_client, console_db):
    sign_in(browser, MODERATOR)
    ids = held_runs_ticked(api_client, browser, server.url, "Bulk (answer lost)")
    try:
        pressed_at = time.monotonic()  # the server is the session's: other tests' bulk presses came before
        with server.dropping("/runs/bulk", times=1):
            browser.find_element(By.CSS_SELECTOR, "[data-bulk='pause']").click()
            eventually(lambda: browser.find_elements(By.ID, "ask-text"), "the reason box")[0].send_keys("server restart")
            browser.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
            said = eventually(lambda: (t := notice_text(browser)) and t, "the bulk press's answer", 40)
        assert said.startswith("Paused: 2 runs") and "Nothing took" not in said and "Not done" not in said, said
        keys = server.keys_sent("/runs/bulk", since=pressed_at)
        assert len(keys) >= 2 and keys[0] and len(set(keys)) == 1, keys
        assert {api_client.call("GET", f"/runs/{r}")["run"]["status"] for r in ids} == {"paused"}
        for run_id in ids:
            assert len([r for r in logged(console_db, run_id) if (r["detail"] or {}).get("control") == "pause"]) == 1
    finally:
        for run_id in ids:
            api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})


def test_a_run_page_that_could_not_be_loaded_says_so_beside_the_connection_until_it_loads(browser, server, api_client):
    with moderator_at_bonfire_cue(api_client, browser, server.url, "Bonfire (load fails)") as run_id:
        with server.failing(f"/runs/{run_id}", 502):
            failed = eventually(lambda: "could not be loaded" in (t := text_of(browser, "#connection")) and t,
                                "the failed load, beside the connection", 20)
            assert "could not be loaded" not in notice_text(browser), failed
        eventually(lambda: not text_of(browser, "#connection"), "the failure gone once the run loads again", 40)
        assert "could not be loaded" not in notice_text(browser)


