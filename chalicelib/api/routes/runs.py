"""The runs' pages: the list (each run with what it waits for), one run (its phases, a page of its steps and the
controls legal now for the caller, from one snapshot) and its log; read through `events/views/runs.py`."""

from __future__ import annotations

from ... import runtime
from ...events.commands import Caller
from ...events.views.runs import log_page, run_detail, runs_page
from .. import auth, schemas
from ..operations import Answer, Body, Call, Router, ok

router = Router(__name__)


@router.operation("GET", "/runs", "Runs, newest first, a page at a time, each with what it is waiting for (waiting; filter on it"
                  " with ?waiting=), and the counts of runs waiting for a person or the game apart from those working (summary).",
                  auth.STAFF,
                  ok("a page of runs; pass next_cursor as cursor for the next", schemas.RUNS_PAGE), query=schemas.RUNS_QUERY)
def list_runs(call: Call) -> Body:
    return runs_page(runtime.database(), call.query)


@router.operation("GET", "/runs/{run_id}", "A run, its phases, a page of its steps (phase and seq order; pass steps_next_cursor as"
                  f" steps_cursor for the next: at most {schemas.STEPS_PAGE} steps and about"
                  f" {schemas.PAGE_BYTES // 1024} KiB of them a page), their counts, how its resource ledger stands"
                  " (counts and last change: read GET /runs/{run_id}/resources again when it moves) and the controls legal now"
                  " for the caller, each with the roles that may press it;"
                  " its ETag names the run's control state (each step carries its own etag).",
                  auth.STAFF, ok("the run", schemas.RUN_DETAIL), query=schemas.RUN_QUERY, response_headers=schemas.RUN_HEADERS)
def get_run(call: Call) -> Answer:
    body = run_detail(runtime.database(), call.ids["run_id"], call.query, call.now, caller_of(call))
    return 200, body, run_headers(body)


def caller_of(call: Call) -> Caller:
    """Whom a run's detail offers its controls to: the token's subject and roles."""
    return Caller(call.actor, call.roles)


def run_headers(detail: Body) -> dict[str, str]:
    """A run's detail answers its tag, as read in the detail's snapshot, and is never cached."""
    return {"ETag": detail["run"]["etag"], "Cache-Control": "no-store"}


@router.operation("GET", "/runs/{run_id}/log", "The run's log rows after an id, oldest first (the console tails it).",
                  auth.STAFF, ok("log rows", schemas.LOG_PAGE), query=schemas.LOG_QUERY)
def run_log(call: Call) -> Body:
    return log_page(runtime.database(), call.ids["run_id"], call.query)
