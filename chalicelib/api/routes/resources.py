"""The resource ledger's pages: what a run left in the game world, every run's resources in one status, and what
a cancel with cleanup would revert now; read through `events/views/resources.py`."""

from __future__ import annotations

from ... import runtime
from ...events.views import resources
from .. import auth, schemas
from ..operations import Body, Call, Router, ok

router = Router(__name__)


@router.operation("GET", "/runs/{run_id}/resources", "What the run left in the game world, newest first, a page at a time"
                  f" (at most limit and about {schemas.PAGE_BYTES // 1024} KiB of them): each resource's kind and id (as the"
                  " answer listed them), its revert and its status.", auth.STAFF,
                  ok("a page of resources; pass next_cursor as cursor for the next", schemas.RESOURCES_PAGE),
                  query=schemas.RESOURCES_QUERY)
def run_resources(call: Call) -> Body:
    return resources.run_resources_page(runtime.database(), call.ids["run_id"], call.query)


@router.operation("GET", "/resources", "Every run's resources in one status, newest first, paged as a run's are (?status=live:"
                  " what the runs have left in the world; revert_failed: what their cleanups could not undo).", auth.STAFF,
                  ok("a page of resources; pass next_cursor as cursor for the next", schemas.RESOURCES_PAGE),
                  query=schemas.LEFT_QUERY)
def resources_left(call: Call) -> Body:
    return resources.resources_page(runtime.database(), call.query)


@router.operation("GET", "/runs/{run_id}/cleanup-plan", "What a cancel with cleanup would revert now: the whole plan counted,"
                  " and a page of it in the order it would revert (newest first, paged as the run's resources are), and"
                  " how many steps are in flight (their answers may add to it).", auth.STAFF,
                  ok("the cleanup plan; pass next_cursor as cursor for its next page", schemas.CLEANUP_PLAN),
                  query=schemas.RESOURCES_QUERY)
def cleanup_plan(call: Call) -> Body:
    return resources.cleanup_plan(runtime.database(), call.ids["run_id"], call.query, call.now)
