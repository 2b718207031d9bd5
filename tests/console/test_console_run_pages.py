"""The run page of a long run: it pages through GET /runs/{id} and holds the whole run, but draws at most
STEPS_SHOWN steps of a phase and the newest LOG_SHOWN lines of its log at a time (drawing every row of a run of
thousands of steps kept the browser busy for seconds on each change), with a pager to the rest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from selenium.webdriver.common.by import By

from chalicelib.events import journal
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.model import StepSpec
from chalicelib.events.store import log
from tests.console.browser import eventually
from tests.console.pages import open_run, sign_in
from tests.support.api import ADMIN
from tests.support.factory import make_run, materialise

STEPS_SHOWN = 200  # steps.js
LOG_SHOWN = 500  # log.js


def _rows(browser) -> list[int]:
    return [int(row.get_attribute("data-step-row")) for row in browser.find_elements(By.CSS_SELECTOR, "[data-step-row]")]


def _shown(browser, phase: int = 1) -> str:
    return browser.find_element(By.CSS_SELECTOR, f"[data-steps-shown='{phase}']").text


def _to(browser, where: str, says: str) -> None:
    browser.find_element(By.CSS_SELECTOR, f"[data-step-pager='1'] [data-steps-to='{where}']").click()
    eventually(lambda: _shown(browser) == says, f"the pager saying {says!r}")


def test_a_run_longer_than_one_api_page_holds_every_step_and_shows_a_window_of_them(browser, server, console_db):
    from chalicelib.api.schemas import STEPS_PAGE

    now = datetime.now(UTC).replace(tzinfo=None)
    run = make_run(console_db, now, status=RunStatus.PAUSED, current_phase=1)  # no timer: the tick leaves it be
    made = materialise(console_db, run, 1, [StepSpec("core.announce", {"message": f"line {n}"}) for n in range(STEPS_PAGE + 150)])
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run.id)
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-steps-shown='1']"), "the phase's pager")
    assert _shown(browser) == f"Steps 1–{STEPS_SHOWN} of {len(made)}"  # where it stands: its first open step
    assert _rows(browser) == [step.id for step in made[:STEPS_SHOWN]]
    assert server.requested(f"/runs/{run.id}?steps_cursor={made[STEPS_PAGE - 1].id}"), "the second page was asked for"
    _to(browser, "last", f"Steps 1001–{len(made)} of {len(made)}")
    assert _rows(browser) == [step.id for step in made[1000:]]
    assert browser.switch_to.active_element.text == f"Steps 1001–{len(made)} of {len(made)}", "focus says what shows"
    last = browser.find_element(By.CSS_SELECTOR, f"[data-step-row='{made[-1].id}']")
    assert f"Run {run.id} · Phase 1 · step {len(made)} (core.announce)\nline {len(made) - 1}" in last.text, last.text
    assert last.find_elements(By.CSS_SELECTOR, f"[data-control='skip'][data-step='{made[-1].id}']"), "the last page's controls"
    _to(browser, "earlier", f"Steps 801–1000 of {len(made)}")
    _to(browser, "standing", f"Steps 1–{STEPS_SHOWN} of {len(made)}")
    assert browser.find_element(By.CSS_SELECTOR, "[data-steps-to='first']").get_attribute("disabled")


def test_the_window_stands_where_the_run_does_and_stays_where_the_person_moved_it(browser, server, console_db):
    now = datetime.now(UTC).replace(tzinfo=None)
    run = make_run(console_db, now, status=RunStatus.PAUSED, current_phase=1)
    made = materialise(console_db, run, 1, [StepSpec("core.announce", {"message": f"line {n}"}) for n in range(650)])

    def done_through(count: int) -> None:  # the first `count` steps over, as a walk that went that far leaves them
        console_db.transaction(lambda tx: tx.execute(
            "UPDATE event_run_steps SET status = 'done', started_at = %s, finished_at = %s"
            " WHERE run_id = %s AND seq < %s", (now, now, run.id, count)))

    done_through(450)
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run.id)
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-steps-shown='1']"), "the phase's pager")
    assert _shown(browser) == "Steps 401–600 of 650", "the window holding step 451, the first open one"
    assert made[450].id in _rows(browser)
    _to(browser, "first", "Steps 1–200 of 650")
    done_through(620)  # the run moves on while the person reads back
    browser.execute_script("window.dispatchEvent(new Event('focus'))")  # a paused run's page reads again on focus
    eventually(lambda: browser.find_element(By.CSS_SELECTOR, f"[data-step-row='{made[150].id}']").get_attribute(
        "data-status") == "done", "the page read again")
    assert _shown(browser) == "Steps 1–200 of 650", "the rows the person moved to stay"
    _to(browser, "standing", "Steps 601–650 of 650")


def test_a_long_log_shows_its_newest_lines_and_earlier_ones_on_asking(browser, server, console_db):
    now = datetime.now(UTC).replace(tzinfo=None)
    run = make_run(console_db, now, status=RunStatus.PAUSED, current_phase=1)
    materialise(console_db, run, 1, [StepSpec("core.announce", {"message": "hello"})])
    rows = LOG_SHOWN * 2 + 100
    console_db.transaction(lambda tx: log.append_many(
        tx, [journal.run_phase(run.id, 1, f"phase row {n}") for n in range(rows)], now - timedelta(minutes=5)))
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run.id)
    counted = eventually(lambda: browser.find_element(By.ID, "log-counted").text, "the log's count")
    assert counted == f"Showing the newest {LOG_SHOWN} of {rows} lines."
    lines = browser.find_elements(By.CSS_SELECTOR, "#run-log li")
    assert len(lines) == LOG_SHOWN and "“phase row 1099”" in lines[-1].text and "“phase row 600”" in lines[0].text
    browser.find_element(By.ID, "log-earlier").click()
    eventually(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#run-log li")) == 2 * LOG_SHOWN, "500 more lines")
    browser.find_element(By.ID, "log-earlier").click()
    eventually(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#run-log li")) == rows, "every line")
    assert not browser.find_element(By.ID, "log-earlier").is_displayed()
    assert browser.find_element(By.ID, "log-counted").text == ""
