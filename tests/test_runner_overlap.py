"""What overlaps (issue 41 item 4): a recurring definition's next occurrence falls due while its earlier run is
still live (parked at a cue), under each `overlap` policy, planned and ticked on the ManualClock; each decision
a `run.overlap` row."""

from datetime import timedelta

import pytest

from chalicelib.events import commands
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.store import runs, wake
from devtools.kit.game_bridge import Answer
from tests.support.factory import document, make_definition, run_row
from tests.support.runner_kit import log_of, make_runner, step, tick
from tests.support.together import at_once

CUE = step("core.cue", instruction="Light the bonfire")


def _recurring(db, clock, overlap=None, **extra):
    schedule = {"cron": "*/5 * * * *", **({"overlap": overlap} if overlap else {})}
    return make_definition(db, clock.now() - timedelta(minutes=1), document([[CUE]], schedule=schedule, **extra))


def _runs(db, definition):
    rows = db.autocommit(lambda tx: tx.all("SELECT id FROM event_runs WHERE definition_id = %s ORDER BY scheduled_for",
                                           (definition.id,)))
    return [run_row(db, row["id"]) for row in rows]


def _overlap_rows(db, run_id):
    return [entry.detail for entry in log_of(db, run_id) if entry.kind == "run.overlap"]


def _first_live_then_the_next_due(db, clock, runner, definition):
    """The 20:00 run started and parked at its cue; the clock at 20:05, the next occurrence due, ticked."""
    tick(runner)
    first = _runs(db, definition)[0]
    assert run_row(db, first.id).status is RunStatus.RUNNING
    clock.advance(300)
    tick(runner)
    return first, _runs(db, definition)[1]


def _confirm_the_cue(db, clock, run_id):
    [cue] = db.autocommit(lambda tx: tx.all("SELECT id FROM event_run_steps WHERE run_id = %s", (run_id,)))
    commands.confirm(db, run_id, cue["id"], actor="gm", now=clock.now())


def test_allow_starts_the_next_occurrence_beside_the_live_one_and_logs_nothing(db, clock, runner):
    definition = _recurring(db, clock)
    first, second = _first_live_then_the_next_due(db, clock, runner, definition)
    assert run_row(db, first.id).status is RunStatus.RUNNING and run_row(db, second.id).status is RunStatus.RUNNING
    assert _overlap_rows(db, second.id) == []


def test_skip_misses_the_next_occurrence_saying_why_and_the_live_run_goes_on(db, clock, runner):
    definition = _recurring(db, clock, "skip")
    first, second = _first_live_then_the_next_due(db, clock, runner, definition)
    skipped = run_row(db, second.id)
    why = f"skipped: run {first.id} of this definition is under way (overlap: skip)"
    assert skipped.status is RunStatus.MISSED and skipped.last_error == why
    assert _overlap_rows(db, second.id) == [{"policy": "skip", "decided": "skipped", "earlier": [first.id], "cause": why}]
    assert [e.detail["to"] for e in log_of(db, second.id) if e.kind == "run.status"] == ["scheduled", "missed"]
    assert run_row(db, first.id).status is RunStatus.RUNNING


@pytest.mark.parametrize("cleanup_on, cleaned", [(None, False), (["complete"], True)])
def test_cancel_previous_cancels_the_live_run_as_a_cancel_would_then_starts_the_next(db, clock, runner, cleanup_on, cleaned):
    definition = _recurring(db, clock, "cancel_previous", **({"cleanup_on": cleanup_on} if cleanup_on else {}))
    first, second = _first_live_then_the_next_due(db, clock, runner, definition)
    assert run_row(db, first.id).status is RunStatus.CANCELLED and run_row(db, second.id).status is RunStatus.RUNNING
    cancelled = [e for e in log_of(db, first.id) if e.kind == "run.status" and e.detail.get("control") == "cancel"]
    assert len(cancelled) == 1 and cancelled[0].actor == "runner"
    assert cancelled[0].detail["reason"] == f"overlap: cancel_previous, run {second.id} is due"
    assert cancelled[0].detail.get("cleanup", False) is cleaned  # nothing live to revert: cancelled at once all the same
    [decided] = _overlap_rows(db, second.id)
    assert decided["decided"] == "cancelled_previous" and decided["earlier"] == [first.id]


