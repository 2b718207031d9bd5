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
            conn.begin()
            tx = Tx(conn)
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
