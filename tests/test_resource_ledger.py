"""The resource ledger: what an answer lists is recorded with its outcome, checked whole, never half-recorded,
and never past the run's cap."""

import threading
import time

import pytest

from chalicelib.events import ledger
from chalicelib.events.document import validate
from chalicelib.events.errors import Invalid
from chalicelib.events.lifecycle import ResourceStatus, RunStatus, StepStatus
from chalicelib.events.model import Health
from chalicelib.events.store import resources, steps
from devtools.kit.game_bridge import Answer
from tests.support.factory import document, run_row
from tests.support.runner_kit import log_of, make_runner, schedule, step, tick

SCARECROW = {"kind": "npc", "id": "scarecrow-7", "revert": {"action": "world.despawn", "params": {"npc": "scarecrow-7"}}}
WEATHER = {"kind": "weather", "id": "storm"}


def ledger_of(db, run_id):
    return db.autocommit(lambda tx: resources.page_for_run(tx, run_id, None, 500))[0]


def _one_step(db, clock, **authored):
    return schedule(db, clock.now(), document([[{**step("world.spawn", npc="scarecrow"), **authored}]]))


def _dispatch(db, run_id):
    return [e.detail for e in log_of(db, run_id) if e.kind == "step.dispatch"]


@pytest.mark.parametrize(("answer", "status"), [
    (Answer(200, {"outcome": "done", "resources": [SCARECROW, WEATHER]}), StepStatus.DONE),
    (Answer(200, {"outcome": "refused", "reason": "half done", "resources": [SCARECROW, WEATHER]}), StepStatus.REFUSED),
    (Answer(409, {"reason": "already out", "resources": [SCARECROW, WEATHER]}), StepStatus.REFUSED),
    (Answer(400, {"reason": "partial", "resources": [SCARECROW, WEATHER]}), StepStatus.FAILED),
])
def test_what_an_answer_lists_is_recorded_live_with_its_outcome(db, clock, runner, game_bridge, answer, status):
    game_bridge.script("world.spawn", answer)
    run = _one_step(db, clock, on_failure="skip")
    tick(runner)
    [spawn] = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))
    assert spawn.status is status
    weather, scarecrow = ledger_of(db, run.id)  # newest first
    assert (scarecrow.kind, scarecrow.resource_id, scarecrow.status) == ("npc", "scarecrow-7", ResourceStatus.LIVE)
    assert scarecrow.revert.public() == SCARECROW["revert"] and scarecrow.step_id == spawn.id
    assert (weather.kind, weather.resource_id, weather.revert) == ("weather", "storm", None)
    assert _dispatch(db, run.id)[-1]["resources"] == 2


def test_an_entry_listed_twice_and_an_answer_read_twice_record_one_resource(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(503, {"resources": [SCARECROW]}),
                       Answer(200, {"resources": [SCARECROW, SCARECROW]}))
    run = _one_step(db, clock)
    tick(runner)
    clock.advance(60)
    tick(runner)
    assert [r.resource_id for r in ledger_of(db, run.id)] == ["scarecrow-7"]


@pytest.mark.parametrize(("listed", "problem"), [
    ("scarecrow", "resources: a list, not str"),
    ([SCARECROW, {"kind": "npc"}], "resources[1].id: a string of 1 to 191 characters"),
    ([{"kind": "k" * 41, "id": "x"}], "resources[0].kind: a string of 1 to 40 characters"),
    ([{"kind": "npc", "id": "x", "colour": "red"}], "resources[0].colour: a resource takes only kind, id and revert"),
    ([{"kind": "npc", "id": "x", "revert": {"action": "core.wait", "params": {"seconds": 1}}}],
     "resources[0].revert.action: 'core.wait' is neither a module action (module.name) nor core.cue"),
    ([{"kind": "npc", "id": "x", "revert": {"action": "world.despawn", "params": {"p": "x" * 17000}}}],
     "resources[0].revert.params: larger than 16384 bytes"),
    ([{"kind": "npc", "id": "x", "revert": {"action": "core.cue", "params": {}}}],
     "resources[0].revert.params.instruction is required"),  # said as what to send
    ([WEATHER] * 101, "resources: at most 100 entries, not 101"),
])
def test_a_bad_list_records_nothing_leaves_the_outcome_and_degrades_the_run(db, clock, runner, game_bridge, listed, problem):
    game_bridge.script("world.spawn", Answer(200, {"outcome": "done", "resources": listed}))
    run = _one_step(db, clock)
    tick(runner)
    assert ledger_of(db, run.id) == []
    [spawn] = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))
    assert spawn.status is StepStatus.DONE
    after = run_row(db, run.id)
    assert after.status is RunStatus.COMPLETED and after.health is Health.DEGRADED
    assert problem in after.last_error
    assert _dispatch(db, run.id)[-1]["resources_refused"].startswith(problem.split(":")[0])


