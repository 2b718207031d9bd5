"""Where a walk begins: a scheduled run started or missed, a run already under way picked up, a run
whose document cannot be read failed.

The invariant: a scheduled run is started only inside its grace window, held in
the UPDATE's WHERE clause (`runs.start_within_grace`), else it is missed (a run
its schedule's `overlap` holds back first: `overlap.decide`); its
first phase is written and materialised in the same transaction as the move to
running, so no run is ever running without its first phase's steps. Each move
appends its log rows to its unit's; the walk writes them in that unit.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ...db import Tx, must_exist
from .. import journal
from ..lifecycle import RunStatus
from ..model import Run
from ..programme import Programme
from ..store import log, phases, runs, steps
from .cursor import Cursor, Done, NeedsRead, opened
from .overlap import Start
from .overlap import decide as overlap_decides


def start_run(tx: Tx, now: datetime, run: Run, programme: Programme, log_rows: list[journal.Entry]) -> Cursor:
    """scheduled -> starting (inside the grace window) or missed; starting -> running with phase 1.

    A scheduled run goes through starting within one statement: the log tells both moves.
    """
    first = programme.first
    if run.status is RunStatus.SCHEDULED:
        decided = overlap_decides(tx, now, run, programme, log_rows)
        if not isinstance(decided, Start):
            return decided
        if runs.start_within_grace(tx, run.id, now, into_phase=first.number, alone_of=decided.alone_of,
                                   cancelled=decided.cancelled):
            log_rows.append(journal.run_status(run.id, None, RunStatus.SCHEDULED, RunStatus.STARTING, cause="due"))
        elif runs.miss_after_grace(tx, run.id, now):
            closed = run.scheduled_for + timedelta(seconds=run.grace_seconds)
            cause = f"first seen at {now:%Y-%m-%dT%H:%M:%SZ}, after its grace window closed at {closed:%Y-%m-%dT%H:%M:%SZ}"
            log_rows.append(journal.run_status(run.id, None, RunStatus.SCHEDULED, RunStatus.MISSED, cause=cause))
            return Done(RunStatus.MISSED)
        else:
            return Done(must_exist(runs.get(tx, run.id)).status)
    elif not runs.transition(tx, run.id, [RunStatus.STARTING], RunStatus.RUNNING, now, current_phase=first.number):
        return Done(must_exist(runs.get(tx, run.id)).status)
    phases.insert_plan(tx, run.id, programme.rows, first.number, now, time_scale=run.time_scale)
    rows = steps.materialise_phase(tx, run.id, first.number, first.specs)
    log_rows.append(journal.run_status(run.id, first.number, RunStatus.STARTING, RunStatus.RUNNING, cause="started"))
    log_rows.append(journal.run_phase(run.id, first.number, first.name))
    return opened(RunStatus.RUNNING, first.number, rows)


def picked_up(run: Run, programme: Programme) -> NeedsRead:
    """Where the walk of a run past its start begins: the phase it works, read afresh."""
    if run.walked_as is RunStatus.CLEANING_UP:  # a finished run's Clean up too: its status kept
        return NeedsRead(RunStatus.CLEANING_UP, programme.cleanup.number)
    if run.status is RunStatus.ENDING:
        # The programme's ending, not current_phase: a run that went into ending
        # before current_phase named the ending holds its last main phase there.
        return NeedsRead(RunStatus.ENDING, programme.ending.number)
    return NeedsRead(run.status, must_exist(run.current_phase))


def fail_unreadable(tx: Tx, now: datetime, run: Run, error: str) -> RunStatus:
    """A run whose document cannot be read fails with the reason, and its log row in the same transaction (not one
    upgraded since the tick read it: its next walk reads the version it is on now)."""
    if runs.fail_unreadable(tx, run, now, error):
        log.append(tx, journal.run_status(run.id, run.current_phase, run.status, RunStatus.FAILED, cause=error), now)
        return RunStatus.FAILED
    return must_exist(runs.get(tx, run.id)).status
