"""A tick stops taking work at its budget, leaves nothing held, and the next tick carries on."""

from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.runner import Budget
from tests.support.factory import document
from tests.support.runner_kit import make_runner, schedule, step


def test_a_tick_over_many_due_runs_stops_taking_work_at_its_budget(db, clock, game_bridge):
    for _ in range(40):
        schedule(db, clock.now(), document([[step("world.spawn"), step("world.reward")]]))
    # Time, as the budget sees it, is one second per request the game side has received.
    def requests_so_far() -> float:
        return float(len(game_bridge.received()))

    runner = make_runner(db, clock, game_bridge, concurrency=4)
    try:
        budget = Budget(take_work_until=10, finish_by=1000, monotonic=requests_so_far)
        report = runner.tick(budget)
        assert report.out_of_budget and report.errors == 0
        assert 10 <= report.dispatched <= 10 + runner.concurrency  # only steps already claimed went on
        assert report.dispatched == len(game_bridge.received())

        held = db.autocommit(lambda tx: tx.one(
            "SELECT (SELECT COUNT(*) FROM event_runs WHERE claimed_by IS NOT NULL) AS runs,"
            " (SELECT COUNT(*) FROM event_run_steps WHERE status = 'running') AS steps"))
        assert held == {"runs": 0, "steps": 0}  # nothing left claimed or in flight

        clock.advance(15)
        rest = runner.tick(Budget.for_seconds(60))
    finally:
        runner.close()
    assert not rest.out_of_budget
    statuses = db.autocommit(lambda tx: tx.all("SELECT DISTINCT status FROM event_runs"))
    assert statuses == [{"status": RunStatus.COMPLETED.value}]
    assert report.dispatched + rest.dispatched == 80


def test_a_step_whose_worst_case_would_outrun_the_hard_deadline_is_not_started(db, clock, game_bridge):
    run = schedule(db, clock.now(), document([[step("world.spawn")]]))
    runner = make_runner(db, clock, game_bridge, timeout=5)
    try:
        now = 0.0
        budget = Budget(take_work_until=60, finish_by=now + runner.step_worst_case_seconds - 0.1, monotonic=lambda: now)
        report = runner.tick(budget)
    finally:
        runner.close()
    assert report.out_of_budget and report.dispatched == 0 and report.runs_advanced == 0
    assert game_bridge.received() == []
    assert db.autocommit(lambda tx: tx.one("SELECT status FROM event_runs WHERE id = %s", (run.id,)))["status"] == "scheduled"


def test_a_tick_is_its_chores_in_order_planning_on_half_of_the_time(db, clock, game_bridge):
    from tests.support.runner_kit import make_runner

    runner = make_runner(db, clock, game_bridge)
    try:
        assert [(c.name, c.share) for c in runner.chores()] == [("reclaim", None), ("plan", 0.5), ("walk", None), ("escalate", None)]
        assert [c.name for c in runner.chores(plan=False)] == ["reclaim", "walk", "escalate"]
    finally:
        runner.close()
