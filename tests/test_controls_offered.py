"""Offered means allowed (issue 39, item 5): `GET /runs/{id}` offers a caller exactly the controls whose press
would take for them, each with the roles that may press it.

Every declared control (`commands.CONTROLS`, so a control declared later is walked too) is pressed by an
admin, a moderator and a game master on the run, on the phase it is at (or its first, before it has one) or
on every step of a run in each state below, each state
reached through the real engine (the tick against a loopback game, the API's controls) on the real database.
A state is built once and kept as its rows; every press that took is undone by putting those rows back, so
each press meets a fresh copy of the state. Offered, the press takes (2xx, a log row written); not offered, it
is refused for the role (403) or the state (409), or it is the holder's repeat of their own acknowledge or
take-over, which answers 200 and writes nothing.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.db import Database, must_exist
from chalicelib.events import commands
from chalicelib.events.actions.perform import Actions
from chalicelib.events.adapters.bridge import BridgeClient
from chalicelib.events.runner import Runner
from devtools.kit.clock import ManualClock
from devtools.kit.game_bridge import SECRET, Answer, GameBridge
from tests.conftest import START
from tests.support.api import ADMIN, GM, MODERATOR, Api, hs_settings, token
from tests.support.factory import document, run_row
from tests.support.plans import saved_again
from tests.support.runner_kit import RULES, RecordingChannel, schedule, step, tick

TOKENS = {"admin": ADMIN, "moderator": MODERATOR, "gm": GM}
ACTORS = {"admin": "root-admin", "moderator": "mod-mia", "gm": "gm-gus"}  # the tokens' subjects
ROWAN = token("gm", sub="Rowan")
NOTE = "offered means allowed"
# The fields a press's body carries, by how a declaration names them (`declared.Control`); a control whose
# command has a field none of these names fails the walk, saying which: teach `_body` its value.
BODY_FIELDS = ("note_field", "phase_field", "option_field", "choice_field", "time_field", "seconds_field", "holder_field",
               "version_field")
IDS = {"run_id", "step_id"}


@dataclass
class World:
    db: Database
    clock: ManualClock
    api: Api
    bridge: GameBridge
    runner: Runner


@dataclass(frozen=True)
class Kept:
    """A state as its rows: the run's row, and its rows of every table that has a run_id, at a moment."""

    run_id: int
    at: datetime
    rows: dict[str, tuple[str, tuple[str, ...], tuple[tuple[Any, ...], ...]]]  # table: (key, columns, rows)


Tables = dict[str, tuple[str, tuple[str, ...]]]  # a table of a run's rows: the column naming the run, the stored columns


def _run_tables(db: Database) -> Tables:
    """event_runs and every table with a run_id, each with its stored (not generated) columns."""
    rows = db.autocommit(lambda tx: tx.all(
        "SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = DATABASE()"
        " AND is_generated = 'NEVER' AND table_name IN (SELECT table_name FROM information_schema.columns"
        " WHERE table_schema = DATABASE() AND (column_name = 'run_id' OR table_name = 'event_runs'))"
        " ORDER BY table_name, ordinal_position"))
    columns: dict[str, list[str]] = {}
    for row in rows:
        columns.setdefault(row["t"], []).append(row["c"])
    return {t: ("id" if t == "event_runs" else "run_id", tuple(cs)) for t, cs in columns.items()}


def _keep(db: Database, tables: Tables, run_id: int, at: datetime) -> Kept:
    conn = db.connect()
    try:
        rows = {}
        with conn.cursor() as cursor:
            for table, (key, columns) in tables.items():
                names = ", ".join(f"`{c}`" for c in columns)
                cursor.execute(f"SELECT {names} FROM `{table}` WHERE `{key}` = %s ORDER BY 1", (run_id,))
                rows[table] = (key, columns, tuple(cursor.fetchall()))
        conn.commit()
    finally:
        conn.close()
    return Kept(run_id, at, rows)


def _put_back(db: Database, kept: Kept) -> None:
    """The run's rows back to what was kept, in one transaction (the foreign keys off, so no order is needed)."""
    conn = db.connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute("SET foreign_key_checks = 0")
            cursor.execute("START TRANSACTION")
            for table, (key, columns, rows) in kept.rows.items():
                cursor.execute(f"DELETE FROM `{table}` WHERE `{key}` = %s", (kept.run_id,))
                if rows:
                    names = ", ".join(f"`{c}`" for c in columns)
                    cursor.executemany(f"INSERT INTO `{table}` ({names}) VALUES ({', '.join(['%s'] * len(columns))})", rows)
            cursor.execute("COMMIT")
            cursor.execute("SET foreign_key_checks = 1")
    finally:
        conn.close()


