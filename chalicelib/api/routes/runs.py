"""The runs' pages: the list (each run with what it waits for), one run (its phases, a page of its steps and the
controls legal now for the caller, from one snapshot) and its log; read through `events/views/runs.py`. And a run control
pressed on every run a filter matches (`events/commands/bulk.py`: each run's own command)."""

from __future__ import annotations

from ... import runtime
from ...errors import Forbidden
from ...events import commands
from ...events.commands import Caller, bulk
from ...events.views.runs import log_page, run_detail, runs_page, scheduled_window
from ...roles import named as named_roles
from .. import auth, schemas
from ..operations import Answer, Body, Call, Router, ok
from ..wake import made_work

router = Router(__name__)


@router.operation("GET", "/runs", "Runs, newest first, a page at a time, each with what it is waiting for (waiting; filter on it"
                  " with ?waiting=), and the counts of runs waiting for a person or the game apart from those working (summary)."
                  " ?from= and ?to= keep the runs scheduled in [from, to) (either alone: from then on, or before then).",
                  auth.STAFF,
                  ok("a page of runs; pass next_cursor as cursor for the next", schemas.RUNS_PAGE), query=schemas.RUNS_QUERY)
def list_runs(call: Call) -> Body:
    edges = [schemas.parse_time(call.query[name], f"query.{name}") if name in call.query else None for name in ("from", "to")]
    return runs_page(runtime.database(), call.query, scheduled_window(*edges))


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
    """A run's detail answers its tag, as read in the detail's snapshot (never cached: operations.PRIVATE)."""
    return {"ETag": detail["run"]["etag"]}


@router.operation("GET", "/runs/{run_id}/log", "The run's log rows after an id, oldest first (the console tails it).",
                  auth.STAFF, ok("log rows", schemas.LOG_PAGE), query=schemas.LOG_QUERY)
def run_log(call: Call) -> Body:
    return log_page(runtime.database(), call.ids["run_id"], call.query)


_BULK_GATE = frozenset().union(*(commands.CONTROLS[name].roles for name in bulk.BULK_CONTROLS))


@router.operation("POST", "/runs/bulk", "Pause, resume or cancel every run a filter matches, each run changed and logged as"
                  " its own press would be (its guard, its log row, its 409's words): what changed, and what was refused"
                  " and why. expected_count is how many runs the person saw match: another count now is a 409 naming it,"
                  f" and nothing changes. At most {bulk.MAX_RUNS} runs a request (a filter matching more is a 400: narrow"
                  f" it), {bulk.BATCH} a transaction. With preview, the count and the first {bulk.PREVIEW_RUNS} runs, and"
                  " nothing changes. With an Idempotency-Key each run is pressed with it: a re-send answers, for each run"
                  " the first press changed, its first answer (replayed: true), and changes it no more.", _BULK_GATE,
                  ok("a preview's count and first runs, or what the press changed and what it did not",
                     schemas.BULK_ANSWER), body=schemas.BULK_BODY, request_headers=schemas.BULK_HEADERS,
                  waits_for_database=True)
def bulk_press(call: Call) -> Body:
    control = commands.CONTROLS[call.body["control"]]
    if not call.roles & control.roles:
        raise Forbidden(f"{control.name} needs the role {named_roles(control.roles)}", roles_needed=control.roles,
                        roles_held=call.roles)
    window = call.body["filter"].get("scheduled_between")
    between = None if window is None else (schemas.parse_time(window["from"], "body.filter.scheduled_between.from"),
                                           schemas.parse_time(window["to"], "body.filter.scheduled_between.to"))
    pressed = bulk.BulkPress.of(call.body, between)
    if pressed.expected_count is None:
        return bulk.preview(runtime.database(), pressed.which)
    how = commands.Press(key=schemas.parse_idempotency_key(call.headers.get(schemas.IDEMPOTENCY_KEY)))
    answer = bulk.press(runtime.database(), pressed, commands.Context(call.actor, call.now, how))
    if control.wakes and answer["changed"]:
        made_work(call)
    return answer
