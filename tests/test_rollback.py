"""Rolled back past a migration, this release leaves a newer version's rows alone (issue 37, item 3).

The module's own database is migrated, then widened as a newer version's migration would widen it: a run
mode (`replay`), a run status (`handing_over`), a step status (`waiting`) and a park reason (`approval`) this
release does not know. Rows holding them stand beside a run of today's kind; this release's tick runs
against them with the live bridge a loopback server and every channel recorded: only today's run reaches
the bridge and the channels, and the newer rows are unchanged, byte for byte. The API reads and controls
them with a 409 that says why, never a 500, and changes nothing either.
"""

from __future__ import annotations

import os
import uuid
from datetime import timedelta

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.db import ConnectionParams, Database
from chalicelib.events.actions.perform import Actions
from chalicelib.events.adapters.bridge import BridgeClient
from chalicelib.events.adapters.rehearsal import rehearsal_actions
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import Run, Step, StepSpec
from chalicelib.events.runner import Runner
from chalicelib.events.store import runs, steps
from chalicelib.migrate import migrate
from devtools.kit.game_bridge import SECRET, GameBridge
from devtools.kit.mariadb import server_url
from tests.conftest import MIGRATED, Migrated
from tests.support.api import ADMIN, GM, MODERATOR, Api, hs_settings
from tests.support.factory import document, make_run, materialise, run_row
from tests.support.runner_kit import RULES, RecordingChannel, schedule, step, tick

SPAWN = step("world.spawn", mob="dragon")
ANNOUNCE = step("core.announce", message="The dragon is here")
CUE = step("core.cue", message="Light the beacon")
DOC = document([[SPAWN, ANNOUNCE]], name="Dragon night")
CUE_DOC = document([[CUE, SPAWN]], name="Beacon night")
# What a newer version's migrations would add to the words its CHECK constraints allow.
WIDENED = (
    """ALTER TABLE event_runs DROP CONSTRAINT event_runs_status_of_lifecycle,
         ADD CONSTRAINT event_runs_status_of_lifecycle CHECK (status IN ('scheduled','starting','running','paused',
             'ending','cleaning_up','completed','cancelled','failed','missed','handing_over'))""",
    """ALTER TABLE event_runs DROP CONSTRAINT event_runs_mode_known,
         ADD CONSTRAINT event_runs_mode_known CHECK (mode IN ('live', 'rehearsal', 'replay'))""",
    """ALTER TABLE event_run_steps DROP CONSTRAINT event_run_steps_status_known,
         ADD CONSTRAINT event_run_steps_status_known CHECK (status IN ('pending','running','done','failed','refused',
             'skipped','cancelled','waiting'))""",
    """ALTER TABLE event_run_steps DROP CONSTRAINT event_run_steps_park_reason_known,
         ADD CONSTRAINT event_run_steps_park_reason_known CHECK (park_reason IS NULL OR park_reason IN ('cue',
             'doubt', 'approval'))""",
)
NEWER_RUNS = ("replay", "handing_over", "waiting", "approval", "stalled", "stalled_step")
TABLES = {"event_runs": "id", "event_run_steps": "run_id", "event_run_phases": "run_id", "event_run_log": "run_id",
          "event_run_escalations": "run_id"}


@pytest.fixture(scope="module")
def db_params():
    """This module's own database (the session's keeps today's constraints): migrated, then widened."""
    server = ConnectionParams.from_url(server_url().rstrip("/") + "/placeholder")
    name = f"events_rollback_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    params = ConnectionParams(server.host, server.port, server.user, server.password, name, server.unix_socket)
    migrate(params)
    conn = Database(params).connect()
    with conn.cursor() as cursor:
        for statement in WIDENED:
            cursor.execute(statement)
    MIGRATED[name] = Migrated.read(conn)
    conn.close()
    yield params
    conn = Database(params).connect(database=False)
    with conn.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
    conn.close()
    del MIGRATED[name]


def _set(db, table: str, columns: str, row_id: int, *args) -> None:
    db.autocommit(lambda tx: tx.execute(f"UPDATE {table} SET {columns} WHERE id = %s", (*args, row_id)))


def _running(db, now, doc=DOC) -> tuple[Run, list]:
    run = make_run(db, now, doc=doc, status=RunStatus.RUNNING, current_phase=1)
    specs = [StepSpec(action_id=authored["action"], params=authored["params"]) for authored in doc["phases"][0]["steps"]]
    return run, materialise(db, run, 1, specs)


