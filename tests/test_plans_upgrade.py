"""Upgrade a run: a scheduled run made from an earlier version of its definition plays the current one, the same
run at the same time, with a log row saying from which version to which and why; offered only where it would
take, and refused (409 in the rows' words, nothing changed) once the run started, once its time came, on a dry
run, on a run already current; a start never plays the programme of the version the tick read before an upgrade."""

import threading
from datetime import timedelta

import pymysql
import pytest

from chalicelib.db import Database
from chalicelib.events import commands
from chalicelib.events.commands import Upgrade
from chalicelib.events.commands.plans import VersionNumber
from chalicelib.events.errors import Conflict
from chalicelib.events.lifecycle import RehearsalBridge, RunStatus
from chalicelib.events.model import Rehearsal, Run, iso
from chalicelib.events.runner.lease import RunLease
from chalicelib.events.store import runs
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.factory import document, make_definition, make_run, run_row
from tests.support.interference import log_rows_refused
from tests.support.plans import saved_again
from tests.support.runner_kit import make_runner, schedule, tick
from tests.support.scenes import log_rows, snapshot


def _said(message: str) -> dict:
    return document([[{"action": "core.announce", "params": {"message": message}}]])


def _announced(db, run_id: int) -> list[str]:
    rows = db.autocommit(lambda tx: tx.all("SELECT params FROM event_run_steps WHERE run_id = %s ORDER BY id", (run_id,)))
    return [row["params"] for row in rows]


def test_a_scheduled_run_is_upgraded_to_the_current_version_and_starts_playing_it(api, db, clock):
    run = schedule(db, clock.now(), _said("Old words"), scheduled_for=clock.now() + timedelta(minutes=30))
    assert saved_again(db, clock.now(), run.definition_id, "New words", grace=900) == 2
    shown = api.get(f"/runs/{run.id}", auth=MODERATOR).body
    assert shown["current_version"] == 2 and "upgrade" in shown["controls"]["run"]
    answer = api.post(f"/runs/{run.id}/upgrade", {"reason": "the typo fixed"}, auth=MODERATOR)
    assert answer.status == 200, answer.body
    assert (answer.body["run"]["definition_version"], answer.body["run"]["scheduled_for"],
            answer.body["run"]["status"]) == (2, iso(run.scheduled_for), "scheduled")
    row = run_row(db, run.id)
    assert (row.grace_seconds, row.occurrence_key) == (900, run.occurrence_key)
    assert answer.headers["ETag"] != run.etag
    assert [(e["actor"], e["detail"]) for e in log_rows(db, run.id) if e["kind"] == "run.upgraded"] == [
        ("mod-mia", {"control": "upgrade", "from": 1, "to": 2, "reason": "the typo fixed"})]
    assert "upgrade" not in api.get(f"/runs/{run.id}", auth=MODERATOR).body["controls"]["run"]
    runner = make_runner(db, clock, None)
    try:
        clock.advance(30 * 60)
        tick(runner)
    finally:
        runner.close()
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert ["New words" in params for params in _announced(db, run.id)] == [True]


def test_a_run_already_on_the_current_version_is_not_offered_it_and_refused_409(api, db, clock):
    run = schedule(db, clock.now(), _said("Words"), scheduled_for=clock.now() + timedelta(minutes=30))
    shown = api.get(f"/runs/{run.id}", auth=MODERATOR).body
    assert shown["current_version"] == 1 and "upgrade" not in shown["controls"]["run"]
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/upgrade", {}, auth=MODERATOR)
    assert answer.status == 409
    assert answer.body["errors"] == ["this run already plays version 1, the definition's current version"]
    assert snapshot(db, run.id) == before


@pytest.mark.parametrize("status", [RunStatus.RUNNING, RunStatus.PAUSED, RunStatus.COMPLETED, RunStatus.MISSED])
def test_a_run_that_started_or_ended_is_not_upgraded_409_naming_its_status(api, db, clock, status):
    run = make_run(db, clock.now(), status=status, current_phase=1 if status in (RunStatus.RUNNING, RunStatus.PAUSED) else None)
    saved_again(db, clock.now(), run.definition_id, "New words")
    before = snapshot(db, run.id)
    shown = api.get(f"/runs/{run.id}", auth=MODERATOR).body
    assert shown["current_version"] is None and "upgrade" not in shown["controls"]["run"]
    answer = api.post(f"/runs/{run.id}/upgrade", {}, auth=MODERATOR)
    assert answer.status == 409
    assert answer.body["errors"] == [(f"this run is {status.value}; only a scheduled run can be upgraded (a started run"
                                      " plays the version it started with, version 1)")]
    assert snapshot(db, run.id) == before


def test_a_run_whose_time_has_come_is_not_upgraded_the_engine_starts_it_as_it_is(api, db, clock):
    run = schedule(db, clock.now(), _said("Old words"), scheduled_for=clock.now() - timedelta(seconds=30))
    saved_again(db, clock.now(), run.definition_id, "New words")
    assert "upgrade" not in api.get(f"/runs/{run.id}", auth=MODERATOR).body["controls"]["run"]
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/upgrade", {}, auth=MODERATOR)
    assert answer.status == 409
    assert answer.body["errors"] == [(f"this run's time has come ({iso(run.scheduled_for)}): the engine starts it as it"
                                      " is, on version 1")]
    assert snapshot(db, run.id) == before


