"""The data stack closes connections idle for IdleConnectionSeconds (60 s), so a frozen Lambda container cannot keep
Aurora from pausing: a connection the server closed is replaced before the next unit of work runs."""

import time

import pymysql
import pytest

from chalicelib.db import Database, lost_connection

# MySQL 8.0.24+ (Aurora MySQL 3) tells the client why before closing; MariaDB just closes.
DISCONNECTED_FOR_INACTIVITY = pymysql.err.OperationalError(
    4031, "The client was disconnected by the server because of inactivity. See wait_timeout and interactive_timeout"
)


@pytest.mark.realtime
def test_a_connection_the_server_closed_for_idleness_is_replaced_and_the_work_runs(db_params):
    database = Database(db_params)
    try:
        idle = database.connection()
        with idle.cursor() as cursor:
            cursor.execute("SET SESSION wait_timeout = 1")  # the server's side of IdleConnectionSeconds, shortened
        time.sleep(2.5)
        assert database.autocommit(lambda tx: tx.one("SELECT 1 AS one")) == {"one": 1}
        assert database.connection() is not idle
    finally:
        database.close()


def test_aurora_s_inactivity_disconnect_counts_as_a_lost_connection():
    assert lost_connection(DISCONNECTED_FOR_INACTIVITY)
