"""A statement's arguments rendered as SQL literals: the text PyMySQL would send, at a fraction of its cost.

PyMySQL's `mogrify` sends every argument through its encoder table, about 2 µs
each, and a tick's step sends some 35. Almost all are ints, strings, None and
naive datetimes: those are rendered here by table lookup on the exact type,
with PyMySQL's own escaping; every other value (a float, bytes, a str enum, a
list for an IN) goes to the connection's `escape`, as before. So the text sent
is byte for byte PyMySQL's (a test holds the two side by side on hostile values).

A server in NO_BACKSLASH_ESCAPES mode escapes quotes differently; the engine
never sets it, but a connection that reports it is rendered by PyMySQL whole.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import pymysql.connections
import pymysql.converters
from pymysql.constants import SERVER_STATUS

_escape_string = pymysql.converters.escape_string

# A tick sends the same few times (its one clock read, its lease expiries) in thousands of
# statements: each naive datetime is rendered once. An aware one is not cached: equal
# instants in different zones must not share a literal.
_naive_datetime_literal = functools.lru_cache(maxsize=256)(pymysql.converters.escape_datetime)


def datetime_literal(value: datetime, mapping: Any = None) -> str:
    # guard: naive-datetime-rendered-without-its-microseconds
    # guard: aware-datetime-shares-a-cached-literal
    if value.tzinfo is None:
        return _naive_datetime_literal(value)
    return pymysql.converters.escape_datetime(value, mapping)


# The connection's own encoder table: what `escape` falls back to, with the cached datetimes.
CONVERSIONS: dict[Any, Any] = {**pymysql.converters.conversions, datetime: datetime_literal}


def _string(value: str) -> str:
    # guard: string-rendered-unescaped
    return "'" + _escape_string(value) + "'"


def _null(_: None) -> str:
    return "NULL"


def _boolean(value: bool) -> str:
    return "1" if value else "0"


_BY_TYPE: dict[type, Callable[[Any], str]] = {
    int: int.__repr__,
    str: _string,
    type(None): _null,
    bool: _boolean,
    datetime: datetime_literal,
}


def render(connection: pymysql.connections.Connection, sql: str, args: Sequence[Any] | dict[str, Any] | None) -> str:
    """`sql` with `args` in place, as `cursor.mogrify(sql, args)` renders it on `connection`."""
    if args is None:
        return sql  # PyMySQL leaves a statement without arguments alone: a % in it is literal
    no_backslash_escapes = connection.server_status & SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES  # type: ignore[attr-defined]  # pymysql sets it; its stubs omit it
    # guard: no-backslash-escapes-server-gets-the-engines-rendering
    if no_backslash_escapes or not isinstance(args, (tuple, list, dict)):
        return connection.cursor().mogrify(sql, args)
    by_type, escape = _BY_TYPE, connection.escape
    rendered: tuple[str, ...] | dict[str, str]
    if isinstance(args, dict):
        rendered = {key: (by_type.get(type(value)) or escape)(value) for key, value in args.items()}
    else:
        rendered = tuple([(by_type.get(type(value)) or escape)(value) for value in args])
    try:
        return sql % rendered
    # guard: wrong-argument-count-not-pymysqls-error
    except TypeError as error:  # too many or too few arguments: PyMySQL's error for it
        raise pymysql.err.ProgrammingError(str(error)) from None
