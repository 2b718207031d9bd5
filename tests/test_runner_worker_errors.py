"""A worker whose unit of work raises hands its run back at once: the run is not left to a lapsing lease.

The failure is a real one: the database refuses a log row (a trigger), so the
unit of work that carried it rolls back and raises out of the worker.
"""

from chalicelib.events import commands
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.runner import Budget
from chalicelib.events.store import steps
from tests.support.factory import document, run_row
from tests.support.interference import log_rows_refused
from tests.support.runner_kit import schedule, step, tick

CUE_THEN_PHASE = document([[step("core.cue", instruction="Open the gate")], [step("core.announce", message="in")]])


def test_a_worker_that_raises_releases_its_run_lease_so_the_next_tick_carries_on(db, clock, runner):
    """Issue 23, item 14: kept, the lease would stall the run a whole lease period after one failure."""
    run = schedule(db, clock.now(), CUE_THEN_PHASE)
    tick(runner)
    (cue,) = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))
    commands.confirm(db, run.id, cue.id, actor="alice", now=clock.now())
    with log_rows_refused(db, "NEW.kind = 'run.phase' AND NEW.phase = 2"):
        assert runner.tick(Budget.for_seconds(60)).errors == 1  # the phase change's unit of work raised
    after = run_row(db, run.id)
    assert (after.status, after.current_phase) == (RunStatus.RUNNING, 1)
    assert (after.claimed_by, after.claim_expires_at, after.wake_at) == (None, None, clock.now())
    report = tick(runner)  # the same instant: nothing waits for a lease to lapse
    assert report.runs_advanced == 1 and report.dispatched == 1
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert runner.actions.announce_channel.posts == ["in"]