def test_queue_one_waits_behind_the_live_run_skips_a_second_and_starts_once_it_is_over_however_late(db, clock, runner):
    definition = _recurring(db, clock, "queue_one")
    first, second = _first_live_then_the_next_due(db, clock, runner, definition)
    assert run_row(db, second.id).status is RunStatus.SCHEDULED
    assert _overlap_rows(db, second.id) == [{"policy": "queue_one", "decided": "queued", "earlier": [first.id],
                                            "cause": f"run {first.id} of this definition is under way: it starts once it is over"}]

    clock.advance(300)  # 20:10: the third occurrence finds one waiting already
    tick(runner)
    third = _runs(db, definition)[2]
    assert run_row(db, third.id).status is RunStatus.MISSED
    assert _overlap_rows(db, third.id)[0]["decided"] == "skipped"
    assert run_row(db, second.id).status is RunStatus.SCHEDULED and len(_overlap_rows(db, second.id)) == 1

    clock.advance(600)  # 20:20: the queued 20:05 run is far past its grace window (300 s)
    tick(runner)
    _confirm_the_cue(db, clock, first.id)
    tick(runner)
    assert run_row(db, first.id).status is RunStatus.COMPLETED
    clock.advance(wake.QUEUE_POLL_SECONDS)
    tick(runner)
    started = run_row(db, second.id)
    assert started.status is RunStatus.RUNNING
    assert _overlap_rows(db, second.id)[-1] == {
        "policy": "queue_one", "decided": "started", "earlier": [first.id],
        "cause": f"run {first.id} is over: it starts, {int((clock.now() - started.scheduled_for).total_seconds())} s after its time"}


def test_queue_one_a_run_due_while_another_waits_is_skipped_though_the_run_under_way_just_ended(db, clock, runner):
    """The run under way ends just before the next occurrence falls due, and the waiting run's next look (every
    QUEUE_POLL_SECONDS) comes after it: the occurrence due is still one falling due while another waits, so it is
    skipped and the waiting one starts (it started, and the waiting one waited behind it, an hour on a real
    schedule)."""
    definition = _recurring(db, clock, "queue_one")
    first, second = _first_live_then_the_next_due(db, clock, runner, definition)  # 20:05: second waits
    clock.advance(299)  # 20:09:59
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET wake_at = %s WHERE id = %s",
                                        (clock.now() + timedelta(seconds=3), second.id)))  # its next look: 20:10:02
    _confirm_the_cue(db, clock, first.id)
    tick(runner)
    assert run_row(db, first.id).status is RunStatus.COMPLETED and run_row(db, second.id).status is RunStatus.SCHEDULED
    clock.advance(1)  # 20:10: the third occurrence falls due, before the waiting run's look
    tick(runner)
    third = _runs(db, definition)[2]
    skipped = run_row(db, third.id)
    assert skipped.status is RunStatus.MISSED, skipped
    assert skipped.last_error == f"skipped: run {second.id} of this definition waits its turn already (overlap: queue_one)"
    clock.advance(wake.QUEUE_POLL_SECONDS)
    tick(runner)
    assert run_row(db, second.id).status is RunStatus.RUNNING


def test_a_queued_run_that_loses_the_start_is_never_missed(db, clock, runner):
    """However late it is, a queued run stays waiting when its start is refused (another run started first)."""
    definition = _recurring(db, clock, "queue_one")
    _, second = _first_live_then_the_next_due(db, clock, runner, definition)
    clock.advance(900)  # far past the waiting run's grace window
    assert not db.transaction(lambda tx: runs.miss_after_grace(tx, second.id, clock.now()))
    assert run_row(db, second.id).status is RunStatus.SCHEDULED


def test_cancel_previous_of_a_run_that_cleans_up_starts_the_next_in_the_same_walk(db, clock, runner, game_bridge):
    """The run it cancels cleans up (its scarecrow to despawn), so it is still under way: the start's guard against
    two runs starting together must not count it."""
    revert = {"action": "world.despawn", "params": {"id": "scarecrow"}}
    game_bridge.script("world.spawn", Answer(200, {"outcome": "done", "resources": [
        {"kind": "npc", "id": "scarecrow", "revert": revert}]}))
    doc = document([[step("world.spawn"), CUE]], schedule={"cron": "*/5 * * * *", "overlap": "cancel_previous"},
                   cleanup_on=["complete"])
    definition = make_definition(db, clock.now() - timedelta(minutes=1), doc)
    first, second = _first_live_then_the_next_due(db, clock, runner, definition)
    assert run_row(db, first.id).status is RunStatus.CLEANING_UP
    assert run_row(db, second.id).status is RunStatus.RUNNING
    [decided] = _overlap_rows(db, second.id)
    assert decided["decided"] == "cancelled_previous" and decided["earlier"] == [first.id]


