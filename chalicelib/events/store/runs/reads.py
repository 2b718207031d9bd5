"""event_runs read: a run, a page of runs, the runs of some occurrences, the runs that are due, and counts.

The invariant: a read writes nothing and decides nothing; every decision a read
informs is taken again by its write's own guard (a compare-and-set), so a read
that is stale by the time its write runs changes nothing. Each read is one range
of an index (the occurrence key's, (wake_at, id), what a run waits for, a
definition's runs by time or by status, a window of scheduled times), never a
scan however many runs the table holds; its order is the index's, but for a
filter's runs newest first of a window (`matching` with `scheduled_between`),
which sorts the window's runs (a bulk press acts on at most `bulk.MAX_RUNS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ....db import Tx, must_exist, placeholders
from ... import waiting
from ...lifecycle import RUNNABLE, RunMode, RunSQL, RunStatus, WaitingFor, WaitSQL
from ...model import Run
from .. import understood

COLUMNS = (
    "id, definition_id, definition_version, occurrence_key, status, scheduled_for, grace_seconds,"
    " current_phase, health, last_error, claimed_by, claim_expires_at, started_at, finished_at,"
    " created_at, updated_at, wake_at, waiting_for, version, cleanup_target, late_cleanup, late_cleanup_at,"
    " mode, speed, rehearsal_bridge, auto_confirm_seconds, auto_signal_seconds"
)


def occurrence_key(definition_id: int, scheduled_for: datetime) -> str:
    """One occurrence of one definition: whoever plans it, the same key."""
    return f"{definition_id}@{scheduled_for:%Y-%m-%dT%H:%M:%S.%f}"


def of_occurrences(tx: Tx, definition_id: int, times: list[datetime]) -> dict[datetime, Run]:
    """The runs of these occurrences of a definition (those that have one), by their time: one read of the
    occurrence key's unique index."""
    if not times:
        return {}
    keys = {occurrence_key(definition_id, t): t for t in times}
    rows = tx.all(f"SELECT {COLUMNS} FROM event_runs WHERE occurrence_key IN %s",  # noqa: S608 — COLUMNS is a constant; the keys are parameters
                  (list(keys),))
    # By the occurrence's own time, which its key keeps: a postponed run's scheduled_for is its new time.
    return {keys[run.occurrence_key]: run for run in map(Run.from_row, rows)}


def live_between(tx: Tx, definition_id: int, start: datetime, end: datetime, limit: int) -> list[Run]:
    """A definition's live runs scheduled in [start, end), earliest first, at most `limit`: those the calendar
    shows on their days (a run scheduled by hand, or of an earlier schedule, too). One range of
    `event_runs_definition_time` (definition_id, mode, scheduled_for, id), in its order: the window's runs, not
    every run the definition ever had."""
    rows = tx.all(
        f"SELECT {COLUMNS} FROM event_runs WHERE definition_id = %s AND mode = %s"  # noqa: S608 — COLUMNS is a constant
        " AND scheduled_for >= %s AND scheduled_for < %s ORDER BY scheduled_for, id LIMIT %s",
        (definition_id, RunMode.LIVE.value, start, end, limit),
    )
    return [Run.from_row(row) for row in rows]


def scheduled_of_earlier_versions(tx: Tx, definition_id: int, version: int, limit: int) -> tuple[list[Run], int]:
    """A definition's live runs not started yet that were made from a version before `version` (the first made
    first, at most `limit`), and how many there are: the runs a new version does not reach. One range of
    `event_runs_definition_status` (definition_id, status, id), in its order."""
    where = "definition_id = %s AND status = %s AND mode = %s AND definition_version < %s"
    values = (definition_id, RunStatus.SCHEDULED.value, RunMode.LIVE.value, version)
    rows = tx.all(f"SELECT {COLUMNS} FROM event_runs USE INDEX (event_runs_definition_status) WHERE {where}"  # noqa: S608 — COLUMNS and the clause are constants; values are parameters
                  " ORDER BY id LIMIT %s", (*values, limit))
    counted = tx.scalar(f"SELECT COUNT(*) FROM event_runs USE INDEX (event_runs_definition_status) WHERE {where}",  # noqa: S608 — as above
                        values)
    return [Run.from_row(row) for row in rows], int(counted or 0)


def get(tx: Tx, run_id: int, *, for_update: bool = False) -> Run | None:
    """The run; `for_update` locks it so a control reads the status it will act on."""
    lock = " FOR UPDATE" if for_update else ""
    row = tx.one(f"SELECT {COLUMNS} FROM event_runs WHERE id = %s{lock}", (run_id,))  # noqa: S608 — COLUMNS and the lock clause are constants; the id is a parameter
    return Run.from_row(row) if row else None


