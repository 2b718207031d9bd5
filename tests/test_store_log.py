"""The log commits with the change it records, or not at all."""

import pytest

from chalicelib.events import journal
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.store import log, runs
from tests.support.factory import make_run, run_row


def test_a_change_and_its_log_row_commit_together(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)

    def pause(tx):
        assert runs.transition(tx, run.id, [RunStatus.RUNNING], RunStatus.PAUSED, clock.now())
        log.append(tx, journal.Entry(run.id, "run.status", phase=1, detail={"from": "running", "to": "paused"}, actor="alice"), clock.now())

    db.transaction(pause)
    (row,) = db.autocommit(lambda tx: log.after(tx, run.id))
    assert (row.kind, row.actor, row.detail, row.created_at) == ("run.status", "alice", {"from": "running", "to": "paused"}, clock.now())


def test_a_failure_after_the_change_rolls_back_both(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)

    def pause_then_fail(tx):
        runs.transition(tx, run.id, [RunStatus.RUNNING], RunStatus.PAUSED, clock.now())
        log.append(tx, journal.Entry(run.id, "run.status"), clock.now())
        raise RuntimeError("crash between the change and the commit")

    with pytest.raises(RuntimeError):
        db.transaction(pause_then_fail)
    assert run_row(db, run.id).status is RunStatus.RUNNING
    assert db.autocommit(lambda tx: log.after(tx, run.id)) == []


def test_after_tails_rows_past_an_id(db, clock):
    run = make_run(db, clock.now())
    db.transaction(lambda tx: log.append_many(tx, [journal.Entry(run.id, f"k{i}") for i in range(5)], clock.now()))
    rows = db.autocommit(lambda tx: log.after(tx, run.id))
    assert [r.kind for r in rows] == ["k0", "k1", "k2", "k3", "k4"]
    assert [r.kind for r in db.autocommit(lambda tx: log.after(tx, run.id, rows[2].id))] == ["k3", "k4"]
    with pytest.raises(ValueError):
        db.transaction(lambda tx: log.append(tx, journal.Entry(run.id, ""), clock.now()))
