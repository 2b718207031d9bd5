"""event_runs: scheduling, guarded transitions, the run lease, find_due, listing."""

from datetime import timedelta

import pytest

from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.model import Health
from chalicelib.events.store import runs
from tests.support.factory import make_definition, make_run, run_row


def _transition(db, run_id, sources, to, now, **kw):
    return db.transaction(lambda tx: runs.transition(tx, run_id, sources, to, now, **kw))


def test_the_same_occurrence_scheduled_twice_is_one_run(db, clock):
    d = make_definition(db, clock.now())
    kw = dict(definition_id=d.id, definition_version=1, scheduled_for=clock.now(), grace_seconds=300, now=clock.now())
    first, created = db.transaction(lambda tx: runs.insert_occurrence(tx, **kw))
    again, created_again = db.transaction(lambda tx: runs.insert_occurrence(tx, **kw))
    assert (created, created_again) == (True, False)
    assert first.id == again.id and first.status is RunStatus.SCHEDULED


def test_transition_moves_only_from_the_named_statuses(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.PAUSED, current_phase=1)
    assert not _transition(db, run.id, [RunStatus.STARTING, RunStatus.RUNNING], RunStatus.PAUSED, clock.now())
    assert run_row(db, run.id) == run
    assert _transition(db, run.id, [RunStatus.PAUSED], RunStatus.RUNNING, clock.advance(1), last_error=None)
    assert run_row(db, run.id).status is RunStatus.RUNNING


def test_current_phase_is_written_only_into_running(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.STARTING)
    with pytest.raises(ValueError):
        _transition(db, run.id, [RunStatus.STARTING], RunStatus.PAUSED, clock.now(), current_phase=1)
    assert run_row(db, run.id).status is RunStatus.STARTING
    assert _transition(db, run.id, [RunStatus.STARTING], RunStatus.RUNNING, clock.now(), current_phase=1)
    assert run_row(db, run.id).current_phase == 1


@pytest.mark.parametrize(
    "kw",
    [dict(sources=[], to="paused"), dict(sources=["running"], to="exploded"), dict(sources=["bogus"], to="paused"),
     dict(sources=["starting"], to="running", current_phase=0)],
)
def test_bad_transitions_raise_and_write_nothing(db, clock, kw):
    run = make_run(db, clock.now(), status=RunStatus.STARTING)
    extra = {k: v for k, v in kw.items() if k not in ("sources", "to")}
    with pytest.raises(ValueError):
        _transition(db, run.id, kw["sources"], kw["to"], clock.now(), **extra)
    assert run_row(db, run.id) == run


