"""The cron planner: never before a definition's version, nearest now first, skips counted, bounded by the tick's time.

Each test names a way the planner once went wrong: runs planned a day before
their definition existed, a backlog that kept it hours behind now, a random cron
token or an unreadable schedule that took every tick down, and thirty busy
definitions that left a short tick no time for due runs.
"""

import itertools
import logging
from datetime import timedelta

from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.runner import Budget
from tests.support.factory import document, make_definition, run_row
from tests.support.runner_kit import schedule, step, tick

HELLO = [[step("core.announce", message="hi")]]


def _recurring(db, created_at, cron, grace=300, timezone=None):
    schedule = {"cron": cron} | ({"timezone": timezone} if timezone else {})
    return make_definition(db, created_at, document(HELLO, schedule=schedule, grace_seconds=grace))


def _planned(db, definition_id=None):
    where = f"WHERE definition_id = {int(definition_id)}" if definition_id else ""
    return [r["scheduled_for"] for r in db.autocommit(
        lambda tx: tx.all(f"SELECT scheduled_for FROM event_runs {where} ORDER BY scheduled_for"))]


def test_a_new_definition_is_never_planned_before_it_was_created(db, clock, runner):
    _recurring(db, clock.now(), "* * * * *", grace=86400)
    report = tick(runner)
    planned = _planned(db)
    assert planned[0] == clock.now() and planned[-1] == clock.now() + timedelta(minutes=15)
    assert report.planned == len(planned) == 16 and report.skipped_occurrences == 0
    clock.advance(60)
    assert tick(runner).planned == 1  # 20:16: the next tick reaches now + horizon, and plans nothing twice
    assert len(_planned(db)) == 17


def test_a_new_version_is_planned_from_its_own_creation_and_planned_runs_keep_theirs(db, clock, runner):
    from chalicelib.events.store import definitions

    definition = _recurring(db, clock.now(), "0 * * * *")
    tick(runner)
    assert _planned(db) == [clock.now()]
    clock.advance(30 * 60)
    db.transaction(lambda tx: definitions.add_version(
        tx, definition.id, document(HELLO, schedule={"cron": "*/10 * * * *"}), actor="t", now=clock.now()))
    tick(runner)
    rows = db.autocommit(lambda tx: tx.all("SELECT scheduled_for, definition_version FROM event_runs ORDER BY scheduled_for"))
    times = [(r["scheduled_for"].strftime("%H:%M"), r["definition_version"]) for r in rows]
    assert times == [("20:00", 1), ("20:30", 2), ("20:40", 2)]  # 20:30 is the new version's creation itself


def test_a_planner_far_behind_plans_the_occurrences_nearest_now_first(db, clock, runner):
    # Created a day ago and never planned (say the tick was down): within a day's grace every
    # minute could still start, but only the hundred nearest now become runs in one tick.
    _recurring(db, clock.now() - timedelta(days=1), "* * * * *", grace=86400)
    report = tick(runner)
    planned = _planned(db)
    assert report.planned == len(planned) == 100
    assert planned[-1] == clock.now() + timedelta(minutes=15) and planned[0] == clock.now() - timedelta(minutes=84)
    assert report.skipped_occurrences == 24 * 60 + 16 - 100  # the older ones: counted, not planned
    due = db.autocommit(lambda tx: tx.one("SELECT id FROM event_runs WHERE scheduled_for = %s", (clock.now(),)))
    assert run_row(db, due["id"]).status is RunStatus.COMPLETED
    clock.advance(60)
    later = tick(runner)
    assert (later.planned, later.skipped_occurrences) == (1, 0)  # caught up: only what is new


def test_occurrences_past_their_grace_are_counted_and_logged_once_not_planned(db, clock, runner, caplog):
    definition = _recurring(db, clock.now() - timedelta(hours=1), "*/5 * * * *", grace=300)
    with caplog.at_level(logging.WARNING, logger="chalicelib.events.runner.planner"):
        report = tick(runner)
    assert [t.strftime("%H:%M") for t in _planned(db)] == ["19:55", "20:00", "20:05", "20:10", "20:15"]
    assert report.skipped_occurrences == 11  # 19:00 .. 19:50: too late to start, so no run at all
    (warning,) = [r.getMessage() for r in caplog.records if r.name.endswith("planner")]
    assert f"definition {definition.id}: 11 occurrence(s) of '*/5 * * * *'" in warning and "past their grace" in warning
    clock.advance(15)
    assert tick(runner).skipped_occurrences == 0