def _logged(db: Database, run_id: int) -> int:
    return must_exist(db.autocommit(lambda tx: tx.one("SELECT COUNT(*) AS n FROM event_run_log WHERE run_id = %s", (run_id,))))["n"]


# ── the states, each reached through the engine ─────────────────────────────
CUE = step("core.cue", instruction="Light the bonfire")
ANNOUNCE = step("core.announce", message="The festival begins")
SPAWN = step("world.spawn", npc="scarecrow")


def _ran(w: World, doc: dict) -> int:
    run = schedule(w.db, w.clock.now(), doc)
    tick(w.runner)
    return run.id


def _press(w: World, path: str, auth: str, body: dict | None = None) -> None:
    answer = w.api.post(path, body or {}, auth=auth)
    assert answer.status == 200, (path, answer.body)


def _cue_step(w: World, run_id: int) -> int:
    detail = w.api.get(f"/runs/{run_id}", auth=ADMIN).body
    return next(s["id"] for s in detail["steps"] if s["parked"])


def scheduled(w: World) -> int:
    return schedule(w.db, w.clock.now(), document([[ANNOUNCE]]), scheduled_for=w.clock.now() + timedelta(days=1)).id


def scheduled_of_an_earlier_version(w: World) -> int:
    """Scheduled a day ahead, made from version 1 of a definition whose version 2 was saved since."""
    run = schedule(w.db, w.clock.now(), document([[ANNOUNCE]]), scheduled_for=w.clock.now() + timedelta(days=1))
    saved_again(w.db, w.clock.now(), run.definition_id, "version 2")
    return run.id


def at_a_timed_phase(w: World) -> int:
    """At a cue in an `after` phase: its deadline, twenty minutes away, counts."""
    doc = document([[CUE], [ANNOUNCE]])
    doc["phases"][0]["advance"] = {"when": "after", "seconds": 1200}
    return _ran(w, doc)


def at_a_cue(w: World) -> int:
    """A done step, a parked cue nobody has, a pending step."""
    return _ran(w, document([[ANNOUNCE, CUE, SPAWN]]))


def at_a_cue_that_asks(w: World) -> int:
    return _ran(w, document([[step("core.cue", instruction="Which arena is free?", choices=[
        {"value": "north", "label": "North arena"}, {"value": "south", "label": "South arena"}])]]))


def cue_the_gm_has(w: World) -> int:
    run_id = at_a_cue(w)
    _press(w, f"/runs/{run_id}/steps/{_cue_step(w, run_id)}/acknowledge", GM)
    return run_id


def cue_someone_else_has(w: World) -> int:
    run_id = at_a_cue(w)
    _press(w, f"/runs/{run_id}/steps/{_cue_step(w, run_id)}/acknowledge", ROWAN)
    return run_id


def cue_whose_hold_lapsed(w: World) -> int:
    run_id = _ran(w, document([[step("core.cue", instruction="Light the bonfire", escalate_after_seconds=60)]]))
    _press(w, f"/runs/{run_id}/steps/{_cue_step(w, run_id)}/acknowledge", ROWAN)
    w.clock.advance(60)
    tick(w.runner)
    return run_id


def paused_at_a_cue(w: World) -> int:
    run_id = at_a_cue(w)
    _press(w, f"/runs/{run_id}/pause", MODERATOR, {"reason": "boss bugged"})
    return run_id


def parked_for_a_decision(w: World) -> int:
    """The step's attempt got a 504 (the game may have applied it); its next claim parked it for a decision."""
    w.bridge.script("world.spawn", Answer(504, ""))
    run_id = _ran(w, document([[{**SPAWN, "on_doubt": "park"}, ANNOUNCE]]))
    w.clock.advance(RULES.retry_seconds)
    tick(w.runner)
    return run_id


def stopped_at_a_failed_step(w: World) -> int:
    w.bridge.script("world.spawn", Answer(400, {"reason": "the square is full"}))
    return _ran(w, document([[ANNOUNCE, step("world.spawn", on_failure="pause", npc="scarecrow"), ANNOUNCE]]))


def failed(w: World) -> int:
    w.bridge.script("world.spawn", Answer(400, {"reason": "the square is full"}))
    return _ran(w, document([[step("world.spawn", on_failure="abort_run", npc="scarecrow"), ANNOUNCE]]))


def held_for_an_advance(w: World) -> int:
    doc = document([[ANNOUNCE], [ANNOUNCE]])
    doc["phases"][0]["advance"] = {"when": "manual"}
    return _ran(w, doc)


