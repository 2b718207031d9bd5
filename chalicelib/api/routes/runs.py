"""The runs' pages: the list (each run with what it waits for), one run (its phases, a page of its steps and the
controls legal now, from one snapshot) and its log."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ... import runtime
from ...db import Tx, must_exist
from ...events import controls, lifecycle
from ...events.errors import Invalid, NotFound
from ...events.model import LogEntry, Step
from ...events.store import log, phases, runs, steps
from ...events.waiting import waiting
from .. import auth, schemas
from ..operations import Answer, Body, Call, Router, ok

router = Router(__name__)


@router.operation("GET", "/runs", "Runs, newest first, a page at a time, each with what it is waiting for (waiting; filter on it"
                  " with ?waiting=), and the counts of runs waiting for a person or the game apart from those working (summary).",
                  auth.STAFF,
                  ok("a page of runs; pass next_cursor as cursor for the next", schemas.RUNS_PAGE), query=schemas.RUNS_QUERY)
def list_runs(call: Call) -> Body:
    q = call.query

    def read(tx: Tx) -> Body:
        page, next_cursor = runs.list_page(
            tx, status=q.get("status"), definition_id=q.get("definition_id"), waiting_for=q.get("waiting"),
            rehearsal=q.get("rehearsal"), limit=q.get("limit", 50), before_id=q.get("cursor"),
        )
        # What each waits for, derived as GET /runs/{id} derives it: its parked head, its phase's row.
        working = [r for r in page if r.status in lifecycle.WORKING and r.current_phase is not None]
        parked = steps.parked_of(tx, [r.id for r in working])
        at = phases.current_of(tx, [(r.id, must_exist(r.current_phase)) for r in working])
        return {
            "runs": [{**r.public(), "waiting": waiting(r, parked.get(r.id), at.get(r.id))} for r in page],
            "next_cursor": next_cursor,
            "summary": runs.waiting_counts(tx),
        }

    # Autocommitted reads, as a page always was (a lost connection is retried, never a 500): each run's
    # waiting is derived from its rows as read just after the page, the counts from the rows as they stand.
    return runtime.database().autocommit(read)


@router.operation("GET", "/runs/{run_id}", "A run, its phases, a page of its steps (phase and seq order; pass steps_next_cursor as"
                  f" steps_cursor for the next: at most {schemas.STEPS_PAGE} steps and about"
                  f" {schemas.STEPS_PAGE_BYTES // 1024} KiB of them a page), their counts and the controls legal now;"
                  " its ETag names the run's control state (each step carries its own etag).",
                  auth.STAFF, ok("the run", schemas.RUN_DETAIL), query=schemas.RUN_QUERY, response_headers=schemas.RUN_HEADERS)
def get_run(call: Call) -> Answer:
    # One transaction: run, steps and controls from one snapshot; the tag is the run's as read there.
    body = runtime.database().transaction(lambda tx: run_detail(tx, call.ids["run_id"], call.query, call.now))
    return 200, body, {"ETag": body["run"]["etag"], "Cache-Control": "no-store"}


def run_detail(tx: Tx, run_id: int, query: dict[str, Any], now: datetime) -> Body:
    """GET /runs/{id}'s answer: the run, what it waits for, its phases, a page of its steps, the controls legal now."""
    run = runs.get(tx, run_id)
    if run is None:
        raise NotFound(f"no run {run_id}")
    after = None
    if "steps_cursor" in query:
        after = steps.get_on_run(tx, run.id, query["steps_cursor"])
        if after is None:
            raise Invalid(f"query.steps_cursor: run {run.id} has no step {query['steps_cursor']}")
    limit = query.get("steps_limit", schemas.STEPS_PAGE)
    run_steps, more = _steps_page(steps.page_for_run(tx, run.id, after, limit + 1), limit)
    furthest = steps.last_started_seq(tx, run.id, run.current_phase)
    head = steps.open_steps(tx, run.id, run.current_phase, limit=1) if run.current_phase is not None else []
    run_phases = phases.list_for_run(tx, run.id)
    working = next((p for p in run_phases if p.number == run.current_phase), None)
    flying = steps.holding_phase(tx, run.id, run.current_phase, now) if run.current_phase is not None else None
    return {
        "run": run.public(),
        "waiting": waiting(run, head[0] if head else None, working),
        "phases": [p.public() for p in run_phases],
        "steps": [s.public() for s in run_steps],
        "steps_next_cursor": run_steps[-1].id if more else None,
        "counts": steps.status_counts(tx, run.id),
        "controls": controls.offered(run, run_steps, furthest, working, flying),
    }


def _steps_page(read: list[Step], limit: int) -> tuple[list[Step], bool]:
    """The first of `read` up to `limit` steps and STEPS_PAGE_BYTES of their JSON (always at least one),
    and whether any step is left for a next page."""
    page: list[Step] = []
    size = 0
    for step in read[:limit]:
        size += len(json.dumps(step.public(), separators=(",", ":")))
        if page and size > schemas.STEPS_PAGE_BYTES:
            return page, True
        page.append(step)
    return page, len(read) > limit


@router.operation("GET", "/runs/{run_id}/log", "The run's log rows after an id, oldest first (the console tails it).",
                  auth.STAFF, ok("log rows", schemas.LOG_PAGE), query=schemas.LOG_QUERY)
def run_log(call: Call) -> Body:
    run_id = call.ids["run_id"]

    def read(tx: Tx) -> list[LogEntry]:
        if runs.get(tx, run_id) is None:
            raise NotFound(f"no run {run_id}")
        return log.after(tx, run_id, call.query.get("after_id", 0), call.query.get("limit", 200))

    return {"entries": [e.public() for e in runtime.database().transaction(read)]}
