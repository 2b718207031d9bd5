"""event_run_resources: what each run left in the game world, and the cleanup that reverts it.

The invariants:

1. A resource is written with the outcome that listed it, in its transaction, as
   one multi-row INSERT IGNORE on (run, step, kind, id), and only when there is
   something to write: a step that lists nothing costs no statement.
2. A resource's status follows its revert step (`follow_*`, one statement each):
   the step done → `reverted`; failed, refused or skipped → `revert_failed`;
   cancelled (the cleanup abandoned) → `live` again. Only a `reverting` resource
   moves, so a late or repeated write changes nothing.
3. The cleanup's revert steps are written by the tick (`open_reverts`), never by
   a control, and only in a unit in which no other step of the run holds a live
   lease (a NOT EXISTS in the INSERT): a step in flight at the cancel is answered,
   and what it created recorded, before its revert is planned. One step per live
   resource that has a revert, was not listed by a revert and whose revert is not
   refused (`revert_refused`: an undeclared module action, never sent), newest first;
   UNIQUE (resource_id) on the steps makes the INSERT idempotent.
4. A run holds at most ledger.MAX_RUN_RESOURCES resources: an answer's list that
   would take it past them is written not at all, by a guard in the INSERT itself
   (its count of the run's rows is a locking read: two answers of one run racing
   to the cap are serialised, the second counting the first's rows).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...db import Tx, placeholders
from ..ledger import BY_HAND, MAX_RUN_RESOURCES, Listed, past_the_cap
from ..lifecycle import OnFailure, ResourceSQL, ResourceStatus, RunSQL, StepSQL
from ..model import Resource
from . import steps

COLUMNS = "id, run_id, step_id, kind, resource_id, `revert`, revert_refused, status, recorded_at, changed_at"

# SQL over the run whose id is `run` (a column): a cleanup of it still has something to revert (a live
# resource with a revert it may send, not listed by a revert step: those stay live) …
def to_revert(run: str) -> str:
    # guard: a-revert-that-is-never-sent-keeps-a-cleanup-open
    return f"""EXISTS (SELECT 1 FROM event_run_resources res JOIN event_run_steps origin ON origin.id = res.step_id
                        WHERE res.run_id = {run} AND res.status = {ResourceSQL.LIVE} AND res.`revert` IS NOT NULL
                          AND res.revert_refused IS NULL AND origin.resource_id IS NULL)"""  # noqa: S608 — constant fragments only


# … a finished run's Clean up has a revert that failed or was refused to send again (its resource revert_failed) …
def to_send_again(run: str) -> str:
    # guard: a-finished-runs-failed-revert-is-never-sent-again
    return f"""EXISTS (SELECT 1 FROM event_run_resources bad JOIN event_run_steps rs ON rs.resource_id = bad.id
                        WHERE bad.run_id = {run} AND bad.status = {ResourceSQL.REVERT_FAILED}
                          AND rs.status IN ({StepSQL.FAILURES}))"""  # noqa: S608 — constant fragments only


# … a step of it is open (pending, running or parked) …
def step_open(run: str) -> str:
    return f"EXISTS (SELECT 1 FROM event_run_steps o WHERE o.run_id = {run} AND o.status IN ({StepSQL.OPEN}))"  # noqa: S608 — constant fragments only


# … a step of it is in flight under a live lease (%s: now): its answer may still list what it created …
def in_flight(run: str) -> str:
    return f"""EXISTS (SELECT 1 FROM event_run_steps f WHERE f.run_id = {run} AND f.status = {StepSQL.RUNNING}
                        AND f.claim_expires_at >= %s)"""  # noqa: S608 — constant fragments only; now is a parameter


# … a revert of it failed (a person retries it, or accepts it by resuming).
def revert_failed(run: str) -> str:
    return f"""EXISTS (SELECT 1 FROM event_run_resources bad WHERE bad.run_id = {run}
                        AND bad.status = {ResourceSQL.REVERT_FAILED})"""  # noqa: S608 — constant fragments only


# What a resource becomes when its revert step ends as `s.status` (invariant 2).
# guard: an-abandoned-revert-leaves-its-resource-reverting
_FOLLOWS = f"""CASE WHEN s.status = {StepSQL.DONE} THEN {ResourceSQL.REVERTED}
                    WHEN s.status = {StepSQL.CANCELLED} THEN {ResourceSQL.LIVE}
                    ELSE {ResourceSQL.REVERT_FAILED} END"""
_ENDED = f"s.status NOT IN ({StepSQL.OPEN})"


# ── reads ──────────────────────────────────────────────────────────────────
def page_for_run(tx: Tx, run_id: int, before_id: int | None, limit: int) -> tuple[list[Resource], int | None]:
    """The run's resources newest first, keyset-paginated on the ledger id (one range of (run_id, id))."""
    keyset, args = ("AND id < %s", [before_id]) if before_id is not None else ("", [])
    rows = tx.all(
        f"SELECT {COLUMNS} FROM event_run_resources WHERE run_id = %s {keyset} ORDER BY id DESC LIMIT %s",  # noqa: S608 — COLUMNS and keyset are constants; values are parameters
        (run_id, *args, limit + 1),
    )
    page = [Resource.from_row(r) for r in rows[:limit]]
    return page, (page[-1].id if len(rows) > limit else None)


