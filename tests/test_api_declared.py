"""Controls declared once, errors with fields, the vocabulary and `waiting`: what the API derives, over HTTP."""

from chalicelib.api.routes import OPERATIONS
from chalicelib.events import commands, lifecycle
from chalicelib.events.commands.bulk import BULK_CONTROLS
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.programme import PhasePlan
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.factory import make_run
from tests.support.scenes import put_step_in, run_with_steps, set_step, snapshot


def test_every_declared_control_is_a_route_with_its_roles_body_and_summary():
    paths = {commands.Target.RUN: "", commands.Target.PHASE: "phases/{phase}/", commands.Target.STEP: "steps/{step_id}/"}
    declared = {("POST", "/runs/{run_id}/" + paths[c.target] + c.name): c for c in commands.CONTROLS.values()}
    routed = {(op.method, op.path): op for op in OPERATIONS if (op.method, op.path) in declared}
    assert routed.keys() == declared.keys()
    for key, op in routed.items():
        control = declared[key]
        assert op.roles == control.gate and op.summary == control.summary
        fields = {control.note_field, control.phase_field, control.option_field, control.choice_field,
                  control.time_field, control.seconds_field, control.holder_field, control.version_field,
                  "expected"} - {None}  # expected: the tag seen (If-Match)
        required = {control.phase_field, control.time_field, control.seconds_field,
                    control.note_field if control.note_required else None} - {None}
        assert set(op.body["properties"]) == fields and set(op.body.get("required", ())) == required


def test_the_vocabulary_is_the_lifecycles_statuses_and_the_declared_controls(api):
    answer = api.get("/vocabulary", auth=GM)
    assert answer.status == 200
    assert [s["status"] for s in answer.body["run_statuses"]] == [s.value for s in RunStatus]
    assert [s["status"] for s in answer.body["step_statuses"]] == [s.value for s in StepStatus]
    terminal = {s["status"] for s in answer.body["run_statuses"] if s["terminal"]}
    assert terminal == {s.value for s in lifecycle.TERMINAL_RUN}
    assert [c["name"] for c in answer.body["controls"]] == list(commands.CONTROLS)
    assert answer.body["controls"][2] == {
        "name": "cancel", "target": "run", "roles": ["admin", "moderator"], "wakes": True, "note_field": "reason",
        "label": "Cancel run", "question": "Cancel this run? It cannot be undone.", "done": "Cancelled", "tone": "danger",
        "phase_field": None, "cue_roles": [], "sends_tag": False, "option_field": "cleanup", "choice_field": None, "note_required": False,
        "holder": None, "time_field": None, "seconds_field": None, "holder_field": None, "version_field": None, "bulk": True,
    }
    assert [c["name"] for c in answer.body["controls"] if c["bulk"]] == list(BULK_CONTROLS)


def test_a_403_names_the_roles_that_would_do_beside_the_message(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/pause", {}, auth=GM)
    assert answer.status == 403
    assert answer.body["detail"] == {"roles_needed": ["admin", "moderator"], "roles_held": ["gm"]}
    assert snapshot(db, run.id) == before


def test_a_lost_step_control_is_409_with_the_run_and_step_status_beside_the_message(api, db, clock):
    run, (spawn, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, spawn, "leased", clock.now())
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/steps/{spawn.id}/confirm", {}, auth=MODERATOR)
    assert answer.status == 409
    assert answer.body["errors"] == [f"{spawn.named}: this step is running under a live lease and is not waiting on anyone"]
    assert answer.body["detail"] == {"run_status": "running", "step_status": "running", "step_parked": False}
    assert snapshot(db, run.id) == before


def test_waiting_is_a_parked_cue_a_pause_or_nothing(api, db, clock):
    run, (cue, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    assert api.get(f"/runs/{run.id}", auth=GM).body["waiting"] is None
    put_step_in(db, cue, "parked", clock.now())
    parked = set_step(db, cue, started_at=clock.now())
    assert api.get(f"/runs/{run.id}", auth=GM).body["waiting"] == {
        "for": "cue", "phase": 1, "step_id": cue.id, "since": parked.public()["started_at"]}
    paused = api.post(f"/runs/{run.id}/pause", {}, auth=ADMIN).body["run"]
    assert api.get(f"/runs/{run.id}", auth=GM).body["waiting"] == {
        "for": "resume", "phase": 1, "since": paused["updated_at"], "paused_by": "root-admin", "reason": None}
    api.post(f"/runs/{run.id}/cancel", {}, auth=ADMIN)
    assert api.get(f"/runs/{run.id}", auth=GM).body["waiting"] is None


def test_waiting_is_an_advance_or_a_signal_while_the_current_phase_is_held(api, db, clock):
    from chalicelib.events.lifecycle import Manual, PhaseKind, Signalled
    from chalicelib.events.store import phases

    run, (only, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING, n=1)
    put_step_in(db, only, "done", clock.now())
    held = [(Manual(), {"for": "advance"}),
            (Signalled("boss_down"), {"for": "signal", "signal": "boss_down"})]
    for condition, expected in held:
        db.autocommit(lambda tx: tx.execute("DELETE FROM event_run_phases WHERE run_id = %s", (run.id,)))
        plan = [PhasePlan(1, PhaseKind.MAIN, "only", (), condition)]
        db.transaction(lambda tx, p=plan: phases.insert_plan(tx, run.id, p, 1, clock.now()))
        assert api.get(f"/runs/{run.id}", auth=GM).body["waiting"] is None  # open, not yet drained
        db.autocommit(lambda tx: tx.execute("UPDATE event_run_phases SET drained_at = %s WHERE run_id = %s", (clock.now(), run.id)))
        drained = api.get(f"/runs/{run.id}", auth=GM).body
        assert drained["waiting"] == {**expected, "phase": 1, "since": drained["phases"][0]["drained_at"]}
        db.autocommit(lambda tx: tx.execute("UPDATE event_run_phases SET condition_met = 1 WHERE run_id = %s", (run.id,)))
        assert api.get(f"/runs/{run.id}", auth=GM).body["waiting"] is None  # met: the tick leaves the phase
