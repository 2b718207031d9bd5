"""Scenes for the controls that change a plan (postpone, upgrade, extend, extend_cue), for the tests that press every
declared control: the body fields each needs, a scheduled run a newer version was saved for, a run at a phase with
a deadline, a parked cue with a timeout."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from chalicelib.db import Database, must_exist
from chalicelib.events import commands
from chalicelib.events.lifecycle import PhaseKind, RunStatus
from chalicelib.events.model import Run, Step, iso
from chalicelib.events.programme import PhasePlan
from chalicelib.events.store import definitions, phases
from tests.support.factory import document, make_run
from tests.support.scenes import set_step

AHEAD = timedelta(hours=1)


def fields_of(control: str, now: datetime) -> dict[str, Any]:
    """The body fields `control` needs besides a note: a new time an hour ahead, or a minute later."""
    declared = commands.CONTROLS[control]
    return {**({declared.time_field: iso(now + AHEAD)} if declared.time_field else {}),
            **({declared.seconds_field: 60} if declared.seconds_field else {})}


def at_a_phase_with_a_deadline(db: Database, now: datetime, status: RunStatus = RunStatus.RUNNING) -> Run:
    """A run at phase 1, whose deadline is an hour ahead."""
    run = make_run(db, now, status=status, current_phase=1)

    def opened(tx):
        phases.insert_plan(tx, run.id, [PhasePlan(1, PhaseKind.MAIN, "part 1", ())], 1, now)
        tx.execute("UPDATE event_run_phases SET deadline = %s WHERE run_id = %s AND number = 1", (now + AHEAD, run.id))

    db.transaction(opened)
    return run


def saved_again(db: Database, now: datetime, definition_id: int, message: str, grace: int = 300) -> int:
    """The definition's next version, announcing `message` (its name kept): its number."""
    name = must_exist(db.autocommit(lambda tx: definitions.get(tx, definition_id))).name
    doc = document([[{"action": "core.announce", "params": {"message": message}}]], name=name, grace_seconds=grace)
    saved = db.transaction(lambda tx: definitions.add_version(tx, definition_id, doc, actor="admin-ada", now=now))
    return must_exist(saved).current_version


def upgradable(db: Database, now: datetime) -> Run:
    """A run scheduled an hour ahead, made from version 1 of a definition whose version 2 was saved since."""
    run = make_run(db, now, scheduled_for=now + AHEAD)
    saved_again(db, now, run.definition_id, "version 2")
    return run


def timed(db: Database, cue: Step, now: datetime) -> Step:
    """The cue with a timeout an hour ahead."""
    return set_step(db, cue, times_out_at=now + AHEAD)


def moved_by(control: str, now: datetime) -> list[Any]:
    """The arguments `control`'s press function takes after its ids (`commands.postpone`'s new time,
    `commands.extend_cue`'s seconds): as `fields_of`, unrendered."""
    declared = commands.CONTROLS[control]
    return [*([now + AHEAD] if declared.time_field else []), *([60] if declared.seconds_field else [])]