def page_by_status(tx: Tx, status: ResourceStatus, before_id: int | None, limit: int) -> tuple[list[Resource], int | None]:
    """Every run's resources in one status, newest first (one range of (status, id)): what is left in the world."""
    keyset, args = ("AND id < %s", [before_id]) if before_id is not None else ("", [])
    rows = tx.all(
        f"SELECT {COLUMNS} FROM event_run_resources WHERE status = %s {keyset} ORDER BY id DESC LIMIT %s",  # noqa: S608 — COLUMNS and keyset are constants; values are parameters
        (ResourceStatus(status).value, *args, limit + 1),
    )
    page = [Resource.from_row(r) for r in rows[:limit]]
    return page, (page[-1].id if len(rows) > limit else None)


# What a cleanup of the run (%s: its id) would revert now, in the order it would: its live resources with a
# revert it may send (not listed by a revert, not refused), newest first.
# What a cleanup sends: a live resource's revert (`to_revert`), and a revert that failed or was refused, which
# only a finished run's Clean up sends again (`to_send_again`; a run's own cleanup has a person retry it).
_PLANNED = f"""FROM event_run_resources res JOIN event_run_steps origin ON origin.id = res.step_id
               LEFT JOIN event_run_steps rs ON rs.resource_id = res.id
               WHERE res.run_id = %s AND ((res.status = {ResourceSQL.LIVE} AND res.`revert` IS NOT NULL
                 AND res.revert_refused IS NULL AND origin.resource_id IS NULL)
                 OR (res.status = {ResourceSQL.REVERT_FAILED} AND rs.status IN ({StepSQL.FAILURES})))"""


def cleanup_plan(tx: Tx, run_id: int, before_id: int | None, limit: int) -> tuple[list[Resource], int | None]:
    """A page of what a cleanup of the run would revert now, newest first, keyset-paginated on the ledger id
    (one range of (run_id, id)). A step in flight may still add to it."""
    keyset, args = ("AND res.id < %s", [before_id]) if before_id is not None else ("", [])
    rows = tx.all(
        f"""SELECT {", ".join(f"res.{c.strip()}" for c in COLUMNS.split(","))} {_PLANNED} {keyset}
             ORDER BY res.id DESC LIMIT %s""",
        (run_id, *args, limit + 1),
    )
    page = [Resource.from_row(r) for r in rows[:limit]]
    return page, (page[-1].id if len(rows) > limit else None)


@dataclass(frozen=True)
class Planned:
    """The whole of what a cleanup of a run would revert now: how many reverts, and how many of them by hand."""

    reverts: int
    by_hand: int


