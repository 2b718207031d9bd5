"""What overlaps: a run that falls due while another run of its definition is under way, decided by its
schedule's `overlap` (`lifecycle.Overlap`).

The invariant: decided when the run falls due, in its start's unit, never when it is planned (an earlier run
may be over by then); `allow` reads nothing, and a dry run is never held to it. Each decision is one
`run.overlap` row in the same transaction as what it did:

- skip: the new run is missed (its move's WHERE: still scheduled), the cause naming the runs under way;
- cancel_previous: each run under way is cancelled through the Cancel command (`protocol.within`, as a
  person's cancel is, the actor `runner`), cleaning up first when its version says `cleanup_on`; a cancel
  refused is said in the row; then the new run starts;
- queue_one: the new run waits behind the newest run under way (`runs.queue`: the WHERE holds that no other
  run of the definition waits so; one that cannot wait is missed as under skip), and starts once the runs
  under way are over, however late, with a row saying so; a run due while another still waits, though
  nothing is under way any more, is skipped too, and a waiting run is never missed (`miss_after_grace`).

What was read under way is held in the start's WHERE (`runs.start_within_grace`, `alone_of`): two runs of a
definition falling due together start one, and the other decides again on its next walk, seeing it. A
cancel_previous whose cancel was refused starts regardless, as its row says.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ...db import Tx, must_exist
from .. import journal
from ..commands.protocol import Context, within
from ..commands.run_controls import Cancel
from ..errors import Conflict
from ..lifecycle import Overlap, RunMode, RunStatus
from ..model import Run
from ..programme import Programme, programme_of
from ..store import definitions, runs
from .cursor import Cursor, Done


@dataclass(frozen=True)
class Start:
    """The run starts, while no other live run of `alone_of` (its definition) is under way, when it is not None,
    but those this decision `cancelled`."""

    alone_of: int | None = None
    cancelled: tuple[int, ...] = ()


def decide(tx: Tx, now: datetime, run: Run, programme: Programme, log_rows: list[journal.Entry]) -> Cursor | Start:
    """What the overlap policy does with the scheduled `run`, due now: Start it, or where its walk stops
    (missed, or still scheduled while it waits)."""
    policy = programme.overlap
    if policy is Overlap.ALLOW or run.mode is not RunMode.LIVE or run.scheduled_for > now:
        return Start()
    alone = Start(run.definition_id)
    earlier = runs.under_way(tx, run.definition_id, run.id)
    if policy is Overlap.QUEUE_ONE:
        return _queue(tx, now, run, earlier, log_rows, alone)
    if not earlier:
        return alone
    if policy is Overlap.SKIP:
        return _skip(tx, now, run, policy, earlier, f"{_runs(earlier)} under way", log_rows)
    refused = [why for earlier_id in earlier if (why := _cancel(tx, now, run, earlier_id)) is not None]
    cause = f"{_runs(earlier)} under way: cancelled, so this one starts" + "".join(f"; {why}" for why in refused)
    log_rows.append(journal.run_overlap(run.id, policy.value, "cancelled_previous", earlier, cause))
    # guard: the-runs-a-decision-cancelled-hold-the-next-back
    return Start() if refused else Start(run.definition_id, tuple(earlier))


def _queue(tx: Tx, now: datetime, run: Run, earlier: list[int], log_rows: list[journal.Entry],
           alone: Start) -> Cursor | Start:
    behind = runs.queued_behind(tx, run.id)
    if not earlier:
        if behind is not None:
            late = int((now - run.scheduled_for).total_seconds())
            log_rows.append(journal.run_overlap(run.id, Overlap.QUEUE_ONE.value, "started", [behind],
                                                f"run {behind} is over: it starts, {late} s after its time"))
        # Nothing under way, but another occurrence still waits (its next look is yet to come): this one fell due
        # while it waits, and is skipped; it would otherwise start first and leave the waiting one behind it.
        # guard: a-run-due-while-another-waits-jumps-the-queue
        elif (waiting := runs.waiting_in_line(tx, run.definition_id, run.id)) is not None:
            return _skip(tx, now, run, Overlap.QUEUE_ONE, [waiting],
                         f"run {waiting} of this definition waits its turn already", log_rows)
        return alone
    if behind is not None:
        return Done(RunStatus.SCHEDULED)  # still waiting: decided when it queued
    if runs.queue(tx, run.id, run.definition_id, earlier[-1]):
        log_rows.append(journal.run_overlap(run.id, Overlap.QUEUE_ONE.value, "queued", earlier,
                                            f"{_runs(earlier)} under way: it starts once {_it(earlier)} over"))
        return Done(RunStatus.SCHEDULED)
    return _skip(tx, now, run, Overlap.QUEUE_ONE, earlier,
                 f"{_runs(earlier)} under way, and another occurrence already waits behind it", log_rows)


def _skip(tx: Tx, now: datetime, run: Run, policy: Overlap, earlier: list[int], why: str,
          log_rows: list[journal.Entry]) -> Cursor:
    cause = f"skipped: {why} (overlap: {policy.value})"
    if not runs.transition(tx, run.id, [RunStatus.SCHEDULED], RunStatus.MISSED, now, last_error=cause):
        return Done(must_exist(runs.get(tx, run.id)).status)
    log_rows.append(journal.run_overlap(run.id, policy.value, "skipped", earlier, cause))
    log_rows.append(journal.run_status(run.id, None, RunStatus.SCHEDULED, RunStatus.MISSED, cause=cause))
    return Done(RunStatus.MISSED)


def _cancel(tx: Tx, now: datetime, run: Run, earlier_id: int) -> str | None:
    """The run under way cancelled as a person's cancel would be (cleaning up when its version says cleanup_on);
    why not, if it was refused."""
    earlier = must_exist(runs.get(tx, earlier_id))
    version = must_exist(definitions.get_version(tx, earlier.definition_id, earlier.definition_version))
    cleanup = bool(programme_of(version.document).cleanup_on)
    reason = f"overlap: cancel_previous, run {run.id} is due"
    try:
        within(tx, Cancel(earlier_id, reason, cleanup), Context(journal.RUNNER, now))
    except Conflict as refused:
        return f"run {earlier_id} was not cancelled: {refused}"
    return None


def _runs(ids: list[int]) -> str:
    return f"run{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} of this definition {'are' if len(ids) > 1 else 'is'}"


def _it(ids: list[int]) -> str:
    return "they are" if len(ids) > 1 else "it is"