@dataclass(frozen=True)
class RunFilter:
    """Which runs: by status, definition, what they wait for (`waiting.FILTERS`), mode (`REHEARSAL_FILTERS`) and
    when they were scheduled (`scheduled_between`: [from, to), both given), or their ids (`ids`: the runs a
    person ticked); None for any."""

    status: RunStatus | None = None
    definition_id: int | None = None
    waiting_for: str | None = None
    rehearsal: str | None = None
    scheduled_between: tuple[datetime, datetime] | None = None
    ids: tuple[int, ...] | None = None

    def where(self) -> tuple[list[str], list[Any]]:
        """The filter as WHERE fragments and their parameters; a run of a newer version is never matched."""
        where: list[str] = []
        args: list[Any] = []
        if self.waiting_for == waiting.ANY:
            # guard: the-any-filter-lets-every-run-through
            where.append("waits = 1")
        elif self.waiting_for is not None:
            if self.waiting_for not in {kind.value for kind in WaitingFor}:
                raise ValueError(f"runs wait for one of {waiting.FILTERS}, not {self.waiting_for!r}")
            # guard: the-waiting-filter-ignores-what-it-asks-for
            where.append("waiting_for = %s")
            args.append(self.waiting_for)
        if self.status is not None:
            where.append("status = %s")
            args.append(RunStatus(self.status).value)
        mode = _mode_of(self.rehearsal, None)
        if mode is not None:
            where.append("mode = %s")  # one range of (mode, id)
            args.append(mode.value)
        if self.definition_id is not None:
            where.append("definition_id = %s")  # with a status, one range of (definition_id, status, id)
            args.append(self.definition_id)
        if self.scheduled_between is not None:
            # guard: the-scheduled-filter-ignores-its-window
            where.append("scheduled_for >= %s AND scheduled_for < %s")  # one range of (scheduled_for, id)
            args.extend(self.scheduled_between)
        # guard: the-ids-filter-ignores-the-ids
        if self.ids is not None:
            where.append(f"id IN ({', '.join(['%s'] * len(self.ids))})" if self.ids else "FALSE")
            args.extend(self.ids)
        # guard: the-runs-list-shows-a-run-it-does-not-understand
        where.append(understood.run("event_runs"))  # a newer version's run is left out: this one cannot show it
        return where, args


# The longest window of scheduled times `matching` reads as its range and sorts: a year (the calendar's window).
SORTED_WINDOW = timedelta(days=366)


def list_page(
    tx: Tx,
    *,
    status: RunStatus | None = None,
    definition_id: int | None = None,
    waiting_for: str | None = None,
    rehearsal: str | None = None,
    scheduled_between: tuple[datetime, datetime] | None = None,
    limit: int = 50,
    before_id: int | None = None,
) -> tuple[list[Run], int | None]:
    """Runs newest first, keyset-paginated: returns the page and the next cursor (or None).

    `rehearsal` (`REHEARSAL_FILTERS`): `only` keeps the dry runs, `exclude` the live runs; `include` or None, both.
    `scheduled_between` ([from, to)) keeps the runs scheduled then: a window of at most SORTED_WINDOW is one
    range of `event_runs_scheduled` (or of `event_runs_definition_time`), its runs sorted newest first.

    `waiting_for` (`waiting.FILTERS`) keeps the runs waiting for that (`any`: for anything), one range of
    `event_runs_waiting` (`event_runs_waits` for any) in id order: no scan, however many runs there are.
    """
    if not 1 <= limit <= 500:
        raise ValueError(f"limit must be between 1 and 500, got {limit}")
    page = matching(tx, RunFilter(status, definition_id, waiting_for, rehearsal, scheduled_between), limit + 1, before_id)
    return page[:limit], (page[limit - 1].id if len(page) > limit else None)


