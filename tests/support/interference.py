"""Deterministic interference for guard tests: a log write the database refuses, a rival at an exact moment.

`log_rows_refused` installs a trigger that makes the database refuse the log
rows matching a condition, so a test can prove a state change and its log row
commit together (the change must roll back with the refused row).

`Rival` is a second connection that tries to change rows at an exact point of
the code under test, without waiting for locks (NOWAIT): when the code holds
the row lock, the rival is refused, which is what the lock is for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pymysql

from chalicelib.db import Database, Tx

TRIGGER = "guard_test_refuse_log_rows"
LOCKED = 1205  # what NOWAIT answers when the row is locked


@contextmanager
def log_rows_refused(db: Database, condition: str) -> Iterator[None]:
    """While inside, inserting a log row for which `condition` (SQL over NEW.*) holds fails."""
    conn = db.connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER IF EXISTS {TRIGGER}")
            cursor.execute(
                f"""CREATE TRIGGER {TRIGGER} BEFORE INSERT ON event_run_log FOR EACH ROW
                    IF {condition} THEN
                      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'log row refused by the test';
                    END IF"""
            )
        yield
    finally:
        with conn.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER IF EXISTS {TRIGGER}")
        conn.close()


class Rival:
    """Another session that locks its rows NOWAIT, then runs `change` and commits."""

    def __init__(self, db: Database):
        self.db = db
        self.outcome: str | None = None  # "committed" | "locked out"

    def attempt(self, lock_sql: str, args: tuple, change: Callable[[Tx], None]) -> str:
        conn = self.db.connect()
        try:
            tx = Tx(conn, transactional=True)  # its first statement begins it
            try:
                tx.one(lock_sql + " FOR UPDATE NOWAIT", args)
            except pymysql.err.MySQLError as error:
                conn.rollback()
                if error.args[0] != LOCKED:
                    raise
                self.outcome = "locked out"
                return self.outcome
            change(tx)
            conn.commit()
            self.outcome = "committed"
            return self.outcome
        finally:
            conn.close()


GATE = "guard_test_log_gate"
HOLDING_TRIGGER = "guard_test_hold_log_rows"


@contextmanager
def log_rows_held(db: Database, condition: str) -> Iterator[Callable[[], None]]:
    """While inside and until the yielded `release()`, inserting a log row for which `condition` (SQL over
    NEW.*) holds waits after the row has its id, its transaction open: an AFTER INSERT trigger locks a row
    of a gate table that this context holds (a statement paused at an exact point, in any process)."""
    admin, holder = db.connect(), db.connect()
    try:
        with admin.cursor() as cursor:
            cursor.execute(f"CREATE TABLE IF NOT EXISTS {GATE} (id INT PRIMARY KEY) ENGINE=InnoDB")
            cursor.execute(f"INSERT IGNORE INTO {GATE} VALUES (1)")
            cursor.execute(f"DROP TRIGGER IF EXISTS {HOLDING_TRIGGER}")
            cursor.execute(
                f"""CREATE TRIGGER {HOLDING_TRIGGER} AFTER INSERT ON event_run_log FOR EACH ROW
                    IF {condition} THEN
                      SELECT id INTO @held FROM {GATE} WHERE id = 1 FOR UPDATE;
                    END IF"""
            )
        admin.commit()
        holder.begin()
        with holder.cursor() as cursor:
            cursor.execute(f"SELECT id FROM {GATE} WHERE id = 1 FOR UPDATE")
        yield holder.rollback
    finally:
        holder.close()  # released, if the test did not
        with admin.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER IF EXISTS {HOLDING_TRIGGER}")
            cursor.execute(f"DROP TABLE IF EXISTS {GATE}")
        admin.close()


LOCK_WAITS_EVERY = 0.25  # seconds: InnoDB refreshes INNODB_TRX only once it has not been read for 0.1 s


def lock_waits(db: Database) -> int:
    """How many of this database's sessions are waiting for a row lock now (look at most every
    LOCK_WAITS_EVERY seconds: read more often, InnoDB's copy of its transactions is never refreshed)."""
    conn = db.connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute(
                """SELECT COUNT(*) FROM information_schema.INNODB_TRX t
                   JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
                   WHERE t.trx_state = 'LOCK WAIT' AND p.DB = DATABASE()""")
            (count,) = cursor.fetchone() or (0,)
            return int(count)
    finally:
        conn.close()
