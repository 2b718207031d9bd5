"""Every timer of a dry run runs on its clock (issue 39, item 6): a cue's reminder, escalation (its own or the
deployment's) and timeout, a phase's deadline, a stalled run's escalation and the escalation of a step parked
for a decision are each divided by the dry run's speed. A decision escalated after the deployment's unscaled
15 minutes while its cues escalated after 15 s at speed 60 (the issue's finding); both parks of a decision are
checked here: the attempt that finds the step in doubt, and the sweep that takes back its lapsed lease.

The retry backoff (EVENT_STEP_RETRY_SECONDS) and a failed notification's retry are not the event's time but the
world's: a sandbox game or a channel that failed recovers on the wall clock, so they are not divided."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chalicelib.events import dry_runs
from chalicelib.events.actions.perform import Actions
from chalicelib.events.adapters.bridge import BridgeClient
from chalicelib.events.adapters.rehearsal import rehearsal_actions
from chalicelib.events.lifecycle import OnDoubt, RehearsalBridge, RunStatus
from chalicelib.events.model import Rehearsal, StepSpec
from chalicelib.events.runner import Runner
from chalicelib.events.store import steps
from devtools.kit.game_bridge import SECRET, Answer, GameBridge
from tests.support.api import ADMIN, GM
from tests.support.factory import make_run, materialise, run_row
from tests.support.runner_kit import RULES, RecordingChannel, tick

SPEED = 60
ESCALATE_AFTER = 900  # the deployment's EVENT_ESCALATE_AFTER_SECONDS: 15 s of a dry run at speed 60


@pytest.fixture
def sandbox():
    with GameBridge() as bridge:
        yield bridge


@pytest.fixture
def deployed(db, clock, sandbox):
    """A runner as a deployment wires it, escalating waits for a person after 15 minutes, its dry runs' module
    actions sent to the sandbox."""
    live = Actions(bridge=None, cue_channel=RecordingChannel("cue"), announce_channel=RecordingChannel("announce"),
                   escalate_after_seconds=ESCALATE_AFTER)
    runner = Runner(db, clock, live, RULES, rehearsals=rehearsal_actions(
        live, RecordingChannel("rehearsal"), BridgeClient(sandbox.url, SECRET, timeout=5.0)))
    yield runner
    runner.close()


def _dry_run(api, db, clock, steps_: list[dict]) -> int:
    """A dry run at speed 60 with the sandbox bridge (this runner's), its cues left unconfirmed for an hour."""
    saved = api.post("/definitions", {"name": "Rehearsed timers", "phases": [{"name": "only", "steps": steps_}]},
                     auth=ADMIN)
    assert saved.status == 201, saved.body
    return dry_runs.start(db, saved.body["definition"]["id"], Rehearsal(SPEED, RehearsalBridge.SANDBOX, 3600, None),
                          version=None, sandbox_configured=True, actor="root-admin", now=clock.now()).id


def _only_step(api, run_id: int) -> dict:
    (step,) = api.get(f"/runs/{run_id}", auth=GM).body["steps"]
    return step


def _at(moment) -> str:
    return moment.isoformat()[:19]


def test_a_cue_without_its_own_escalation_escalates_after_the_deployments_interval_divided_by_the_speed(
        api, db, clock, deployed):
    run_id = _dry_run(api, db, clock, [{"action": "core.cue", "params": {"instruction": "Hold the gate"}}])
    tick(deployed)
    cue = _only_step(api, run_id)
    assert cue["parked"] and cue["escalate_at"][:19] == _at(clock.now() + timedelta(seconds=ESCALATE_AFTER / SPEED))


def test_a_cues_own_escalation_and_timeout_are_divided_by_the_speed(api, db, clock, deployed):
    run_id = _dry_run(api, db, clock, [{"action": "core.cue", "params": {
        "instruction": "Hold the gate", "escalate_after_seconds": 600, "timeout_seconds": 1200}}])
    tick(deployed)
    cue = _only_step(api, run_id)
    assert cue["escalate_at"][:19] == _at(clock.now() + timedelta(seconds=10))  # 600 s / 60
    assert cue["times_out_at"][:19] == _at(clock.now() + timedelta(seconds=20))  # 1200 s / 60


def test_a_step_the_attempt_parks_for_a_decision_escalates_after_the_interval_divided_by_the_speed(
        api, db, clock, deployed, sandbox):
    sandbox.script("world.spawn", Answer(504, ""))  # a proxy's: in doubt
    run_id = _dry_run(api, db, clock, [{"action": "world.spawn", "params": {"npc": "dragon"}, "on_doubt": "park"}])
    tick(deployed)
    clock.advance(RULES.retry_seconds)  # the world's time: not divided
    tick(deployed)
    spawn = _only_step(api, run_id)
    assert spawn["parked"] and spawn["park_reason"] == "doubt"
    assert spawn["escalate_at"][:19] == _at(clock.now() + timedelta(seconds=ESCALATE_AFTER / SPEED))


def test_a_step_the_sweep_parks_for_a_decision_escalates_on_its_runs_clock(db, clock):
    """The sweep parks the lapsed steps of many runs in one statement: each gets its own run's escalation."""
    parked = {}
    for speed in (1, SPEED):
        run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
        if speed != 1:
            db.autocommit(lambda tx, r=run: tx.execute(
                "UPDATE event_runs SET mode = 'rehearsal', speed = %s, rehearsal_bridge = 'sandbox',"
                " auto_confirm_seconds = 3600 WHERE id = %s", (SPEED, r.id)))
        (step,) = materialise(db, run, 1, [StepSpec("world.spawn", on_doubt=OnDoubt.PARK)])
        db.autocommit(lambda tx, s=step: tx.execute("UPDATE event_run_steps SET attempts = %s WHERE id = %s",
                                                    (RULES.max_attempts - 1, s.id)))
        assert db.autocommit(lambda tx, s=step: steps.claim(tx, steps.get(tx, s.id), clock.now(), RULES.lease_seconds))
        parked[speed] = step.id
    clock.advance(RULES.lease_seconds + 1)
    swept = db.transaction(lambda tx: steps.reclaim_stale(tx, clock.now(), RULES.max_attempts,
                                                          escalate_after_seconds=ESCALATE_AFTER))
    assert sorted(s.id for s in swept.parked) == sorted(parked.values())
    escalate_at = {speed: db.autocommit(lambda tx, i=step_id: steps.get(tx, i)).escalate_at
                   for speed, step_id in parked.items()}
    assert escalate_at == {1: clock.now() + timedelta(seconds=ESCALATE_AFTER),
                           SPEED: clock.now() + timedelta(seconds=ESCALATE_AFTER / SPEED)}
    assert run_row(db, next(iter(swept.parked)).run_id).waiting_for == "decision"