def matching(tx: Tx, which: RunFilter, limit: int, before_id: int | None = None) -> list[Run]:
    """At most `limit` runs the filter matches, newest first (below `before_id`, when given)."""
    where, args = which.where()
    if before_id is not None:
        where.append("id < %s")
        args.append(before_id)
    # A window's runs are read by their range and sorted, never found by walking back through every newer run's
    # id (the optimiser's guess for a small limit: a preview of last spring read the whole year since), nor
    # through a definition's or a mode's (x, id) key (the runs list asks for live runs: last spring's month of
    # a definition read its 7,442 runs since). A window of at most SORTED_WINDOW sorts no index's order at all;
    # a longer one (an edge left open: far) only not the whole table's. A short window is read by one of its two
    # time ranges alone: offered the definition's and the mode's equality keys too, the optimiser's statistics
    # now and then picked their intersection (a merge of every run of the definition since).
    # A definition's runs of one status are one range of (definition_id, status, id), newest first: offered its
    # definition's key too, the optimiser's statistics now and then took that one and read every status.
    window = which.scheduled_between
    if window is None:
        hint = " USE INDEX (event_runs_definition_status)" if which.definition_id and which.status else ""
    else:
        hint = (" USE INDEX (event_runs_scheduled, event_runs_definition_time)" if window[1] - window[0] <= SORTED_WINDOW
                else " IGNORE INDEX FOR ORDER BY (PRIMARY)")
    rows = tx.all(f"SELECT {COLUMNS} FROM event_runs{hint} WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT %s",  # noqa: S608 — COLUMNS, the hint and the where fragments are constants; filters are parameters
                  (*args, limit))
    return [Run.from_row(r) for r in rows]


def count_matching(tx: Tx, which: RunFilter) -> int:
    """How many runs the filter matches."""
    where, args = which.where()
    return int(tx.scalar(f"SELECT COUNT(*) FROM event_runs WHERE {' AND '.join(where)}", args) or 0)  # noqa: S608 — the where fragments are constants; filters are parameters


REHEARSAL_FILTERS = ("only", "exclude", "include")


def _mode_of(rehearsal: str | None, unasked: RunMode | None) -> RunMode | None:
    """The one mode a `?rehearsal=` value keeps (`unasked`: without one), or None for both."""
    if rehearsal is None:
        return unasked
    if rehearsal not in REHEARSAL_FILTERS:
        raise ValueError(f"rehearsal is one of {REHEARSAL_FILTERS}, not {rehearsal!r}")
    # guard: the-runs-filter-mixes-dry-runs-and-live-runs
    return {"only": RunMode.REHEARSAL, "exclude": RunMode.LIVE}.get(rehearsal)


def waiting_counts(tx: Tx, rehearsal: str | None = None) -> dict[str, Any]:
    """How many runs wait for a person or the game, by what (`any`: all of them), and how many are working
    (starting, running, ending or cleaning up — the runs a tick works — waiting for nobody): one statement,
    each count one range of an index.

    Live runs only, unless `rehearsal` (`REHEARSAL_FILTERS`) says `include` (both) or `only` (the dry runs):
    a dry run waiting for a person is nobody's emergency, and the console lists none unless asked."""
    mode = _mode_of(rehearsal, RunMode.LIVE)
    # guard: the-summary-counts-dry-runs
    of_mode, mode_args = ("", ()) if mode is None else (" AND mode = %s", (mode.value,))
    kinds = ", ".join(f"(SELECT COUNT(*) FROM event_runs WHERE waiting_for = %s{of_mode}) AS `{kind.value}`"  # noqa: S608 — the aliases are the lifecycle's words
                      for kind in WaitingFor)
    row = tx.one(
        f"""SELECT (SELECT COUNT(*) FROM event_runs WHERE status IN ({placeholders(len(RUNNABLE))}){of_mode}) AS live,
                   {kinds}""",  # noqa: S608 — the column names are the lifecycle's words; values are parameters
        (*(s.value for s in RUNNABLE), *mode_args, *(arg for kind in WaitingFor for arg in (kind.value, *mode_args))),
    ) or {"live": 0, **{kind.value: 0 for kind in WaitingFor}}  # a SELECT of counts has its row: only EXPLAIN has none
    counts = {kind.value: int(row[kind.value]) for kind in WaitingFor}
    held_while_working = sum(counts[kind.value] for kind in WaitingFor if kind is not WaitingFor.RESUME)  # resume: paused, not live
    return {"waiting": {waiting.ANY: sum(counts.values()), **counts}, "working": int(row["live"]) - held_while_working}


def waiting_on(tx: Tx, kinds: Sequence[WaitingFor], limit: int) -> tuple[list[Run], int]:
    """The live runs waiting for one of `kinds` (the waits a caller can act on), at most `limit` of them, oldest
    first, and how many there are: each one range of `event_runs_waiting` per kind. A dry run is nobody's
    emergency: the inbox holds none."""
    if not kinds:
        return [], 0
    # guard: the-inbox-holds-a-wait-the-caller-cannot-act-on
    where = f"waiting_for IN ({placeholders(len(kinds))}) AND mode = %s AND {understood.run('event_runs')}"
    args = (*(kind.value for kind in kinds), RunMode.LIVE.value)
    count = int(tx.scalar(f"SELECT COUNT(*) FROM event_runs WHERE {where}", args) or 0)  # noqa: S608 — constants; values are parameters
    if not limit or not count:
        return [], count
    rows = tx.all(f"SELECT {COLUMNS} FROM event_runs WHERE {where} ORDER BY id LIMIT %s", (*args, limit))  # noqa: S608 — constants; values are parameters
    return [Run.from_row(r) for r in rows], count


