"""Purging old history (`python -m chalicelib purge`, `make purge`): every row of the runs that finished before the
cut goes, whole runs a transaction at a time; a run still live, one that finished after the cut, one whose
cleanup is under way and one that left something a cleanup may still revert all stay, as does every other run's
row."""

import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest

from chalicelib.db import Database
from chalicelib.events import purge as purging
from chalicelib.events.chat.settle import EDIT_PATIENCE
from chalicelib.events.errors import Invalid
from chalicelib.events.lifecycle import LateCleanup, RunStatus
from chalicelib.events.store import history
from devtools.kit.game_bridge import Answer
from tests.support.api import GM
from tests.support.factory import document, run_row
from tests.support.runner_kit import schedule, step, tick

DAY = 86400


def thing(name: str, *, revert: bool) -> dict:
    made = {"kind": "npc", "id": name}
    return {**made, "revert": {"action": "world.undo", "params": {"what": name}}} if revert else made


def finished_run(db, clock, runner, game_bridge, *, revert: bool = False):
    """A run that spawned a thing (a revert declared or not), completed, and has a row in every table of a run."""
    game_bridge.script("world.spawn", Answer(200, {"outcome": "done", "resources": [thing("scarecrow", revert=revert)]}))
    run = schedule(db, clock.now(), document([[step("world.spawn")]]))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    step_id = db.autocommit(lambda tx: tx.scalar("SELECT MIN(id) FROM event_run_steps WHERE run_id = %s", (run.id,)))

    def rows_the_run_had_on_the_way(tx):  # a signal, an escalation and a chat message, as live runs leave them
        tx.execute("INSERT INTO event_run_signals (run_id, name, received_at, received_by, effect) VALUES"
                   " (%s, 'boss_down', %s, 'game', 'phase_over')", (run.id, clock.now()))
        tx.execute("INSERT INTO event_run_escalations (run_id, since, n, waiting_for) VALUES (%s, %s, 1, 'resume')",
                   (run.id, clock.now()))
        tx.execute("INSERT INTO event_chat_messages (run_id, step_id, platform, channel_id, message_id, posted_at)"
                   " VALUES (%s, %s, 'discord', '1', %s, %s)", (run.id, step_id, str(run.id), clock.now()))
    db.transaction(rows_the_run_had_on_the_way)
    return run


def rows_of(db, run_id) -> dict[str, int]:
    return {table: db.autocommit(lambda tx, t=table: tx.scalar(f"SELECT COUNT(*) FROM {t} WHERE run_id = %s", (run_id,)))
            for table in history.RUN_TABLES}


def test_the_cut_comes_after_every_chat_edit_s_last_try():
    assert purging.MIN_AGE > EDIT_PATIENCE


def test_runs_finished_before_the_cut_go_whole_and_every_other_run_stays(api, db, clock, runner, game_bridge):
    old = finished_run(db, clock, runner, game_bridge)
    holds_a_revert = finished_run(db, clock, runner, game_bridge, revert=True)
    clock.advance(20 * DAY)
    recent = finished_run(db, clock, runner, game_bridge)
    later = schedule(db, clock.now(), document([[step("world.spawn")]]), scheduled_for=clock.now() + timedelta(days=3))
    kept = {run.id: rows_of(db, run.id) for run in (holds_a_revert, recent, later)}
    old_rows = rows_of(db, old.id)
    assert all(old_rows.values()), "the old run has rows in every table a run has"

    report = purging.purge(db, clock.now() - timedelta(days=10), clock.now())

    assert (report.purged.runs, report.more) == (1, False)
    assert report.purged.rows == old_rows
    assert rows_of(db, old.id) == dict.fromkeys(history.RUN_TABLES, 0)
    assert api.get(f"/runs/{old.id}", auth=GM).status == 404
    assert {run_id: rows_of(db, run_id) for run_id in kept} == kept
    for run in (holds_a_revert, recent, later):
        assert api.get(f"/runs/{run.id}", auth=GM).status == 200


def test_a_purge_counts_every_row_it_deleted_and_a_dry_run_counts_the_same_deleting_nothing(db, clock, runner, game_bridge):
    runs = [finished_run(db, clock, runner, game_bridge) for _ in range(3)]
    before = {run.id: rows_of(db, run.id) for run in runs}
    clock.advance(30 * DAY)
    cut = clock.now() - timedelta(days=7)

    dry = purging.purge(db, cut, clock.now(), dry_run=True)
    assert {run.id: rows_of(db, run.id) for run in runs} == before, "a dry run deletes nothing"
    done = purging.purge(db, cut, clock.now())

    expected = {table: sum(rows[table] for rows in before.values()) for table in history.RUN_TABLES}
    assert (dry.purged.runs, dry.purged.rows, dry.dry_run) == (3, expected, True)
    assert (done.purged.runs, done.purged.rows, done.dry_run) == (3, expected, False)
    assert done.summary() == {"ended_before": cut.isoformat(), "dry_run": False, "runs": 3, "rows": expected, "more": False}


def test_a_cut_too_recent_is_refused_naming_the_latest_allowed_and_nothing_goes(db, clock, runner, game_bridge):
    run = finished_run(db, clock, runner, game_bridge)
    clock.advance(6 * DAY)
    with pytest.raises(Invalid, match=r"at least 7 days ago, so the latest cut allowed now is "):
        purging.purge(db, clock.now() - timedelta(days=6), clock.now())
    assert all(rows_of(db, run.id).values())


