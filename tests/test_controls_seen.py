"""Controls that know what the person saw (issue 27, item 6), over HTTP on the real database.

Every control takes the tag its caller saw in If-Match (the run's ETag for a run control, the step's etag
for a step control) or in the body's `expected`: a matching tag acts as today; a stale one is a 412 naming
the state now with its ETag, before the 409 rules, changing and logging nothing. A step retried and back
at the same status never matches its old tag. Every control takes an Idempotency-Key: a repeat within 24 h
answers the first answer (never a 412 against its own change). The guards in SQL (the version in the
guarded UPDATE's WHERE, the key unique per run) are pinned at the store, where a lock cannot hide them.
"""

import threading
from datetime import timedelta

import pymysql
import pytest

from chalicelib.api import schemas
from chalicelib.api.operations import CORS as cors
from chalicelib.events import commands, journal
from chalicelib.events.errors import AnsweredBefore
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.model import iso
from chalicelib.events.store import log, runs, steps
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.factory import make_run, run_row, step_row
from tests.support.plans import at_a_phase_with_a_deadline, fields_of, timed, upgradable
from tests.support.runner_kit import schedule, step, tick
from tests.support.scenes import finished_with_a_live_crow, log_rows, put_step_in, run_with_steps, set_run, set_step, snapshot


# ── each control, in a state where it takes ───────────────────────────────
def _held_at_a_manual_phase(db, clock, runner):
    doc = {"name": "Dawn run", "grace_seconds": 300,
           "phases": [{"name": "warm-up", "advance": {"when": "manual"}, "steps": [step("core.announce", message="Stretch")]},
                      {"name": "race", "steps": [step("core.announce", message="Go")]}], "ending": []}
    run = schedule(db, clock.now(), doc)
    tick(runner)
    return run_row(db, run.id)


def _scene(control, db, clock, runner):
    """(run, the step or None, the body) of a run where `control` takes."""
    now = clock.now()
    if control in ("pause", "cancel"):
        return make_run(db, now, status=RunStatus.RUNNING, current_phase=1), None, {}
    if control == "resume":
        return make_run(db, now, status=RunStatus.PAUSED, current_phase=1), None, {}
    if control == "advance":
        return _held_at_a_manual_phase(db, clock, runner), None, {"phase": 1}
    if control == "cleanup":
        return finished_with_a_live_crow(db, now), None, {}
    if control == "retry":
        run, (done, failed, _) = run_with_steps(db, now, RunStatus.PAUSED)
        put_step_in(db, done, "done", now)
        return run_row(db, run.id), put_step_in(db, failed, "failed", now), {}
    if control == "postpone":
        return make_run(db, now), None, fields_of(control, now)
    if control == "upgrade":
        return upgradable(db, now), None, {}
    if control == "extend":
        return at_a_phase_with_a_deadline(db, now), None, fields_of(control, now)
    run, (cue, _, _) = run_with_steps(db, now, RunStatus.RUNNING)
    state = {"resend": "parked_in_doubt", "release": "held", "take-over": "held"}.get(control, "parked")
    body = {"note": "Rowan went offline"} if commands.CONTROLS[control].note_required else {}
    target = put_step_in(db, cue, state, now)
    if control == "extend_cue":
        target = timed(db, target, now)
    return run_row(db, run.id), target, {**body, **fields_of(control, now)}


def _path(control, run, target_step):
    return commands.CONTROLS[control].path.format(run_id=run.id, phase=1, step_id=None if target_step is None else target_step.id)


def _tag(db, run, target_step):
    return run_row(db, run.id).etag if target_step is None else step_row(db, target_step.id).etag


EVERY = list(commands.CONTROLS)