def find_due(
    tx: Tx, now: datetime, limit: int, *, after: tuple[datetime, int] | None = None, shard: tuple[int, int] = (0, 1)
) -> list[Run]:
    """Runs whose wake time has come and that no live run lease holds, in wake order.

    One range of the (wake_at, id) index, forced: a run parked at a cue, paused,
    holding behind a long wait or over is never read, and no sample of the
    table's statistics can turn the read into a sort of every due run. `after`
    is the (wake_at, id) of the last run of the previous batch, so one tick
    reads its work in bounded batches and sees each run at most once. `shard`
    (index, count) keeps the runs whose id modulo count is index: ticks given
    different shards of one count never contend for a run (the run lease still
    guards each one; count 1 is every run).
    """
    keyset, args = "", []
    if after is not None:
        # guard: due-runs-page-skips-a-tied-wake
        keyset = "AND (wake_at > %s OR (wake_at = %s AND id > %s))"
        args = [after[0], after[0], after[1]]
    index, count = shard
    # guard: find-due
    # guard: find-due-takes-runs-not-yet-due
    # guard: find-due-ignores-its-shard
    # guard: find-due-takes-a-run-it-does-not-understand
    rows = tx.all(
        f"""SELECT {COLUMNS} FROM event_runs FORCE INDEX (event_runs_wake)
             WHERE wake_at <= %s
               AND (claim_expires_at IS NULL OR claim_expires_at < %s) {keyset}
               AND MOD(id, %s) = %s AND {understood.run("event_runs")}
             ORDER BY wake_at, id LIMIT %s""",  # noqa: S608 — COLUMNS, keyset and the fragment are constants; times, ids, shard, limit are parameters
        (now, now, *args, count, index, limit),
    )
    return [Run.from_row(r) for r in rows]


def next_wake(tx: Tx) -> datetime | None:
    """The earliest wake time of a run this version understands, None when no such run waits on a timer (the
    first entries of the (wake_at, id) index: a newer version's run, left alone, never keeps the engine awake)."""
    # guard: next-wake-of-a-run-it-does-not-understand
    return tx.scalar(
        f"""SELECT wake_at FROM event_runs WHERE wake_at IS NOT NULL AND {understood.run("event_runs")}
             ORDER BY wake_at LIMIT 1"""  # noqa: S608 — the fragment is a constant
    )


@dataclass(frozen=True)
class Lookout:
    """What the wake loop reads between ticks: the earliest wake time (`next_wake`'s), and whether a run waits
    for a person (a control of theirs sets its wake time to now, so the loop looks more often meanwhile)."""

    wake: datetime | None
    person_awaited: bool


def lookout(tx: Tx) -> Lookout:
    """`next_wake`, and whether a run this version understands waits for a person, in one statement: the first
    entries of the (wake_at, id) and (waiting_for, id) indexes."""
    # guard: lookout-of-a-run-it-does-not-understand
    # guard: a-signal-is-a-person-awaited
    row = must_exist(tx.one(
        f"""SELECT (SELECT wake_at FROM event_runs WHERE wake_at IS NOT NULL AND {understood.run("event_runs")}
                     ORDER BY wake_at LIMIT 1) AS wake,
                   EXISTS (SELECT 1 FROM event_runs WHERE waiting_for IN ({WaitSQL.PEOPLES})
                              AND {understood.run("event_runs")}) AS awaited"""  # noqa: S608 — constants only
    ))  # a SELECT without FROM answers one row
    return Lookout(row["wake"], bool(row["awaited"]))


def oldest_paused_since(tx: Tx) -> datetime | None:
    """When the longest-paused live run was paused (its last status change); None when none is paused (a dry
    run is never in the alarm's figure)."""
    return tx.scalar(
        # guard: a-paused-dry-run-counts-in-the-paused-run-alarm
        f"SELECT MIN(updated_at) AS since FROM event_runs WHERE status = {RunSQL.PAUSED} AND mode = {RunSQL.LIVE}"  # noqa: S608 — the status and mode are lifecycle's renderings
    )
