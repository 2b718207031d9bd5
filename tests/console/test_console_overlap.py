"""What overlaps, in the editor's form in real Chromium (issue 41 item 4): the schedule's `overlap` is a choice
of the form, its words beside it, written into the document, and the projected timeline's overlap warning names
the policy chosen."""

from __future__ import annotations

from datetime import UTC, datetime

from selenium.webdriver.common.by import By

from tests.console.browser import eventually, text_of
from tests.console.dates import month_ahead
from tests.console.pages import sign_in
from tests.console.test_console_editor import _choose, _input, _json_tab
from tests.support.api import ADMIN


def test_the_schedule_s_overlap_is_chosen_in_the_form_and_named_by_the_timeline_s_warning(browser, server, api_client):
    # Every ten minutes of the month two ahead: the timeline projects them all the same, and the tick loop every
    # console test shares plans none of them (every ten minutes from now on, each run waiting 900 s, were live
    # runs in every later test's lists).
    cron = f"*/10 * * {month_ahead().month} *"
    document = {"name": f"Every ten minutes {datetime.now(UTC):%H%M%S%f}", "schedule": {"cron": cron},
                "phases": [{"name": "long", "steps": [{"action": "core.wait", "params": {"seconds": 900}},
                                                       {"action": "core.announce", "params": {"message": "Done"}}]}]}
    definition_id = api_client.call("POST", "/definitions", document)["definition"]["id"]
    sign_in(browser, ADMIN)
    browser.get(f"{server.console_url}#/definitions/{definition_id}")
    eventually(lambda: browser.find_elements(By.ID, "add-version"), "the definition's page")[0].click()
    overlap = _input(browser, "schedule.overlap")
    assert {o.get_attribute("value") for o in overlap.find_elements(By.TAG_NAME, "option")} >= {
        "allow", "skip", "cancel_previous", "queue_one"}
    assert "while an earlier run of this definition is still live" in text_of(browser, "[data-path='schedule.overlap']")
    eventually(lambda: "(overlap: allow: both run)" in text_of(browser, "#timeline-warnings"), "the warning, allow by default")
    _choose(browser, "schedule.overlap", "skip")
    eventually(lambda: "runs will overlap (overlap: skip: the later occurrence is skipped)" in text_of(browser, "#timeline-warnings"),
               "the warning naming the policy chosen")
    assert _json_tab(browser)["schedule"] == {"cron": cron, "overlap": "skip"}
