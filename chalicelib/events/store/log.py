"""event_run_log: the shared record of every change of state.

Rows are appended through the same `Tx` as the change they record, so the two
commit together or not at all. What a row says is built in `events.journal`.

A run's rows commit in the order of their ids: each is appended in a
transaction that holds its run's row lock from before the row has its id until
the commit (`_runs_locked`; a person's control holds it already). Without it a
row given its id first could commit after a higher one, and a reader tailing by
`after_id` (the console's live log) would pass it by for good.

A person's control pressed with an `Idempotency-Key` keeps the key on one of
its log rows, with the answer it gave (`remember`), in the same transaction:
the key is unique per run (the index `event_run_log_idempotency`), and a
repeat within `KEY_KEPT_FOR` answers that answer (`remembered`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ...db import Tx, placeholders
from ..journal import Entry
from ..model import LogEntry

COLUMNS = "id, run_id, step_id, kind, phase, detail, actor, created_at"
# One encoder for every row: json.dumps(default=...) would build a new one per call.
_DETAIL = json.JSONEncoder(default=str)


def _values(entry: Entry, now: datetime) -> tuple[Any, ...]:
    if not entry.kind:
        raise ValueError("a log row needs a kind")
    detail = None if entry.detail is None else _DETAIL.encode(entry.detail)
    return (entry.run_id, entry.step_id, entry.kind, entry.phase, detail, entry.actor, now)


def _runs_locked(tx: Tx, entries: list[Entry]) -> None:
    """The runs of `entries` locked, sent ahead of their rows (in id order: two units that lock several runs
    cannot deadlock over the order)."""
    if not tx.transactional:
        raise ValueError("a log row is appended in a transaction: its run's row lock lasts until the commit")
    run_ids = sorted({entry.run_id for entry in entries})
    # guard: a-runs-log-row-gets-its-id-before-its-run-is-locked
    tx.send_ahead(f"SELECT id FROM event_runs WHERE id IN ({placeholders(len(run_ids))}) ORDER BY id FOR UPDATE",  # noqa: S608 — only %s placeholders, counted from the ids; every id is a parameter
                  run_ids)


def append(tx: Tx, entry: Entry, now: datetime) -> int:
    values = _values(entry, now)
    _runs_locked(tx, [entry])
    tx.execute(
        """INSERT INTO event_run_log (run_id, step_id, kind, phase, detail, actor, created_at)
           VALUES (%s, %s, %s, %s, %s, %s, %s)""",
        values,
    )
    return tx.last_insert_id


def append_many(tx: Tx, entries: Iterable[Entry], now: datetime) -> int:
    """Many rows in one multi-row INSERT (built here: executemany's rewriting costs more than the rows)."""
    statement = _insert_many(tx, entries, now)
    return 0 if statement is None else tx.execute(*statement)


def append_ahead(tx: Tx, entries: Iterable[Entry], now: datetime) -> None:
    """The rows of `append_many`, sent ahead of the unit's next statement (`Tx.send_ahead`): for a unit
    that reads nothing back of them, so they cost no round trip of their own."""
    statement = _insert_many(tx, entries, now)
    if statement is not None:
        tx.send_ahead(*statement)


def _insert_many(tx: Tx, entries: Iterable[Entry], now: datetime) -> tuple[str, list[Any]] | None:
    """The INSERT of `entries` (None for none), their runs' locks sent ahead of it."""
    entries = list(entries)
    rows = [_values(e, now) for e in entries]
    if not rows:
        return None
    _runs_locked(tx, entries)
    values = placeholders(len(rows), "(%s, %s, %s, %s, %s, %s, %s)")
    return (f"INSERT INTO event_run_log (run_id, step_id, kind, phase, detail, actor, created_at) VALUES {values}",  # noqa: S608 — only %s placeholders, counted from len(rows); every value is a parameter
            [value for row in rows for value in row])


def after(tx: Tx, run_id: int, after_id: int = 0, limit: int = 200) -> list[LogEntry]:
    """The run's rows with id > after_id, oldest first: what a console tails."""
    if not 1 <= limit <= 1000:
        raise ValueError(f"limit must be between 1 and 1000, got {limit}")
    rows = tx.all(
        f"SELECT {COLUMNS} FROM event_run_log WHERE run_id = %s AND id > %s ORDER BY id LIMIT %s",  # noqa: S608 — COLUMNS is a constant; ids and limit are parameters
        (run_id, after_id, limit),
    )
    return [LogEntry.from_row(r) for r in rows]


# A run's newest row of a kind: the last entry of its (run_id, kind, id) range, `event_run_log_kind`, however
# long the run's log (a range of (run_id, id) read a long run's whole log backwards when it had none).
_NEWEST_OF_KIND = f"(SELECT {COLUMNS} FROM event_run_log WHERE run_id = %s AND kind = %s ORDER BY id DESC LIMIT 1)"  # noqa: S608 — COLUMNS is a constant; values are parameters


def latest(tx: Tx, run_id: int, kind: str, *other_kinds: str) -> LogEntry | None:
    """The run's newest row of `kind` (or of any of the kinds given: a 412 says who made the change the person
    did not see, whichever it was): each kind's newest, and the newest of those (a sort of one row a kind,
    where `kind IN (…)` sorted every row of the kinds)."""
    kinds = (kind, *other_kinds)
    newest = " UNION ALL ".join([_NEWEST_OF_KIND] * len(kinds)) + (" ORDER BY id DESC LIMIT 1" if other_kinds else "")
    row = tx.one(newest, tuple(arg for each in kinds for arg in (run_id, each)))
    return None if row is None else LogEntry.from_row(row)


def latest_of_step(tx: Tx, run_id: int, step_id: int, kind: str) -> LogEntry | None:
    """The step's newest row of `kind`: the run's rows of that kind read backwards, forced (an optimiser's guess
    took the intersection of two keys and sorted a long run's 23,000 rows)."""
    row = tx.one(f"SELECT {COLUMNS} FROM event_run_log FORCE INDEX (event_run_log_kind)"  # noqa: S608 — COLUMNS is a constant; values are parameters
                 " WHERE run_id = %s AND step_id = %s AND kind = %s ORDER BY id DESC LIMIT 1", (run_id, step_id, kind))
    return None if row is None else LogEntry.from_row(row)


def latest_of(tx: Tx, run_ids: list[int], kind: str) -> dict[int, LogEntry]:
    """Each run's newest row of `kind`, by run (a run with none is left out): one statement, each run's part
    one row of `event_run_log_kind` (a page's paused runs: who paused each and why)."""
    if not run_ids:
        return {}
    rows = tx.all(" UNION ALL ".join([_NEWEST_OF_KIND] * len(run_ids)),
                  tuple(arg for run_id in run_ids for arg in (run_id, kind)))
    return {int(row["run_id"]): LogEntry.from_row(row) for row in rows}


def latest_by_actor(tx: Tx, run_id: int, kind: str, actors: list[str]) -> dict[str, LogEntry]:
    """Each of `actors`' newest row of `kind` in the run, by actor (one with none is left out): one statement
    (none for no actor), each actor's part a backward range of the run's rows of the kind (`event_run_log_kind`)
    that stops at the actor's newest (the chat identities a log page names, by their presses)."""
    if not actors:
        return {}
    one = (f"(SELECT {COLUMNS} FROM event_run_log WHERE run_id = %s AND kind = %s AND actor = %s"  # noqa: S608 — COLUMNS is a constant; values are parameters
           " ORDER BY id DESC LIMIT 1)")
    rows = tx.all(" UNION ALL ".join([one] * len(actors)), tuple(arg for actor in actors for arg in (run_id, kind, actor)))
    return {str(row["actor"]): LogEntry.from_row(row) for row in rows}


KEY_KEPT_FOR = timedelta(hours=24)


@dataclass(frozen=True)
class Remembered:
    """A control pressed before with the same Idempotency-Key on the same run: what it was, who pressed it (the
    log row's actor), and what it answered."""

    control: str
    step_id: int | None
    body: dict[str, Any]
    at: datetime
    actor: str


def remembered(tx: Tx, run_id: int, key: str) -> Remembered | None:
    """The control a key was first pressed with on this run, or None. Read after the run's row lock (a plain
    read: its snapshot starts after the lock, so it sees the press that held the lock before)."""
    row = tx.one(
        "SELECT answer, created_at, actor FROM event_run_log WHERE run_id = %s AND idempotency_key = %s",
        (run_id, key),
    )
    if row is None:
        return None
    answer = json.loads(row["answer"]) if isinstance(row["answer"], (str, bytes)) else row["answer"]
    return Remembered(answer["control"], answer["step_id"], answer["body"], row["created_at"], row["actor"])


def remember(tx: Tx, log_id: int, run_id: int, key: str, control: str, step_id: int | None, body: dict[str, Any]) -> None:
    """Keep the key and the answer on the control's log row `log_id`, in the control's transaction; a second
    row of this run with the same key breaks the unique index (the transaction fails: nothing is kept)."""
    answer = _DETAIL.encode({"control": control, "step_id": step_id, "body": body})
    kept = tx.execute(
        "UPDATE event_run_log SET idempotency_key = %s, answer = %s WHERE id = %s AND run_id = %s",
        (key, answer, log_id, run_id),
    )
    if kept != 1:
        raise ValueError(f"log row {log_id} of run {run_id} is not there to keep an idempotency key on")