def with_a_step_in_flight(w: World) -> Iterator[int]:
    """Kept while the game holds the step's request (its lease live), then let go."""
    answer = threading.Event()
    w.bridge.script("world.spawn", Answer(200, gate=answer))
    run = schedule(w.db, w.clock.now(), document([[SPAWN, ANNOUNCE]]))
    sent = len(w.bridge.received()) + 1
    ticking = threading.Thread(target=tick, args=(w.runner,))
    ticking.start()
    try:
        w.bridge.wait_for(sent)
        yield run.id
    finally:
        answer.set()
        ticking.join()


def _left_a_scarecrow(w: World) -> int:
    w.bridge.script("world.spawn", Answer(200, {"outcome": "done", "resources": [
        {"kind": "npc", "id": "scarecrow", "revert": {"action": "world.undo", "params": {"what": "scarecrow"}}}]}))
    return _ran(w, document([[SPAWN, CUE]]))


def cleaning_up(w: World) -> int:
    run_id = _left_a_scarecrow(w)
    _press(w, f"/runs/{run_id}/cancel", MODERATOR, {"reason": "storm", "cleanup": True})
    return run_id


def cleanup_paused_on_a_failed_revert(w: World) -> int:
    run_id = cleaning_up(w)
    w.bridge.script("world.undo", Answer(400, {"reason": "the scarecrow is stuck"}))
    tick(w.runner)
    return run_id


def completed(w: World) -> int:
    return _ran(w, document([[ANNOUNCE]]))


def cancelled(w: World) -> int:
    run_id = at_a_cue(w)
    _press(w, f"/runs/{run_id}/cancel", MODERATOR, {"reason": "storm"})
    return run_id


STATES: dict[str, Callable[[World], Any]] = {f.__name__: f for f in (
    scheduled, scheduled_of_an_earlier_version,
    at_a_timed_phase, at_a_cue, at_a_cue_that_asks, cue_the_gm_has, cue_someone_else_has, cue_whose_hold_lapsed,
    paused_at_a_cue, parked_for_a_decision, stopped_at_a_failed_step, with_a_step_in_flight, held_for_an_advance,
    cleaning_up, cleanup_paused_on_a_failed_revert, completed, cancelled, failed,
)}


def _reached(w: World, tables: Tables, build: Callable[[World], Any]) -> Kept:
    """The state `build` reaches, kept; then the run is cancelled, so that the ticks building the next states
    leave it be (its rows are put back before it is pressed)."""
    made = build(w)
    if isinstance(made, int):
        kept = _keep(w.db, tables, made, w.clock.now())
    else:  # a state that holds only while its builder waits (a step in flight): kept before it is let go
        run_id = next(made)
        kept = _keep(w.db, tables, run_id, w.clock.now())
        commands.cancel(w.db, run_id, actor="builder", now=w.clock.now())
        next(made, None)
    if not run_row(w.db, kept.run_id).status.terminal:
        commands.cancel(w.db, kept.run_id, actor="builder", now=w.clock.now())
    w.clock.advance(1)
    return kept


@pytest.fixture(scope="module")
def walk(module_db, db_params) -> Iterator[tuple[World, dict[str, Kept]]]:
    clock = ManualClock(START)
    with GameBridge() as bridge, runtime.override(database=module_db, clock=clock, settings=hs_settings(db_params)), \
            Client(app) as client:
        actions = Actions(bridge=BridgeClient(bridge.url, SECRET, timeout=5.0), cue_channel=RecordingChannel("cue"),
                          announce_channel=RecordingChannel("announce"), escalation_channel=RecordingChannel("escalation"),
                          escalate_after_seconds=900)
        runner = Runner(module_db, clock, actions, RULES, concurrency=1)
        world = World(module_db, clock, Api(client), bridge, runner)
        tables = _run_tables(module_db)
        try:
            yield world, {name: _reached(world, tables, build) for name, build in STATES.items()}
        finally:
            runner.close()


