"""The engine's own rendering of arguments sends exactly what PyMySQL would, and the server reads it back unchanged."""

import enum
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pymysql
import pytest

from chalicelib.literals import render

HOSTILE_STRINGS = [
    "", "plain", "it's", 'say "hi"', "back\\slash", "\\'; DROP TABLE event_runs; --", "nul\x00byte",
    "new\nline\rreturn\x1a", "percent %s %(now)s %%", "ünïcødé ✓ 🎉",
]


class Colour(str, enum.Enum):
    RED = "red'dish"


VALUES = [
    *HOSTILE_STRINGS, 0, -1, 2**63 - 1, True, False, None, 1.5, 1e-300, Decimal("12.50"), b"\x00'\\bytes",
    datetime(2026, 12, 1, 8, 0, 0, 123456), datetime(2026, 12, 1, 8, 0, 0),
    datetime(2026, 12, 1, 9, 0, 0, 1, tzinfo=timezone(timedelta(hours=1))), date(2026, 12, 1), Colour.RED, [1, "a'b"],
]


@pytest.fixture(scope="module")
def pymysql_itself(db_params):
    """A connection with PyMySQL's own encoders: the engine's connections carry the engine's table
    (`literals.CONVERSIONS`), so their `mogrify` is no reference for the engine's rendering."""
    p = db_params
    connection = pymysql.connect(host=p.host, port=p.port, user=p.user, password=p.password, database=p.database,
                                 unix_socket=p.unix_socket, charset="utf8mb4")
    yield connection
    connection.close()


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_each_value_is_rendered_as_pymysql_renders_it(db, pymysql_itself, value):
    connection = db.connection()
    sql = "SELECT %s AS v, '%%' AS pct"
    assert render(connection, sql, (value,)) == pymysql_itself.cursor().mogrify(sql, (value,))
    named = "SELECT %(v)s AS v"
    assert render(connection, named, {"v": value}) == pymysql_itself.cursor().mogrify(named, {"v": value})


def test_equal_instants_in_different_zones_are_each_rendered_as_pymysql_renders_them(db, pymysql_itself):
    """Aware datetimes are not cached: an equal instant seen first in another zone must not lend its literal."""
    connection = db.connection()
    for value in (datetime(2026, 12, 1, 8, 0, 0, tzinfo=UTC),
                  datetime(2026, 12, 1, 9, 0, 0, tzinfo=timezone(timedelta(hours=1)))):
        assert render(connection, "SELECT %s", (value,)) == pymysql_itself.cursor().mogrify("SELECT %s", (value,))


def test_a_statement_without_arguments_is_sent_as_written(db):
    connection = db.connection()
    assert render(connection, "SELECT '100%%' AS v", None) == "SELECT '100%%' AS v"


@pytest.mark.parametrize("text", HOSTILE_STRINGS, ids=repr)
def test_hostile_strings_reach_the_server_unchanged(db, text):
    assert db.autocommit(lambda tx: tx.scalar("SELECT %s AS v", (text,))) == text


def test_a_wrong_number_of_arguments_is_pymysqls_error(db):
    with pytest.raises(pymysql.err.ProgrammingError):
        db.autocommit(lambda tx: tx.scalar("SELECT %s, %s AS v", (1,)))


def test_a_server_without_backslash_escapes_gets_pymysqls_own_rendering(db):
    connection = db.connect()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')")
        sql, args = "SELECT %s AS v", ("it's a back\\slash",)
        assert render(connection, sql, args) == connection.cursor().mogrify(sql, args) == "SELECT 'it''s a back\\slash' AS v"
    finally:
        connection.close()
