"""Wake times: a tick reads only the runs whose timer has come, and no timer is ever late.

Every test drives the real runner or the real controls against MariaDB and then
looks at what a tick would do next: which runs `find_due` hands it, and when.
"""

from datetime import timedelta

from chalicelib.events import commands
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.store import runs, steps
from devtools.kit.game_bridge import Answer
from tests.support.factory import document, make_run, materialise, run_row, specs
from tests.support.runner_kit import RULES, schedule, step, tick
from tests.support.torture import late_wakes

CUE = document([[step("core.cue", instruction="Light the bonfire"), step("core.announce", message="lit")]])
LONG_WAIT = document([[step("core.wait", seconds=3600), step("core.announce", message="an hour later")]])
SHORT_WAIT = document([[step("core.wait", seconds=5), step("world.spawn")]])
FAILS = document([[step("world.spawn"), step("core.announce", message="after")]])


def _due(db, now):
    return {r.id for r in db.autocommit(lambda tx: runs.find_due(tx, now, 1000))}


def _steps(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))


def test_runs_that_need_nobody_are_not_read_by_a_tick(db, clock, runner):
    parked = schedule(db, clock.now(), CUE)
    waiting = schedule(db, clock.now(), LONG_WAIT)
    tick(runner)
    assert run_row(db, parked.id).wake_at is None  # only a person moves a parked cue
    assert run_row(db, waiting.id).wake_at == clock.now() + timedelta(seconds=3600)
    later = schedule(db, clock.now(), CUE, scheduled_for=clock.now() + timedelta(minutes=5))
    assert run_row(db, later.id).wake_at == later.scheduled_for
    clock.advance(60)
    assert _due(db, clock.now()) == set()
    assert tick(runner).runs_seen == 0
    assert late_wakes(db, clock.now()) == []


def test_a_wait_wakes_its_run_exactly_when_the_next_step_falls_due(db, clock, runner, game_bridge):
    run = schedule(db, clock.now(), SHORT_WAIT)
    tick(runner)
    due_at = _steps(db, run.id)[1].due_at
    assert run_row(db, run.id).wake_at == due_at
    assert run.id not in _due(db, due_at - timedelta(microseconds=1))
    assert run.id in _due(db, due_at)
    clock.set(due_at)
    assert tick(runner).dispatched == 1
    assert run_row(db, run.id).status is RunStatus.COMPLETED and run_row(db, run.id).wake_at is None


def test_confirm_and_skip_wake_the_run_now_in_their_own_transaction(db, clock, runner):
    confirmed, skipped = schedule(db, clock.now(), CUE), schedule(db, clock.now(), CUE)
    tick(runner)
    clock.advance(30)
    cue = _steps(db, confirmed.id)[0]
    commands.confirm(db, confirmed.id, cue.id, actor="alice", now=clock.now(), note="lit")
    cue = _steps(db, skipped.id)[0]
    commands.skip(db, skipped.id, cue.id, actor="alice", now=clock.now())
    assert run_row(db, confirmed.id).wake_at == clock.now() == run_row(db, skipped.id).wake_at
    assert _due(db, clock.now()) == {confirmed.id, skipped.id}
    assert tick(runner).dispatched == 2


def test_a_pause_clears_the_wake_and_resume_or_retry_set_it_to_now(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(status=400))
    failed = schedule(db, clock.now(), FAILS)
    paused = schedule(db, clock.now(), LONG_WAIT)
    tick(runner)
    commands.pause(db, paused.id, actor="alice", now=clock.now())
    assert run_row(db, failed.id).status is RunStatus.PAUSED
    assert run_row(db, failed.id).wake_at is None and run_row(db, paused.id).wake_at is None
    clock.advance(10)
    spawn = _steps(db, failed.id)[0]
    commands.retry(db, failed.id, spawn.id, actor="alice", now=clock.now())
    commands.resume(db, paused.id, actor="alice", now=clock.now())
    assert run_row(db, failed.id).wake_at == clock.now() == run_row(db, paused.id).wake_at
    tick(runner)
    assert run_row(db, paused.id).wake_at == _steps(db, paused.id)[1].due_at  # back behind its wait


def test_a_confirm_while_a_worker_holds_the_run_survives_the_workers_release(db, clock, runner):
    run = schedule(db, clock.now(), CUE)
    tick(runner)
    # A worker took the run and read the parked cue; a person confirms before it hands the run back.
    assert db.autocommit(lambda tx: runs.take_lease(tx, run.id, "worker", clock.now(), 120))
    cue = _steps(db, run.id)[0]
    commands.confirm(db, run.id, cue.id, actor="alice", now=clock.now())
    assert db.autocommit(lambda tx: runs.release_lease(tx, run.id, "worker", clock.now()))
    assert run_row(db, run.id).wake_at == clock.now()  # computed from the rows, not from the worker's view
    assert tick(runner).dispatched == 1


def test_a_worker_that_dies_holding_a_run_leaves_it_waking_at_its_lease_expiry(db, clock, runner):
    run = schedule(db, clock.now(), SHORT_WAIT)
    assert db.autocommit(lambda tx: runs.take_lease(tx, run.id, "dead", clock.now(), RULES.lease_seconds))
    expiry = clock.now() + timedelta(seconds=RULES.lease_seconds)
    assert run_row(db, run.id).wake_at == expiry
    assert tick(runner).runs_seen == 0
    clock.set(expiry + timedelta(microseconds=1))
    assert tick(runner).dispatched == 1
    assert [s.status for s in _steps(db, run.id)] == [StepStatus.DONE, StepStatus.PENDING]


