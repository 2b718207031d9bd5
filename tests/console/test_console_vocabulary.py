"""The console's words, marks and buttons come from the API (GET /vocabulary): a control it was not told of is a plain button."""

from __future__ import annotations

from datetime import UTC, datetime

from selenium.webdriver.common.by import By

from chalicelib.events import commands
from chalicelib.events.lifecycle import RunStatus
from tests.console.browser import eventually, text_of
from tests.console.pages import open_run, sign_in
from tests.support.api import ADMIN
from tests.support.factory import make_run


def test_a_control_the_console_was_not_told_of_is_a_plain_button_named_after_it(browser, server, console_db, monkeypatch):
    run = make_run(console_db, datetime.now(UTC).replace(tzinfo=None), status=RunStatus.PAUSED, current_phase=1)
    declared = commands.offered

    def with_a_new_control(*args, **kwargs):
        offer = declared(*args, **kwargs)
        return {**offer, "run": [*offer["run"], "rewind"]}

    monkeypatch.setattr(commands, "offered", with_a_new_control)
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run.id)
    unknown = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#run-controls [data-control='rewind']"), "the rewind button")[0]
    assert unknown.text == "rewind" and unknown.get_attribute("class") == ""
    # The declared ones keep their declared labels and tone, and the status its word and mark.
    resume = browser.find_element(By.CSS_SELECTOR, "#run-controls [data-control='resume']")
    cancel = browser.find_element(By.CSS_SELECTOR, "#run-controls [data-control='cancel']")
    assert (resume.text, cancel.text, cancel.get_attribute("class")) == ("Resume run", "Cancel run", "danger")
    assert text_of(browser, "#run-status") == "‖ paused"
    assert browser.find_element(By.ID, "paused-banner").is_displayed()  # from the run's waiting: resume

    unknown.click()
    eventually(lambda: any(method == "POST" and path.endswith(f"/runs/{run.id}/rewind")
                           for _, method, path in list(server.requests)), "the press to reach the API")


def test_the_status_filter_offers_each_status_by_its_word_never_its_raw_value(browser, server, api_client):
    sign_in(browser, ADMIN)
    options = eventually(lambda: browser.execute_script(
        "return [...document.querySelectorAll('#filter-status option')].map(o => [o.value, o.textContent])"), "the status filter")
    words = {status["status"]: status["label"] for status in api_client.call("GET", "/vocabulary")["run_statuses"]}
    assert dict(options[1:]) == words and "cleaning_up" not in [text for _, text in options], options
