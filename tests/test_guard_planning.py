"""A planner moves a definition's planning mark only from the value it read, and only for the version it read.

Two ticks read the same definition; one plans and moves the mark. The other,
working from its stale read, must not move it again (its runs exist already),
and a planner that read the old version must not mark a new version planned:
the new version is planned from its own creation on. A run and the log row
that says who scheduled it commit together.
"""

from datetime import timedelta

from chalicelib.events.runner import Budget
from chalicelib.events.store import definitions
from tests.support.factory import document, make_definition
from tests.support.interference import log_rows_refused
from tests.support.runner_kit import step, tick

HOURLY = document([[step("core.announce", message="hi")]], schedule={"cron": "0 * * * *"})


def _recurrence_of(db, clock, definition_id):
    read = db.autocommit(lambda tx: definitions.recurrences(tx, clock.now() + timedelta(hours=1)))
    return next(r for r in read if r.definition_id == definition_id)


def _planned_through(db, definition_id):
    row = db.autocommit(lambda tx: tx.one("SELECT planned_through FROM event_definitions WHERE id = %s", (definition_id,)))
    return row["planned_through"]


def test_a_second_planner_with_the_same_read_does_not_move_the_mark(db, clock):
    definition = make_definition(db, clock.now(), HOURLY)
    first, second = _recurrence_of(db, clock, definition.id), _recurrence_of(db, clock, definition.id)
    through = clock.now() + timedelta(minutes=15)
    assert db.transaction(lambda tx: definitions.mark_planned(tx, first, through))
    assert not db.transaction(lambda tx: definitions.mark_planned(tx, second, through + timedelta(minutes=30)))
    assert _planned_through(db, definition.id) == through


def test_a_planner_that_read_the_old_version_does_not_mark_the_new_one_planned(db, clock, runner):
    definition = make_definition(db, clock.now(), HOURLY)
    stale = _recurrence_of(db, clock, definition.id)
    clock.advance(30)
    db.transaction(lambda tx: definitions.add_version(tx, definition.id, HOURLY, actor="tester", now=clock.now()))
    assert not db.transaction(lambda tx: definitions.mark_planned(tx, stale, clock.now() + timedelta(hours=2)))
    assert _planned_through(db, definition.id) is None  # the new version is still to be planned
    clock.set(clock.now().replace(minute=50))
    tick(runner)
    runs = db.autocommit(lambda tx: tx.all("SELECT definition_version, scheduled_for FROM event_runs"))
    assert [(r["definition_version"], r["scheduled_for"].hour) for r in runs] == [(2, 21)]


def test_a_planned_run_whose_log_row_fails_is_not_created_and_is_planned_next_tick(db, clock, runner):
    definition = make_definition(db, clock.now(), HOURLY)
    clock.set(clock.now().replace(minute=50))
    with log_rows_refused(db, "JSON_VALUE(NEW.detail, '$.to') = 'scheduled'"):
        assert runner.tick(Budget.for_seconds(60)).planned == 0
    assert db.autocommit(lambda tx: tx.all("SELECT id FROM event_runs")) == []
    assert _planned_through(db, definition.id) is None
    assert tick(runner).planned == 1