def test_a_leased_head_step_wakes_its_run_when_the_lease_lapses(db, clock, runner):
    run = schedule(db, clock.now(), SHORT_WAIT)
    tick(runner, seconds=0)  # out of budget at once: the run is handed back untouched and wakes now
    assert run_row(db, run.id).wake_at == clock.now()
    tick(runner)
    spawn = _steps(db, run.id)[1]
    clock.set(spawn.due_at)
    claim = db.autocommit(lambda tx: steps.claim(tx, spawn, clock.now(), 30))  # another dispatcher, mid-call
    assert claim is not None
    assert db.autocommit(lambda tx: runs.take_lease(tx, run.id, "w", clock.now(), 30))
    assert db.autocommit(lambda tx: runs.release_lease(tx, run.id, "w", clock.now()))
    assert run_row(db, run.id).wake_at == clock.now() + timedelta(seconds=30)
    assert late_wakes(db, clock.now()) == []


def test_a_step_skipped_in_a_paused_run_does_not_wake_it(db, clock, runner):
    run = schedule(db, clock.now(), CUE)
    tick(runner)
    commands.pause(db, run.id, actor="alice", now=clock.now())
    announce = _steps(db, run.id)[1]
    commands.skip(db, run.id, announce.id, actor="alice", now=clock.now())
    assert run_row(db, run.id).wake_at is None  # the pause holds until a person resumes
    assert tick(runner).runs_seen == 0


def test_the_audit_calls_a_wake_late_only_when_a_tick_from_now_on_would_miss_the_step(db, clock):
    """A step that fell due while its run was paused is served by the resume's wake of now (found by R5);
    a wake after a step that is due, now or later, is late."""
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    (head,) = materialise(db, run, 1, specs("world.spawn"))
    due = clock.now() + timedelta(seconds=30)
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET due_at = %s WHERE id = %s", (due, head.id)))

    def wake_at(moment):
        db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET wake_at = %s WHERE id = %s", (moment, run.id)))

    wake_at(due + timedelta(seconds=1))
    assert late_wakes(db, clock.now()) == [f"run {run.id} (running) wakes at {due + timedelta(seconds=1)}, later than {due}"]
    clock.advance(31)  # resumed one second after the step fell due: the wake of now is on time
    wake_at(clock.now())
    assert late_wakes(db, clock.now()) == []
    wake_at(clock.now() + timedelta(seconds=1))
    assert late_wakes(db, clock.now()) != []


def test_an_ending_run_wakes_when_its_endings_head_step_falls_due(db, clock, runner):
    """An ending run's steps are the phase after its last one: its wake follows that phase's head (issue 23, item 4)."""
    run = schedule(db, clock.now(), document([[step("core.announce", message="over")]],
                                             ending=[step("core.wait", seconds=5), step("core.announce", message="bye")]))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.ENDING
    bye = _steps(db, run.id)[-1]
    assert run_row(db, run.id).wake_at == bye.due_at == clock.now() + timedelta(seconds=5)
    assert tick(runner).runs_seen == 0  # not read again before the wait ends
    clock.set(bye.due_at)
    assert tick(runner).dispatched == 1
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_skipping_the_step_a_wait_holds_wakes_the_run_now_not_when_the_wait_ends(db, clock, runner):
    """A person's skip of a held step makes the run's work due at once (issue 23, item 5)."""
    run = schedule(db, clock.now(), document([[step("core.wait", seconds=3600), step("core.announce", message="held"),
                                               step("core.announce", message="next")]]))
    tick(runner)
    held = _steps(db, run.id)[1]
    assert run_row(db, run.id).wake_at == held.due_at == clock.now() + timedelta(seconds=3600)
    clock.advance(30)
    commands.skip(db, run.id, held.id, actor="alice", now=clock.now())
    assert run_row(db, run.id).wake_at == clock.now()
    assert tick(runner).dispatched == 1
    assert runner.actions.announce_channel.posts == ["next"]
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_runs_sharing_a_wake_time_across_a_batch_boundary_are_all_read_in_one_tick(db, clock, runner):
    """The due-runs read pages by (wake_at, id): a tie at the page boundary is not skipped (issue 23, item 6)."""
    runner.batch_size = 2
    due = [schedule(db, clock.now(), LONG_WAIT) for _ in range(5)]
    assert len({run_row(db, r.id).wake_at for r in due}) == 1
    report = tick(runner)
    assert (report.runs_seen, report.runs_advanced, report.started) == (5, 5, 5)
    assert {run_row(db, r.id).status for r in due} == {RunStatus.RUNNING}


def test_a_run_left_in_starting_wakes_now_and_the_next_tick_starts_it(db, clock, runner):
    """A run an older engine left in starting (a start now goes through it within one statement) is due at once."""
    run = make_run(db, clock.now(), doc=document([[step("core.announce", message="hi")]]), status=RunStatus.STARTING)
    clock.advance(60)
    assert db.autocommit(lambda tx: runs.take_lease(tx, run.id, "w", clock.now(), 30))
    assert db.autocommit(lambda tx: runs.release_lease(tx, run.id, "w", clock.now()))
    assert run_row(db, run.id).wake_at == clock.now()
    assert tick(runner).dispatched == 1
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_a_scheduled_run_a_worker_hands_back_early_still_starts_when_it_falls_due(db, clock, runner):
    run = schedule(db, clock.now(), CUE, scheduled_for=clock.now() + timedelta(minutes=5))
    assert db.autocommit(lambda tx: runs.take_lease(tx, run.id, "w", clock.now(), 30))
    assert db.autocommit(lambda tx: runs.release_lease(tx, run.id, "w", clock.now()))
    assert run_row(db, run.id).wake_at == run.scheduled_for
    clock.set(run.scheduled_for)
    assert tick(runner).started == 1