def test_a_terminal_transition_stamps_finished_at_and_drops_the_claim(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    assert db.autocommit(lambda tx: runs.take_lease(tx, run.id, "worker-1", clock.now(), 60))
    _transition(db, run.id, [RunStatus.RUNNING], RunStatus.CANCELLED, clock.advance(2), last_error="cancelled by staff")
    after = run_row(db, run.id)
    assert (after.status, after.finished_at, after.claimed_by, after.last_error) == (
        RunStatus.CANCELLED, clock.now(), None, "cancelled by staff")


def test_health_once_degraded_stays_degraded(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    _transition(db, run.id, [RunStatus.RUNNING], RunStatus.PAUSED, clock.now(), degrade=True, last_error="503")
    _transition(db, run.id, [RunStatus.PAUSED], RunStatus.RUNNING, clock.now(), last_error=None)
    after = run_row(db, run.id)
    assert (after.health, after.last_error) == (Health.DEGRADED, None)


def test_run_claim_is_a_compare_and_set_on_a_free_or_expired_lease(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)

    def claim(token):
        return db.autocommit(lambda tx: runs.take_lease(tx, run.id, token, clock.now(), 30))

    assert claim("a")
    assert not claim("b")
    assert not db.autocommit(lambda tx: runs.release_lease(tx, run.id, "b", clock.now()))
    clock.advance(31)
    assert claim("b")
    assert not db.autocommit(lambda tx: runs.release_lease(tx, run.id, "a", clock.now()))
    assert db.autocommit(lambda tx: runs.release_lease(tx, run.id, "b", clock.now()))
    assert claim("c")


def test_a_paused_or_finished_run_cannot_be_claimed(db, clock):
    for status in (RunStatus.PAUSED, RunStatus.COMPLETED, RunStatus.CANCELLED):
        run = make_run(db, clock.now(), status=status, current_phase=1)
        assert not db.autocommit(lambda tx: runs.take_lease(tx, run.id, "a", clock.now(), 30))


def test_find_due_takes_due_and_in_flight_runs_not_held_by_a_live_lease(db, clock):
    now = clock.now()
    due = make_run(db, now, status=RunStatus.SCHEDULED, scheduled_for=now - timedelta(seconds=5))
    future = make_run(db, now, status=RunStatus.SCHEDULED, scheduled_for=now + timedelta(seconds=5))
    in_flight = [make_run(db, now, status=s, scheduled_for=now - timedelta(minutes=1), current_phase=1)
                 for s in (RunStatus.STARTING, RunStatus.RUNNING, RunStatus.ENDING)]
    parked_elsewhere = [make_run(db, now, status=s, scheduled_for=now - timedelta(minutes=1), current_phase=1)
                        for s in (RunStatus.PAUSED, RunStatus.COMPLETED, RunStatus.MISSED)]
    held = make_run(db, now, status=RunStatus.RUNNING, scheduled_for=now - timedelta(minutes=2), current_phase=1)
    db.autocommit(lambda tx: runs.take_lease(tx, held.id, "other", now, 30))
    found = {r.id for r in db.autocommit(lambda tx: runs.find_due(tx, now, 100))}
    assert found == {due.id, *(r.id for r in in_flight)}
    assert future.id not in found and not found & {r.id for r in parked_elsewhere}
    later = clock.advance(31)
    assert held.id in {r.id for r in db.autocommit(lambda tx: runs.find_due(tx, later, 100))}


def test_find_due_of_a_shard_takes_the_runs_whose_id_modulo_the_count_is_its_index(db, clock):
    now = clock.now()
    due = [make_run(db, now, status=RunStatus.SCHEDULED, scheduled_for=now - timedelta(seconds=i)) for i in range(6)]
    found = [{r.id for r in db.autocommit(lambda tx, i=i: runs.find_due(tx, now, 100, shard=(i, 3)))} for i in range(3)]
    assert [sorted(f) for f in found] == [sorted(r.id for r in due if r.id % 3 == i) for i in range(3)]
    assert set().union(*found) == {r.id for r in due} and all(found)  # every due run in exactly one shard
    assert {r.id for r in db.autocommit(lambda tx: runs.find_due(tx, now, 100))} == {r.id for r in due}


def test_list_page_is_newest_first_with_a_keyset_cursor_and_filters(db, clock):
    made = [make_run(db, clock.advance(1), status=RunStatus.COMPLETED if i % 2 else RunStatus.SCHEDULED) for i in range(5)]
    ids = [r.id for r in reversed(made)]
    page, cursor = db.autocommit(lambda tx: runs.list_page(tx, limit=2))
    assert [r.id for r in page] == ids[:2] and cursor == ids[1]
    page, cursor = db.autocommit(lambda tx: runs.list_page(tx, limit=2, before_id=cursor))
    assert [r.id for r in page] == ids[2:4]
    page, cursor = db.autocommit(lambda tx: runs.list_page(tx, limit=2, before_id=cursor))
    assert [r.id for r in page] == ids[4:] and cursor is None
    done, _ = db.autocommit(lambda tx: runs.list_page(tx, status=RunStatus.COMPLETED, limit=10))
    assert [r.id for r in done] == [r.id for r in reversed(made) if r.status is RunStatus.COMPLETED]
    one, _ = db.autocommit(lambda tx: runs.list_page(tx, definition_id=made[0].definition_id, limit=10))
    assert [r.id for r in one] == [made[0].id]
    with pytest.raises(ValueError):
        db.autocommit(lambda tx: runs.list_page(tx, limit=0))