@pytest.mark.parametrize("control", EVERY)
def test_a_matching_tag_acts_as_today(api, db, clock, runner, control):
    run, target, body = _scene(control, db, clock, runner)
    seen = _tag(db, run, target)
    answer = api.post(_path(control, run, target), body, auth=ADMIN, headers={"If-Match": seen})
    assert answer.status == 200 and answer.body["ok"] is True
    # Who has a cue is not its state, nor when it times out: a hold taken, let go or handed over, or its timeout
    # moved, leaves the step's tag as it was.
    assert answer.headers["ETag"] == _tag(db, run, target) != seen or control in ("acknowledge", "release", "take-over",
                                                                                  "extend_cue")


@pytest.mark.parametrize("control", EVERY)
def test_a_stale_tag_is_412_naming_the_state_now_and_changes_and_logs_nothing(api, db, clock, runner, control):
    run, target, body = _scene(control, db, clock, runner)
    now_tag = _tag(db, run, target)
    # What the person saw: the run one version earlier, or the step before it was worked.
    stale = f'"r{run.id}.{run.version - 1}"' if target is None else f'"s{target.id}.0.0.pending.-"'
    before = snapshot(db, run.id)
    answer = api.post(_path(control, run, target), body, auth=ADMIN, headers={"If-Match": stale})
    assert answer.status == 412, answer.body
    assert answer.headers["ETag"] == now_tag == answer.body["detail"]["etag"]
    assert answer.headers["Cache-Control"] == "no-store"
    [message] = answer.body["errors"]
    assert "changed while you were looking: it is now" in message and f"{control} was not pressed" in message
    assert (target.named if target else f"run {run.id}") in message
    assert snapshot(db, run.id) == before  # nothing changed, nothing logged


@pytest.mark.parametrize("control", EVERY)
def test_expected_in_the_body_is_the_same_check_for_a_client_that_cannot_set_headers(api, db, clock, runner, control):
    run, target, body = _scene(control, db, clock, runner)
    bare = _tag(db, run, target).strip('"')  # with or without its quotes
    assert api.post(_path(control, run, target), {**body, "expected": "r0.0"}, auth=ADMIN).status == 412
    assert api.post(_path(control, run, target), {**body, "expected": bare}, auth=ADMIN).status == 200


@pytest.mark.parametrize("control", EVERY)
def test_a_control_without_a_tag_or_with_any_acts_on_the_state_it_finds(api, db, clock, runner, control):
    run, target, body = _scene(control, db, clock, runner)
    set_run(db, run.id, version=run.version + 5)  # whatever happened meanwhile
    assert api.post(_path(control, run, target), body, auth=ADMIN, headers={"If-Match": "*"}).status == 200