def _dry_run(db, clock) -> Run:
    """A dry run not started yet, its time half an hour ahead (as a tick asleep might leave one)."""
    definition = make_definition(db, clock.now(), _said("Old words"))
    run = db.transaction(lambda tx: runs.insert_rehearsal(
        tx, definition_id=definition.id, definition_version=definition.current_version, grace_seconds=300,
        now=clock.now(), rehearsal=Rehearsal(60, RehearsalBridge.SIMULATE, 10, None)))
    ahead = clock.now() + timedelta(minutes=30)
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET scheduled_for = %s, wake_at = %s WHERE id = %s",
                                        (ahead, ahead, run.id)))
    return run


def test_a_dry_run_is_not_upgraded(api, db, clock):
    run = _dry_run(db, clock)
    saved_again(db, clock.now(), run.definition_id, "New words")
    shown = api.get(f"/runs/{run.id}", auth=MODERATOR).body
    assert shown["current_version"] is None and "upgrade" not in shown["controls"]["run"]
    answer = api.post(f"/runs/{run.id}/upgrade", {}, auth=MODERATOR)
    assert answer.status == 409
    assert answer.body["errors"] == ["this is a dry run; it plays the version it was started for, version 1"]
    assert run_row(db, run.id).definition_version == 1


def test_a_game_master_may_not_upgrade_and_is_not_offered_it(api, db, clock):
    run = schedule(db, clock.now(), _said("Old words"), scheduled_for=clock.now() + timedelta(minutes=30))
    saved_again(db, clock.now(), run.definition_id, "New words")
    assert "upgrade" not in api.get(f"/runs/{run.id}", auth=GM).body["controls"]["run"]
    assert api.post(f"/runs/{run.id}/upgrade", {}, auth=GM).status == 403
    assert run_row(db, run.id).definition_version == 1
    assert api.post(f"/runs/{run.id}/upgrade", {}, auth=ADMIN).status == 200


def test_an_upgrade_and_its_log_row_commit_together(db, clock):
    run = schedule(db, clock.now(), _said("Old words"), scheduled_for=clock.now() + timedelta(minutes=30))
    saved_again(db, clock.now(), run.definition_id, "New words")
    before = snapshot(db, run.id)
    with log_rows_refused(db, "NEW.kind = 'run.upgraded'"), pytest.raises(pymysql.err.OperationalError):
        commands.upgrade(db, run.id, actor="mod", now=clock.now())
    assert snapshot(db, run.id) == before


def test_an_upgrade_held_to_the_tag_seen_is_412_once_the_run_changed_naming_the_upgrade(api, db, clock):
    run = schedule(db, clock.now(), _said("Old words"), scheduled_for=clock.now() + timedelta(minutes=30))
    saved_again(db, clock.now(), run.definition_id, "New words")
    assert api.post(f"/runs/{run.id}/upgrade", {}, auth=MODERATOR, headers={"If-Match": run.etag}).status == 200
    saved_again(db, clock.now(), run.definition_id, "Newer words")
    again = api.post(f"/runs/{run.id}/upgrade", {}, auth=MODERATOR, headers={"If-Match": run.etag})
    assert again.status == 412
    assert f", upgraded to version 2 by mod-mia at {clock.now():%H:%M} UTC" in again.body["errors"][0]
    assert run_row(db, run.id).definition_version == 2


def test_the_statement_moves_a_run_only_to_the_current_version_from_an_earlier_one_before_its_time(db, clock):
    """Each clause of `runs.upgrade`'s WHERE, on its own: the store's compare-and-set, whoever calls it."""
    run = schedule(db, clock.now(), _said("Old words"), scheduled_for=clock.now() + timedelta(minutes=30))
    saved_again(db, clock.now(), run.definition_id, "Two")
    saved_again(db, clock.now(), run.definition_id, "Three")

    def upgrade(to, now=None):
        return db.autocommit(lambda tx: runs.upgrade(tx, run.id, to, 300, now or clock.now()))

    assert not upgrade(2)  # version 3 was saved since: 2 is no longer current
    assert not upgrade(3, now=run.scheduled_for)  # its time has come
    assert upgrade(3) and run_row(db, run.id).definition_version == 3
    db.autocommit(lambda tx: tx.execute("UPDATE event_definitions SET current_version = 2 WHERE id = %s",
                                        (run.definition_id,)))
    assert not upgrade(2)  # never back to an earlier version
    dry = _dry_run(db, clock)
    saved_again(db, clock.now(), dry.definition_id, "Two")
    assert not db.autocommit(lambda tx: runs.upgrade(tx, dry.id, 2, 300, clock.now()))
    missed = make_run(db, clock.now(), doc=_said("Old words"), status=RunStatus.MISSED,
                      scheduled_for=clock.now() + timedelta(minutes=30))
    saved_again(db, clock.now(), missed.definition_id, "Two")
    assert not db.autocommit(lambda tx: runs.upgrade(tx, missed.id, 2, 300, clock.now()))