def cleanup_counts(tx: Tx, run_id: int) -> Planned:
    row = tx.one(
        f"""SELECT COUNT(*) AS reverts, COALESCE(SUM(JSON_VALUE(res.`revert`, '$.action') = %s), 0) AS by_hand
             {_PLANNED}""",
        (BY_HAND, run_id),
    ) or {"reverts": 0, "by_hand": 0}
    return Planned(int(row["reverts"]), int(row["by_hand"]))


def ledger_state(tx: Tx, run_id: int) -> tuple[dict[str, int], datetime | None]:
    """The run's resources counted by status, and when the last of them changed (None: it has none): what
    moves whenever its ledger does (a row written, or a status followed). One range of (run_id, id)."""
    rows = tx.all(
        """SELECT status, COUNT(*) AS n, MAX(changed_at) AS changed_at FROM event_run_resources
            WHERE run_id = %s GROUP BY status ORDER BY NULL""",  # four groups at most: no sort
        (run_id,),
    )
    return {r["status"]: int(r["n"]) for r in rows}, max((r["changed_at"] for r in rows), default=None)


def by_ids(tx: Tx, ids: Sequence[int]) -> dict[int, Resource]:
    """These ledger rows by their ids (the resources parked reverts undo: whose revert a run waits for)."""
    if not ids:
        return {}
    rows = tx.all(f"SELECT {COLUMNS} FROM event_run_resources WHERE id IN ({placeholders(len(ids))})", tuple(ids))  # noqa: S608 — COLUMNS and the marks are constants; ids are parameters
    return {int(r["id"]): Resource.from_row(r) for r in rows}


@dataclass(frozen=True)
class Left:
    """Live resources of a run that no cleanup reverts, and why: their revert is never sent."""

    why: str  # `revert_refused`: "cannot revert: undeclared action x"
    count: int

    def public(self) -> dict[str, Any]:
        return {"why": self.why, "resources": self.count}


LEFT_REASONS = 20  # at most this many reasons, most resources first: an answer stays small however many there are


def left_unreverted(tx: Tx, run_id: int) -> list[Left]:
    """Why the run's live resources whose revert is refused are left in the world (one index range of the run)."""
    rows = tx.all(
        f"""SELECT revert_refused AS why, COUNT(*) AS n FROM event_run_resources
             WHERE run_id = %s AND status = {ResourceSQL.LIVE} AND revert_refused IS NOT NULL
             GROUP BY revert_refused ORDER BY n DESC, why LIMIT %s""",  # noqa: S608 — the status literal is a constant; values are parameters
        (run_id, LEFT_REASONS),
    )
    return [Left(str(r["why"]), int(r["n"])) for r in rows]


def in_flight_count(tx: Tx, run_id: int, now: datetime) -> int:
    """The run's steps in flight under a live lease: their answers may still list what they created."""
    return int(tx.scalar(
        f"""SELECT COUNT(*) AS n FROM event_run_steps
             WHERE run_id = %s AND status = {StepSQL.RUNNING} AND claim_expires_at >= %s""",  # noqa: S608 — the status literal is a constant; values are parameters
        (run_id, now),
    ) or 0)


@dataclass(frozen=True)
class Reverts:
    """How a run's cleanup stands: its reverts, and those that failed."""

    total: int
    failed: int


def reverts_of(tx: Tx, run_id: int) -> Reverts:
    row = tx.one(
        f"""SELECT COUNT(*) AS total, COALESCE(SUM(res.status = {ResourceSQL.REVERT_FAILED}), 0) AS failed
              FROM event_run_steps s JOIN event_run_resources res ON res.id = s.resource_id
             WHERE s.run_id = %s""",  # noqa: S608 — the status literal is a constant; the id is a parameter
        (run_id,),
    ) or {"total": 0, "failed": 0}
    return Reverts(int(row["total"]), int(row["failed"]))


