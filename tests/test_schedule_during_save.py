"""A run scheduled by hand while a new version is saved: it read the current version without a lock and inserted
its run on it after the save had committed and answered. The run played version 1; the save said nothing of it
("runs scheduled from now on play version 2"). Now the scheduling holds the definition's row, so the save waits
for it and names the run it kept, or the run is made from the version saved."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from chalicelib.db import Database
from chalicelib.events import authoring, occurrences
from tests.support.factory import document, make_definition, run_row

_WAIT_SECONDS = 30  # the bound on waiting for the save to show itself waiting or done: a hang fails, never passes


def _said(name: str, message: str) -> dict:
    return document([[{"action": "core.announce", "params": {"message": message}}]], name=name)


LOCK_WAIT_TIMEOUT = 1205  # MySQL's error: a statement waited its innodb_lock_wait_timeout for a row lock


def test_a_save_during_a_by_hand_scheduling_names_the_run_it_keeps_or_the_run_plays_the_saved_version(
        db, db_params, clock, monkeypatch):
    definition = make_definition(db, clock.now(), _said("Lantern walk", "Old words"))
    admin, saved, read = Database(db_params), [], threading.Event()
    real_insert = occurrences.runs.insert_occurrence

    def save() -> None:
        read.wait(_WAIT_SECONDS)
        # Its statement waits a second at most for a lock, then is re-run whole (counted in admin.retries): a wait the
        # test can see, where InnoDB's own tables do not list a transaction sent in front of its first statement.
        admin.autocommit(lambda tx: tx.execute("SET SESSION innodb_lock_wait_timeout = 1"))
        try:
            saved.append(authoring.add_version(admin, definition.id, _said(definition.name, "New words"),
                                               actor="admin-ada", now=clock.now()))
        except Exception as error:  # said by the assertion below, not lost in its thread
            saved.append(error)

    def inserted_once_the_save_has_begun(tx, **fields):
        read.set()  # the scheduling has read the version it plays
        ends_at = time.monotonic() + _WAIT_SECONDS
        while not saved and not admin.retries[LOCK_WAIT_TIMEOUT]:  # the save committed, or it waited for this one
            assert time.monotonic() < ends_at, "the save neither waited nor finished"
            time.sleep(0.01)
        return real_insert(tx, **fields)

    monkeypatch.setattr(occurrences.runs, "insert_occurrence", inserted_once_the_save_has_begun)
    saving = threading.Thread(target=save)
    saving.start()
    try:
        run, _ = occurrences.schedule_run(db, definition.id, clock.now() + timedelta(hours=2), actor="mod-mia",
                                          now=clock.now())
        saving.join(_WAIT_SECONDS)
    finally:
        admin.close()
    [answer] = saved
    assert isinstance(answer, authoring.Saved), answer
    kept = [w["message"] for w in answer.warnings if w["code"] == "runs_keep_their_version"]
    played = run_row(db, run.id).definition_version
    assert (played == 2) or (played == 1 and kept and f"run {run.id} at" in kept[0]), (played, answer.warnings)
