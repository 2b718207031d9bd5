"""Dates for the console tests, taken from today, never written in.

The console tests run on the wall clock: their server plans on the database's clock (`UTC_TIMESTAMP`), their
tick loop plans for real and their pages read the browser's `Date.now()`. A date written into a test passes
until the day it is reached: the API then refuses a run scheduled by hand more than its grace window (300 s)
in the past, and the calendar lists no occurrence before its definition was created (today, in the test).
So a test that needs a day ahead takes it from here: a month at least two ahead (`month_ahead`), and the
occurrences it holds of the tests' weekly schedule (Fridays at 20:00 in Berlin, `Month.fridays`).

"Local" is the machine's zone, which is the browser's: Chromium reads the same TZ and /etc/localtime as
Python's `datetime.astimezone()`. A test that compares the day (or the month) it read at one moment with the
page's at another waits past a midnight about to fall first (`clear_of_midnight`).
"""

from __future__ import annotations

import calendar
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from selenium.webdriver.remote.webdriver import WebDriver

BERLIN = ZoneInfo("Europe/Berlin")
FRIDAY = 4  # date.weekday()
MIDNIGHT_MARGIN = timedelta(minutes=2)


def utc_z(at: datetime) -> str:
    """`at` as the API writes a moment: "2027-02-12T19:00:00Z"."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Month:
    """A month of the calendar: its days as the viewer's zone (the machine's) bounds them."""

    year: int
    month: int

    @property
    def param(self) -> str:
        """The calendar's `?month=` for it: "2027-02"."""
        return f"{self.year}-{self.month:02d}"

    @property
    def days(self) -> int:
        return calendar.monthrange(self.year, self.month)[1]

    def next(self) -> Month:
        return Month(self.year + self.month // 12, self.month % 12 + 1)

    def first(self) -> datetime:
        """Its first midnight in the machine's zone, as the calendar's page bounds the month (an aware time)."""
        return datetime(self.year, self.month, 1).astimezone()

    def end(self) -> datetime:
        """The next month's first midnight, local: the month is [first, end)."""
        return self.next().first()

    def at(self, day: int, hour: int, minute: int = 0, zone: ZoneInfo = BERLIN) -> datetime:
        """Its `day` at `hour`:`minute` on the clocks of `zone` (an aware time)."""
        return datetime(self.year, self.month, day, hour, minute, tzinfo=zone)

    def fridays(self) -> list[str]:
        """Every Friday at 20:00 in Berlin (the tests' `0 20 * * 5`) the calendar draws on this month, as the API
        names them ("2027-02-05T19:00:00Z"): those inside [first, end) in the viewer's zone. In a zone far east
        of Berlin a Friday evening on the last day is drawn on the next month, so the list is taken in that zone,
        not from Berlin's dates: four or five."""
        first, end = self.first(), self.end()
        day = (first - timedelta(days=1)).astimezone(BERLIN).date()
        found = []
        while (evening := datetime(day.year, day.month, day.day, 20, tzinfo=BERLIN)) < end:
            if day.weekday() == FRIDAY and evening >= first:
                found.append(utc_z(evening))
            day += timedelta(days=1)
        return found


def month_ahead(months: int = 2, today: date | None = None) -> Month:
    """The month `months` after this one (today's, in the machine's zone): at least two ahead, every day of it
    is still to come and inside the API's year ahead, however late in this month the test runs."""
    today = today or datetime.now().date()
    index = today.year * 12 + today.month - 1 + months
    return Month(index // 12, index % 12 + 1)


def month_label(driver: WebDriver, month: Month) -> str:
    """The month as the calendar's heading writes it, in the browser's own words: "February 2027"."""
    return str(driver.execute_script(
        "return new Intl.DateTimeFormat(undefined, { month: 'long', year: 'numeric' })"
        ".format(new Date(arguments[0], arguments[1] - 1, 1))", month.year, month.month))


def clear_of_midnight(margin: timedelta = MIDNIGHT_MARGIN) -> None:
    """Returns at once unless local midnight is less than `margin` away; then waits until the day has changed.

    For a test that reads "today" (or this month) at one moment and compares it with what the page shows at
    another: a midnight falling between the two moves one and not the other. `margin` is longer than such a
    test takes from its start to its last such reading."""
    now = datetime.now()
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time())
    if midnight.astimezone() - now.astimezone() >= margin:
        return
    while datetime.now().date() == now.date():  # the day itself: a DST change at midnight skips 00:00
        time.sleep(0.5)