@pytest.mark.parametrize("overlap", ["skip", "cancel_previous"])
def test_a_postpone_made_as_the_tick_walks_to_the_run_moves_it_and_decides_no_overlap(db, db_params, clock, runner,
                                                                                        monkeypatch, overlap):
    """The tick read the run due, then a person postponed it before its worker took its lease: the start decided
    from the tick's read, so `skip` missed the run the person had just been told was postponed, and
    `cancel_previous` cancelled the live run for a start that then did not come."""
    from chalicelib.db import Database
    from chalicelib.events.runner.lease import RunLease

    definition = _recurring(db, clock, overlap)
    tick(runner)
    first, second = _runs(db, definition)[:2]
    assert run_row(db, first.id).status is RunStatus.RUNNING
    clock.advance(300)  # the second is due
    later, moved, person = clock.now() + timedelta(hours=2), [], Database(db_params)
    real_take = RunLease.take

    def postponed_first(lease, tx):
        if lease.run_id == second.id and not moved:
            moved.append(commands.postpone(person, second.id, later, actor="mod-mia", now=clock.now()))
        return real_take(lease, tx)

    monkeypatch.setattr(RunLease, "take", postponed_first)
    try:
        tick(runner)
    finally:
        person.close()
    assert moved, "the tick walked to the second run"
    postponed = run_row(db, second.id)
    assert (postponed.status, postponed.scheduled_for) == (RunStatus.SCHEDULED, later)
    assert run_row(db, first.id).status is RunStatus.RUNNING and _overlap_rows(db, second.id) == []


def test_a_queued_run_postponed_decides_again_at_its_new_time_and_frees_the_queue_for_the_next(db, clock, runner):
    """Postponed, it stayed queued behind the run under way: each later occurrence was missed ("another occurrence
    already waits behind it") though nothing waited, and at its new time it started however late."""
    definition = _recurring(db, clock, "queue_one")
    first, second = _first_live_then_the_next_due(db, clock, runner, definition)
    assert [row["decided"] for row in _overlap_rows(db, second.id)] == ["queued"]
    commands.postpone(db, second.id, clock.now() + timedelta(hours=2), actor="mod-mia", now=clock.now())
    clock.advance(300)  # 20:10: the third occurrence falls due while the first is still under way
    tick(runner)
    [third] = [run for run in _runs(db, definition) if run.scheduled_for == first.scheduled_for + timedelta(minutes=10)]
    assert run_row(db, third.id).status is RunStatus.SCHEDULED
    assert [row["decided"] for row in _overlap_rows(db, third.id)] == ["queued"]  # the queue's one place is its own
    assert run_row(db, second.id).status is RunStatus.SCHEDULED


@pytest.mark.parametrize("control", ["cancel", "pause"])
def test_cancel_previous_and_a_persons_cancel_or_pause_of_the_earlier_run_at_once_change_it_once_each(
        db, db_params, clock, runner, control):
    """A tick starts the next occurrence under cancel_previous while a moderator cancels (or pauses) the earlier run,
    together on connections of their own, five times: the earlier run is cancelled once, by whichever came first,
    with one row; a person who came second is told it is cancelled already, a tick that came second says in its
    overlap row that its cancel was refused (or, having seen it over, decides nothing); the next run starts."""
    doc = document([[CUE]], schedule={"cron": "0 3 1 1 *", "overlap": "cancel_previous"})
    for _ in range(5):
        definition = make_definition(db, clock.now() - timedelta(hours=1), doc)
        occurrence = {"definition_id": definition.id, "definition_version": definition.current_version,
                      "grace_seconds": 3600, "now": clock.now()}
        earlier = db.transaction(lambda tx, o=occurrence: runs.insert_occurrence(
            tx, scheduled_for=clock.now() - timedelta(minutes=10), **o))[0]
        tick(runner)  # the earlier run starts and parks at its cue
        due = db.transaction(lambda tx, o=occurrence: runs.insert_occurrence(tx, scheduled_for=clock.now(), **o))[0]
        pressed, _ = at_once(db_params, lambda own, r=earlier.id: getattr(commands, control)(
            own, r, actor="mod-mia", now=clock.now(), reason="storm"), _ticking(clock))
        assert run_row(db, due.id).status is RunStatus.RUNNING
        assert run_row(db, earlier.id).status is RunStatus.CANCELLED
        changes = [(e.actor, e.detail["control"], e.detail["to"]) for e in log_of(db, earlier.id)
                   if e.kind == "run.status" and e.detail.get("control")]
        decided = _overlap_rows(db, due.id)
        if isinstance(pressed, Exception):  # the tick came first
            assert str(pressed) == {"cancel": "this run is already cancelled", "pause": (
                "this run is cancelled; only a starting, running or cleaning-up run can be paused")}[control]
            assert changes == [("runner", "cancel", "cancelled")]
            assert [d["decided"] for d in decided] == ["cancelled_previous"] and "not cancelled" not in decided[0]["cause"]
        elif control == "pause":  # the person came first: the tick cancels a paused run as a person would
            assert changes == [("mod-mia", "pause", "paused"), ("runner", "cancel", "cancelled")]
        else:
            assert changes == [("mod-mia", "cancel", "cancelled")]
            refused = f"run {earlier.id} was not cancelled: this run is already cancelled"
            assert decided == [] or [d["cause"].endswith(refused) for d in decided] == [True], decided


def _ticking(clock):
    """A tick on a connection of its own."""

    def ticked(own):
        ticker = make_runner(own, clock, None, concurrency=1)
        try:
            return tick(ticker)
        finally:
            ticker.close()

    return ticked