# ── the walk ───────────────────────────────────────────────────────────────
def _body(control: commands.Control, detail: dict, step: dict | None) -> dict:
    """A body its press takes where the state allows it: a note, the phase the run is at, the option off, on a
    cue that asks the first of its choices, and the version the page shows current."""
    run = detail["run"]
    named = {getattr(control, f) for f in BODY_FIELDS} - {None}
    in_path = IDS | ({"phase"} if control.target is commands.Target.PHASE else set())
    unknown = {f.name for f in dataclasses.fields(control.command)} - in_path - named
    assert not unknown, f"the walk does not know what to send in {sorted(unknown)} of {control.name}: teach _body"
    body: dict[str, Any] = {}
    if control.note_field:
        body[control.note_field] = NOTE
    if control.phase_field:
        body[control.phase_field] = run["current_phase"] or 1
    if control.option_field:
        body[control.option_field] = False
    if control.time_field:  # postpone: two days past the walk's clock (its scheduled run is a day ahead)
        body[control.time_field] = (START + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    if control.seconds_field:  # a phase's or a cue's extend: a minute later
        body[control.seconds_field] = 60
    choices = (step or {}).get("params", {}).get("choices") or []
    if control.choice_field and choices:
        body[control.choice_field] = choices[0]["value"]
    holder = (step or {}).get("acknowledged_by")
    if control.holder_field and holder:  # the holder as the page shows them
        body[control.holder_field] = holder
    if control.version_field and detail["current_version"] is not None:  # upgrade: the version the page shows current
        body[control.version_field] = detail["current_version"]
    return body


@pytest.mark.parametrize("state", STATES)
def test_each_control_is_offered_to_a_role_exactly_when_its_press_would_take(walk, state):
    world, states = walk
    kept = states[state]
    world.clock.set(kept.at)
    _put_back(world.db, kept)
    run_id = kept.run_id
    shown = {role: world.api.get(f"/runs/{run_id}", auth=auth).body for role, auth in TOKENS.items()}
    steps = shown["admin"]["steps"]
    logged = _logged(world.db, run_id)
    wrong: list[str] = []
    pressed = 0
    phase = shown["admin"]["run"]["current_phase"] or 1  # a run with no phase yet: its first is pressed
    for control in commands.CONTROLS.values():
        on_steps = steps if control.target is commands.Target.STEP else [None]
        for target in on_steps:
            if target is not None:
                where, part, ids = f"step {target['seq'] + 1} of phase {target['phase']}", "steps", str(target["id"])
            elif control.target is commands.Target.PHASE:
                where, part, ids = f"phase {phase}", "phase", None
            else:
                where, part, ids = "the run", "run", None
            path = f"/runs/{run_id}/" + {"run": "", "phase": f"phases/{phase}/", "steps": f"steps/{ids}/"}[part] + control.name
            for role, auth in TOKENS.items():
                controls = shown[role]["controls"]
                offer = controls[part] if ids is None else controls[part][ids]
                roles = controls["roles"][part] if ids is None else controls["roles"][part][ids]
                offered = control.name in offer
                if offered != (control.name in roles) or (offered and role not in roles[control.name]):
                    wrong.append(f"{control.name} on {where}: offered to the {role} as {offer}, with the roles {roles}")
                answer = world.api.post(path, _body(control, shown[role], target), auth=auth)
                pressed += 1
                took = 200 <= answer.status < 300 and _logged(world.db, run_id) > logged
                if 200 <= answer.status < 300:
                    _put_back(world.db, kept)
                holders_repeat = (answer.status == 200 and not took and target is not None
                                  and target.get("acknowledged_by") == ACTORS[role])
                if took if not offered else not took:
                    wrong.append(f"{control.name} on {where} by the {role}: {'offered' if offered else 'not offered'},"
                                 f" the press answered {answer.status} {answer.body}")
                elif not offered and answer.status not in (403, 409) and not holders_repeat:
                    wrong.append(f"{control.name} on {where} by the {role}: not offered, the press answered"
                                 f" {answer.status} {answer.body}, not a refusal")
    assert pressed
    assert not wrong, f"{state}: " + "\n".join(wrong)
    assert _keep(world.db, _run_tables(world.db), run_id, kept.at).rows == kept.rows  # the refusals wrote nothing


def test_the_walk_reaches_every_state_it_names(walk):
    """Each state is what its name says (a builder that drifted would walk the wrong state)."""
    world, states = walk
    seen = {}
    for name, kept in states.items():
        _put_back(world.db, kept)
        world.clock.set(kept.at)
        detail = world.api.get(f"/runs/{kept.run_id}", auth=ADMIN).body
        seen[name] = (detail["run"]["status"], (detail["waiting"] or {}).get("for"))
    assert seen == {
        "scheduled": ("scheduled", None),
        "scheduled_of_an_earlier_version": ("scheduled", None),
        "at_a_timed_phase": ("running", "cue"),
        "at_a_cue": ("running", "cue"),
        "at_a_cue_that_asks": ("running", "cue"),
        "cue_the_gm_has": ("running", "cue"),
        "cue_someone_else_has": ("running", "cue"),
        "cue_whose_hold_lapsed": ("running", "cue"),
        "paused_at_a_cue": ("paused", "resume"),
        "parked_for_a_decision": ("running", "decision"),
        "stopped_at_a_failed_step": ("paused", "resume"),
        "with_a_step_in_flight": ("running", None),
        "held_for_an_advance": ("running", "advance"),
        "cleaning_up": ("cleaning_up", None),
        "cleanup_paused_on_a_failed_revert": ("paused", "resume"),
        "completed": ("completed", None),
        "cancelled": ("cancelled", None),
        "failed": ("failed", None),
    }
