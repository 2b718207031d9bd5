"""Relative dates by calendar day in the viewer's zone (ui.js `relativeWords`, used by every Scheduled, Started,
Finished, Due and log time), in real Chromium with its zone set to Berlin: a time a day or more away once said
"tomorrow" for anything 24-36 h ahead (Sunday 00:30 seen on Friday afternoon) and "in 2 days" for Saturday evening
seen early on Friday. Asked of the page's own module at fixed moments: the clock of the machine decides nothing."""

from __future__ import annotations

import pytest

WORDS = """
const [cases, done] = [arguments[0], arguments[arguments.length - 1]];
import('./console/ui.js').then((ui) => done(cases.map(([at, now]) => ui.relativeWords(at, Date.parse(now)))));
"""

# (the time shown, now, what it reads): Friday 6 March 2026 in Berlin, UTC+1.
CASES = [
    ("2026-03-08T00:30:00+01:00", "2026-03-06T14:00:00+01:00", "in 2 days"),  # 34.5 h ahead, the day after tomorrow
    ("2026-03-07T20:00:00+01:00", "2026-03-06T01:00:00+01:00", "tomorrow"),  # 43 h ahead, tomorrow
    ("2026-03-06T20:00:00+01:00", "2026-03-08T10:00:00+01:00", "2 days ago"),  # 38 h ago, the day before yesterday
    ("2026-03-07T08:00:00+01:00", "2026-03-08T22:00:00+01:00", "yesterday"),  # 38 h ago, yesterday
    ("2026-03-07T09:00:00+01:00", "2026-03-06T14:00:00+01:00", "in 19 hours"),  # under a day: hours
    ("2026-03-30T12:00:00+02:00", "2026-03-28T12:00:00+01:00", "in 2 days"),  # across the change to summer time
]


@pytest.fixture
def in_berlin(browser):
    browser.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "Europe/Berlin"})
    yield browser
    browser.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ""})


def test_tomorrow_and_yesterday_are_the_next_and_previous_calendar_day_in_the_viewers_zone(in_berlin):
    said = in_berlin.execute_async_script(WORDS, [[at, now] for at, now, _ in CASES])
    assert said == [words for _, _, words in CASES], list(zip(CASES, said, strict=True))
