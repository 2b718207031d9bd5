"""A run leaves a phase only when nothing of it is open, and only from the phase it is really in."""

import pytest

from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.store import runs
from tests.support.factory import materialise, run_row, specs
from tests.support.scenes import put_step_in, run_with_steps, set_run


def _leave(db, clock, run_id, finished, from_status, to, next_phase=None):
    return db.transaction(
        lambda tx: runs.leave_phase(tx, run_id, finished, from_status, to, clock.now(), next_phase=next_phase)
    )


@pytest.mark.parametrize("state", ["pending", "parked", "leased"])
def test_a_running_phase_with_an_open_step_is_not_left(db, clock, state):
    run, (first, second) = run_with_steps(db, clock.now(), RunStatus.RUNNING, n=2)
    put_step_in(db, first, "done", clock.now())
    put_step_in(db, second, state, clock.now())
    assert not _leave(db, clock, run.id, 1, RunStatus.RUNNING, RunStatus.RUNNING, next_phase=2)
    after = run_row(db, run.id)
    assert (after.status, after.current_phase, after.updated_at) == (RunStatus.RUNNING, 1, run.updated_at)

    put_step_in(db, second, "done", clock.now())  # the same call goes through once the phase is settled
    assert _leave(db, clock, run.id, 1, RunStatus.RUNNING, RunStatus.RUNNING, next_phase=2)
    assert run_row(db, run.id).current_phase == 2


@pytest.mark.parametrize("state", ["pending", "parked", "leased"])
def test_an_ending_with_an_open_step_does_not_complete(db, clock, state):
    run, (first,) = run_with_steps(db, clock.now(), RunStatus.ENDING, n=1)
    put_step_in(db, first, state, clock.now())
    assert not _leave(db, clock, run.id, 1, RunStatus.ENDING, RunStatus.COMPLETED)
    assert run_row(db, run.id).status is RunStatus.ENDING


def test_a_worker_finishing_a_phase_the_run_has_left_does_not_move_it_back(db, clock):
    run, phase_one = run_with_steps(db, clock.now(), RunStatus.RUNNING, n=1)
    put_step_in(db, phase_one[0], "done", clock.now())
    (phase_two,) = materialise(db, run, 2, specs("world.reward"))
    put_step_in(db, phase_two, "done", clock.now())
    materialise(db, run, 3, specs("world.fireworks"))
    set_run(db, run.id, current_phase=3)  # another worker already went on to phase 3

    assert not _leave(db, clock, run.id, 1, RunStatus.RUNNING, RunStatus.RUNNING, next_phase=2)
    assert not _leave(db, clock, run.id, 2, RunStatus.RUNNING, RunStatus.ENDING)
    after = run_row(db, run.id)
    assert (after.status, after.current_phase) == (RunStatus.RUNNING, 3)


def test_leaving_a_phase_needs_the_run_in_the_status_the_worker_saw(db, clock):
    run, (only,) = run_with_steps(db, clock.now(), RunStatus.PAUSED, n=1)
    put_step_in(db, only, "done", clock.now())  # a person paused the run as its last step finished
    assert not _leave(db, clock, run.id, 1, RunStatus.RUNNING, RunStatus.ENDING)
    assert run_row(db, run.id).status is RunStatus.PAUSED