def test_exactly_the_documented_maximum_of_resources_in_an_answer_is_recorded_and_one_more_is_refused(
        db, clock, runner, game_bridge):
    def crows(count):
        return [{"kind": "npc", "id": f"crow-{n}", "revert": {"action": "world.despawn", "params": {"npc": f"crow-{n}"}}}
                for n in range(count)]

    game_bridge.script("world.spawn", Answer(200, {"resources": crows(ledger.MAX_RESOURCES)}),
                       Answer(200, {"resources": crows(ledger.MAX_RESOURCES + 1)}))
    run = schedule(db, clock.now(), document([[step("world.spawn", npc="crows"), step("world.spawn", npc="more")]]))
    tick(runner)
    assert ledger.MAX_RESOURCES == 100  # docs/contract.md and docs/definitions.md say "at most 100"
    assert len(ledger_of(db, run.id)) == 100
    full, over = _dispatch(db, run.id)
    assert full["resources"] == 100 and "resources_refused" not in full
    assert over["resources_refused"] == "resources: at most 100 entries, not 101"
    assert run_row(db, run.id).health is Health.DEGRADED


def test_a_static_revert_records_the_done_step_itself(db, clock, runner, game_bridge):
    revert = {"action": "world.clear_weather", "params": {"zone": "north"}}
    run = _one_step(db, clock, revert=revert)
    tick(runner)
    [spawn] = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))
    [recorded] = ledger_of(db, run.id)
    assert (recorded.kind, recorded.resource_id, recorded.revert.public()) == ("world.spawn", spawn.idempotency_key, revert)


def test_a_step_that_fails_records_no_static_resource(db, clock, runner, game_bridge):
    game_bridge.script("world.spawn", Answer(400, {"reason": "no"}))
    run = _one_step(db, clock, revert={"action": "world.clear_weather"}, on_failure="skip")
    tick(runner)
    assert ledger_of(db, run.id) == []


def test_a_definitions_static_revert_is_checked_like_a_listed_one():
    doc = document([[{**step("world.spawn"), "revert": {"action": "core.announce", "params": {"message": "x"}}}]])
    with pytest.raises(Invalid) as refused:
        validate(doc)
    assert refused.value.messages == [
        "document.phases[0].steps[0].revert.action: 'core.announce' is neither a module action (module.name) nor core.cue"]
    kept = validate(document([[{**step("world.spawn"), "revert": {"action": "core.cue", "params": {"instruction": "mop up"}}}]]))
    assert kept["phases"][0]["steps"][0]["revert"] == {"action": "core.cue", "params": {"instruction": "mop up"}}


def test_an_answer_without_a_list_is_no_list():
    assert ledger.listed({"outcome": "done"}) == ((), None)
    assert ledger.listed(None) == ((), None)
    assert ledger.listed({"resources": []}) == ((), None)


def _held(db, run_id: int, n: int) -> None:
    """`n` resources the run recorded before (an earlier step's, by SQL: the cap is larger than a test's answers)."""
    db.autocommit(lambda tx: tx.execute(
        """INSERT INTO event_run_resources (run_id, step_id, kind, resource_id, recorded_at, changed_at)
           SELECT %s, 0, 'mark', CONCAT('earlier-', seq), NOW(6), NOW(6) FROM seq_1_to_100000 WHERE seq <= %s""", (run_id, n)))


def _marks(prefix: str, n: int) -> list[dict]:
    return [{"kind": "mark", "id": f"{prefix}-{i}"} for i in range(n)]


def _count(db, run_id: int) -> int:
    return db.autocommit(lambda tx: tx.scalar("SELECT COUNT(*) FROM event_run_resources WHERE run_id = %s", (run_id,)))


def test_a_run_records_exactly_its_cap_and_the_answer_past_it_is_refused_whole_naming_the_step(db, clock, runner, game_bridge):
    cap = ledger.MAX_RUN_RESOURCES
    game_bridge.script("world.spawn", Answer(200, {"resources": _marks("a", ledger.MAX_RESOURCES)}),
                       Answer(200, {"resources": _marks("b", 1)}))
    run = schedule(db, clock.now(), document([[step("world.spawn"), step("world.spawn")]]))
    _held(db, run.id, cap - ledger.MAX_RESOURCES)
    tick(runner)
    first, second = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))
    assert _count(db, run.id) == cap  # the first answer took the run exactly to its cap
    assert first.status is second.status is StepStatus.DONE  # the refused list leaves the outcome as the game gave it
    assert [r.resource_id for r in ledger_of(db, run.id)[:1]] == ["a-99"]  # nothing of the second answer
    after = run_row(db, run.id)
    assert after.health is Health.DEGRADED and after.status is RunStatus.COMPLETED
    assert after.last_error == (f"Run {run.id} · Phase 1 · step 2 (world.spawn) listed resources the ledger refused:"
                                " resources: a run records at most 10,000; it holds 10,000 and these 1 would make 10,001")
    assert [d.get("resources", d.get("resources_refused")) for d in _dispatch(db, run.id)] == [
        ledger.MAX_RESOURCES, "resources: a run records at most 10,000; it holds 10,000 and these 1 would make 10,001"]