def test_if_match_and_expected_naming_different_tags_is_400_and_the_same_tag_is_fine(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/pause", {"expected": f"r{run.id}.9"}, auth=ADMIN, headers={"If-Match": run.etag})
    assert answer.status == 400 and "If-Match" in answer.body["errors"][0] and snapshot(db, run.id) == before
    same = api.post(f"/runs/{run.id}/pause", {"expected": run.etag}, auth=ADMIN, headers={"If-Match": run.etag})
    assert same.status == 200


def test_an_if_match_list_matches_any_of_its_tags_and_a_weak_tag_never_matches(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    weak = api.post(f"/runs/{run.id}/pause", auth=ADMIN, headers={"If-Match": f"W/{run.etag}"})
    assert weak.status == 412
    listed = api.post(f"/runs/{run.id}/pause", auth=ADMIN, headers={"If-Match": f'"r{run.id}.0", {run.etag}'})
    assert listed.status == 200


def test_a_stale_tag_comes_before_the_409_rules(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.CANCELLED)
    answer = api.post(f"/runs/{run.id}/resume", auth=ADMIN, headers={"If-Match": f'"r{run.id}.0"'})
    assert answer.status == 412 and answer.body["detail"] == {"etag": run.etag, "run_status": "cancelled"}
    assert "it is now cancelled" in answer.body["errors"][0]
    assert api.post(f"/runs/{run.id}/resume", auth=ADMIN, headers={"If-Match": run.etag}).status == 409


# ── the run's tag: what raises its version ────────────────────────────────
def test_get_run_sends_the_runs_etag_never_cached_and_never_304(api, db, clock):
    run, (cue, _, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, cue, "parked", clock.now())
    answer = api.get(f"/runs/{run.id}", auth=GM)
    assert answer.headers["ETag"] == f'"r{run.id}.{run.version}"' == answer.body["run"]["etag"]
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.body["steps"][0]["etag"] == step_row(db, cue.id).etag
    again = api.get(f"/runs/{run.id}", auth=GM, headers={"If-None-Match": answer.headers["ETag"]})
    assert again.status == 200 and again.body["run"] == answer.body["run"]


def test_the_ABA_of_a_run_paused_resumed_and_paused_again_does_not_match_the_tag_seen(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.PAUSED, current_phase=1)
    seen = api.get(f"/runs/{run.id}", auth=MODERATOR).headers["ETag"]
    # Another tab: resumed, then paused again for a reason this person never saw.
    assert api.post(f"/runs/{run.id}/resume", auth=ADMIN).status == 200
    assert api.post(f"/runs/{run.id}/pause", {"reason": "boss bugged again"}, auth=ADMIN).status == 200
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/resume", auth=MODERATOR, headers={"If-Match": seen})
    assert answer.status == 412 and "it is now paused at phase 1, paused by root-admin at" in answer.body["errors"][0]
    assert "UTC: boss bugged again" in answer.body["errors"][0]
    assert snapshot(db, run.id) == before


def test_each_status_change_raises_the_version_and_a_phase_change_lease_wake_or_health_does_not(db, clock, runner):
    run = schedule(db, clock.now(), {"name": "Two phases", "grace_seconds": 300, "ending": [],
                                     "phases": [{"name": "a", "steps": [step("core.cue", instruction="Light it")]},
                                                {"name": "b", "steps": [step("core.cue", instruction="Douse it")]}]})
    assert run_row(db, run.id).version == 1
    tick(runner)  # scheduled -> running at phase 1 (one statement), the cue parks
    started = run_row(db, run.id)
    assert (started.status, started.version) == (RunStatus.RUNNING, 2)
    [cue] = [s for s in db.autocommit(lambda tx: steps.list_for_run(tx, run.id)) if s.parked]
    commands.confirm(db, run.id, cue.id, actor="mod", now=clock.advance(1))
    tick(runner)  # phase 1 -> phase 2: a phase change, the run still running
    moved = run_row(db, run.id)
    assert (moved.current_phase, moved.version) == (2, 2)
    token = steps.claim_token()
    db.transaction(lambda tx: runs.take_lease(tx, run.id, token, clock.now(), 30))
    db.transaction(lambda tx: runs.release_lease(tx, run.id, token, clock.now()))
    db.transaction(lambda tx: runs.degrade(tx, run.id, clock.now(), "a skipped failure"))
    assert run_row(db, run.id).version == 2  # a lease, a wake time, health and last_error: none is a run-level change
    assert commands.pause(db, run.id, actor="mod", now=clock.now()).version == 3
    assert commands.resume(db, run.id, actor="mod", now=clock.now()).version == 4
    assert commands.cancel(db, run.id, actor="mod", now=clock.now()).version == 5


def test_an_advance_raises_the_version_though_the_status_stays_running(db, clock, runner):
    run = _held_at_a_manual_phase(db, clock, runner)
    assert commands.advance(db, run.id, 1, actor="mod", now=clock.now()).run.version == run.version + 1


# ── the step's tag, across a retry (ABA) ──────────────────────────────────
def test_a_step_retried_and_failed_again_at_the_same_moment_does_not_match_its_old_tag(api, db, clock):
    run, (done, failed, _) = run_with_steps(db, clock.now(), RunStatus.PAUSED)
    put_step_in(db, done, "done", clock.now())
    failed = put_step_in(db, failed, "failed", clock.now())
    seen = api.get(f"/runs/{run.id}", auth=MODERATOR).body["steps"][1]["etag"]
    assert seen == failed.etag
    assert api.post(f"/runs/{run.id}/steps/{failed.id}/retry", auth=ADMIN).status == 200
    # It ran again and failed again, at the same attempt count and (the clock not moved) the same finished_at;
    # its run paused again: status, attempts and finished_at are all what the person saw.
    again = set_step(db, failed, status="failed", attempts=1, finished_at=clock.now(), due_at=None)
    set_run(db, run.id, status="paused")
    assert (again.status, again.attempts, again.finished_at) == (failed.status, failed.attempts, failed.finished_at)
    assert again.retries == 1 and again.etag != seen
    before = snapshot(db, run.id)
    answer = api.post(f"/runs/{run.id}/steps/{failed.id}/retry", auth=MODERATOR, headers={"If-Match": seen})
    assert answer.status == 412 and "after 1 retry" in answer.body["errors"][0]
    assert answer.headers["ETag"] == again.etag and snapshot(db, run.id) == before
    assert api.post(f"/runs/{run.id}/steps/{failed.id}/retry", auth=MODERATOR, headers={"If-Match": again.etag}).status == 200


def test_the_step_tag_names_its_state_parked_apart_from_running_under_a_lease(db, clock):
    _run, (s, _, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    leased = put_step_in(db, s, "leased", clock.now())
    parked = put_step_in(db, s, "parked", clock.now())
    assert (leased.status, leased.attempts) == (parked.status, parked.attempts) and leased.etag != parked.etag
    assert parked.etag == f'"s{s.id}.0.1.parked.-"'


# ── the guards in SQL, where no lock hides them ───────────────────────────
def test_a_run_move_held_to_a_version_takes_only_at_that_version(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    stale = db.transaction(lambda tx: runs.transition(tx, run.id, [RunStatus.RUNNING], RunStatus.PAUSED, clock.now(),
                                                      seen_version=run.version - 1))
    assert stale is False and run_row(db, run.id).status is RunStatus.RUNNING
    took = db.transaction(lambda tx: runs.transition(tx, run.id, [RunStatus.RUNNING], RunStatus.PAUSED, clock.now(),
                                                     seen_version=run.version))
    assert took is True and run_row(db, run.id).version == run.version + 1


def test_an_advance_held_to_a_version_takes_only_at_that_version(db, clock, runner):
    run = _held_at_a_manual_phase(db, clock, runner)
    advance = lambda seen: db.transaction(  # noqa: E731
        lambda tx: runs.advance_phase(tx, run.id, 1, "mod", clock.now(), resuming=False, seen_version=seen))
    assert advance(run.version + 1) is False
    assert advance(run.version) is True


@pytest.mark.parametrize("change", ["confirm", "skip", "acknowledge"])
def test_a_step_statement_held_to_the_step_seen_takes_only_while_it_is_that_step(db, clock, change):
    _run, (s, _, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    parked = put_step_in(db, s, "parked", clock.now())
    statement = {
        "confirm": lambda tx, seen: steps.confirm_parked(tx, s.id, clock.now(), seen=seen),
        "skip": lambda tx, seen: steps.skip_by_human(tx, s.id, clock.now(), parked=True, seen=seen),
        "acknowledge": lambda tx, seen: steps.acknowledge(tx, s.id, "gm", clock.now(), seen=seen),
    }[change]
    for column, value in (("retries", 1), ("attempts", 2)):  # seen before a retry, or at another attempt
        older = set_step(db, parked, **{column: value})
        set_step(db, parked, retries=0, attempts=1)
        assert db.transaction(lambda tx, older=older: statement(tx, older)) is False
    assert db.transaction(lambda tx: statement(tx, parked)) is True


def test_a_retry_held_to_the_step_seen_takes_only_while_it_is_that_step(db, clock):
    run, (done, failed, _) = run_with_steps(db, clock.now(), RunStatus.PAUSED)
    put_step_in(db, done, "done", clock.now())
    failed = put_step_in(db, failed, "failed", clock.now())
    earlier = set_step(db, failed, finished_at=clock.now() - timedelta(seconds=1))
    set_step(db, failed, finished_at=failed.finished_at)
    assert db.transaction(lambda tx: steps.requeue_where_stopped(tx, run.id, failed.id, clock.now(), seen=earlier)) is False
    assert db.transaction(lambda tx: steps.requeue_where_stopped(tx, run.id, failed.id, clock.now(), seen=failed)) is True
    assert step_row(db, failed.id).retries == 1


# ── Idempotency-Key ───────────────────────────────────────────────────────
def test_a_repeat_within_24_hours_answers_the_first_answer_even_after_its_own_change(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.PAUSED, current_phase=1)
    headers = {"If-Match": run.etag, "Idempotency-Key": "click-7f3a"}
    first = api.post(f"/runs/{run.id}/resume", auth=MODERATOR, headers=headers)
    assert first.status == 200 and "Idempotent-Replayed" not in first.headers
    clock.advance(3600)
    # The answer was lost; the console sends it again, with the tag it sent first (stale now: its own change).
    again = api.post(f"/runs/{run.id}/resume", auth=MODERATOR, headers=headers)
    assert again.status == 200 and again.body == first.body and again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["ETag"] == first.headers["ETag"]
    [row] = log_rows(db, run.id)
    assert row["detail"]["control"] == "resume"
    assert db.autocommit(lambda tx: tx.scalar("SELECT idempotency_key FROM event_run_log WHERE run_id = %s", (run.id,))) == "click-7f3a"


def test_a_step_controls_repeat_answers_the_first_answer(api, db, clock):
    run, (cue, _, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, cue, "parked", clock.now())
    path = f"/runs/{run.id}/steps/{cue.id}/confirm"
    first = api.post(path, {"note": "lit"}, auth=GM, headers={"Idempotency-Key": "k1"})
    again = api.post(path, {"note": "lit"}, auth=GM, headers={"Idempotency-Key": "k1"})
    assert first.status == again.status == 200 and again.body == first.body
    assert len(log_rows(db, run.id)) == 1
    # The same key on the same run, for another control by another actor, is refused: a new press needs a new key.
    other = api.post(f"/runs/{run.id}/pause", auth=ADMIN, headers={"Idempotency-Key": "k1"})
    assert other.status == 409 and "used by gm-gus for confirm" in other.body["errors"][0]
    assert run_row(db, run.id).status is RunStatus.RUNNING


def test_a_key_replayed_by_another_actor_is_a_409_naming_its_use_never_the_first_answer(api, db, clock):
    """Issue 38: a gm replaying an admin's key for skipping a pending step was answered 200, though the gm's own
    press is refused; a replay answers only who pressed, and anyone else is told whose key it is."""
    run, (pending, _, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    path = f"/runs/{run.id}/steps/{pending.id}/skip"
    assert api.post(path, {"reason": "skip it"}, auth=GM).status == 403  # a gm skips a parked cue only
    key = {"Idempotency-Key": "admins-skip"}
    assert api.post(path, {"reason": "skip it"}, auth=ADMIN, headers=key).status == 200
    before = snapshot(db, run.id)
    stolen = api.post(path, {"reason": "skip it"}, auth=GM, headers=key)
    assert stolen.status == 409 and "Idempotent-Replayed" not in stolen.headers
    assert stolen.body["errors"] == [
        (f"this Idempotency-Key was used by root-admin for skip of this same step, Run {run.id} · Phase 1 · step 1 (world.spawn), at"
         f" {iso(clock.now())}; a replay answers only who pressed it, and a new press needs a new key")]
    assert stolen.body["detail"] == {"key_used_by": "root-admin", "key_used_for": "skip", "key_used_on_step": pending.id}
    # A moderator, who could press a run control, is refused another's run-control key all the same.
    assert api.post(f"/runs/{run.id}/pause", auth=MODERATOR, headers=key).status == 409
    assert snapshot(db, run.id) == before
    # Its presser still gets the first answer.
    assert api.post(path, {"reason": "skip it"}, auth=ADMIN, headers=key).headers["Idempotent-Replayed"] == "true"


def test_a_key_reused_on_another_step_is_refused_never_the_first_steps_answer_replayed(api, db, clock):
    """Issue 38, item 8: confirming a second cue with the first cue's key must not answer the first confirm's 200
    while the second cue is never confirmed."""
    run, (first, second, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, first, "parked", clock.now())
    put_step_in(db, second, "parked", clock.now())
    key = {"Idempotency-Key": "confirm-once"}
    assert api.post(f"/runs/{run.id}/steps/{first.id}/confirm", {"note": "lit"}, auth=GM, headers=key).status == 200
    before = snapshot(db, run.id)
    again = api.post(f"/runs/{run.id}/steps/{second.id}/confirm", {"note": "lit"}, auth=GM, headers=key)
    assert again.status == 422 and "Idempotent-Replayed" not in again.headers
    assert again.body["errors"] == [
        (f"this Idempotency-Key was used for confirm of another step, Run {run.id} · Phase 1 · step 1 (world.spawn), at"
         f" {iso(clock.now())}; a new press needs a new key")]
    assert snapshot(db, run.id) == before and step_row(db, second.id).parked


def test_a_key_reused_for_another_control_on_the_same_step_says_so_exactly(api, db, clock):
    run, (cue, _, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, cue, "parked", clock.now())
    key = {"Idempotency-Key": "k-ack"}
    assert api.post(f"/runs/{run.id}/steps/{cue.id}/acknowledge", auth=GM, headers=key).status == 200
    skip = api.post(f"/runs/{run.id}/steps/{cue.id}/skip", {"reason": "gone"}, auth=GM, headers=key)
    assert skip.status == 422
    assert skip.body["errors"] == [
        (f"this Idempotency-Key was used for acknowledge of this same step, Run {run.id} · Phase 1 · step 1 (world.spawn), at"
         f" {iso(clock.now())}; a new press needs a new key")]
    run_key = api.post(f"/runs/{run.id}/pause", auth=ADMIN, headers={"Idempotency-Key": "k-run"})
    assert run_key.status == 200
    on_a_step = api.post(f"/runs/{run.id}/steps/{cue.id}/skip", {"reason": "gone"}, auth=ADMIN, headers={"Idempotency-Key": "k-run"})
    assert on_a_step.body["errors"] == [
        f"this Idempotency-Key was used for pause of run {run.id} at {iso(clock.now())}; a new press needs a new key"]


def test_a_key_is_unique_per_run_not_across_runs(api, db, clock):
    one, two = (make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1) for _ in range(2))
    for run in (one, two):
        assert api.post(f"/runs/{run.id}/pause", auth=ADMIN, headers={"Idempotency-Key": "same"}).status == 200
    assert run_row(db, one.id).status is run_row(db, two.id).status is RunStatus.PAUSED


def test_a_key_used_more_than_24_hours_ago_is_refused(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    assert api.post(f"/runs/{run.id}/pause", auth=ADMIN, headers={"Idempotency-Key": "old"}).status == 200
    clock.advance(24 * 3600 + 1)
    before = snapshot(db, run.id)
    late = api.post(f"/runs/{run.id}/pause", auth=ADMIN, headers={"Idempotency-Key": "old"})
    assert late.status == 422 and "more than 24 h ago" in late.body["errors"][0] and snapshot(db, run.id) == before


@pytest.mark.parametrize("key, status", [("k" * 64, 200), ("k" * 65, 400), ("has space", 400), ("é", 400), ("", 400)])
def test_an_idempotency_key_is_1_to_64_visible_ascii_characters(api, db, clock, key, status):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    answer = api.post(f"/runs/{run.id}/pause", auth=ADMIN, headers={"Idempotency-Key": key})
    assert answer.status == status, answer.body
    if status == 400:
        assert "Idempotency-Key" in answer.body["errors"][0] and run_row(db, run.id).status is RunStatus.RUNNING


def test_a_refused_press_keeps_no_key_so_its_repeat_is_judged_again(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    assert api.post(f"/runs/{run.id}/resume", auth=ADMIN, headers={"Idempotency-Key": "k"}).status == 409
    assert api.post(f"/runs/{run.id}/pause", auth=ADMIN, headers={"Idempotency-Key": "k"}).status == 200


def test_a_second_log_row_of_a_run_with_the_same_key_breaks_the_unique_index(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)

    def keep_twice(tx):
        for _ in range(2):
            logged = log.append(tx, journal.run_control(run, "pause", RunStatus.PAUSED, "mod"), clock.now())
            log.remember(tx, logged, run.id, "twice", "pause", None, {"ok": True})

    with pytest.raises(pymysql.err.IntegrityError):
        db.transaction(keep_twice)
    assert log_rows(db, run.id) == []


def test_the_key_is_compared_byte_for_byte(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    assert api.post(f"/runs/{run.id}/pause", auth=ADMIN, headers={"Idempotency-Key": "Abc"}).status == 200
    assert api.post(f"/runs/{run.id}/resume", auth=ADMIN, headers={"Idempotency-Key": "abc"}).status == 200


# ── the operation layer, CORS and the document ────────────────────────────
def test_cors_allows_if_match_and_idempotency_key_and_exposes_etag(api):
    answer = api.get("/runs", auth=GM)
    assert {"If-Match", "Idempotency-Key"} <= set(answer.headers["Access-Control-Allow-Headers"].split(","))
    assert "ETag" in answer.headers["Access-Control-Expose-Headers"].split(",")
    assert cors.allow_origin == answer.headers["Access-Control-Allow-Origin"]


def test_the_document_has_412_and_the_headers_for_every_control(api):
    document = api.get("/openapi.json").body
    for control in commands.CONTROLS.values():
        entry = document["paths"][control.path]["post"]
        assert {"412", "422"} <= set(entry["responses"])
        assert {p["name"] for p in entry["parameters"] if p["in"] == "header"} == {"If-Match", "Idempotency-Key"}
        assert "expected" in entry["requestBody"]["content"]["application/json"]["schema"]["properties"]
        assert "ETag" in entry["responses"]["200"]["headers"]
    run = document["paths"]["/runs/{run_id}"]["get"]["responses"]["200"]["headers"]
    assert set(run) == {"ETag", "Cache-Control"}
    assert schemas.CONTROL_HEADERS["Idempotency-Key"][1]["maxLength"] == 64


def test_the_vocabulary_says_which_controls_the_console_sends_its_tag_with(api):
    declared = {c["name"]: c["sends_tag"] for c in api.get("/vocabulary", auth=GM).body["controls"]}
    assert {name for name, sends in declared.items() if sends} == {"resume", "advance", "cleanup", "upgrade", "confirm", "skip",
                                                                         "retry", "resend"}


def test_two_presses_with_one_key_at_once_take_once_and_both_get_the_first_answer(db, clock):
    run = make_run(db, clock.now(), status=RunStatus.PAUSED, current_phase=1)
    start, answers = threading.Barrier(2), []

    def press() -> None:
        start.wait()
        try:
            answers.append({"ok": True, "run": commands.resume(db, run.id, actor="mod", now=clock.now(),
                                                               press=commands.Press(key="double-click")).public()})
        except AnsweredBefore as before:
            answers.append(before.body)

    both = [threading.Thread(target=press) for _ in range(2)]
    for thread in both:
        thread.start()
    for thread in both:
        thread.join(30)
    assert len(answers) == 2 and answers[0] == answers[1] and answers[0]["run"]["status"] == "running"
    assert [r["detail"]["control"] for r in log_rows(db, run.id)] == ["resume"]