def reverts_since(tx: Tx, run_id: int, since: datetime) -> Reverts:
    """How a finished run's cleanup that began at `since` stands: the resources it reverted or failed to (a
    resource of a finished run changes only by its cleanup's reverts). One range of the run's rows."""
    row = tx.one(
        f"""SELECT COUNT(*) AS total, COALESCE(SUM(status = {ResourceSQL.REVERT_FAILED}), 0) AS failed
              FROM event_run_resources
             WHERE run_id = %s AND status IN ({ResourceSQL.REVERTED}, {ResourceSQL.REVERT_FAILED}) AND changed_at >= %s""",  # noqa: S608 — the status literals are constants; values are parameters
        (run_id, since),
    ) or {"total": 0, "failed": 0}
    return Reverts(int(row["total"]), int(row["failed"]))


def count_left(tx: Tx) -> int:
    """How many resources every live run has left whose revert failed (the ResourcesLeft metric): one index
    range, each row's run by its key (a dry run's sandbox resources are never counted)."""
    # guard: a-dry-runs-resources-count-as-left
    return int(tx.scalar(
        f"""SELECT COUNT(*) AS n FROM event_run_resources res JOIN event_runs r ON r.id = res.run_id
             WHERE res.status = {ResourceSQL.REVERT_FAILED} AND r.mode = {RunSQL.LIVE}""")  # noqa: S608 — the status and mode literals are constants
        or 0)


# ── writes ─────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Recorded:
    """What recording one answer's list came to: the rows it stored, or why it stored none (the run's cap)."""

    stored: int
    refused: str | None = None


def record(tx: Tx, run_id: int, step_id: int, entries: Sequence[Listed], now: datetime) -> Recorded:
    """What one answer listed, recorded `live` in one multi-row INSERT IGNORE (a repeat of an entry is
    recorded once): how many rows were new; or, when they would take the run past MAX_RUN_RESOURCES,
    nothing written and why (invariant 4). The caller writes nothing for an empty list."""
    if not entries:
        raise ValueError("an empty list is recorded by writing nothing")
    rows = [(run_id, step_id, e.kind, e.resource_id, None if e.revert is None else json.dumps(e.revert.public()),
             e.revert_refused, now, now) for e in entries]
    # A derived table's columns are named by its first row (every name distinct).
    first = ("SELECT %s AS run_id, %s AS step_id, %s AS kind, %s AS resource_id, %s AS rev, %s AS revert_refused,"
             " %s AS recorded_at, %s AS changed_at")
    rest = "SELECT %s, %s, %s, %s, %s, %s, %s, %s"
    # The rows written are those the run does not hold yet, its other rows and these counted together.
    distinct = sorted({(e.kind, e.resource_id) for e in entries})
    held, held_args = _held_besides(run_id, step_id, distinct)
    # guard: a-run-records-past-its-cap
    stored = tx.execute(
        f"""INSERT IGNORE INTO event_run_resources (run_id, step_id, kind, resource_id, `revert`, revert_refused, recorded_at, changed_at)
            SELECT * FROM ({" UNION ALL ".join([first] + [rest] * (len(rows) - 1))}) listed
             WHERE ({held}) + %s <= %s""",  # noqa: S608 — only %s placeholders and constant fragments, counted from the entries
        [*(value for row in rows for value in row), *held_args, len(distinct), MAX_RUN_RESOURCES],
    )
    if stored:
        return Recorded(stored)
    # Nothing new: every entry was held already, or the cap refused them. The count the guard read, read again
    # locked (the latest rows, as the guard saw them; they stay so until this transaction ends), tells which.
    holding = int(tx.scalar(f"{held} LOCK IN SHARE MODE", held_args) or 0)
    if holding + len(distinct) > MAX_RUN_RESOURCES:
        return Recorded(0, past_the_cap(holding, len(distinct)))
    return Recorded(0)


