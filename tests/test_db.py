"""Units of work: deadlocks are re-run whole, a lost connection is replaced."""

import contextlib
import threading
from datetime import datetime, timedelta, timezone

import pymysql
import pytest

from bench.harness import RoundTripCounter
from chalicelib.db import DEADLOCK, ConnectionParams, Database
from tests.support.factory import make_run


def test_params_parse_a_url_and_refuse_nonsense():
    p = ConnectionParams.from_url("mysql://ev%40user:p%3Ass@db.internal:3307/events")
    assert (p.user, p.password, p.host, p.port, p.database) == ("ev@user", "p:ss", "db.internal", 3307, "events")
    for bad in ("postgres://x/y", "mysql://host:3306/", "nonsense"):
        with pytest.raises(ValueError):
            ConnectionParams.from_url(bad)


@pytest.mark.realtime
def test_a_deadlock_is_retried_and_both_units_of_work_complete(db, db_params, clock):
    a = make_run(db, clock.now())
    b = make_run(db, clock.now())
    both_locked_first = threading.Barrier(2)
    done = []

    def touch(first, second, db_for_thread):
        def work(tx):
            tx.execute("UPDATE event_runs SET grace_seconds = grace_seconds + 1 WHERE id = %s", (first,))
            with contextlib.suppress(threading.BrokenBarrierError):
                both_locked_first.wait(timeout=2)  # only the first try meets the other thread here
            tx.execute("UPDATE event_runs SET grace_seconds = grace_seconds + 1 WHERE id = %s", (second,))
        db_for_thread.transaction(work)
        done.append(first)

    dbs = [Database(db_params), Database(db_params)]
    threads = [threading.Thread(target=touch, args=(a.id, b.id, dbs[0])), threading.Thread(target=touch, args=(b.id, a.id, dbs[1]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(done) == sorted([a.id, b.id])
    assert dbs[0].retries[DEADLOCK] + dbs[1].retries[DEADLOCK] >= 1
    rows = db.autocommit(lambda tx: tx.all("SELECT grace_seconds FROM event_runs WHERE id IN (%s, %s)", (a.id, b.id)))
    assert [r["grace_seconds"] for r in rows] == [302, 302]  # each unit of work applied exactly once


def test_a_killed_connection_is_replaced_on_the_next_unit_of_work(db):
    own_id = db.autocommit(lambda tx: tx.one("SELECT CONNECTION_ID() AS id")["id"])
    killer = db.connect()
    with killer.cursor() as c:
        c.execute(f"KILL {own_id}")
    killer.close()
    assert db.autocommit(lambda tx: tx.one("SELECT 1 AS one")["one"]) == 1
    assert db.autocommit(lambda tx: tx.one("SELECT CONNECTION_ID() AS id")["id"]) != own_id


def test_a_transaction_whose_connection_is_lost_before_its_commit_is_run_again_whole(db, clock):
    """Nothing was committed, so the unit is re-run on a new connection: the failed ROLLBACK on the dead
    one neither hides the loss nor leaves that connection to be used again."""
    run = make_run(db, clock.now())
    connections = []
    killer = db.connect()

    def work(tx):
        connections.append(tx.one("SELECT CONNECTION_ID() AS id")["id"])
        if len(connections) == 1:
            with killer.cursor() as cursor:
                cursor.execute(f"KILL CONNECTION {int(connections[0])}")  # the next statement finds it gone
        tx.execute("UPDATE event_runs SET grace_seconds = grace_seconds + 1 WHERE id = %s", (run.id,))

    try:
        db.transaction(work)
    finally:
        killer.close()
    assert len(connections) == 2 and connections[0] != connections[1]
    assert db.autocommit(lambda tx: tx.scalar("SELECT grace_seconds FROM event_runs WHERE id = %s", (run.id,))) == 301


def test_an_error_inside_a_transaction_rolls_it_back(db, clock):
    run = make_run(db, clock.now())

    def work(tx):
        tx.execute("UPDATE event_runs SET grace_seconds = 1 WHERE id = %s", (run.id,))
        raise KeyError("boom")

    with pytest.raises(KeyError):
        db.transaction(work)
    assert db.autocommit(lambda tx: tx.one("SELECT grace_seconds FROM event_runs WHERE id = %s", (run.id,)))["grace_seconds"] == 300


def test_times_reach_the_server_exactly_however_often_they_are_sent(db):
    """Datetime literals are cached (a tick sends its clock read thousands of times): never mixed up."""
    first = datetime(2026, 12, 1, 8, 0, 0, 123456)
    later = first + timedelta(microseconds=1)
    aware = datetime(2026, 12, 1, 9, 0, 0, 123456, tzinfo=timezone(timedelta(hours=1)))  # the same instant as first
    for _ in range(3):
        row = db.autocommit(lambda tx: tx.one(
            "SELECT CAST(%s AS DATETIME(6)) AS a, CAST(%s AS DATETIME(6)) AS b, CAST(%s AS DATETIME(6)) AS c",
            (first, later, aware)))
        assert row == {"a": first, "b": later, "c": aware.replace(tzinfo=None)}


def test_a_transaction_begins_with_its_first_statement_whatever_it_is(db, clock):
    """BEGIN rides in front of the first statement: a read answers its own rows, and a first write
    (one statement or PyMySQL's executemany) is inside the transaction, so it rolls back."""
    run = make_run(db, clock.now())

    assert db.transaction(lambda tx: tx.one("SELECT grace_seconds FROM event_runs WHERE id = %s", (run.id,))) == {
        "grace_seconds": 300}

    def write_many_first_then_fail(tx):
        tx.executemany("UPDATE event_runs SET grace_seconds = %s WHERE id = %s", [(1, run.id)])
        raise KeyError("boom")

    with pytest.raises(KeyError):
        db.transaction(write_many_first_then_fail)
    assert db.autocommit(lambda tx: tx.scalar("SELECT grace_seconds FROM event_runs WHERE id = %s", (run.id,))) == 300


def test_a_first_statement_the_server_refuses_fails_its_unit_and_the_connection_goes_on(db):
    with pytest.raises(pymysql.err.ProgrammingError):
        db.transaction(lambda tx: tx.execute("UPDATE no_such_table SET x = 1"))
    assert db.autocommit(lambda tx: tx.scalar("SELECT 1 AS one")) == 1


def test_a_write_sent_ahead_goes_with_the_next_statement_or_alone_before_the_commit(db, clock):
    """`send_ahead` costs no round trip when a statement follows, and is never lost when none does."""
    run = make_run(db, clock.now())
    grace = "SELECT grace_seconds FROM event_runs WHERE id = %s"

    def ahead_then_read(tx):
        tx.send_ahead("UPDATE event_runs SET grace_seconds = 7 WHERE id = %s", (run.id,))
        return tx.scalar(grace, (run.id,))  # the read is sent after the write, in the same request

    with RoundTripCounter().installed() as requests:
        assert db.transaction(ahead_then_read) == 7
    assert requests.count == 2  # the write with the read, then COMMIT

    db.transaction(lambda tx: tx.send_ahead("UPDATE event_runs SET grace_seconds = 8 WHERE id = %s", (run.id,)))
    assert db.autocommit(lambda tx: tx.scalar(grace, (run.id,))) == 8  # nothing followed it: sent before the COMMIT

    db.autocommit(lambda tx: tx.send_ahead("UPDATE event_runs SET grace_seconds = 9 WHERE id = %s", (run.id,)))
    assert db.autocommit(lambda tx: tx.scalar(grace, (run.id,))) == 9  # outside a transaction: sent at once


def test_a_write_sent_ahead_that_the_server_refuses_fails_its_unit_whole(db, clock):
    """Its error comes with the statement it rode with (or at the commit), and the unit rolls back."""
    run = make_run(db, clock.now())
    grace = "SELECT grace_seconds FROM event_runs WHERE id = %s"

    def refused_then_write(tx):
        tx.execute("UPDATE event_runs SET grace_seconds = 11 WHERE id = %s", (run.id,))
        tx.send_ahead("UPDATE no_such_table SET x = 1")
        tx.execute("UPDATE event_runs SET grace_seconds = 12 WHERE id = %s", (run.id,))

    with pytest.raises(pymysql.err.ProgrammingError):
        db.transaction(refused_then_write)
    with pytest.raises(pymysql.err.ProgrammingError):
        db.transaction(lambda tx: (tx.execute("UPDATE event_runs SET grace_seconds = 13 WHERE id = %s", (run.id,)),
                                   tx.send_ahead("UPDATE no_such_table SET x = 1")))
    assert db.autocommit(lambda tx: tx.scalar(grace, (run.id,))) == 300  # neither unit left a change
    assert db.autocommit(lambda tx: tx.scalar("SELECT 1 AS one")) == 1  # and the connection goes on


def test_a_unit_that_ends_with_its_next_statement_commits_in_that_request(db, clock):
    """The COMMIT rides behind the unit's last write: two round trips for two writes, the change kept,
    and nothing may be sent after it."""
    run = make_run(db, clock.now())
    grace = "SELECT grace_seconds FROM event_runs WHERE id = %s"
    bump = "UPDATE event_runs SET grace_seconds = grace_seconds + 1 WHERE id = %s"

    def two_writes(tx):
        tx.execute(bump, (run.id,))
        tx.ends_with_next()
        return tx.execute(bump, (run.id,))

    with RoundTripCounter().installed() as requests:
        assert db.transaction(two_writes) == 1  # the last write's own row count, not the COMMIT's
    assert requests.count == 2  # BEGIN with the first write, the second with the COMMIT
    assert db.autocommit(lambda tx: tx.scalar(grace, (run.id,))) == 302

    def a_statement_after_the_commit(tx):
        tx.ends_with_next()
        tx.execute(bump, (run.id,))
        tx.execute(bump, (run.id,))

    with pytest.raises(RuntimeError, match="has committed"):
        db.transaction(a_statement_after_the_commit)
    assert db.autocommit(lambda tx: tx.scalar(grace, (run.id,))) == 303  # what went before the COMMIT is kept


def test_a_last_statement_the_server_refuses_takes_the_unit_back_and_its_commit_never_runs(db, clock):
    run = make_run(db, clock.now())

    def write_then_refused_last(tx):
        tx.execute("UPDATE event_runs SET grace_seconds = 5 WHERE id = %s", (run.id,))
        tx.ends_with_next()
        tx.execute("UPDATE no_such_table SET x = 1")

    with pytest.raises(pymysql.err.ProgrammingError):
        db.transaction(write_then_refused_last)
    assert db.autocommit(lambda tx: tx.scalar("SELECT grace_seconds FROM event_runs WHERE id = %s", (run.id,))) == 300
