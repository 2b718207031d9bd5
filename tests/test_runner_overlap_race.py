"""Two runs of one definition falling due together, started by two real processes: one starts, the other is held
to the definition's `overlap` (issue 41 item 4's policies, under concurrency).

Before, each start read the runs under way with a plain read and started when it saw none: with the first start
not yet committed when the second read, both runs started under `skip` (and under `queue_one`), however the
policy read. The interleaving is forced: the first process starts its run and holds its transaction open until
the second has either finished (the race lost) or is in its start's UPDATE, having read the runs under way
(where the guard's locking read waits for the first), then commits.
"""

from datetime import timedelta

import pytest

from chalicelib.db import Database, must_exist
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.programme import programme_of
from chalicelib.events.runner.start import start_run
from chalicelib.events.store import definitions, runs
from tests.support.factory import document, make_definition, run_row
from tests.support.interleaved import SPAWN, WAIT, answers_of, until
from tests.support.runner_kit import step, tick

pytestmark = pytest.mark.realtime  # real processes


def _start(db: Database, run_id: int, now, after_the_update=None) -> RunStatus:
    """The start's unit for `run_id`, as the walk runs it; `after_the_update` runs before its commit."""

    def unit(tx):
        run = must_exist(runs.get(tx, run_id))
        version = must_exist(definitions.get_version(tx, run.definition_id, run.definition_version))
        cursor = start_run(tx, now, run, programme_of(version.document), [])
        if after_the_update is not None:
            after_the_update()
        return cursor.status

    return db.transaction(unit)


def _first(params, run_id, now, started, second_done, results):
    db, onlooker = Database(params), Database(params)

    def hold_until_the_second_finished_or_is_starting():
        started.set()
        until(lambda: second_done.is_set() or _the_second_is_starting(onlooker),
              "the second start neither finished nor reached its start")

    results.put(("first", _start(db, run_id, now, hold_until_the_second_finished_or_is_starting).value))


def _second(params, run_id, now, started, second_done, results):
    db = Database(params)
    assert started.wait(WAIT)
    status = _start(db, run_id, now)
    second_done.set()
    results.put(("second", status.value))


def _the_second_is_starting(db: Database) -> bool:
    """The second's start is in its UPDATE: what it read under way, it read before the first committed."""
    return bool(db.autocommit(lambda tx: tx.scalar(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()"
        " AND INFO LIKE 'UPDATE event_runs SET status = %%'")))


@pytest.mark.parametrize("overlap", ["skip", "queue_one"])
def test_two_runs_falling_due_together_on_two_processes_start_one(db, db_params, clock, runner, overlap):
    doc = document([[step("core.cue", instruction="Light the bonfire")]], schedule={"cron": "0 3 1 1 *", "overlap": overlap})
    definition = make_definition(db, clock.now() - timedelta(minutes=1), doc)
    due = [db.transaction(lambda tx, at=at: runs.insert_occurrence(
        tx, definition_id=definition.id, definition_version=definition.current_version, scheduled_for=at,
        grace_seconds=3600, now=clock.now()))[0] for at in (clock.now() - timedelta(minutes=10), clock.now())]
    first, second = (must_exist(run).id for run in due)
    started, second_done, results = SPAWN.Event(), SPAWN.Event(), SPAWN.Queue()
    answers = answers_of((_first, (db_params, first, clock.now(), started, second_done, results)),
                         (_second, (db_params, second, clock.now(), started, second_done, results)), results=results)
    assert answers == {"first": "running", "second": "scheduled"}  # the second started nothing: it decides again
    assert run_row(db, second).status is RunStatus.SCHEDULED
    tick(runner)  # its next walk sees the first under way
    held = run_row(db, second)
    if overlap == "skip":
        assert held.status is RunStatus.MISSED
        assert held.last_error == f"skipped: run {first} of this definition is under way (overlap: skip)"
    else:
        assert held.status is RunStatus.SCHEDULED and db.autocommit(lambda tx: runs.queued_behind(tx, second)) == first
    assert run_row(db, first).status is RunStatus.RUNNING