def test_an_answer_read_again_at_the_cap_adds_nothing_and_is_not_refused(db, clock):
    """A step's answer recorded again (a retried step, a late answer) counts the run's rows besides its own."""
    run = schedule(db, clock.now(), document([[step("world.spawn")]]))
    _held(db, run.id, ledger.MAX_RUN_RESOURCES - 10)
    listed = [ledger.Listed("mark", f"a-{i}", None) for i in range(10)]
    first = db.transaction(lambda tx: resources.record(tx, run.id, 7, listed, clock.now()))
    again = db.transaction(lambda tx: resources.record(tx, run.id, 7, listed + listed[:3], clock.now()))
    past = db.transaction(lambda tx: resources.record(tx, run.id, 7, [*listed, ledger.Listed("mark", "A-0", None)], clock.now()))
    assert (first, again) == (resources.Recorded(10), resources.Recorded(0))
    assert past == resources.Recorded(0, "resources: a run records at most 10,000; it holds 9,990 and these 11 would make 10,001")
    # Its own rows are told apart as bytes, as they are stored: A-0 is not a-0 read again.
    other = db.transaction(lambda tx: resources.record(tx, run.id, 7, [ledger.Listed("mark", "A-0", None)], clock.now()))
    assert other == resources.Recorded(0, "resources: a run records at most 10,000; it holds 10,000 and these 1 would make 10,001")
    assert _count(db, run.id) == ledger.MAX_RUN_RESOURCES


def test_two_answers_racing_to_the_cap_are_serialised_the_second_refused(db, clock):
    """The guard's count is a locking read: the second answer waits for the first's transaction and counts its
    rows (a plain snapshot read would let both in, past the cap)."""
    run = schedule(db, clock.now(), document([[step("world.spawn")]]))
    _held(db, run.id, ledger.MAX_RUN_RESOURCES - 60)
    first_in, release = threading.Event(), threading.Event()
    answers: dict[str, resources.Recorded] = {}

    def record(name: str, hold: bool) -> None:
        def work(tx):
            answers[name] = resources.record(tx, run.id, 1 if hold else 2, [ledger.Listed("npc", f"{name}-{i}", None)
                                                                        for i in range(50)], clock.now())
            if hold:
                first_in.set()
                assert release.wait(30)
        db.transaction(work)

    first = threading.Thread(target=record, args=("first", True))
    first.start()
    assert first_in.wait(30)
    second = threading.Thread(target=record, args=("second", False))
    second.start()
    # Once the second answer's INSERT is on the server (and not over), the first commits.
    sent = """SELECT COUNT(*) FROM information_schema.PROCESSLIST
               WHERE db = DATABASE() AND info LIKE 'INSERT IGNORE INTO event_run_resources%%'"""
    deadline = time.monotonic() + 30
    while second.is_alive() and not db.autocommit(lambda tx: tx.scalar(sent)) and time.monotonic() < deadline:
        time.sleep(0.01)
    release.set()
    first.join(30)
    second.join(30)
    assert answers["first"] == resources.Recorded(50)
    assert answers["second"] == resources.Recorded(0, "resources: a run records at most 10,000; it holds 9,990 and these 50"
                                                      " would make 10,040")
    assert _count(db, run.id) == ledger.MAX_RUN_RESOURCES - 10


def test_runs_settling_together_each_record_what_their_spawn_created(db, clock, game_bridge):
    """Eight tick workers settle eight spawns at once, round after round: each answer's resource is recorded. Two
    INSERT … SELECT into the ledger deadlock on its AUTO-INC lock against each other's gap locks, which MariaDB
    reports as 1467 rather than 1213; before that was re-run like any deadlock, about a third of the outcomes were
    written without their resources, and a cancel's cleanup could not undo what those runs left in the world."""
    game_bridge.respond("world.spawn", lambda asked: Answer(200, {"outcome": "done", "resources": [
        {"kind": "npc", "id": f"scarecrow-{asked.json['step_id']}", "revert": {"action": "world.despawn", "params": {}}}]}))
    workers = make_runner(db, clock, game_bridge, concurrency=8)
    started = []
    try:
        for _ in range(10):
            started += [schedule(db, clock.now(), document([[step("world.spawn")]])) for _ in range(8)]
            tick(workers)
    finally:
        workers.close()
    unrecorded = [run.id for run in started if _count(db, run.id) != 1]
    refused = [d["resources_refused"] for run in started for d in _dispatch(db, run.id) if "resources_refused" in d]
    assert (unrecorded, refused) == ([], [])