def _held_besides(run_id: int, step_id: int, listed: Sequence[tuple[str, str]]) -> tuple[str, list[Any]]:
    """SQL counting the run's resources other than these of this step, and its arguments: kind and id
    compared as the columns store them, as bytes."""
    return (f"""SELECT COUNT(*) AS n FROM event_run_resources held
                 WHERE held.run_id = %s
                   AND NOT (held.step_id = %s AND (held.kind, held.resource_id) IN ({placeholders(len(listed), "(%s, %s)")}))""",  # noqa: S608 — only %s placeholders, counted from the list
            [run_id, step_id, *(value for pair in listed for value in pair)])


def open_reverts(tx: Tx, run_id: int, phase: int, now: datetime) -> int:
    """The cleanup's revert steps for what the run has left to revert, appended to its cleanup phase newest
    first, keyed as every step is; each such resource `reverting` (invariant 3). 0, and nothing else
    written, while a step of the run holds a live lease or nothing is left to revert."""
    # guard: reverts-are-planned-while-a-step-is-in-flight
    added = tx.execute(
        f"""INSERT IGNORE INTO event_run_steps (run_id, phase, seq, action_id, params, action_version, on_failure, resource_id)
            SELECT res.run_id, %s,
                   (SELECT COALESCE(MAX(prior.seq) + 1, 0) FROM event_run_steps prior
                     WHERE prior.run_id = res.run_id AND prior.phase = %s)
                   + ROW_NUMBER() OVER (ORDER BY res.id DESC) - 1,
                   JSON_VALUE(res.`revert`, '$.action'), JSON_EXTRACT(res.`revert`, '$.params'), 1, %s, res.id
              FROM event_run_resources res JOIN event_run_steps origin ON origin.id = res.step_id
             WHERE res.run_id = %s AND res.status = {ResourceSQL.LIVE} AND res.`revert` IS NOT NULL
               AND res.revert_refused IS NULL AND origin.resource_id IS NULL
               AND NOT EXISTS (SELECT 1 FROM event_run_steps f WHERE f.run_id = %s AND f.status = {StepSQL.RUNNING}
                                AND f.resource_id IS NULL AND f.claim_expires_at >= %s)
             ORDER BY res.id DESC""",  # noqa: S608 — the status literals are constants; values are parameters
        (phase, phase, OnFailure.SKIP.value, run_id, run_id, now),
    )
    if added == 0:
        return 0
    tx.execute(*steps.keys_stamped(run_id, phase))
    tx.execute(
        f"""UPDATE event_run_resources res JOIN event_run_steps s ON s.resource_id = res.id
               SET res.status = {ResourceSQL.REVERTING}, res.changed_at = %s
             WHERE s.run_id = %s AND s.phase = %s AND s.status = {StepSQL.PENDING} AND res.status = {ResourceSQL.LIVE}""",  # noqa: S608 — the status literals are constants; values are parameters
        (now, run_id, phase),
    )
    return added


def follow_steps(tx: Tx, step_ids: Sequence[int], now: datetime) -> int:
    """The resources of these revert steps follow how each ended (invariant 2)."""
    if not step_ids:
        return 0
    return _follow(tx, f"s.id IN ({placeholders(len(step_ids))})", tuple(step_ids), now)


def follow_run(tx: Tx, run_id: int, now: datetime) -> int:
    """Every revert of the run that has ended: its resource follows (a cancel that abandons a cleanup)."""
    return _follow(tx, "s.run_id = %s", (run_id,), now)


def _follow(tx: Tx, which: str, args: tuple[Any, ...], now: datetime) -> int:
    # guard: a-revert-still-open-moves-its-resource
    return tx.execute(
        f"""UPDATE event_run_resources res JOIN event_run_steps s ON s.resource_id = res.id
               SET res.status = {_FOLLOWS}, res.changed_at = %s
             WHERE {which} AND {_ENDED} AND res.status = {ResourceSQL.REVERTING}""",  # noqa: S608 — constant fragments; values are parameters
        (now, *args),
    )

