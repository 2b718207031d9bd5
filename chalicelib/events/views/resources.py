"""The resource ledger as a person reads it: what a run left in the game world, every run's resources in one
status, and what a cancel with cleanup would revert now (counted whole, detailed a page at a time). Reads only;
every list a page under views.PAGE_BYTES, however large the ledger."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...db import Database, Tx
from .. import commands
from ..errors import NotFound
from ..lifecycle import ResourceStatus
from ..model import Resource, Run
from ..store import resources, runs, steps
from . import Body, fitted

RESOURCES_PAGE = 100  # a page's default count; the byte budget may end it sooner


def _known_run(tx: Tx, run_id: int) -> Run:
    run = runs.get(tx, run_id)
    if run is None:
        raise NotFound(f"no run {run_id}")
    return run


def _page(key: str, read: tuple[list[Resource], int | None]) -> Body:
    _, bodies, next_cursor = fitted(*read, lambda r: r.id)
    return {key: bodies, "next_cursor": next_cursor}


def run_resources_page(db: Database, run_id: int, query: dict[str, Any]) -> Body:
    """The run's resources, newest first, a page at a time (`cursor`, `limit`)."""

    def read(tx: Tx) -> Body:
        _known_run(tx, run_id)
        return _page("resources", resources.page_for_run(tx, run_id, query.get("cursor"), query.get("limit", RESOURCES_PAGE)))

    return db.transaction(read)


def resources_page(db: Database, query: dict[str, Any]) -> Body:
    """Every run's resources in one `status`, newest first, a page at a time (`cursor`, `limit`)."""
    return _page("resources", db.autocommit(lambda tx: resources.page_by_status(
        tx, ResourceStatus(query["status"]), query.get("cursor"), query.get("limit", RESOURCES_PAGE))))


def cleanup_plan(db: Database, run_id: int, query: dict[str, Any], now: datetime) -> Body:
    """What a cancel with cleanup would revert now: counted whole (`counts`), and a page of it newest first
    (`cursor`, `limit`); what it would leave in the world and why (`left`: a revert that is never sent); the
    steps in flight (their answers may add to it), whether such a cancel would clean up at all, and the step in
    doubt it would wait for."""

    def read(tx: Tx) -> Body:
        run = _known_run(tx, run_id)
        planned = resources.cleanup_counts(tx, run.id)
        flying = resources.in_flight_count(tx, run.id, now)
        undecided = steps.parked_in_doubt_of(tx, run.id)  # a cleanup waits for the decision on it
        cleans = (run.status in commands.CLEANABLE and run.cleanup_target is None and (planned.reverts > 0 or flying > 0)
                  and undecided is None)
        left = [reason.public() for reason in resources.left_unreverted(tx, run.id)]
        return {**_page("reverts", resources.cleanup_plan(tx, run.id, query.get("cursor"), query.get("limit", RESOURCES_PAGE))),
                "counts": {"reverts": planned.reverts, "by_hand": planned.by_hand}, "left": left,
                "in_flight": flying, "cleans_up": cleans, "undecided": None if undecided is None else undecided.named}

    return db.transaction(read)
