"""`make dev`'s terminal: what each tick did, told from the run log in one short line per run it moved.

The run log already records every change (the tick's and a person's), so the
narration reads the rows written since it last told and says them in words (after
each tick, and within a second for a person's control that no tick follows):

    run 1 · phase 1 opening · Phase 1 · step 3 (world.spawn) done · Phase 1 · step 4 (light the bonfire) parked: …
      confirm Run 1 · Phase 1 · step 4 (light the bonfire) on the console, or: curl -s -X POST … $API/runs/1/steps/4/confirm

Each step is told by its one name (`Step.named`, from `names`: the steps' names by id), the global id only in
the curl hint's URL beside it. A row of a kind it does not know is told by its kind, never dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from chalicelib.db import Tx
from chalicelib.events.model import LogEntry
from chalicelib.events.store.steps import list_for_run

PAST = {"pause": "paused", "resume": "resumed", "cancel": "cancelled", "confirm": "confirmed", "skip": "skipped",
        "retry": "retried"}
CURL = "curl -s -X POST -H \"Authorization: Bearer $TOKEN\" -H 'Content-Type: application/json'"


def named_steps(tx: Tx, run_ids: Iterable[int]) -> dict[int, str]:
    """The one name of every step of these runs, by id: what `lines` names the rows' steps by."""
    return {step.id: step.named for run_id in run_ids for step in list_for_run(tx, run_id)}


def _step(entry: LogEntry, names: Mapping[int, str]) -> str:
    """The step a row is about, by its one name less its run (its line begins with the run); one it was not
    given a name for by its id and action."""
    named = names.get(entry.step_id or 0)
    if named is None:
        return f"step id {entry.step_id} {(entry.detail or {}).get('action', '')}".rstrip()
    return named.split(" · ", 1)[1]


def _said(detail: dict) -> str:
    words = detail.get("reason") or detail.get("note")
    return f": {words}" if words else ""


def _dispatch(entry: LogEntry, names: Mapping[int, str]) -> str:
    d = entry.detail or {}
    outcome, error = d.get("outcome"), d.get("error") or (f"HTTP {d['http_status']}" if d.get("http_status") else "")
    if d.get("fenced_out"):
        return f"{_step(entry, names)}: a late answer ({outcome}), ignored"
    if outcome == "done":
        return f"{_step(entry, names)} done"
    if outcome == "parked":
        return f"{_step(entry, names)} parked: waiting for a game master"
    if outcome == "retry":
        return f"{_step(entry, names)} attempt {d.get('attempt')} failed ({error}): it will be retried"
    return f"{_step(entry, names)} {outcome}" + (f": {error}" if error else "")


def _item(entry: LogEntry, dispatched: set[int | None], names: Mapping[int, str]) -> str | None:
    d = entry.detail or {}
    if entry.kind == "step.dispatch":
        return _dispatch(entry, names)
    if entry.kind == "run.phase":
        return f"phase {d.get('phase', entry.phase)} {d.get('name') or ''}".rstrip()
    if entry.kind == "step.status":
        if d.get("control"):
            return f"{_step(entry, names)} {PAST.get(d['control'], d['control'])} by {entry.actor}{_said(d)}"
        if entry.step_id in dispatched:
            return None  # its dispatch row already said it
        if d.get("to") == "pending" and d.get("from") == "running":
            return f"{_step(entry, names)} taken back: its lease ran out"
        return f"{_step(entry, names)} {d.get('to')}" + (f" ({d['cause']})" if d.get("cause") else "")
    if entry.kind == "run.status":
        if d.get("control") == "retry":
            return None  # the step's own row says it: the run resumes with it
        if d.get("control"):
            return f"{PAST.get(d['control'], d['control'])} by {entry.actor}{_said(d)}"
        to, cause = d.get("to"), d.get("cause")
        if to in ("running", "ending"):
            return None  # the phase row that comes with it says it (the ending is a phase of its own)
        if to == "starting":
            return "started"
        if dispatched:  # the failing step's row already said why
            return f"{to}"
        return f"{to}" + (f": {cause}" if cause and to in ("paused", "failed", "missed") else "")
    return entry.kind


def _hints(entries: list[LogEntry], names: Mapping[int, str]) -> list[str]:
    """What a person can do about where the run now stands: a parked cue, a paused run; the step by its one name,
    its id only in the URL."""
    last = entries[-1]
    d = last.detail or {}
    if last.kind == "step.dispatch" and d.get("outcome") == "parked":
        confirm = f"$API/runs/{last.run_id}/steps/{last.step_id}/confirm"
        return [(f"  confirm {names.get(last.step_id or 0, 'it')} on the console, or: {CURL} -d '{{\"note\": \"lit\"}}'"
                f" {confirm}")]
    if last.kind == "run.status" and d.get("to") == "paused" and not d.get("control"):
        failed = next((e for e in reversed(entries) if e.step_id is not None), None)
        if failed is not None:
            return [(f"  press Retry on {names.get(failed.step_id or 0, 'it')} on the console, or: {CURL}"
                    f" $API/runs/{last.run_id}/steps/{failed.step_id}/retry")]
    return []


def lines(entries: Iterable[LogEntry], names: Mapping[int, str]) -> list[str]:
    """One line per run the rows are about (in the order they first appear), and a hint where a person is needed;
    `names`: the one name of each step the rows are about, by id."""
    by_run: dict[int, list[LogEntry]] = {}
    for entry in entries:
        by_run.setdefault(entry.run_id, []).append(entry)
    out = []
    for run_id, rows in by_run.items():
        dispatched = {e.step_id for e in rows if e.kind == "step.dispatch"}
        items = [item for item in (_item(e, dispatched, names) for e in rows) if item]
        if not items:
            continue
        phase = next((e.phase for e in rows if e.phase is not None), None)
        if phase is not None and rows[0].kind != "run.phase" and not items[0].startswith(("phase", "started")):
            items.insert(0, f"phase {phase}")
        out.append(f"run {run_id} · " + " · ".join(items))
        out.extend(_hints(rows, names))
    return out
