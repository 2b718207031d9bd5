"""The run page of a run longer than one API page: it pages through GET /runs/{id} and shows the whole run."""

from __future__ import annotations

from datetime import UTC, datetime

from selenium.webdriver.common.by import By

from chalicelib.api.schemas import STEPS_PAGE
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.model import StepSpec
from tests.console.browser import eventually
from tests.console.pages import open_run, sign_in
from tests.support.api import ADMIN
from tests.support.factory import make_run, materialise


def test_a_run_longer_than_one_api_page_shows_every_step_and_the_controls_of_the_last(browser, server, console_db):
    now = datetime.now(UTC).replace(tzinfo=None)
    run = make_run(console_db, now, status=RunStatus.PAUSED, current_phase=1)  # no timer: the tick leaves it be
    made = materialise(console_db, run, 1, [StepSpec("core.announce", {"message": f"line {n}"}) for n in range(STEPS_PAGE + 150)])
    sign_in(browser, ADMIN)
    open_run(browser, server.url, run.id)
    shown = eventually(lambda: (n := len(browser.find_elements(By.CSS_SELECTOR, "[data-step-row]"))) == len(made) and n,
                       f"all {len(made)} steps on the page")
    assert shown == len(made)
    last = browser.find_element(By.CSS_SELECTOR, f"[data-step-row='{made[-1].id}']")
    assert f"Run {run.id} · Phase 1 · step {len(made)} (core.announce)\nline {len(made) - 1}" in last.text, last.text
    assert last.find_elements(By.CSS_SELECTOR, f"[data-control='skip'][data-step='{made[-1].id}']"), "the last page's controls"
    assert server.requested(f"/runs/{run.id}?steps_cursor={made[STEPS_PAGE - 1].id}"), "the second page was asked for"
