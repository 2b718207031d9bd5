"""The resource ledger's pages: what a run left in the game world, every run's resources in one status, and what
a cancel with cleanup would revert now."""

from __future__ import annotations

from ... import runtime
from ...db import Tx
from ...events import controls
from ...events.errors import NotFound
from ...events.model import ResourceStatus, Run
from ...events.store import resources, runs, steps
from .. import auth, schemas
from ..operations import Body, Call, Router, ok

router = Router(__name__)


def _known_run(tx: Tx, run_id: int) -> Run:
    run = runs.get(tx, run_id)
    if run is None:
        raise NotFound(f"no run {run_id}")
    return run


@router.operation("GET", "/runs/{run_id}/resources", "What the run left in the game world, newest first, a page at a time:"
                  " each resource's kind and id (as the answer listed them), its revert and its status.", auth.STAFF,
                  ok("a page of resources; pass next_cursor as cursor for the next", schemas.RESOURCES_PAGE),
                  query=schemas.RESOURCES_QUERY)
def run_resources(call: Call) -> Body:
    def read(tx: Tx) -> Body:
        _known_run(tx, call.ids["run_id"])
        page, next_cursor = resources.page_for_run(tx, call.ids["run_id"], call.query.get("cursor"),
                                                   call.query.get("limit", 100))
        return {"resources": [r.public() for r in page], "next_cursor": next_cursor}

    return runtime.database().transaction(read)


@router.operation("GET", "/resources", "Every run's resources in one status, newest first (?status=live: what the runs have"
                  " left in the world; revert_failed: what their cleanups could not undo).", auth.STAFF,
                  ok("a page of resources; pass next_cursor as cursor for the next", schemas.RESOURCES_PAGE),
                  query=schemas.LEFT_QUERY)
def resources_left(call: Call) -> Body:
    page, next_cursor = runtime.database().autocommit(lambda tx: resources.page_by_status(
        tx, ResourceStatus(call.query["status"]), call.query.get("cursor"), call.query.get("limit", 100)))
    return {"resources": [r.public() for r in page], "next_cursor": next_cursor}


@router.operation("GET", "/runs/{run_id}/cleanup-plan", "What a cancel with cleanup would revert now, in the order it would"
                  " (newest first), and how many steps are in flight (their answers may add to it).", auth.STAFF,
                  ok("the cleanup plan", schemas.CLEANUP_PLAN))
def cleanup_plan(call: Call) -> Body:
    def read(tx: Tx) -> Body:
        run = _known_run(tx, call.ids["run_id"])
        plan = resources.cleanup_plan(tx, run.id)
        flying = resources.in_flight_count(tx, run.id, call.now)
        undecided = steps.parked_in_doubt_of(tx, run.id)  # a cleanup waits for the decision on it
        cleans = (run.status in controls.CLEANABLE and run.cleanup_target is None and (bool(plan) or flying > 0)
                  and undecided is None)
        return {"reverts": [r.public() for r in plan], "in_flight": flying, "cleans_up": cleans,
                "undecided": None if undecided is None else undecided.named}

    return runtime.database().transaction(read)