@pytest.fixture
def newer(db, clock):
    """A newer version's rows, each due now or with a timer past: by name, the run's id (and the parked step's)."""
    now = clock.now()
    replay, _ = _running(db, now)  # a run of a mode this release does not know, its module step and announcement due
    _set(db, "event_runs", "mode = 'replay'", replay.id)
    handing_over, (leased, _) = _running(db, now)  # a status it does not know; a step whose lease lapsed
    _set(db, "event_run_steps", "status = 'running', claimed_by = 'newer', claim_expires_at = %s, attempts = 1",
         leased.id, now - timedelta(minutes=5))
    _set(db, "event_runs", "status = 'handing_over'", handing_over.id)
    waiting, (first, _) = _running(db, now)  # a step status it does not know, ahead of a pending module step
    _set(db, "event_run_steps", "status = 'waiting'", first.id)
    approval, (parked, _) = _running(db, now, CUE_DOC)  # parked for a reason it does not know, every timer past
    _set(db, "event_run_steps", """status = 'running', park_reason = 'approval', started_at = %s, attempts = 1,
                                   remind_at = %s, escalate_at = %s, times_out_at = %s""",
         parked.id, now - timedelta(hours=1), now, now, now)
    stalled = make_run(db, now - timedelta(days=1), doc=DOC, status=RunStatus.PAUSED)  # a stalled run of its mode
    _set(db, "event_runs", "mode = 'replay', waiting_for = 'resume', updated_at = %s", stalled.id, now - timedelta(days=1))
    stalled_step, (held, _) = _running(db, now - timedelta(days=1))  # a stalled live run, a step of a newer status
    _set(db, "event_run_steps", "status = 'waiting'", held.id)
    _set(db, "event_runs", "status = 'paused', wake_at = NULL, waiting_for = 'resume', updated_at = %s", stalled_step.id,
         now - timedelta(days=1))
    return {"replay": replay.id, "handing_over": handing_over.id, "waiting": waiting.id, "approval": approval.id,
            "stalled": stalled.id, "stalled_step": stalled_step.id, "parked_step": parked.id}


def _snapshot(db, run_ids) -> dict[str, list[dict]]:
    marks = ", ".join(["%s"] * len(run_ids))
    return {table: db.autocommit(lambda tx, table=table, key=key: tx.all(
        f"SELECT * FROM {table} WHERE {key} IN ({marks}) ORDER BY {key}", tuple(run_ids)))
        for table, key in TABLES.items()}


@pytest.fixture
def world(db, clock):
    """This release's tick, wired as a deployment is: the live bridge, live channels, the rehearsal channel."""
    with GameBridge() as bridge:
        live = Actions(bridge=BridgeClient(bridge.url, SECRET, timeout=5.0), cue_channel=RecordingChannel("cue"),
                       announce_channel=RecordingChannel("announce"), escalation_channel=RecordingChannel("escalation"),
                       escalate_after_seconds=60)
        rehearsing = RecordingChannel("rehearsal")
        runner = Runner(db, clock, live, RULES, concurrency=2, rehearsals=rehearsal_actions(live, rehearsing, None))
        yield runner, bridge, [live.cue_channel, live.announce_channel, live.escalations, rehearsing]
        runner.close()


def test_this_releases_tick_leaves_a_newer_versions_rows_alone_and_runs_todays(db, clock, newer, world):
    """The rollback case: the old tick ran an in-flight dry run as a live one (the live bridge got
    `POST /actions/world.spawn`, the live channel an announcement without [REHEARSAL]); the same for a status,
    a step status and a park reason it did not know. Now a run of today's kind due in the same ticks starts and
    reaches the bridge and its channel, and nothing else does: the newer rows are exactly as they were."""
    runner, bridge, channels = world
    today = schedule(db, clock.now(), DOC)
    newer_runs = [newer[name] for name in NEWER_RUNS]
    before = _snapshot(db, newer_runs)
    for _ in range(3):  # the sweep, the reminders, the escalations and the timeouts all come due
        tick(runner)
        clock.advance(600)
    assert [(r.action_id, r.json["run_id"]) for r in bridge.received()] == [("world.spawn", today.id)]
    posted = [(channel.name, notice.run_id) for channel in channels for notice in channel.notices]
    assert posted == [("announce", today.id)], posted
    assert run_row(db, today.id).status is RunStatus.COMPLETED
    assert _snapshot(db, newer_runs) == before