@pytest.mark.parametrize("first", [_said("Old words"), {"name": "Broken walk", "phases": [{"name": "p", "steps": [{"params": {}}]}]}],
                         ids=["readable", "unreadable"])
def test_a_run_upgraded_after_the_tick_read_it_plays_its_new_version(db, db_params, clock, monkeypatch, first):
    """The tick read the run due on version 1 (and its programme, or that its document cannot be read); a person's
    upgrade, pressed a moment before the run's time, committed before the tick took its lease: the start played
    version 1 on a run that said version 2, and a run whose version 1 did not read was failed with its error."""
    run = schedule(db, clock.now(), first, scheduled_for=clock.now() + timedelta(minutes=1))
    saved_again(db, clock.now(), run.definition_id, "New words")
    person, upgraded = Database(db_params), []
    real_take = RunLease.take

    def upgraded_first(lease, tx):
        if lease.run_id == run.id and not upgraded:
            upgraded.append(commands.upgrade(person, run.id, actor="mod-mia", now=run.scheduled_for - timedelta(seconds=1)))
        return real_take(lease, tx)

    runner = make_runner(db, clock, None)
    monkeypatch.setattr(RunLease, "take", upgraded_first)
    try:
        clock.advance(60)
        tick(runner)
        tick(runner)
    finally:
        runner.close()
        person.close()
    assert upgraded, "the tick walked to the run"
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert ["New words" in params for params in _announced(db, run.id)] == [True]


def test_an_upgrade_names_the_version_its_presser_saw_and_one_saved_since_is_refused_not_played(api, db, clock):
    """The press named no version and a save changes no run's tag: a moderator who saw "version 2 is current"
    upgraded the run to version 3, saved meanwhile (a half-finished draft), with a 200."""
    run = schedule(db, clock.now(), _said("Old words"), scheduled_for=clock.now() + timedelta(minutes=30))
    saved_again(db, clock.now(), run.definition_id, "Two")
    seen = api.get(f"/runs/{run.id}", auth=MODERATOR)
    assert seen.body["current_version"] == 2
    saved_again(db, clock.now(), run.definition_id, "Three, half-finished")
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/upgrade", {"to": 2}, auth=MODERATOR, headers={"If-Match": seen.headers["ETag"]})
    assert answer.status == 409, answer.body
    assert answer.body["errors"] == [("version 3 was saved since you looked (you asked for version 2): look at it, then"
                                      " upgrade to it")]
    assert snapshot(db, run.id) == before
    assert api.post(f"/runs/{run.id}/upgrade", {"to": 4}, auth=MODERATOR).status == 400
    taken = api.post(f"/runs/{run.id}/upgrade", {"to": 3}, auth=MODERATOR)
    assert (taken.status, taken.body["run"]["definition_version"]) == (200, 3)


def test_an_upgrade_naming_a_version_and_a_save_of_the_next_at_once_never_play_the_unseen_one(db, db_params, clock):
    """Two connections released together, again and again: the press is refused or plays version 2, never 3."""
    for _ in range(5):
        run = schedule(db, clock.now(), _said("Old words"), scheduled_for=clock.now() + timedelta(minutes=30))
        saved_again(db, clock.now(), run.definition_id, "Two")
        start, outcomes = threading.Barrier(2), []
        person, admin = Database(db_params), Database(db_params)

        def press() -> None:
            start.wait()
            try:
                commands.execute(person, Upgrade(run.id, to=VersionNumber(2)), commands.Context("mod-mia", clock.now()))
                outcomes.append("upgraded")
            except Conflict:
                outcomes.append("refused")

        def save() -> None:
            start.wait()
            saved_again(admin, clock.now(), run.definition_id, "Three")

        threads = [threading.Thread(target=press), threading.Thread(target=save)]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            person.close()
            admin.close()
        played = run_row(db, run.id).definition_version
        assert (outcomes, played) in ((["upgraded"], 2), (["refused"], 1)), (outcomes, played)


def test_an_upgrade_in_a_transaction_that_read_before_a_save_plays_the_saved_version(db, db_params, clock):
    """A bulk press reads in one transaction, batch after batch: the current number was read as last committed but
    its version's row from the transaction's older snapshot, which did not have it: "upgrade did not take"."""
    run = schedule(db, clock.now(), _said("Old words"), scheduled_for=clock.now() + timedelta(minutes=30))
    saved_again(db, clock.now(), run.definition_id, "Two")
    admin = Database(db_params)

    def pressed(tx):
        tx.one("SELECT id FROM event_runs WHERE id = %s", (run.id,))  # the snapshot begins: version 2 is current
        saved_again(admin, clock.now(), run.definition_id, "Three")
        return commands.within(tx, Upgrade(run.id), commands.Context("mod-mia", clock.now()))

    try:
        upgraded = db.transaction(pressed)
    finally:
        admin.close()
    assert upgraded.definition_version == 3 == run_row(db, run.id).definition_version
