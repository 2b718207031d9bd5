"""The one writer of event_run_steps: every UPDATE of a step is rendered here from its row of the lifecycle's
step transitions table (`lifecycle.STEP_MOVES`).

The invariant: what a move writes besides its statement's own columns — its
status, its lease, its counters, its allowance of attempts, `in_doubt`,
`due_at`, `started_at` and `finished_at` — is its row's, never written out by hand, and the status part of
its WHERE is the row's sources; the statement brings only its guard (the rest of
its WHERE, a compare-and-set), the columns only it writes, and the tables it
joins. One statement, one round trip, as before: the writer only renders.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ....db import Tx
from ...lifecycle import Count, Doubt, Lease, StepMove, sql_list, sql_literal


def statuses_of(move: StepMove, alias: str | None = None) -> str:
    """SQL: the step (as `alias`, or the table itself) is in one of the move's sources (TRUE for any)."""
    column = f"{alias}.status" if alias else "status"
    if not move.sources:
        return "TRUE"
    if len(move.sources) == 1:
        return f"{column} = {sql_literal(move.sources[0])}"
    return f"{column} IN ({sql_list(move.sources)})"


def _generated(move: StepMove, column: str, now: datetime | None, lease: tuple[str, datetime] | None,
               in_doubt: bool | None) -> tuple[list[str], list[Any]]:
    """The SET assignments the move's row declares, and their arguments, in order."""
    sets: list[str] = []
    args: list[Any] = []
    if move.to is not None:
        sets.append(f"{column}status = {sql_literal(move.to)}")
    if move.lease is Lease.TAKEN:
        if lease is None:
            raise ValueError(f"{move.name}: a move that takes the lease needs its token and expiry")
        sets.append(f"{column}claimed_by = %s, {column}claim_expires_at = %s")
        args += lease
    elif move.lease is Lease.CLEARED:
        sets.append(f"{column}claimed_by = NULL, {column}claim_expires_at = NULL")
    elif move.lease is Lease.CLAIMER_CLEARED:
        sets.append(f"{column}claimed_by = NULL")
    for name, count in (("attempts", move.attempts), ("retries", move.retries)):
        if count is Count.RAISED:
            sets.append(f"{column}{name} = {column}{name} + 1")
    if move.renews_allowance:
        sets.append(f"{column}attempts_allowed_from = {column}attempts")
    if move.fresh_key:  # from the old key and the attempts so far: 40 hex characters, as every key
        # guard: a-retry-of-an-answered-step-replays-its-answer
        sets.append(f"{column}idempotency_key = IF({column}in_doubt, {column}idempotency_key,"
                    f" LEFT(SHA2(CONCAT({column}idempotency_key, ':a', {column}attempts), 256), 40))")
    if move.in_doubt is Doubt.ANSWERED:
        if in_doubt is None:
            raise ValueError(f"{move.name}: a move that writes in_doubt as answered needs the answer's")
        sets.append(f"{column}in_doubt = %s")
        args.append(in_doubt)
    elif move.in_doubt is not Doubt.KEPT:
        sets.append(f"{column}in_doubt = {'TRUE' if move.in_doubt is Doubt.SET else 'FALSE'}")
    if move.clears_due_at:
        sets.append(f"{column}due_at = NULL")
    if move.clears_finished_at:
        sets.append(f"{column}finished_at = NULL")
    stamps = [name for name, stamped in (("finished_at", move.stamps_finished_at), ("started_at", move.stamps_first_start))
              if stamped]
    if stamps and now is None:
        raise ValueError(f"{move.name}: a move that stamps {' and '.join(stamps)} needs the clock's now")
    if move.stamps_finished_at:
        sets.append(f"{column}finished_at = %s")
        args.append(now)
    if move.stamps_first_start:
        sets.append(f"{column}started_at = COALESCE({column}started_at, %s)")
        args.append(now)
    return sets, args


def write(tx: Tx, move: StepMove, where: str, where_args: Iterable[Any] = (), *, now: datetime | None = None,
          sets: str = "", set_args: Iterable[Any] = (), joins: str = "", alias: str | None = None,
          lease: tuple[str, datetime] | None = None, in_doubt: bool | None = None) -> int:
    """The move's UPDATE (`statement`), sent: the rows it changed."""
    return tx.execute(*statement(move, where, where_args, now=now, sets=sets, set_args=set_args, joins=joins,
                                 alias=alias, lease=lease, in_doubt=in_doubt))


def statement(move: StepMove, where: str, where_args: Iterable[Any] = (), *, now: datetime | None = None,
              sets: str = "", set_args: Iterable[Any] = (), joins: str = "", alias: str | None = None,
              lease: tuple[str, datetime] | None = None, in_doubt: bool | None = None) -> tuple[str, tuple[Any, ...]]:
    """`UPDATE event_run_steps [alias] [joins] SET <the row's columns>[, sets] WHERE <the row's statuses> AND
    <where>`, and its arguments (for `write`, or a unit's `Tx.send_ahead`).

    `where` is the statement's guard (its `%s` take `where_args`); `sets` the columns only this statement
    writes (a message, a timer, its joined run's wake time: their `%s` take `set_args`), after the row's;
    `joins` the tables it reads or writes beside the step, which is `alias` (`s`) when it has joins.
    `now` stamps finished_at or started_at where the row says so, `lease` is a claim's token and expiry,
    and `in_doubt` the answer's, for a row that writes it as answered.
    """
    column = f"{alias}." if alias else ""
    generated, args = _generated(move, column, now, lease, in_doubt)
    assignments = ", ".join([*generated, sets] if sets else generated)
    if not assignments:
        raise ValueError(f"{move.name}: a move writes something")
    target = f"event_run_steps {alias}" if alias else "event_run_steps"
    guard = f"{statuses_of(move, alias)} AND {where}" if move.sources else where
    return (f"UPDATE {target}{joins} SET {assignments} WHERE {guard}",  # noqa: S608 — the row's renderings, the statement's constant guard and columns; values are parameters
            (*args, *set_args, *where_args))
