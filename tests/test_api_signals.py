"""Signals, POST /runs/{run_id}/signals/{name}, over HTTP on the real database: each effect, the repeat, the
refusals (nothing written), who may send one (staff with a role, or the game server signing with its own key).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import shutil
import subprocess
from datetime import UTC, timedelta
from pathlib import Path

import pymysql
import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.api import signature
from chalicelib.api.schemas import SIGNAL_PAYLOAD_BYTES
from chalicelib.events import commands
from chalicelib.events.lifecycle import RunStatus, SignalEffect
from chalicelib.events.model import iso
from chalicelib.events.store import phases, steps
from tests.support.api import ADMIN, GM, MODERATOR, Api, hs_settings
from tests.support.factory import make_run, run_row
from tests.support.interference import log_rows_refused
from tests.support.runner_kit import log_of, schedule, step, tick
from tests.support.scenes import everything
from tests.support.together import at_once

ROOT = Path(__file__).resolve().parents[1]
GAME_KEY = "game-signal-key-0123456789abcdef"
BOSS = {"name": "Boss night", "grace_seconds": 300, "phases": [
    {"name": "gather", "steps": [step("core.announce", message="Gather at the gate")]},
    {"name": "boss fight", "advance": {"when": "signal", "name": "boss_defeated"},
     "steps": [step("core.cue", instruction="Watch the boss")]},
    {"name": "loot", "advance": {"when": "signal", "name": "chest_opened"}, "steps": [step("core.announce", message="Loot!")]},
], "ending": [step("core.announce", message="Thanks for coming")]}
SIGNALS = {2: "boss_defeated", 3: "chest_opened"}


@pytest.fixture
def api(db, clock, db_params):
    settings = hs_settings(db_params, signal_secret=GAME_KEY)
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        yield Api(client)


def _at(db, clock, runner, status=RunStatus.RUNNING, phase=2):
    """A run of BOSS, moved there by the engine itself: at phase 2 its cue is parked and it waits for the
    game (no wake time); at phase 3 a person advanced phase 2 and the run holds for chest_opened; paused at
    phase 2; or not started (scheduled an hour ahead, starting, or paused while starting)."""
    if phase is None:
        if status is RunStatus.SCHEDULED:
            return schedule(db, clock.now(), BOSS, scheduled_for=clock.now() + timedelta(hours=1))
        run = make_run(db, clock.now(), doc=BOSS, status=RunStatus.STARTING)
        if status is RunStatus.PAUSED:
            commands.pause(db, run.id, actor="mod-mia", now=clock.now(), reason="rain")
        return run_row(db, run.id)
    run = schedule(db, clock.now(), BOSS)
    tick(runner)
    assert (run_row(db, run.id).current_phase, run_row(db, run.id).wake_at) == (2, None)
    if phase == 3:
        commands.advance(db, run.id, 2, actor="mod-mia", now=clock.now(), reason="the boss glitched")
        tick(runner)
    if status is RunStatus.PAUSED:
        commands.pause(db, run.id, actor="mod-mia", now=clock.now(), reason="rain")
    if status is RunStatus.CANCELLED:
        commands.cancel(db, run.id, actor="mod-mia", now=clock.now(), reason="storm")
    after = run_row(db, run.id)
    assert (after.status, after.current_phase) == (status, phase)
    return after


def _phase(db, run_id, number):
    return db.autocommit(lambda tx: phases.get(tx, run_id, number))


def _signal(api, run_id, name, body=None, **kw):
    return api.post(f"/runs/{run_id}/signals/{name}", body, **kw)


def _receipt(db, run_id):
    return db.autocommit(lambda tx: tx.all("SELECT * FROM event_run_signals WHERE run_id = %s", (run_id,)))


def _signal_rows(db, run_id):
    return [e for e in log_of(db, run_id) if e.kind == "run.signal"]


# ── the effects ───────────────────────────────────────────────────────────
def test_a_signal_of_the_phase_the_run_works_ends_it_waking_the_run_now(api, db, clock, runner):
    run = _at(db, clock, runner)
    assert run.wake_at is None  # its phase waits for the game
    answer = _signal(api, run.id, "boss_defeated", {"boss": "scarecrow", "killed_by": ["ana", "bo"]}, auth=MODERATOR)
    assert answer.status == 202, answer.body
    assert answer.body == {"signal": {"name": "boss_defeated", "received_at": iso(clock.now()), "by": "mod-mia"},
                           "effect": "ends_phase"}
    row = _phase(db, run.id, 2)
    assert (row.condition_met, row.met_by, row.met_at) == (True, "mod-mia", clock.now())
    assert run_row(db, run.id).wake_at == clock.now()
    [logged] = _signal_rows(db, run.id)
    assert (logged.actor, logged.phase) == ("mod-mia", 2)
    assert logged.detail == {"name": "boss_defeated", "by": "mod-mia", "effect": "ends_phase",
                             "payload": {"boss": "scarecrow", "killed_by": ["ana", "bo"]}}
    [kept] = _receipt(db, run.id)
    assert (kept["effect"], json.loads(kept["payload"])) == ("ends_phase", {"boss": "scarecrow", "killed_by": ["ana", "bo"]})


def test_a_signal_of_a_later_phase_is_kept_its_condition_met_now_and_the_run_not_woken(api, db, clock, runner):
    run = _at(db, clock, runner)
    answer = _signal(api, run.id, "chest_opened", auth=ADMIN)
    assert (answer.status, answer.body["effect"]) == (202, "kept_for_phase")
    later, working = _phase(db, run.id, 3), _phase(db, run.id, 2)
    assert (later.condition_met, later.met_by, later.opened_at) == (True, "root-admin", None)
    assert not working.condition_met
    assert run.wake_at is None and run_row(db, run.id).wake_at is None
    [logged] = _signal_rows(db, run.id)
    assert (logged.phase, logged.detail["effect"], logged.detail["payload"]) == (3, "kept_for_phase", None)


@pytest.mark.parametrize("status", [RunStatus.SCHEDULED, RunStatus.STARTING, RunStatus.PAUSED])
def test_a_signal_to_a_run_not_started_is_kept_for_its_start_and_nothing_else_changes(api, db, clock, status, runner):
    run = _at(db, clock, runner, status, phase=None)
    answer = _signal(api, run.id, "boss_defeated", auth=MODERATOR)
    assert (answer.status, answer.body["effect"]) == (202, "kept_for_phase")
    assert [(r["name"], r["received_by"], r["effect"]) for r in _receipt(db, run.id)] == [
        ("boss_defeated", "mod-mia", "kept_for_phase")]
    assert run_row(db, run.id) == run
    [logged] = _signal_rows(db, run.id)
    assert logged.phase is None


def test_a_signal_of_a_phase_the_run_has_left_is_recorded_and_changes_nothing_else(api, db, clock, runner):
    run = _at(db, clock, runner, phase=3)
    before = everything(db)
    answer = _signal(api, run.id, "boss_defeated", auth=MODERATOR)
    assert (answer.status, answer.body["effect"]) == (202, "phase_over")
    after = everything(db)
    assert {t: rows for t, rows in after.items() if t not in ("event_run_signals", "event_run_log")} == {
        t: rows for t, rows in before.items() if t not in ("event_run_signals", "event_run_log")}
    assert [r["effect"] for r in _receipt(db, run.id)] == ["phase_over"]
    assert [e.detail["effect"] for e in _signal_rows(db, run.id)] == ["phase_over"]


def test_a_signal_after_a_person_advanced_its_phase_is_over_and_keeps_who_advanced_it(api, db, clock, runner):
    run = _at(db, clock, runner)
    commands.advance(db, run.id, 2, actor="mod-mia", now=clock.now(), reason="the boss glitched")
    answer = _signal(api, run.id, "boss_defeated", auth=ADMIN)
    assert (answer.status, answer.body["effect"]) == (202, "phase_over")
    row = _phase(db, run.id, 2)
    assert (row.met_by, row.met_at) == ("mod-mia", clock.now())


def test_a_signal_of_a_closed_phase_is_over_whatever_its_condition_says(api, db, clock, runner):
    run = _at(db, clock, runner)
    # Forced: the engine's close meets the condition too, so the guard's `closed_at IS NULL` stands on its own here.
    db.autocommit(lambda tx: tx.execute(
        "UPDATE event_run_phases SET closed_at = %s, closed_by = 'timeout' WHERE run_id = %s AND number = 2",
        (clock.now(), run.id)))
    answer = _signal(api, run.id, "boss_defeated", auth=ADMIN)
    assert (answer.status, answer.body["effect"]) == (202, "phase_over")
    assert not _phase(db, run.id, 2).condition_met and run_row(db, run.id).wake_at is None


def test_a_signal_to_a_run_paused_at_its_phase_acts_on_resume_without_waking_it(api, db, clock, runner):
    run = _at(db, clock, runner, RunStatus.PAUSED)
    assert run.wake_at is None
    answer = _signal(api, run.id, "boss_defeated", auth=MODERATOR)
    assert (answer.status, answer.body["effect"]) == (202, "acts_on_resume")
    row = _phase(db, run.id, 2)
    assert (row.condition_met, row.met_by) == (True, "mod-mia")
    after = run_row(db, run.id)
    assert (after.status, after.wake_at) == (RunStatus.PAUSED, None)


# ── what the tick makes of it ─────────────────────────────────────────────
BOSS_CAUSE = "phase 2 (boss fight) ended on the signal boss_defeated"


def _posts(runner):
    return runner.actions.announce_channel.posts, runner.actions.cue_channel.posts


def _statuses(db, run_id):
    return [(s.phase, s.status.value, s.last_error) for s in db.autocommit(lambda tx: steps.list_for_run(tx, run_id))]


def test_the_game_ends_the_boss_fight_and_then_the_loot_and_the_run_completes(api, db, clock, runner):
    run = _at(db, clock, runner)
    path = f"/runs/{run.id}/signals/boss_defeated"
    assert api.post(path, headers=_signed(clock, path)).body["effect"] == "ends_phase"
    tick(runner)  # the cue still parked is cancelled, naming the signal; phase 3 runs and holds for chest_opened
    assert _statuses(db, run.id)[1] == (2, "cancelled", BOSS_CAUSE)
    after = run_row(db, run.id)
    assert (after.status, after.current_phase, after.health.value, after.wake_at) == (RunStatus.RUNNING, 3, "ok", None)
    [_, ended] = [e.detail for e in log_of(db, run.id) if e.kind == "run.phase" and e.phase in (2, 3)]
    assert ended["ended_by"]["by"] == "game"
    assert _signal(api, run.id, "chest_opened", auth=MODERATOR).body["effect"] == "ends_phase"
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert _posts(runner)[0] == ["Gather at the gate", "Loot!", "Thanks for coming"]


def test_a_later_phase_signalled_early_is_created_and_closed_as_soon_as_it_opens(api, db, clock, runner):
    run = _at(db, clock, runner)
    assert _signal(api, run.id, "chest_opened", auth=MODERATOR).body["effect"] == "kept_for_phase"
    tick(runner)
    assert run_row(db, run.id).current_phase == 2  # nothing moves until the boss falls
    assert _signal(api, run.id, "boss_defeated", auth=MODERATOR).body["effect"] == "ends_phase"
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert _posts(runner)[0] == ["Gather at the gate", "Thanks for coming"]  # the loot phase's step never ran
    assert [status for phase, status, _ in _statuses(db, run.id) if phase == 3] == ["cancelled"]


def test_a_signal_before_the_run_starts_ends_its_phase_as_soon_as_it_opens(api, db, clock, runner):
    run = _at(db, clock, runner, RunStatus.SCHEDULED, phase=None)
    assert _signal(api, run.id, "boss_defeated", auth=MODERATOR).body["effect"] == "kept_for_phase"
    clock.advance(3600)
    tick(runner)
    after = run_row(db, run.id)
    assert (after.status, after.current_phase) == (RunStatus.RUNNING, 3)  # through phase 2 without its cue
    assert _posts(runner) == (["Gather at the gate", "Loot!"], [])
    assert _phase(db, run.id, 2).met_by == "mod-mia"


def test_a_signal_to_a_paused_run_ends_its_phase_once_it_is_resumed(api, db, clock, runner):
    run = _at(db, clock, runner, RunStatus.PAUSED)
    assert _signal(api, run.id, "boss_defeated", auth=MODERATOR).body["effect"] == "acts_on_resume"
    assert tick(runner).runs_seen == 0  # paused: the tick does not even read it
    commands.resume(db, run.id, actor="mod-mia", now=clock.advance(5))
    tick(runner)
    assert _statuses(db, run.id)[1] == (2, "cancelled", BOSS_CAUSE)
    assert run_row(db, run.id).current_phase == 3


# ── the first receipt wins ────────────────────────────────────────────────
def test_a_repeat_answers_200_with_the_first_receipt_and_writes_nothing(api, db, clock, runner):
    run = _at(db, clock, runner)
    first = _signal(api, run.id, "boss_defeated", {"try": 1}, auth=MODERATOR)
    assert first.status == 202
    clock.advance(30)
    before = everything(db)
    again = _signal(api, run.id, "boss_defeated", {"try": 2}, auth=ADMIN)
    assert (again.status, again.body) == (200, first.body)
    assert everything(db) == before


def test_a_repeat_after_the_run_finished_still_answers_the_first_receipt(api, db, clock, runner):
    run = _at(db, clock, runner)
    first = _signal(api, run.id, "boss_defeated", auth=MODERATOR)
    commands.cancel(db, run.id, actor="mod-mia", now=clock.advance(1), reason="storm")
    again = _signal(api, run.id, "boss_defeated", auth=MODERATOR)
    assert (again.status, again.body) == (200, first.body)


def test_the_same_signal_sent_at_once_by_three_senders_is_received_once_and_all_three_answer_that_receipt(
        db, db_params, clock, runner):
    """The game and two people send boss_defeated together, each on its own connection, to five runs at phase 2: one
    receipt and one run.signal row each, its sender the one the phase says met it, and the two who lost hear the
    first receipt as a repeat, not their own."""
    boss = [schedule(db, clock.now(), BOSS) for _ in range(5)]
    tick(runner)
    senders = ("game", "mod-mia", "admin-ada")
    for run in boss:
        receipts = at_once(db_params, *(lambda own, by=by, r=run.id: commands.receive_signal(
            own, r, "boss_defeated", actor=by, now=clock.now(), payload={"from": by}) for by in senders))
        [first] = [r.signal for r in receipts if not r.repeat]
        assert [r.signal.public() for r in receipts] == [first.public()] * 3
        assert first.payload == {"from": first.received_by} and first.effect is SignalEffect.ENDS_PHASE
        [kept] = _receipt(db, run.id)
        assert (kept["received_by"], json.loads(kept["payload"])) == (first.received_by, first.payload)
        assert [e.actor for e in _signal_rows(db, run.id)] == [first.received_by]
        assert _phase(db, run.id, 2).met_by == first.received_by


# ── refusals: nothing written ─────────────────────────────────────────────
def _refused(api, db, path, status, *, auth=MODERATOR, **kw):
    before = everything(db)
    answer = api.post(path, auth=auth, **kw)
    assert answer.status == status, answer.body
    assert answer.body["errors"]
    assert everything(db) == before
    return answer


@pytest.mark.parametrize("status", [RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.FAILED, RunStatus.MISSED])
def test_a_signal_to_a_finished_run_is_409_naming_its_status(api, db, clock, status, runner):
    run = make_run(db, clock.now(), doc=BOSS, status=status, current_phase=None if status is RunStatus.MISSED else 2)
    answer = _refused(api, db, f"/runs/{run.id}/signals/boss_defeated", 409)
    assert answer.body["errors"] == [f"run {run.id} is {status.value}; a finished run takes no signal"]
    assert answer.body["detail"] == {"run_status": status.value}


def test_a_name_the_runs_version_does_not_declare_is_404_listing_those_it_does(api, db, clock, runner):
    run = _at(db, clock, runner)
    answer = _refused(api, db, f"/runs/{run.id}/signals/boss_defeatd", 404)
    assert answer.body["errors"] == [
        f"run {run.id} has no signal 'boss_defeatd': its version declares boss_defeated, chest_opened"]
    plain = schedule(db, clock.now(), {"name": "Plain", "phases": [{"name": "only", "steps": [step("core.announce", message="hi")]}]})
    answer = _refused(api, db, f"/runs/{plain.id}/signals/boss_defeated", 404)
    assert answer.body["errors"] == [f"run {plain.id} has no signal 'boss_defeated': its version declares none"]


def test_a_signal_whose_log_row_the_database_refuses_writes_nothing(api, db, clock, runner):
    run = _at(db, clock, runner)
    before = everything(db)
    with log_rows_refused(db, "NEW.kind = 'run.signal'"), pytest.raises(pymysql.err.MySQLError):
        commands.receive_signal(db, run.id, "boss_defeated", actor="mod-mia", now=clock.now())
    assert everything(db) == before


def test_a_signal_to_no_run_is_404(api, db):
    assert _refused(api, db, "/runs/999/signals/boss_defeated", 404).body["errors"] == ["no run 999"]


@pytest.mark.parametrize("name", ["Boss", "1boss", "boss-defeated", "_boss", "b" * 65, "boss%20defeated"])
def test_a_name_that_is_not_a_signal_name_is_400(api, db, clock, name, runner):
    run = _at(db, clock, runner)
    answer = _refused(api, db, f"/runs/{run.id}/signals/{name}", 400)
    assert answer.body["errors"][0].startswith("name must match [a-z][a-z0-9_]{0,63}, got ")


def test_a_payload_over_16_kib_is_400_naming_the_limit(api, db, clock, runner):
    run = _at(db, clock, runner)
    body = json.dumps({"log": "x" * SIGNAL_PAYLOAD_BYTES})
    answer = _refused(api, db, f"/runs/{run.id}/signals/boss_defeated", 400, raw=body)
    assert answer.body["errors"] == [f"the body is larger than {SIGNAL_PAYLOAD_BYTES} bytes ({len(body)})"]
    just = json.dumps({"log": "x" * (SIGNAL_PAYLOAD_BYTES - 11)})
    assert len(just) == SIGNAL_PAYLOAD_BYTES
    assert _signal(api, run.id, "boss_defeated", raw=just, auth=MODERATOR).status == 202


@pytest.mark.parametrize("raw, message", [("[1, 2]", "body must be object"), ('"dead"', "body must be object"),
                                          ("{not json", "the body is not valid JSON")])
def test_a_payload_that_is_not_a_json_object_is_400(api, db, clock, raw, message, runner):
    run = _at(db, clock, runner)
    answer = _refused(api, db, f"/runs/{run.id}/signals/boss_defeated", 400, raw=raw)
    assert answer.body["errors"] == [message]


# ── who may send one ──────────────────────────────────────────────────────
def test_moderators_and_admins_signal_and_a_gm_is_403_naming_the_roles_that_would(api, db, clock, runner):
    run = _at(db, clock, runner)
    answer = _refused(api, db, f"/runs/{run.id}/signals/boss_defeated", 403, auth=GM)
    assert answer.body["detail"] == {"roles_needed": ["admin", "moderator"], "roles_held": ["gm"]}
    _refused(api, db, f"/runs/{run.id}/signals/boss_defeated", 401, auth=None)
    assert _signal(api, run.id, "boss_defeated", auth=ADMIN).body["signal"]["by"] == "root-admin"


def _signed(clock, path, body=b"", *, key=GAME_KEY, at=None, signed_path=None):
    stamp = str(int((at or clock.now()).replace(tzinfo=UTC).timestamp()))
    return {signature.TIMESTAMP: stamp, signature.SIGNATURE: signature.sign(key, stamp, signed_path or path, body)}


def test_the_game_server_signs_a_signal_with_its_own_key_and_the_receipt_says_game(api, db, clock, runner):
    run = _at(db, clock, runner)
    path, body = f"/runs/{run.id}/signals/boss_defeated", b'{"boss": "scarecrow"}'
    answer = api.post(path, raw=body, headers=_signed(clock, path, body))
    assert answer.status == 202, answer.body
    assert answer.body["signal"]["by"] == "game" and answer.body["effect"] == "ends_phase"
    assert _phase(db, run.id, 2).met_by == "game"
    [logged] = _signal_rows(db, run.id)
    assert (logged.actor, logged.detail["payload"]) == ("game", {"boss": "scarecrow"})


def test_the_game_servers_key_signals_no_dry_run_a_person_does(api, db, clock):
    """A dry run's game is the sandbox, which holds no live key: a signal signed with the live game's key is 403 for
    a dry run and changes nothing, so neither the live game nor a sandbox given the live key can end a dry run's
    phases (nor, with that key, learn to end a live run's). A person signals it as before."""
    definition_id = api.post("/definitions", BOSS, auth=ADMIN).body["definition"]["id"]
    dry = api.post(f"/definitions/{definition_id}/dry-runs", {"speed": 60, "bridge": "simulate"}, auth=ADMIN).body["run"]
    path, body = f"/runs/{dry['id']}/signals/boss_defeated", b'{"boss": "scarecrow"}'
    refused = _refused(api, db, path, 403, auth=None, raw=body, headers=_signed(clock, path, body))
    assert refused.body["errors"] == [(f"run {dry['id']} is a dry run: the game server's signal key signals live runs only;"
                                      " a dry run's signal comes from a person (the console, or a token) or from its"
                                      " auto_signal_seconds")]
    assert _signal(api, dry["id"], "boss_defeated", auth=MODERATOR).status == 202


def test_a_signature_made_by_the_recipe_alone_is_taken(api, db, clock, runner):
    """HMAC-SHA256 of "{timestamp}.POST.{path}.{body}", written out here without the engine's own helper."""
    run = _at(db, clock, runner)
    path, body = f"/runs/{run.id}/signals/boss_defeated", b'{"boss":"scarecrow"}'
    stamp = str(int(clock.now().replace(tzinfo=UTC).timestamp()))
    digest = hmac.new(GAME_KEY.encode(), f"{stamp}.POST.{path}.".encode() + body, hashlib.sha256).hexdigest()
    headers = {"X-Signal-Timestamp": stamp, "X-Signal-Signature": f"sha256={digest}"}
    assert api.post(path, raw=body, headers=headers).status == 202


@pytest.mark.realtime  # openssl in a shell
def test_the_api_guides_worked_example_is_what_the_engine_and_openssl_compute():
    guide = (ROOT / "docs" / "api.md").read_text()
    key, stamp, path, body = re.search(r"KEY=(\S+) TS=(\d+) SIGNAL_PATH=(\S+) BODY='([^']*)'", guide).groups()
    printed = re.search(r"# -> ([0-9a-f]{64})", guide).group(1)
    assert signature.sign(key, stamp, path, body.encode()) == f"sha256={printed}"
    recipe = re.search(r"^(printf .* \| openssl dgst .*)$", guide, re.M).group(1)
    if shutil.which("openssl"):
        env = {"KEY": key, "TS": stamp, "SIGNAL_PATH": path, "BODY": body, "PATH": os.environ["PATH"]}
        done = subprocess.run(["bash", "-c", recipe], env=env, capture_output=True, text=True, check=True)
        assert done.stdout.strip() == printed


def _forged(api, db, clock, run, *, path=None, body=b"", **signing):
    path = path or f"/runs/{run.id}/signals/boss_defeated"
    before = everything(db)
    answer = api.post(path, raw=body, headers=_signed(clock, path, body, **signing))
    assert answer.status == 401, answer.body
    assert everything(db) == before
    return answer.body["errors"][0]


def test_a_signature_with_another_key_or_for_another_path_or_body_is_401_and_writes_nothing(api, db, clock, runner):
    run = _at(db, clock, runner)
    path = f"/runs/{run.id}/signals/boss_defeated"
    assert _forged(api, db, clock, run, key="the-game-bridges-key") == signature.DOES_NOT_VERIFY
    assert _forged(api, db, clock, run, signed_path="/runs/{run_id}/signals/{name}") == signature.DOES_NOT_VERIFY
    assert _forged(api, db, clock, run, signed_path=f"/api{path}") == signature.DOES_NOT_VERIFY  # the stage prefix
    headers = _signed(clock, path, b'{"boss": "scarecrow"}')
    before = everything(db)
    assert api.post(path, raw=b'{"boss": "dragon"}', headers=headers).status == 401  # the body changed on the way
    assert everything(db) == before


def test_a_signature_replayed_to_another_run_or_name_is_401_and_writes_nothing(api, db, clock, runner):
    run, other = _at(db, clock, runner), _at(db, clock, runner)
    signed_for = f"/runs/{run.id}/signals/boss_defeated"
    assert _forged(api, db, clock, other, path=f"/runs/{other.id}/signals/boss_defeated",
                   signed_path=signed_for) == signature.DOES_NOT_VERIFY
    assert _forged(api, db, clock, run, path=f"/runs/{run.id}/signals/chest_opened",
                   signed_path=signed_for) == signature.DOES_NOT_VERIFY


@pytest.mark.parametrize("seconds, words", [(-301, "301 s behind"), (301, "301 s ahead of"), (-86400, "86400 s behind")])
def test_a_signature_whose_timestamp_is_more_than_300_s_off_the_clock_is_401(api, db, clock, seconds, words, runner):
    run = _at(db, clock, runner)
    message = _forged(api, db, clock, run, at=clock.now() + timedelta(seconds=seconds))
    assert message == f"X-Signal-Timestamp is {words} the engine's clock (at most 300 s): sign each request when it is sent"
    path = f"/runs/{run.id}/signals/boss_defeated"
    inside = _signed(clock, path, at=clock.now() - timedelta(seconds=300))
    assert api.post(path, headers=inside).status == 202  # 300 s is still inside


@pytest.mark.parametrize("headers, message", [
    ({"X-Signal-Timestamp": "1796414400"}, "a signed signal sends both X-Signal-Timestamp and X-Signal-Signature"),
    ({"X-Signal-Signature": "sha256=00"}, "a signed signal sends both X-Signal-Timestamp and X-Signal-Signature"),
    ({"X-Signal-Timestamp": "soon", "X-Signal-Signature": "sha256=00"}, "X-Signal-Timestamp must be Unix seconds, got 'soon'"),
    ({"X-Signal-Timestamp": "1796414400", "X-Signal-Signature": "00ff"}, "X-Signal-Signature must be sha256=<hex HMAC-SHA256>"),
    ({"X-Signal-Timestamp": "1796414400", "X-Signal-Signature": "sha256=\u00e9\u00e9"}, signature.DOES_NOT_VERIFY),
])
def test_a_malformed_signature_is_401_saying_what_is_wrong(api, db, clock, headers, message, runner):
    run = _at(db, clock, runner)
    answer = _refused(api, db, f"/runs/{run.id}/signals/boss_defeated", 401, auth=None, headers=headers)
    assert answer.body["errors"] == [message]


def test_a_signed_request_is_judged_by_its_signature_even_beside_a_token(api, db, clock, runner):
    run = _at(db, clock, runner)
    path = f"/runs/{run.id}/signals/boss_defeated"
    assert api.post(path, auth=ADMIN, headers=_signed(clock, path, key="wrong")).status == 401
    assert api.post(path, auth=GM, headers=_signed(clock, path)).body["signal"]["by"] == "game"


def test_a_signature_where_no_signal_key_is_configured_is_503(db, clock, db_params, runner):
    run = _at(db, clock, runner)
    path = f"/runs/{run.id}/signals/boss_defeated"
    with runtime.override(database=db, clock=clock, settings=hs_settings(db_params)), Client(app) as client:
        answer = Api(client).post(path, headers=_signed(clock, path))
    assert answer.status == 503
    assert answer.body["errors"] == ["signed signals are not configured (EVENTS_SIGNAL_SECRET or EVENTS_SIGNAL_SECRET_ARN)"]


def test_the_signature_is_the_only_thing_a_token_less_caller_can_use_elsewhere(api, db, clock, runner):
    """Only the signal route takes a signature: a control signed with the game's key is still 401."""
    run = _at(db, clock, runner)
    path = f"/runs/{run.id}/pause"
    before = everything(db)
    assert api.post(path, headers=_signed(clock, path)).status == 401
    assert everything(db) == before