def test_a_definition_whose_schedule_cannot_be_planned_is_skipped_and_the_others_are_planned(db, clock, runner, caplog):
    # Stored before validation was strict: a random token, and one croniter gave up on at plan time.
    for legacy in ("R * * * *", "0 0 31 R *"):
        broken = _recurring(db, clock.now(), "0 * * * *")
        db.autocommit(lambda tx, i=broken.id, c=legacy: tx.execute(
            "UPDATE event_definitions SET schedule_cron = %s WHERE id = %s", (c, i)))
    good = _recurring(db, clock.now(), "*/5 * * * *")
    with caplog.at_level(logging.ERROR, logger="chalicelib.events.runner.planner"):
        report = tick(runner)
    assert (report.plan_failures, report.planned, report.errors) == (2, 4, 0)
    assert len(_planned(db, good.id)) == 4 and len(_planned(db)) == 4
    assert sum("its schedule could not be planned" in r.getMessage() for r in caplog.records) == 2


def test_planning_keeps_to_its_share_of_a_short_tick_and_due_runs_still_advance(db, clock, runner):
    # Forty busy definitions and a tick whose clock moves 20 ms at every look: planning may
    # use half the tick, a run due now is still advanced in it, and the definitions left
    # out are planned by the next ticks.
    for _ in range(40):
        _recurring(db, clock.now(), "* * * * *")
    due = schedule(db, clock.now(), document(HELLO))
    looks = itertools.count()
    first = runner.tick(Budget.for_seconds(1.0, hard_seconds=60, monotonic=lambda: next(looks) * 0.02))
    assert 0 < first.plan_deferred < 40 and first.planned == 16 * (40 - first.plan_deferred)
    assert run_row(db, due.id).status is RunStatus.COMPLETED
    for _ in range(40):
        if tick(runner).plan_deferred == 0:
            break
    assert len(_planned(db)) == 40 * 16 + 1


def test_friday_2000_in_berlin_is_1900_utc_in_winter_and_1800_in_summer(db, clock, runner):
    clock.set(clock.now().replace(day=4, hour=18, minute=50))  # Friday 4 December, 19:50 in Berlin
    _recurring(db, clock.now(), "0 20 * * 5", timezone="Europe/Berlin")
    tick(runner)
    assert [t.isoformat() for t in _planned(db)] == ["2026-12-04T19:00:00"]
    summer = _recurring(db, clock.now(), "0 20 * * 5", timezone="Europe/Berlin")
    clock.set(clock.now().replace(year=2027, month=6, day=4, hour=17, minute=50))
    tick(runner)
    assert [t.isoformat() for t in _planned(db, summer.id)] == ["2027-06-04T18:00:00"]


def test_a_daily_0230_in_berlin_fires_once_on_both_daylight_saving_days(db, clock, runner):
    # Spring 2027: 02:30 does not exist (clocks jump 02:00 -> 03:00 at 01:00 UTC): it fires at the jump.
    # Autumn 2027: 02:30 happens twice (00:30 and 01:30 UTC): it fires at the first.
    start = clock.now().replace(year=2027, month=3, day=27, hour=0, minute=0)
    _recurring(db, start, "30 2 * * *", grace=3600, timezone="Europe/Berlin")
    for day in [(3, 27), (3, 28), (3, 29), (10, 30), (10, 31), (11, 1)]:
        for minute in range(0, 240, 10):  # tick every ten minutes through each night
            clock.set(start.replace(month=day[0], day=day[1]) + timedelta(minutes=minute))
            tick(runner)
    assert [t.isoformat() for t in _planned(db)] == [
        "2027-03-27T01:30:00", "2027-03-28T01:00:00", "2027-03-29T00:30:00",
        "2027-10-30T00:30:00", "2027-10-31T00:30:00", "2027-11-01T01:30:00",
    ]


def test_occurrences_past_the_hundred_nearest_now_on_the_later_side_are_planned_by_a_later_tick(db, clock, runner):
    # A long horizon and a day's backlog: the hundred nearest now leave later occurrences out,
    # and the mark stops before them, so the next tick plans them rather than losing them.
    runner.horizon = timedelta(hours=3)
    _recurring(db, clock.now() - timedelta(days=1), "* * * * *", grace=86400)
    start = clock.now()
    assert tick(runner).planned == 100
    assert max(_planned(db)) < start + timedelta(hours=1)
    clock.advance(3600)
    assert tick(runner).planned == 100
    assert start + timedelta(hours=2) in _planned(db)
