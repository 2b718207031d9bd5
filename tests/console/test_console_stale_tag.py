"""Controls that know what the person saw, on the console (issue 27, item 6).

The page sends the tag of what it showed with resume, confirm, skip, retry and advance: a press on a state
another tab changed meanwhile is a 412, shown as "this changed while you were looking: here is what it is
now", and changes nothing; the page then re-reads. Each press carries an Idempotency-Key, the same on its
automatic re-send: a re-send after a lost answer gets the first answer, not a 412 against its own change.
"""

from __future__ import annotations

from selenium.webdriver.common.by import By

from chalicelib.events.lifecycle import RunStatus, StepStatus
from tests.console.browser import eventually, screenshot, text_of
from tests.console.pages import cue_banner, demo_document, log_rows, open_run, press, schedule_now, sign_in, wait_for_status
from tests.support.api import ADMIN, MODERATOR
from tests.support.factory import run_row, step_row
from tests.support.scenes import log_rows as logged

# The page between two of its polls, held there: its reads wait (what it shows is what the person saw)
# while its controls go out. Released, the reads go on and the page catches up.
HOLD_READS = """
const real = window.fetch.bind(window);
const held = [];
window.fetch = (url, init = {}) => (init.method || 'GET') !== 'GET' ? real(url, init)
  : new Promise((resolve, reject) => held.push(() => real(url, init).then(resolve, reject)));
window.releaseReads = () => { window.fetch = real; held.splice(0).forEach((go) => go()); };
"""

# The first answer to a control is lost on its way back: the API acted, the page never heard. The keys
# and tags of every control sent are kept for the test to read.
LOSE_FIRST_ANSWER = """
const real = window.fetch.bind(window);
window.sent = [];
window.fetch = async (url, init = {}) => {
  const answer = await real(url, init);
  if ((init.method || 'GET') === 'POST') {
    window.sent.push([init.headers['Idempotency-Key'], init.headers['If-Match'] || null, answer.status]);
    if (window.sent.length === 1) throw new TypeError('the answer was lost');
  }
  return answer;
};
"""


def _notice(browser) -> str:
    return text_of(browser, "#notice")


def test_a_press_on_a_state_another_tab_changed_is_412_naming_it_and_the_page_rereads(browser, server, api_client, console_db):
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (stale tag)"))
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run_id)
    cue_banner(browser)  # parked at its cue: the run waits there
    api_client.call("POST", f"/runs/{run_id}/pause", {"reason": "lag spike"}, token=MODERATOR)
    wait_for_status(browser, "paused")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#run-controls [data-control='resume']"), "resume")

    browser.execute_script(HOLD_READS)
    # Another tab, a moderator's: resumed, then paused again for a reason this person has not seen.
    api_client.call("POST", f"/runs/{run_id}/resume", {}, token=MODERATOR)
    api_client.call("POST", f"/runs/{run_id}/pause", {"reason": "boss bugged again"}, token=MODERATOR)
    before = logged(console_db, run_id)
    press(browser, "resume", text="")
    said = eventually(lambda: "changed while you were looking" in (text := _notice(browser)) and text, "the 412 explained")
    assert "This changed while you were looking: here is what it is now:" in said
    assert f"run {run_id} is now paused at phase 1, paused by mod-mia at" in said and "boss bugged again" in said
    screenshot(browser, "run-stale-tag-412")
    assert run_row(console_db, run_id).status is RunStatus.PAUSED and logged(console_db, run_id) == before

    browser.execute_script("window.releaseReads()")  # the page re-reads: what it is now is on the page
    eventually(lambda: any(actor == "mod-mia" and "boss bugged again" in text for actor, text in log_rows(browser)),
               "the other tab's pause in the log")
    press(browser, "resume", text="")  # now pressed on what the person sees: it takes
    wait_for_status(browser, "running")
    assert any(actor == "root-admin" and "by resume" in text for actor, text in log_rows(browser))


def test_a_re_send_after_a_lost_answer_gets_the_first_answer_not_a_412_against_its_own_change(browser, server, api_client,
                                                                                             console_db):
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (re-send)"))
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    step_id, _ = cue_banner(browser)
    browser.execute_script(LOSE_FIRST_ANSWER)
    press(browser, "confirm", step_id, text="lit")
    # api.js sends it again after a pause (no answer is retried like a 503), with the same key and tag.
    eventually(lambda: "Confirmed" in _notice(browser), "the re-sent confirm's answer", timeout=30)
    (first_key, first_tag, first_status), (again_key, again_tag, again_status) = browser.execute_script("return window.sent")
    assert first_key == again_key and len(first_key) <= 64 and first_tag == again_tag and first_tag.startswith(f'"s{step_id}.')
    assert (first_status, again_status) == (200, 200)
    assert step_row(console_db, step_id).status is StepStatus.DONE
    confirms = [r for r in logged(console_db, run_id) if r["detail"] and r["detail"].get("control") == "confirm"]
    assert len(confirms) == 1 and confirms[0]["actor"] == "mod-mia"
