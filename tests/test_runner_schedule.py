"""Due runs start inside their grace window or are missed; recurring definitions get one run per occurrence."""

import threading
from collections import Counter
from datetime import timedelta

from chalicelib.db import Database
from chalicelib.events import occurrences
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.runner.planner import plan_occurrences
from chalicelib.events.store import definitions
from tests.support.factory import document, make_definition, run_row
from tests.support.runner_kit import log_of, run_story, schedule, step, tick
from tests.support.together import at_once

HELLO = document([[step("core.announce", message="hello")]])


def test_a_run_first_seen_after_its_grace_window_is_missed_with_the_cause(db, clock, runner):
    run = schedule(db, clock.now(), HELLO, scheduled_for=clock.now() - timedelta(seconds=301), grace=300)
    tick(runner)
    missed = run_row(db, run.id)
    assert missed.status is RunStatus.MISSED and missed.finished_at == clock.now() and missed.claimed_by is None
    (entry,) = log_of(db, run.id)
    assert (entry.detail["from"], entry.detail["to"]) == ("scheduled", "missed")
    assert entry.detail["cause"] == "first seen at 2026-12-04T20:00:00Z, after its grace window closed at 2026-12-04T19:59:59Z"


def test_a_run_inside_its_grace_window_starts_late_and_one_not_yet_due_waits(db, clock, runner):
    late = schedule(db, clock.now(), HELLO, scheduled_for=clock.now() - timedelta(seconds=300), grace=300)
    early = schedule(db, clock.now(), HELLO, scheduled_for=clock.now() + timedelta(seconds=10))
    tick(runner)
    assert run_row(db, late.id).status is RunStatus.COMPLETED
    assert run_row(db, early.id).status is RunStatus.SCHEDULED and log_of(db, early.id) == []
    clock.advance(10)
    tick(runner)
    assert run_row(db, early.id).status is RunStatus.COMPLETED


def _recurring(db, now, cron="*/5 * * * *"):
    return make_definition(db, now, document([[step("core.announce", message="hi")]], schedule={"cron": cron}, grace_seconds=300))


def test_a_recurring_definition_gets_a_run_per_occurrence_in_the_window(db, clock, runner):
    definition = _recurring(db, clock.now() - timedelta(minutes=10))
    report = tick(runner)
    planned = db.autocommit(lambda tx: tx.all("SELECT id, scheduled_for, definition_version FROM event_runs ORDER BY scheduled_for"))
    times = [r["scheduled_for"].strftime("%H:%M") for r in planned]
    assert times == ["19:55", "20:00", "20:05", "20:10", "20:15"]  # [now - grace, now + 15 min]
    assert report.planned == 5 and {r["definition_version"] for r in planned} == {1}
    statuses = [run_row(db, r["id"]).status for r in planned]
    assert statuses == [RunStatus.COMPLETED, RunStatus.COMPLETED] + [RunStatus.SCHEDULED] * 3
    assert run_story(db, planned[2]["id"]) == [(None, "scheduled")]

    every_five_minutes = document(schedule={"cron": "*/5 * * * *"})
    db.transaction(lambda tx: definitions.add_version(tx, definition.id, every_five_minutes, actor="t", now=clock.now()))
    clock.advance(300)
    assert tick(runner).planned == 1  # 20:20 is new; the others keep the version they were planned from
    versions = db.autocommit(lambda tx: tx.all("SELECT scheduled_for, definition_version FROM event_runs ORDER BY scheduled_for"))
    assert [v["definition_version"] for v in versions] == [1, 1, 1, 1, 1, 2]


def test_overlapping_planners_create_exactly_one_run_per_occurrence(db, db_params, clock):
    for minute in range(4):
        _recurring(db, clock.now(), cron=f"{minute}-59/4 * * * *")
    barrier = threading.Barrier(4)
    created, errors = [], []

    def planner():
        own = Database(db_params)
        barrier.wait()
        try:
            created.append(plan_occurrences(own, clock.now(), timedelta(hours=1)).planned)
        except Exception as error:  # reported below: a planner that loses a race must not crash
            errors.append(error)
        own.close()

    threads = [threading.Thread(target=planner) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    rows = db.autocommit(lambda tx: tx.all("SELECT id, occurrence_key FROM event_runs"))
    # The four crons split the minutes between them: every minute of 20:00 (their creation) .. 21:00 once.
    assert sum(created) == len(rows) == 61
    assert max(Counter(r["occurrence_key"] for r in rows).values()) == 1
    planned_rows = db.autocommit(lambda tx: tx.one("SELECT COUNT(*) AS n FROM event_run_log WHERE kind = 'run.status'"))
    assert planned_rows["n"] == len(rows)  # only the planner whose insert took wrote the log row


def test_two_planners_and_a_person_scheduling_the_same_occurrence_at_once_make_one_run_logged_once(db, db_params, clock):
    """Overlapping ticks and a moderator's POST /definitions/{id}/runs of the one occurrence in the window, released
    together, again and again: one run, one `run.status` row, and the person is answered that run."""
    at = clock.now() + timedelta(minutes=30)

    def planner(own):
        return plan_occurrences(own, clock.now(), timedelta(hours=1))

    for _ in range(5):
        definition = _recurring(db, clock.now(), cron=f"{at.minute} {at.hour} * * *")
        first, second, scheduled = at_once(db_params, planner, planner, lambda own, d=definition.id: occurrences.schedule_run(
            own, d, at, actor="mod-mia", now=clock.now()))
        run, created = scheduled
        assert (first.failed, second.failed) == (0, 0)
        made = db.autocommit(lambda tx, d=definition.id: tx.all("SELECT id FROM event_runs WHERE definition_id = %s", (d,)))
        assert [r["id"] for r in made] == [run.id]
        assert first.planned + second.planned + created == 1
        assert [(e.actor, e.detail["to"]) for e in log_of(db, run.id)] == [("mod-mia" if created else "runner", "scheduled")]