def test_a_purge_stopped_between_batches_leaves_whole_runs_and_goes_on_when_run_again(db, clock, runner, game_bridge,
                                                                                        monkeypatch):
    runs = [finished_run(db, clock, runner, game_bridge) for _ in range(5)]
    clock.advance(30 * DAY)
    monkeypatch.setattr(purging, "MOST_RUNS", 2)
    heard = []

    first = purging.purge(db, clock.now() - timedelta(days=7), clock.now(), keep_going=lambda: False,
                          progress=lambda so_far: heard.append(so_far.runs))
    assert (first.purged.runs, first.more, heard) == (2, True, [2])
    left = [run.id for run in runs if any(rows_of(db, run.id).values())]
    assert [run.id for run in runs[2:]] == left, "the oldest went first, each whole"
    assert all(all(rows_of(db, run_id).values()) for run_id in left)

    rest = purging.purge(db, clock.now() - timedelta(days=7), clock.now(), progress=lambda so_far: heard.append(so_far.runs))
    assert (rest.purged.runs, rest.more, heard) == (3, False, [2, 2, 3])
    assert not any(any(rows_of(db, run.id).values()) for run in runs)


def test_a_batch_holds_as_many_runs_as_its_steps_allow_and_at_least_one(db, clock, runner, game_bridge):
    runs = [finished_run(db, clock, runner, game_bridge) for _ in range(3)]
    clock.advance(30 * DAY)
    batch = db.transaction(lambda tx: history.purge_batch(tx, clock.now() - timedelta(days=7), 100, 2))
    assert batch.runs == 2, "two runs of one step each fit two steps"
    one = db.transaction(lambda tx: history.purge_batch(tx, clock.now() - timedelta(days=7), 100, 0))
    assert one.runs == 1, "a run bigger than the batch still goes, alone"
    assert not any(any(rows_of(db, run.id).values()) for run in runs)


@pytest.mark.realtime  # a real race: the person's transaction holds the run while the purge reads it
def test_a_cleanup_a_person_starts_while_the_purge_waits_for_the_run_keeps_the_run(db, db_params, clock, runner,
                                                                                   game_bridge):
    """The purge locks its runs with the guard in the WHERE: a person's Clean up that took the run first holds
    it, and once it commits the purge reads the run as it now stands and leaves it."""
    run = finished_run(db, clock, runner, game_bridge)
    clock.advance(30 * DAY)
    person, watcher = Database(db_params), Database(db_params)
    held, release = threading.Event(), threading.Event()

    def clean_up_holding_the_run(tx):
        tx.execute("UPDATE event_runs SET late_cleanup = 'started', late_cleanup_at = %s WHERE id = %s",
                   (clock.now(), run.id))
        held.set()
        release.wait(60)

    person_thread = threading.Thread(target=lambda: person.transaction(clean_up_holding_the_run))
    person_thread.start()
    assert held.wait(30)
    outcome = {}
    purge_thread = threading.Thread(target=lambda: outcome.setdefault(
        "report", purging.purge(db, clock.now() - timedelta(days=7), clock.now())))
    purge_thread.start()
    # the purge's locking read is in the server while the person holds the run: it cannot finish before the release
    reached = watcher.autocommit(lambda tx: _statement_seen(tx, "%FOR UPDATE%", 30))
    release.set()
    person_thread.join(30)
    purge_thread.join(30)
    person.close()
    watcher.close()
    assert reached, "the purge reached the run while the person held it"
    assert outcome["report"].purged.runs == 0
    assert all(rows_of(db, run.id).values())
    assert run_row(db, run.id).late_cleanup is LateCleanup.STARTED


def _statement_seen(tx, pattern: str, seconds: float) -> bool:
    """Whether a statement of this database matching `pattern` is being run, looked at until `seconds` pass."""
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        if tx.scalar("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE %s"
                     " AND INFO NOT LIKE '%%PROCESSLIST%%'", (pattern,)):
            return True
        time.sleep(0.02)
    return False


@pytest.mark.realtime  # a fresh interpreter per command
def test_the_command_prints_its_progress_and_summary_and_refuses_a_bad_date(db, db_params, clock, runner, game_bridge):
    clock_now = db.autocommit(lambda tx: tx.scalar("SELECT UTC_TIMESTAMP(6)"))  # the command's clock: the database's
    clock.set(clock_now - timedelta(days=30))
    finished_run(db, clock, runner, game_bridge)
    env = {"EVENTS_DB_URL": db_params.url(), "PATH": "/usr/bin:/bin"}

    def purge(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "chalicelib", "purge", *args],
                              capture_output=True, text=True, env=env, timeout=60, check=False)

    whole = purge("--ended-before", (clock_now - timedelta(days=8)).isoformat())
    assert whole.returncode == 0, whole.stderr
    assert whole.stdout.count("\n") == 1 and '"runs": 1' in whole.stdout and '"more": false' in whole.stdout
    assert "purged 1 run(s) so far: " in whole.stderr and "event_run_log" in whole.stderr
    dry = purge("--ended-before", "2000-01-01", "--dry-run")
    assert dry.returncode == 0 and '"runs": 0' in dry.stdout and '"dry_run": true' in dry.stdout
    recent = purge("--ended-before", clock_now.date().isoformat())
    assert recent.returncode == 2 and recent.stderr.startswith("refused: the cut ")
    bad = purge("--ended-before", "last tuesday")
    assert bad.returncode == 2 and "not a date (YYYY-MM-DD) or an ISO date and time: 'last tuesday'" in bad.stderr
