"""Cron schedules: standard five-field expressions and their occurrences in a time zone.

Only standard cron is accepted — numbers, month and weekday names, `*`, `,`, `-`
and `/` — checked here before croniter sees the text, so an expression means the
same on every read: croniter's `R` and `H` tokens draw a new time each time, and
`L`, `W`, `#`, `?` and six- or seven-field forms are extensions that other crons
read differently. The text is plain ASCII, its fields split by spaces or tabs:
any other character (a no-break space pasted from a page, a full-width digit) is
named with where it stands, never handed to croniter, which would raise on it;
and whatever croniter still refuses is a problem, never an exception.

croniter enumerates the matching wall-clock times; this module turns each into
one UTC instant, so that every matching wall-clock time fires exactly once across
daylight-saving changes:

- a wall-clock time the clocks skip (spring forward) fires at the instant they
  jump, and several skipped times collapse into that one instant;
- a wall-clock time that happens twice (fall back) fires at its first instance.

The mapping never goes backwards in time, which is what lets `Schedule.between`
walk a window in order. croniter, zoneinfo and tzdata's list of zones load with
the first schedule checked or evaluated, not with the app.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

from .errors import InvalidCron

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

DEFAULT_TIMEZONE = "UTC"
FIELD_NAMES = "minute hour day-of-month month day-of-week"
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


@dataclass(frozen=True)
class _Field:
    name: str
    lowest: int
    highest: int
    names: dict[str, int]


_FIELDS = (
    _Field("minute", 0, 59, {}),
    _Field("hour", 0, 23, {}),
    _Field("day-of-month", 1, 31, {}),
    _Field("month", 1, 12, {name: i + 1 for i, name in enumerate(_MONTHS)}),
    _Field("day-of-week", 0, 7, {name: i for i, name in enumerate(_DAYS)}),  # 0 and 7 are Sunday
)
# guard: cron-random-token-accepted
_ITEM = re.compile(r"(?P<base>\*|(?P<first>[0-9a-z]+)(?:-(?P<last>[0-9a-z]+))?)(?:/(?P<step>[0-9]+))?")
_STANDARD = "use numbers, names, '*', ',', '-' and '/'"
_SEPARATORS = " \t"  # what croniter splits fields on, as str.split() does


def _croniter() -> ModuleType:
    """croniter, imported where a cron is evaluated rather than with the app."""
    import croniter

    return croniter


# ── validation ─────────────────────────────────────────────────────────────
def cron_problems(expression: str) -> list[str]:
    """Every problem of `expression` as standard five-field cron, each naming its field (or the character that
    is not plain cron, and where it stands)."""
    foreign = _foreign_characters(expression)
    if foreign:
        return foreign
    fields = expression.split()
    # guard: cron-of-six-fields-accepted
    if len(fields) != 5:
        return [f"{expression!r} has {len(fields)} field(s); a schedule is standard five-field cron ({FIELD_NAMES})"]
    problems = []
    for field, text in zip(_FIELDS, fields, strict=True):
        problems += [f"the {field.name} field {text!r} {problem}" for problem in _field_problems(field, text)]
    if problems:
        return problems
    croniter = _croniter()
    try:
        croniter.croniter(expression.lower(), datetime(2000, 1, 1)).get_next(datetime)
    except croniter.CroniterBadDateError:
        # guard: cron-that-never-fires-accepted
        return [f"{expression!r} never fires (no such day in those months)"]
    except croniter.CroniterError as error:  # what the checks above let through and croniter still refuses
        return [f"{expression!r} is not standard cron ({error}): {_STANDARD}"]
    return []


def _foreign_characters(expression: str) -> list[str]:
    """Each character of `expression` that is not plain cron (printable ASCII, spaces and tabs between fields),
    once, with where it first stands (counted from 1) and what to type instead."""
    problems, seen = [], set()
    for at, char in enumerate(expression, start=1):
        if ("!" <= char <= "~" or char in _SEPARATORS) or char in seen:
            continue
        seen.add(char)
        name = unicodedata.name(char, "").lower() or "control character"
        blank = char.isspace() or unicodedata.category(char) in ("Zs", "Zl", "Zp", "Cf")
        fix = "separate the fields with plain spaces" if blank else f"standard cron is plain text: {_STANDARD}"
        problems.append(f"{expression!r} holds {_article(name)} {name} (U+{ord(char):04X}) at character {at}: {fix}")
    return problems


def _article(name: str) -> str:
    return "an" if name[:1] in "aeiou" else "a"


def _field_problems(field: _Field, text: str) -> list[str]:
    problems = []
    for item in text.split(","):
        match = _ITEM.fullmatch(item.lower())
        if match is None:
            problems.append(f"is not standard cron: {_STANDARD}")
            continue
        if match["step"] is not None:
            if match["first"] is not None and match["last"] is None:
                problems.append(f"steps from the single value {item!r}: a step needs '*' or a range")
            elif not 1 <= int(match["step"]) <= field.highest:
                problems.append(f"has the step {match['step']}: it must be from 1 to {field.highest}")
        values = [v for v in (match["first"], match["last"]) if v is not None]
        numbers = [_value(field, v) for v in values]
        for value, number in zip(values, numbers, strict=True):
            if number is not None:
                continue
            if value.isdigit():
                problems.append(f"has {value}: it must be from {field.lowest} to {field.highest}")
            elif field.names:
                problems.append(f"has {value!r}: expected a number or one of {', '.join(field.names)}")
            else:
                problems.append(f"is not standard cron: {_STANDARD}")
        low, high = [*numbers, None, None][:2]
        if len(numbers) == 2 and low is not None and high is not None and low > high:
            problems.append(f"has the range {item!r}, which runs backwards")
    return problems


def _value(field: _Field, text: str) -> int | None:
    if text.isdigit():
        number = int(text)
        return number if field.lowest <= number <= field.highest else None
    return field.names.get(text)


@cache
def _zone_names() -> frozenset[str]:
    # The tzdata package's list, not the machine's: the same names everywhere, and
    # no `localtime` or `posixrules` that would mean whatever the server is set to.
    from importlib import resources  # with the first time zone checked, not with the app

    return frozenset(resources.files("tzdata").joinpath("zones").read_text().split())


def timezone_problems(name: str) -> list[str]:
    # guard: cron-any-time-zone-name-accepted
    if name in _zone_names():
        return []
    return [f"{name!r} is not an IANA time zone name (such as 'Europe/Berlin' or 'UTC')"]


# ── in words ───────────────────────────────────────────────────────────────
_DAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def in_words(expression: str) -> str:
    """A valid expression as a person says it ("every Friday at 20:00"); forms without a short reading
    (steps in hours, lists of months, …) are given as the cron itself."""
    minute, hour, day, month, weekday = expression.lower().split()
    fixed = minute.isdigit() and hour.isdigit()
    if fixed and day == month == "*":
        at = f"at {int(hour):02d}:{int(minute):02d}"
        days = _weekdays_in_words(weekday)
        if days is not None:
            return f"every {days} {at}"
    if fixed and day.isdigit() and month == weekday == "*":
        return f"on day {int(day)} of every month at {int(hour):02d}:{int(minute):02d}"
    if minute.isdigit() and hour == day == month == weekday == "*":
        return f"every hour at minute {int(minute)}"
    # "every N minutes" only where the gaps are all N: a step that does not divide the hour restarts at :00
    if minute.startswith("*/") and hour == day == month == weekday == "*" and 60 % int(minute[2:]) == 0:
        return f"every {int(minute[2:])} minutes"
    return f"at the times of the cron {expression!r}"


def _weekdays_in_words(field: str) -> str | None:
    if field == "*":
        return "day"
    names = [_value(_FIELDS[4], part) for part in field.split(",")]
    if all(n is not None for n in names):
        return " and ".join(_DAY_NAMES[n] for n in names if n is not None)
    first, dash, last = field.partition("-")
    low, high = _value(_FIELDS[4], first), _value(_FIELDS[4], last)
    if dash and low is not None and high is not None:
        return f"{_DAY_NAMES[low]} to {_DAY_NAMES[high]}"
    return None


# ── occurrences ────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Schedule:
    """A validated cron expression read in a time zone."""

    cron: str
    timezone: str = DEFAULT_TIMEZONE

    def __post_init__(self) -> None:
        problems = cron_problems(self.cron) + timezone_problems(self.timezone)
        if problems:
            raise InvalidCron("; ".join(problems))

    def between(self, after: datetime, until: datetime) -> Iterator[datetime]:
        """The occurrences in (after, until], ascending, as naive UTC datetimes."""
        from zoneinfo import ZoneInfo  # where a schedule is evaluated, not with the app

        zone = ZoneInfo(self.timezone)
        walls = _croniter().croniter(self.cron.lower(), _wall_time(after, zone))
        previous = None
        while True:
            instant = _instant(walls.get_next(datetime), zone)
            # guard: cron-window-drops-its-end
            if instant > until:
                return
            # Wall times just after `after` can map before it (`after` in a repeated
            # hour), and skipped wall times share one instant: neither is new.
            # guard: cron-skipped-wall-times-fire-once-each
            if instant > after and instant != previous:
                previous = instant
                yield instant


def _wall_time(instant: datetime, zone: ZoneInfo) -> datetime:
    return instant.replace(tzinfo=UTC).astimezone(zone).replace(tzinfo=None)


def _instant(wall: datetime, zone: ZoneInfo) -> datetime:
    """The UTC instant `wall` fires at in `zone` (see the module's rules)."""
    # guard: cron-repeated-wall-time-fires-at-its-second-instance
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC).replace(tzinfo=None)
    if _wall_time(first, zone) == wall:
        return first  # an existing time; fold=0 is the first of a repeated one
    return _jump_over(wall, zone)


def _jump_over(wall: datetime, zone: ZoneInfo) -> datetime:
    """The instant the clocks jumped over the skipped wall time `wall`."""
    # Read with the offset after the jump it falls before it, with the offset
    # before the jump after it: the jump is the first second in between whose
    # wall time is past `wall`.
    before = wall.replace(tzinfo=zone, fold=1).astimezone(UTC).replace(tzinfo=None)
    after = wall.replace(tzinfo=zone, fold=0).astimezone(UTC).replace(tzinfo=None)
    low, high = 0, int((after - before).total_seconds())
    while low < high:
        middle = (low + high) // 2
        if _wall_time(before + timedelta(seconds=middle), zone) > wall:
            high = middle
        else:
            low = middle + 1
    # guard: cron-skipped-wall-time-fires-an-hour-late
    return before + timedelta(seconds=low)
