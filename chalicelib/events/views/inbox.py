"""The inbox: the live runs that need the caller, most urgent first, each with one line of its story and the one
or two controls most likely needed; and how many there are (the needs-you count every console page shows).

Invariant: the inbox holds exactly the waits the caller can act on (`commands.answers.answerable`: a gm's the
cues), and its count counts the same runs; the order is an escalated wait first, then the longest wait, then
by run id; a row's controls are the wait's answers that the run's page offers the caller now, judged by the
same rule on the same rows (`declared.Standing.offer`), so the inbox never offers what `GET /runs/{id}` would not.
Reads only."""

from __future__ import annotations

from typing import Any

from ...db import Database, Tx, must_exist
from .. import journal, lifecycle
from ..commands import Caller, Standing, Target, answers, refusal
from ..lifecycle import RunStatus, WaitingFor
from ..model import LogEntry, Run, Step, iso
from ..store import log, phases, resources, runs, steps
from ..stories import name_holders, story
from ..waiting import waiting
from . import Body

INBOX_PAGE = 50  # rows answered unless `limit` says otherwise (0: the count alone)
MOST_SORTED = 500  # waits read to order them: past this many, the 500 oldest by run id are the ones ordered
ROW_CONTROLS = 2  # the controls a row offers, most likely first


def inbox(db: Database, caller: Caller, query: dict[str, Any]) -> Body:
    """{"needs_you": how many runs the caller can act on, "runs": the first `limit` of them, most urgent first}."""
    return db.autocommit(lambda tx: _read(tx, caller, query.get("limit", INBOX_PAGE)))


def _read(tx: Tx, caller: Caller, limit: int) -> Body:
    # The order needs each wait's start and escalation, read from other rows: every wait is read (up to
    # MOST_SORTED, the oldest by run id past that), ordered, and only then trimmed to `limit`.
    # guard: the-inbox-is-trimmed-before-it-is-ordered
    candidates, count = runs.waiting_on(tx, answers.answerable(caller.roles), MOST_SORTED if limit else 0)
    parked = steps.parked_of(tx, [r.id for r in candidates if r.status in lifecycle.ATTENDED])
    working = [r for r in candidates if r.status in lifecycle.WORKING and r.current_phase is not None]
    at = phases.current_of(tx, [(r.id, must_exist(r.current_phase)) for r in working])
    undone = resources.by_ids(tx, [s.resource_id for s in parked.values() if s.resource_id is not None])
    paused = [r.id for r in candidates if r.status is RunStatus.PAUSED]
    moved = log.latest_of(tx, paused, journal.RUN_STATUS)
    escalated = {**log.latest_of(tx, [r.id for r in candidates if r.id not in parked], journal.RUN_ESCALATED),
                 **log.latest_of(tx, list(parked), journal.STEP_ESCALATED)}
    waits = []
    for run in candidates:
        head = parked.get(run.id)
        reverted = None if head is None or head.resource_id is None else undone.get(head.resource_id)
        wait = waiting(run, head, at.get(run.id), reverted, moved.get(run.id))
        if wait is None:  # moved on between the two reads
            continue
        mark_escalated(wait, escalated.get(run.id))
        waits.append((run, head, wait))
    waits.sort(key=lambda each: _urgency(each[0], each[2]))
    waits = waits[:limit]
    pressed = log.latest_of(tx, [run.id for run, head, _ in waits if head is not None and (head.acknowledged_by or head.lapsed_by)],
                            journal.CHAT_PRESSED)
    rows = []
    for run, head, wait in waits:
        name_holders(wait, pressed.get(run.id))  # who has a cue, as a person reads them
        furthest = steps.last_started_seq(tx, run.id, run.current_phase) if run.id in paused else None  # as its page reads it
        failed = _failed_step(tx, run, furthest) if run.id in paused else None
        # A held phase has drained (`advance`'s wait): none of its steps is in flight.
        standing = Standing(run, furthest, at.get(run.id))
        rows.append({**run.public(), "waiting": wait, "story": story(wait, head, failed, at.get(run.id)),
                     "controls": _controls(standing, wait, head, failed, caller)})
    return {"needs_you": count, "runs": rows}


def _urgency(run: Run, wait: Body) -> tuple[bool, bool, str, int]:
    """An escalated wait first, then the longest wait (ISO times in UTC sort as they read; one not known last),
    then by run id."""
    return ("escalated" not in wait, wait["since"] is None, wait["since"] or "", run.id)


def escalated_kind(wait: Body) -> str:
    """The log kind of a wait's escalation: a parked step's (a cue, a decision) or the run's (a resume, an advance)."""
    return journal.STEP_ESCALATED if "step_id" in wait else journal.RUN_ESCALATED


def mark_escalated(wait: Body | None, fired: LogEntry | None) -> None:
    """Adds to `wait` its fired escalation (`escalated`: where it went, which try of how many, and when) when
    `fired`, the run's newest row of `escalated_kind(wait)`, is of this wait (its step's, since it began)."""
    if wait is None or fired is None or fired.kind != escalated_kind(wait):
        return
    if fired.step_id != wait.get("step_id") or (iso(fired.created_at) or "") < (wait["since"] or ""):
        return
    detail = fired.detail or {}
    wait["escalated"] = {"channel": detail.get("channel"), "attempt": detail.get("attempt"), "of": detail.get("of"),
                         "at": iso(fired.created_at)}


def _failed_step(tx: Tx, run: Run, furthest: int | None) -> Step | None:
    """The failed step a paused run is stopped at (the one Retry would re-queue), or None."""
    if run.current_phase is None:
        return None
    return next((s for s in steps.list_for_phase(tx, run.id, run.current_phase)
                 if refusal(answers.RETRY.name, run, s, furthest) is None), None)


def _controls(standing: Standing, wait: Body, head: Step | None, failed: Step | None, caller: Caller) -> list[Body]:
    """The controls most likely needed that the run's page offers the caller now (`Standing.offer`): [{name, step_id}]."""
    kind = WaitingFor(wait["for"])
    found = []
    for control in answers.answers(kind, failed=failed is not None):
        step = failed if control is answers.RETRY else head if control.target is Target.STEP else None
        if standing.offer(control, step, caller):
            found.append({"name": control.name, "step_id": None if step is None else step.id})
    return found[:ROW_CONTROLS]
