"""The sweep under contention and cut short, and the statements whose guard only shows at an edge:
a run's grace window at its last instant, a wait holding past a skipped step, a lease given back."""

from datetime import timedelta

import pymysql

from chalicelib.db import Tx
from chalicelib.events import commands
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.store import runs, steps
from tests.support.factory import make_run, materialise, run_row, specs, step_row
from tests.support.scenes import put_step_in, run_with_steps

LEASE = 60
MAX = 3


def _expired_step_of(db, clock, run_status=RunStatus.RUNNING, attempts_before=0):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    (s,) = materialise(db, run, 1, specs("world.spawn"))
    if attempts_before:
        db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET attempts = %s WHERE id = %s", (attempts_before, s.id)))
    db.autocommit(lambda tx: steps.claim(tx, step_row(db, s.id), clock.now(), LEASE))
    if run_status is RunStatus.CANCELLED:
        commands.cancel(db, run.id, actor="mod-mia", now=clock.now())  # leaves the leased step alone
    return s


def _sweep(db, clock, limit):
    return db.transaction(lambda tx: steps.reclaim_stale(tx, clock.now() + timedelta(seconds=LEASE + 1), MAX, limit))


def test_a_step_of_a_cancelled_run_is_never_requeued_when_the_abandon_sweep_is_cut_short(db, clock):
    left = {_expired_step_of(db, clock, RunStatus.CANCELLED).id for _ in range(2)}
    swept = _sweep(db, clock, limit=1)
    assert len(swept.abandoned) == 1 and swept.requeued == [] and swept.gave_up == []
    left -= {swept.abandoned[0].id}
    assert step_row(db, left.pop()).status is StepStatus.RUNNING  # waits for the next sweep, not pending in a dead run


def test_a_step_of_a_cancelled_run_at_its_ceiling_is_cancelled_not_failed_when_the_sweep_is_cut_short(db, clock):
    ids = {_expired_step_of(db, clock, RunStatus.CANCELLED, attempts_before=MAX - 1).id for _ in range(2)}
    swept = _sweep(db, clock, limit=1)
    assert len(swept.abandoned) == 1 and swept.gave_up == []
    swept = _sweep(db, clock, limit=1)
    assert len(swept.abandoned) == 1 and swept.gave_up == []
    assert {step_row(db, i).status for i in ids} == {StepStatus.CANCELLED}


def test_a_sweep_skips_the_rows_another_sweeper_holds_and_takes_the_rest(db, clock):
    held, free = _expired_step_of(db, clock), _expired_step_of(db, clock)
    other_sweeper = db.connect()
    sweeper = db.connect()
    try:
        other_sweeper.begin()
        other_sweeper.cursor().execute("SELECT id FROM event_run_steps WHERE id = %s FOR UPDATE", (held.id,))
        with sweeper.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")  # waiting at all is the failure
        sweeper.begin()
        swept = steps.reclaim_stale(Tx(sweeper), clock.now() + timedelta(seconds=LEASE + 1), MAX)
        sweeper.commit()
    except pymysql.err.OperationalError as waited:
        raise AssertionError(f"the sweep waited for a row another sweeper holds: {waited}") from waited
    finally:
        other_sweeper.rollback()
        other_sweeper.close()
        sweeper.close()
    assert [s.id for s in swept.requeued] == [free.id]
    assert step_row(db, held.id).status is StepStatus.RUNNING


def test_a_worker_gives_back_only_its_own_run_lease(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    db.autocommit(lambda tx: runs.take_lease(tx, run.id, "old-worker", clock.now(), LEASE))
    later = clock.now() + timedelta(seconds=LEASE + 1)
    db.autocommit(lambda tx: runs.take_lease(tx, run.id, "new-worker", later, LEASE))
    assert not db.autocommit(lambda tx: runs.release_lease(tx, run.id, "old-worker", later))  # the old worker finishes late
    assert run_row(db, run.id).claimed_by == "new-worker"


def _scheduled(db, clock):
    return make_run(db, clock.now(), status=RunStatus.SCHEDULED)  # grace 300 s


def test_a_run_starts_at_the_last_instant_of_its_grace_window_and_is_missed_just_after(db, clock):
    first, second = _scheduled(db, clock), _scheduled(db, clock)
    close = clock.now() + timedelta(seconds=300)
    assert not db.autocommit(lambda tx: runs.miss_after_grace(tx, first.id, close))
    assert db.autocommit(lambda tx: runs.start_within_grace(tx, first.id, close))
    just_after = close + timedelta(microseconds=1)
    assert not db.autocommit(lambda tx: runs.start_within_grace(tx, second.id, just_after))
    assert db.autocommit(lambda tx: runs.miss_after_grace(tx, second.id, just_after))
    assert (run_row(db, first.id).status, run_row(db, second.id).status) == (RunStatus.STARTING, RunStatus.MISSED)


def test_a_run_is_not_started_before_its_time_nor_missed_inside_its_window(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.SCHEDULED, scheduled_for=clock.now() + timedelta(seconds=60))
    assert not db.autocommit(lambda tx: runs.start_within_grace(tx, run.id, clock.now()))
    assert not db.autocommit(lambda tx: runs.miss_after_grace(tx, run.id, clock.now() + timedelta(seconds=120)))
    assert run_row(db, run.id).status is RunStatus.SCHEDULED


def test_a_run_a_person_cancelled_is_neither_started_nor_missed(db, clock):
    run = _scheduled(db, clock)
    commands.cancel(db, run.id, actor="mod-mia", now=clock.now())
    assert not db.autocommit(lambda tx: runs.start_within_grace(tx, run.id, clock.now()))
    assert not db.autocommit(lambda tx: runs.miss_after_grace(tx, run.id, clock.now() + timedelta(seconds=301)))
    after = run_row(db, run.id)
    assert (after.status, after.started_at) == (RunStatus.CANCELLED, None)


def test_a_wait_holds_the_next_pending_step_past_one_a_person_skipped(db, clock):
    run, (wait, skipped, next_pending) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, wait, "done", clock.now())
    commands.skip(db, run.id, skipped.id, actor="mod-mia", now=clock.now())
    until = clock.now() + timedelta(seconds=30)
    assert db.autocommit(lambda tx: steps.delay_next(tx, run.id, 1, wait.seq, until))
    assert step_row(db, next_pending.id).due_at == until
    assert step_row(db, skipped.id).due_at is None


def test_a_second_hold_never_moves_the_next_step_earlier(db, clock):
    run, (wait, next_pending, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, wait, "done", clock.now())
    until = clock.now() + timedelta(seconds=30)
    assert db.autocommit(lambda tx: steps.delay_next(tx, run.id, 1, wait.seq, until))
    assert not db.autocommit(lambda tx: steps.delay_next(tx, run.id, 1, wait.seq, until - timedelta(seconds=10)))
    assert step_row(db, next_pending.id).due_at == until
