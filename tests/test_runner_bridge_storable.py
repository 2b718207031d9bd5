"""An answer the game gave is stored or refused, never lost: text it sends that the database cannot store (a lone
surrogate), revert params nested deeper than MariaDB's JSON keeps, or an outcome transaction that fails for any
other reason never turn the answer into a re-send. Each case counts the loopback bridge's requests: one delivery,
and the step's outcome as the game gave it."""

import pytest

from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import Health
from chalicelib.events.store import resources, steps
from devtools.kit.game_bridge import Answer
from tests.support.factory import document, run_row
from tests.support.runner_kit import RULES, log_of, make_runner, schedule, step, tick

LONE = "\ud800"  # a lone surrogate: valid in JSON text (as an escape), not encodable as UTF-8


def _nested(levels: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"n": value}
    return value


def _spawn_run(db, clock):
    return schedule(db, clock.now(), document([[step("world.spawn", npc="scarecrow")]]))


def _ticked_past_every_lease(runner, clock):
    """Ticks enough to see a lost outcome re-sent: each past the lease and the retry backoff."""
    for _ in range(RULES.max_attempts + 1):
        tick(runner)
        clock.advance(RULES.lease_seconds + RULES.retry_seconds + 1)


def _the_step(db, run_id):
    [only] = db.autocommit(lambda tx: steps.list_for_run(tx, run_id))
    return only


def _ledger(db, run_id):
    return db.autocommit(lambda tx: resources.page_for_run(tx, run_id, None, 10))[0]


def test_a_refusal_whose_reason_holds_a_lone_surrogate_is_recorded_once_with_the_text_cleaned(db, clock, runner, game_bridge):
    """A refusal's reason with a lone surrogate: one delivery, the step refused with the reason cleaned, written
    whole on the first try (not the plain write after a failure)."""
    game_bridge.script("world.spawn", Answer(200, {"outcome": "refused", "reason": f"no {LONE} way"}))
    run = _spawn_run(db, clock)
    _ticked_past_every_lease(runner, clock)
    assert len(game_bridge.received("world.spawn")) == 1
    spawn = _the_step(db, run.id)
    assert spawn.status is StepStatus.REFUSED and spawn.last_error == "refused: no \ufffd way"
    [dispatch] = [e.detail for e in log_of(db, run.id) if e.kind == "step.dispatch"]
    assert dispatch["error"] == "refused: no \ufffd way" and "resources_refused" not in dispatch


@pytest.mark.parametrize(("resource", "problem"), [
    ({"kind": f"npc{LONE}", "id": "scarecrow-7"}, "resources[0].kind: not storable text"),
    ({"kind": "npc", "id": f"scare{LONE}crow"}, "resources[0].id: not storable text"),
    ({"kind": "npc", "id": "scarecrow-7", "revert": {"action": "world.despawn", "params": _nested(40)}},
     "resources[0].revert.params: nests deeper than 30 levels"),
    ({"kind": "npc", "id": "scarecrow-7", "revert": {"action": "world.despawn", "params": {"npc": LONE}}},
     "resources[0].revert.params: not storable text"),
    ({"kind": "npc", "id": "scarecrow-7", "revert": {"action": "world.despawn", "params": {"at": float("nan")}}},
     "resources[0].revert.params: NaN or Infinity, which are not JSON numbers"),  # sent as the bare token NaN
])
def test_an_unstorable_resource_list_is_refused_whole_and_the_done_answer_kept(db, clock, runner, game_bridge,
                                                                               resource, problem):
    """A resource's kind, id or revert params with a lone surrogate, revert params 40 deep or holding NaN: one
    delivery, done, nothing recorded, the run degraded naming why."""
    weather = {"kind": "weather", "id": "storm"}
    game_bridge.script("world.spawn", Answer(200, {"outcome": "done", "resources": [resource, weather]}))
    run = _spawn_run(db, clock)
    _ticked_past_every_lease(runner, clock)
    assert len(game_bridge.received("world.spawn")) == 1
    assert _the_step(db, run.id).status is StepStatus.DONE
    assert _ledger(db, run.id) == []
    after = run_row(db, run.id)
    assert after.status is RunStatus.COMPLETED and after.health is Health.DEGRADED
    assert problem in after.last_error


def test_the_probes_applied_answer_with_an_unstorable_list_is_done_and_never_re_sent(db, clock, game_bridge):
    """The status probe's `applied` answer listing a kind with a lone surrogate: one delivery, one probe, done."""
    game_bridge.script("world.spawn", Answer(504, ""))
    game_bridge.status(lambda asked: Answer(200, {"status": "applied", "resources": [{"kind": LONE, "id": "x"}]}))
    probing = make_runner(db, clock, game_bridge, asks_status=True)
    try:
        run = _spawn_run(db, clock)
        _ticked_past_every_lease(probing, clock)
    finally:
        probing.close()
    assert len(game_bridge.received("world.spawn")) == 1 and len(game_bridge.probes()) == 1
    assert _the_step(db, run.id).status is StepStatus.DONE
    assert _ledger(db, run.id) == []
    assert "resources[0].kind: not storable text" in run_row(db, run.id).last_error


def test_an_outcome_whose_writes_fail_otherwise_is_recorded_plainly_and_not_re_sent(db, clock, runner, game_bridge):
    """The ledger's INSERT fails (a trigger refuses it): one delivery, the step done as answered, nothing
    recorded, the failure on the run (degraded, a dispatch row saying so)."""
    db.autocommit(lambda tx: tx.execute(
        "CREATE TRIGGER refuse_resources BEFORE INSERT ON event_run_resources FOR EACH ROW "
        "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'the ledger is refusing writes'"))
    try:
        game_bridge.script("world.spawn", Answer(200, {"outcome": "done", "resources": [{"kind": "npc", "id": "x"}]}))
        run = _spawn_run(db, clock)
        _ticked_past_every_lease(runner, clock)
    finally:
        db.autocommit(lambda tx: tx.execute("DROP TRIGGER refuse_resources"))
    assert len(game_bridge.received("world.spawn")) == 1
    assert _the_step(db, run.id).status is StepStatus.DONE
    assert _ledger(db, run.id) == []
    after = run_row(db, run.id)
    assert after.status is RunStatus.COMPLETED and after.health is Health.DEGRADED
    assert "the outcome's writes failed" in after.last_error
    [dispatch] = [e.detail for e in log_of(db, run.id) if e.kind == "step.dispatch"]
    assert dispatch["outcome"] == "done" and dispatch["resources_refused"].startswith("the outcome's writes failed")
