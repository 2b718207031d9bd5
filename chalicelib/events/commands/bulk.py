"""A run control pressed on every run a filter matches (`POST /runs/bulk`): pause, resume, cancel or upgrade.

Invariant: each run is moved by its own command through `protocol.within`, exactly as one press of the control
would move it (its run locked, its guarded statement, its own log row in the same transaction, a lost guard
refused in the rule's words); there is no guard here but theirs. A command refuses before its first write (its
guarded statement is that write), so a refused run leaves its batch's transaction as it found it and the batch
goes on. The runs are the filter's at the press, newest first, at most `MAX_RUNS` of them, in transactions of
`BATCH` runs (a deadlock re-runs one batch whole); the press names how many runs the person saw
(`expected_count`), and a filter that matches another number changes nothing (`Clash`, naming the count). A
preview counts and shows the first `PREVIEW_RUNS` and writes nothing.

A press with an Idempotency-Key presses each run with it (a key is unique per run), so a re-send of a press whose
answer was lost answers, for each run the first press changed, that run's first answer (`replayed`), and changes
nothing again; a run it refused is asked again and refuses again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...db import Database, Tx
from ..errors import AnsweredBefore, Clash, Conflict, Invalid, KeyReused, NewerRow, NotFound
from ..store import runs
from .declared import CONTROLS, Control
from .protocol import Context, within

BULK_CONTROLS = ("pause", "resume", "cancel", "upgrade")
MAX_RUNS = 1000  # runs one request acts on: measured (bench/p10_bulk.py) far inside an API Lambda's 29 s
BATCH = 100  # runs a transaction holds locked at once
PREVIEW_RUNS = 20  # the runs a preview shows (the first matching, newest first)


@dataclass(frozen=True)
class BulkPress:
    """One bulk press: which control, on which runs, with what (its body's reason and cleanup), and how many
    runs the person saw the filter match (None: a preview, which changes nothing)."""

    control: Control
    which: runs.RunFilter
    body: Mapping[str, Any]
    expected_count: int | None

    @classmethod
    def of(cls, body: Mapping[str, Any], between: tuple[datetime, datetime] | None) -> BulkPress:
        """The press a request's body (already checked against its schema; `between`: its filter's window, read)
        asks for; Invalid when its fields do not go together."""
        control = CONTROLS[body["control"]]
        extra = [name for name in ("reason", "cleanup")
                 if body.get(name) not in (None, False) and name not in (control.note_field, control.option_field)]
        if extra:
            raise Invalid(f"{control.name} takes no {' or '.join(extra)}")
        preview = bool(body.get("preview"))
        if not preview and "expected_count" not in body:
            raise Invalid("expected_count is required: how many runs the filter matched when you looked (a preview says)")
        return cls(control, filter_of(body["filter"], between), body, None if preview else body["expected_count"])


def filter_of(given: Mapping[str, Any], between: tuple[datetime, datetime] | None) -> runs.RunFilter:
    """The runs a body's `filter` names (its fields checked against the schema); a window must run forwards."""
    if between is not None and between[0] >= between[1]:
        raise Invalid("body.filter.scheduled_between: from must be before to")
    ids = given.get("ids")
    return runs.RunFilter(status=given.get("status"), definition_id=given.get("definition"),
                          waiting_for=given.get("waiting"), rehearsal=given.get("rehearsal"), scheduled_between=between,
                          ids=None if ids is None else tuple(sorted(set(ids))))


def preview(db: Database, which: runs.RunFilter) -> dict[str, Any]:
    """How many runs the filter matches and the first of them; nothing is written."""
    def read(tx: Tx) -> dict[str, Any]:
        return {"count": runs.count_matching(tx, which),
                "runs": [run.public() for run in runs.matching(tx, which, PREVIEW_RUNS)]}

    return db.transaction(read)


def press(db: Database, bulk: BulkPress, by: Context) -> dict[str, Any]:
    """The control on every run the filter matches, if it matches as many as the person saw: what changed
    (each run's id and status now) and what was refused and why."""
    matched = db.transaction(lambda tx: _matched(tx, bulk))
    changed: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for start in range(0, len(matched), BATCH):
        ids = matched[start:start + BATCH]
        took, lost = db.transaction(lambda tx: _batch(tx, bulk, ids, by))
        changed += took
        refused += lost
    return {"control": bulk.control.name, "count": len(matched), "changed": changed, "refused": refused}


def _matched(tx: Tx, bulk: BulkPress) -> list[int]:
    """The ids of the runs the filter matches now, once the count is the one the person saw."""
    count = runs.count_matching(tx, bulk.which)
    # guard: a-bulk-press-ignores-the-count-the-person-saw
    if count != bulk.expected_count:
        raise Clash(f"the filter matches {count} {'run' if count == 1 else 'runs'} now, not {bulk.expected_count}:"
                    " look again (a preview says which) before pressing; nothing was changed", detail={"count": count})
    if count > MAX_RUNS:
        raise Invalid(f"the filter matches {count} runs; at most {MAX_RUNS} are acted on at once: narrow it"
                      " (by definition, status or scheduled_between) and press again")
    return [run.id for run in runs.matching(tx, bulk.which, MAX_RUNS)]


def _batch(tx: Tx, bulk: BulkPress, ids: list[int], by: Context) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each run's own command, in the batch's transaction: (changed, refused)."""
    changed: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for run_id in ids:
        command = bulk.control.pressed({"run_id": run_id}, bulk.body)
        try:
            answer = command.answer(within(tx, command, by))
        except AnsweredBefore as before:  # this press's key took on this run before: its first answer, nothing written
            changed.append({"id": run_id, "status": before.body["run"]["status"], "replayed": True})
            continue
        except (Conflict, NewerRow, NotFound, Clash, KeyReused) as refusal:  # raised before the run's first write
            refused.append({"id": run_id, "why": str(refusal), **(refusal.detail or {})})
            continue
        changed.append({"id": run_id, "status": answer["run"]["status"]})
    return changed, refused
