"""The runs as a person reads them: the runs page (each run with what it waits for, and the counts waiting for a
person or the game), one run's detail (from one snapshot: its phases, a page of its steps, the controls legal
now for the caller, a scheduled run's definition's current version) and its log (with its chat identities named
as a person reads them). Reads only."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...db import Database, Tx, must_exist
from .. import commands, journal, lifecycle
from ..actions import core
from ..calendar import EARLIEST, LATEST, in_range
from ..errors import Invalid, NotFound
from ..model import LogEntry, Phase, Resource, Run, Step, iso
from ..store import definitions, log, phases, resources, runs, steps
from ..store.runs import REHEARSAL_FILTERS as REHEARSAL_FILTERS  # the runs page's ?rehearsal= values
from ..stories import is_chat, name_holders, person
from ..waiting import waiting
from . import Body, fitted
from .inbox import escalated_kind, mark_escalated

# A run's detail answers its steps a page at a time: at most STEPS_PAGE steps and about PAGE_BYTES of them
# (views.fitted), so one answer stays far below Lambda's 6 MB whatever the run's size (a definition allows
# 10,200 steps of 16 KB params).
STEPS_PAGE = 1000


def scheduled_window(start: datetime | None, end: datetime | None) -> tuple[datetime, datetime] | None:
    """The runs page's `?from=&to=` as the [start, end) of scheduled times it keeps (None: neither given); an
    edge not given is the calendar's own far one. Invalid when an edge is outside what the calendar reads, or
    `to` is not after `from`."""
    if start is None and end is None:
        return None
    given_start = start is not None
    start = EARLIEST if start is None else in_range(start, "query.from")
    end = LATEST if end is None else in_range(end, "query.to")
    if end <= start:
        raise Invalid("query.to must be after query.from" if given_start else
                      f"query.to must be after {iso(EARLIEST)}, the earliest time the runs list reads")
    return start, end


def runs_page(db: Database, query: dict[str, Any], scheduled: tuple[datetime, datetime] | None = None) -> Body:
    """Runs newest first, a page at a time (`status`, `definition_id`, `waiting`, `rehearsal`, `limit`, `cursor`;
    `scheduled`: those scheduled in [start, end), `scheduled_window`), each with what it waits for, and the
    counts of runs waiting (`summary`: of the live runs, unless `rehearsal` is `include` or `only`)."""

    def read(tx: Tx) -> Body:
        page, next_cursor = runs.list_page(
            tx, status=query.get("status"), definition_id=query.get("definition_id"), waiting_for=query.get("waiting"),
            rehearsal=query.get("rehearsal"), scheduled_between=scheduled, limit=query.get("limit", 50),
            before_id=query.get("cursor"),
        )
        # What each waits for, derived as a run's detail derives it: its parked head (a cleanup's: its revert,
        # and the resource that undoes), its phase's row.
        working = [r for r in page if r.status in lifecycle.WORKING and r.current_phase is not None]
        parked = steps.parked_of(tx, [r.id for r in page if r.walked_as in lifecycle.ATTENDED])
        at = phases.current_of(tx, [(r.id, must_exist(r.current_phase)) for r in working])
        undone = resources.by_ids(tx, [s.resource_id for s in parked.values() if s.resource_id is not None])
        # Who paused each paused run and why: the log row that paused it.
        moved = log.latest_of(tx, [r.id for r in page if r.status is lifecycle.RunStatus.PAUSED], journal.RUN_STATUS)
        # Who has each cue, named as a person reads them: the run's newest chat press.
        pressed = log.latest_of(tx, [s.run_id for s in parked.values() if s.acknowledged_by or s.lapsed_by], journal.CHAT_PRESSED)
        return {
            "runs": [{**r.public(), "waiting": _waiting_of(r, parked.get(r.id), at.get(r.id), undone, moved.get(r.id),
                                                        pressed.get(r.id))} for r in page],
            "next_cursor": next_cursor,
            "summary": runs.waiting_counts(tx, query.get("rehearsal")),
        }

    # Autocommitted reads, as a page always was (a lost connection is retried, never a 500): each run's
    # waiting is derived from its rows as read just after the page, the counts from the rows as they stand.
    return db.autocommit(read)


def run_detail(db: Database, run_id: int, query: dict[str, Any], now: datetime, caller: commands.Caller) -> Body:
    """The run, what it waits for, its phases, a page of its steps (`steps_cursor`, `steps_limit`), their counts
    and the controls legal now for `caller`: one transaction, so all of it (and the run's tag) is of one snapshot."""
    return db.transaction(lambda tx: _detail(tx, run_id, query, now, caller))


def _detail(tx: Tx, run_id: int, query: dict[str, Any], now: datetime, caller: commands.Caller) -> Body:
    run = runs.get(tx, run_id)
    if run is None:
        raise NotFound(f"no run {run_id}")
    after = None
    if "steps_cursor" in query:
        after = steps.get_on_run(tx, run.id, query["steps_cursor"])
        if after is None:
            raise Invalid(f"query.steps_cursor: run {run.id} has no step {query['steps_cursor']}")
    limit = query.get("steps_limit", STEPS_PAGE)
    read = steps.page_for_run(tx, run.id, after, limit + 1)
    run_steps, shown_steps, next_cursor = fitted(read[:limit], read[limit - 1].id if len(read) > limit else None,
                                                 lambda s: s.id, lambda s: _step_shown(s, run))
    furthest = steps.last_started_seq(tx, run.id, run.current_phase)
    if run.walked_as is lifecycle.RunStatus.CLEANING_UP:  # it works its reverts: the one parked, if any
        head = [parked] if (parked := steps.parked_of(tx, [run.id]).get(run.id)) is not None else []
    else:
        head = steps.open_steps(tx, run.id, run.current_phase, limit=1) if run.current_phase is not None else []
    run_phases = phases.list_for_run(tx, run.id)
    working = next((p for p in run_phases if p.number == run.current_phase), None)
    flying = steps.holding_phase(tx, run.id, run.current_phase, now) if run.current_phase is not None else None
    undone = resources.by_ids(tx, [s.resource_id for s in head if s.resource_id is not None])
    moved = log.latest(tx, run.id, journal.RUN_STATUS) if run.status is lifecycle.RunStatus.PAUSED else None
    held = head and (head[0].acknowledged_by or head[0].lapsed_by)
    wait = _waiting_of(run, head[0] if head else None, working, undone, moved,
                       log.latest(tx, run.id, journal.CHAT_PRESSED) if held else None)
    if wait is not None:  # a fired escalation stays told while its wait lasts
        mark_escalated(wait, log.latest(tx, run.id, escalated_kind(wait)))
    upgradable = run.status is lifecycle.RunStatus.SCHEDULED and run.rehearsal is None
    current = must_exist(definitions.get(tx, run.definition_id)).current_version if upgradable else None
    return {
        "run": run.public(),
        "waiting": wait,
        "phases": [p.public() for p in run_phases],
        "steps": shown_steps,
        "steps_next_cursor": next_cursor,
        "current_version": current,
        "counts": steps.status_counts(tx, run.id),
        "ledger": _ledger(tx, run.id),
        "controls": commands.offered(run, run_steps, furthest, working, flying, caller=caller, now=now,
                                     revertable=_revertable(tx, run, now), current_version=current),
    }


def _step_shown(step: Step, run: Run) -> Body:
    """A step as the run's answer shows it: a step with a `times_out_at` says whose that is, `times_out_by`:
    "rehearsal" (a dry run's own confirm of its cue) or "timeout" (the cue's own), as the engine decides it
    (`core.cue_timeout`); absent when it has none."""
    shown = step.public()
    if step.times_out_at is not None:
        rehearsal = run.rehearsal
        timeout = core.cue_timeout(step.params, run.time_scale, None if rehearsal is None else rehearsal.auto_confirm_seconds)
        if timeout is not None:
            shown["times_out_by"] = "rehearsal" if timeout.by_rehearsal else "timeout"
    return shown


def _revertable(tx: Tx, run: Run, now: datetime) -> bool:
    """Whether a finished run has something live its Clean up would revert, and no step in flight (read only
    for a finished run: the control's guard, `runs.begin_late_cleanup`, says the same)."""
    return (run.status in lifecycle.CLEANUP_TARGETS and resources.cleanup_counts(tx, run.id).reverts > 0
            and not resources.in_flight_count(tx, run.id, now))


def _ledger(tx: Tx, run_id: int) -> Body:
    """How the run's ledger stands, in a few bytes: its resources counted by status and when the last of them
    changed. A client reads GET /runs/{id}/resources again only when this moves."""
    counts, changed_at = resources.ledger_state(tx, run_id)
    return {"counts": counts, "changed_at": iso(changed_at)}


def _waiting_of(run: Run, head: Step | None, phase: Phase | None, undone: dict[int, Resource],
                moved: LogEntry | None, pressed: LogEntry | None = None) -> Body | None:
    """What the run waits for (`waiting`), a parked revert's with the resource it undoes (from `undone`), a
    paused run's with who paused it and why (`moved`: the log row that paused it), a cue's with who has it named
    (`pressed`: the run's newest chat.pressed row)."""
    reverted = None if head is None or head.resource_id is None else undone.get(head.resource_id)
    wait = waiting(run, head, phase, reverted, moved)
    name_holders(wait, pressed)
    return wait


def log_page(db: Database, run_id: int, query: dict[str, Any]) -> Body:
    """The run's log rows after `after_id`, oldest first, at most `limit`, and `people`: each chat identity the
    rows name (a row's actor, or whose hold it tells of: `had_by`) as a person reads them (`stories.person`),
    named by that identity's newest chat.pressed row of the run: one statement more, only when a row names one."""

    def read(tx: Tx) -> Body:
        if runs.get(tx, run_id) is None:
            raise NotFound(f"no run {run_id}")
        entries = log.after(tx, run_id, query.get("after_id", 0), query.get("limit", 200))
        named = {name for e in entries for name in (e.actor, (e.detail or {}).get("had_by"))
                 if isinstance(name, str) and is_chat(name)}
        pressed = log.latest_by_actor(tx, run_id, journal.CHAT_PRESSED, sorted(named))
        return {"entries": [e.public() for e in entries],
                "people": {actor: person(actor, pressed.get(actor)) for actor in sorted(named)}}

    return db.transaction(read)