def test_no_newer_run_is_found_due_leased_or_woken_for(db, clock, newer):
    """Each statement that picks work on its own: the due runs, the next wake time, and the run lease (which
    holds the run to its own words: its steps' are held by the plain read that found it due)."""
    now = clock.now() + timedelta(hours=1)
    due = db.autocommit(lambda tx: runs.find_due(tx, now, 100))
    assert due == []
    for name in ("replay", "handing_over"):
        assert not db.autocommit(lambda tx, name=name: runs.take_lease(tx, newer[name], "t", now, 60)), name
    assert db.autocommit(runs.next_wake) is None  # a newer run's wake time never keeps this release awake
    assert db.autocommit(runs.lookout).wake is None  # nor the wake loop's read of it


def test_no_step_of_a_newer_run_is_claimed_nor_a_newer_park_attended(db, clock, newer):
    """A step's claim in a run of a mode this release does not know; a parked step's timers (reminder,
    escalation, timeout) under a park reason it does not know, or in a run of such a mode."""
    now = clock.now()
    pending = db.autocommit(lambda tx: steps.list_for_run(tx, newer["replay"]))[0]
    assert db.autocommit(lambda tx: steps.claim(tx, pending, now, 60)) is None
    row = db.autocommit(lambda tx: tx.one(f"SELECT {steps.COLUMNS} FROM event_run_steps WHERE id = %s",
                                          (newer["parked_step"],)))
    parked = Step.from_row({**row, "park_reason": "cue"})  # read as a cue: the statements must still refuse it
    assert not db.autocommit(lambda tx: steps.claim_reminder(tx, parked, 1, None))
    assert not db.autocommit(lambda tx: steps.claim_escalation(tx, parked, now))
    assert not db.autocommit(lambda tx: steps.time_out(tx, parked, StepStatus.DONE, now, "nobody answered"))
    # A cue, parked in a run of a mode this release does not know, is not attended either.
    _set(db, "event_run_steps", "park_reason = 'cue'", parked.id)
    _set(db, "event_runs", "mode = 'replay'", newer["approval"])
    assert not db.autocommit(lambda tx: steps.claim_reminder(tx, parked, 1, None))
    assert not db.autocommit(lambda tx: steps.claim_escalation(tx, parked, now))
    assert not db.autocommit(lambda tx: steps.time_out(tx, parked, StepStatus.DONE, now, "nobody answered"))


@pytest.fixture
def api(db, clock, db_params):
    with runtime.override(database=db, clock=clock, settings=hs_settings(db_params)), Client(app) as client:
        yield Api(client)


def test_the_api_leaves_a_newer_run_out_of_its_lists_and_refuses_its_pages_and_controls(api, db, clock, newer):
    """The API's reads and controls of a newer version's run: 200 without it for a list, 409 saying why for
    its own pages and every control, never a 500, and nothing changed."""
    today = schedule(db, clock.now(), DOC)
    newer_runs = [newer[name] for name in NEWER_RUNS]
    before = _snapshot(db, newer_runs)
    for query in ("", "?waiting=any", "?waiting=resume", "?rehearsal=exclude", "?status=running"):
        listed = api.get(f"/runs{query}", auth=GM)
        assert listed.status == 200, (query, listed.body)
        assert {r["id"] for r in listed.body["runs"]} <= {today.id}, query
    for name, said in (("replay", "'replay'"), ("handing_over", "'handing_over'"), ("stalled", "'replay'")):
        for page in ("", "/log", "/resources", "/cleanup-plan"):
            answer = api.get(f"/runs/{newer[name]}{page}", auth=GM)
            assert answer.status == 409 and said in answer.body["errors"][0], (name, page, answer.body)
    for name, said in (("waiting", "'waiting'"), ("approval", "'approval'")):
        answer = api.get(f"/runs/{newer[name]}", auth=GM)
        assert answer.status == 409 and said in answer.body["errors"][0], (name, answer.body)
    for name in NEWER_RUNS:
        for control, body in (("pause", {}), ("resume", {}), ("cancel", {}), ("cancel", {"cleanup": True})):
            answer = api.post(f"/runs/{newer[name]}/{control}", body, auth=ADMIN)
            assert answer.status == 409, (name, control, answer.body)
            assert "does not know" in answer.body["errors"][0], answer.body
    for control in ("confirm", "skip", "acknowledge", "resend"):
        answer = api.post(f"/runs/{newer['approval']}/steps/{newer['parked_step']}/{control}", {}, auth=MODERATOR)
        assert answer.status == 409 and "'approval'" in answer.body["errors"][0], (control, answer.body)
    assert _snapshot(db, newer_runs) == before
