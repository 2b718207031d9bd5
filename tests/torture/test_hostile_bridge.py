"""R9: a hostile game side under four worker processes: drips, huge answers, interim 1xx answers and deep JSON.

The loopback game side records when each request opened and closed at its end.
Dispatches have one overall deadline (the bridge timeout, a quarter of the
lease) and a 1 MB answer cap, so: every step ends with the outcome its answers
deserve, no tick runs past its hard deadline, no idempotency key ever has two
attempts open at the game side at once, every socket a dispatcher gave up on is
closed by its deadline, and no worker grows past 256 MB however large the
answers.
"""

import json
from collections import Counter, defaultdict

from chalicelib.outbound import MAX_ANSWER_BYTES
from devtools.kit.game_bridge import Answer, deep, dripping, huge
from tests.support.torture import TickFleet, audit, document_of, schedule_runs, sized, unfinished_runs, wait_until

WORKERS = 4
RUNS_PER_KIND = sized(5, 50)
HUGE_MEGABYTES = sized(300, 600)
LEASE_SECONDS = 4
BRIDGE_TIMEOUT = LEASE_SECONDS / 4
SOCKET_SLACK = 0.5  # the game side notices a hang-up within its 50 ms poll; the rest is a loaded machine
PEAK_RSS_MB = 256

ANSWERS = {
    "drip": lambda request: dripping(every=0.4) if request.json["attempt"] == 1 else Answer(),  # ~32 s of body
    "huge": lambda request: huge(HUGE_MEGABYTES),  # no Content-Length: only the cap stops the reading
    "interim": lambda request: Answer(200, {"outcome": "done"}, interim=(100, 103)),
    "deep": lambda request: deep(),
}
# Each kind's dispatches, as (attempt, outcome, error) in its step's log: one step of each kind went through exactly these.
DISPATCHES = {
    "drip": [(1, "retry", "timed out: no complete answer within 1s"), (2, "done", None)],
    "huge": [(1, "failed", f"malformed answer: larger than the {MAX_ANSWER_BYTES:,}-byte answer cap")],
    "interim": [(1, "done", None)],
    "deep": [(1, "failed", "malformed answer: JSON nested too deeply")],
}
ENDS = {"drip": "done", "huge": "failed", "interim": "done", "deep": "failed"}


def test_a_hostile_game_side_holds_no_tick_no_lease_and_no_memory(db, db_params, game_bridge, tmp_path):
    for kind, answer_for in ANSWERS.items():
        game_bridge.respond(f"world.{kind}", answer_for)
        step = {"action": f"world.{kind}", "params": {}, "on_failure": "skip"}
        schedule_runs(db, document_of([[step]]), RUNS_PER_KIND)
    with TickFleet(tmp_path, db_params.url(), game_bridge, EVENT_STEP_LEASE_SECONDS=str(LEASE_SECONDS),
                   EVENT_STEP_RETRY_SECONDS="1", EVENT_TICK_CONCURRENCY=str(WORKERS)) as fleet:
        fleet.start(WORKERS)
        wait_until(lambda: unfinished_runs(db) == 0, timeout=sized(120, 600), what="every run finished")
        fleet.stop()

    steps = db.autocommit(lambda tx: tx.all("SELECT id, action_id, status FROM event_run_steps"))
    assert Counter((s["action_id"], s["status"]) for s in steps) == Counter(
        {(f"world.{kind}", status): RUNS_PER_KIND for kind, status in ENDS.items()})
    rows = db.autocommit(lambda tx: tx.all("SELECT step_id, detail FROM event_run_log WHERE kind = 'step.dispatch' ORDER BY id"))
    story = defaultdict(list)
    for row in rows:
        detail = json.loads(row["detail"])
        story[row["step_id"]].append((detail["attempt"], detail["outcome"], detail.get("error")))
    assert Counter((s["action_id"], tuple(story[s["id"]])) for s in steps) == Counter(
        {(f"world.{kind}", tuple(dispatches)): RUNS_PER_KIND for kind, dispatches in DISPATCHES.items()})
    deliveries = Counter(r.headers["idempotency-key"] for r in game_bridge.received())
    assert sorted(Counter(deliveries.values()).items()) == [(1, 3 * RUNS_PER_KIND), (2, RUNS_PER_KIND)]

    assert game_bridge.overlapping_attempts() == []
    open_for = [r.closed_at - r.at for r in game_bridge.received() if r.closed_at is not None]
    assert len(open_for) == len(game_bridge.received()) and max(open_for) < BRIDGE_TIMEOUT + SOCKET_SLACK

    ticks = fleet.ticks()
    late = [t for t in ticks if t["seconds"] > t["hard_seconds"]]
    assert late == [], f"{len(late)} of {len(ticks)} ticks ran past their hard deadline"
    assert fleet.failed_ticks() == [] and fleet.tick_errors() == 0
    peaks = fleet.peak_rss_mb()
    assert len(peaks) == WORKERS and max(peaks) < PEAK_RSS_MB
    assert audit(db) == []
    print(f"\nR9: {len(steps)} steps, {len(game_bridge.received())} requests, {len(ticks)} ticks "
          f"(longest {max(t['seconds'] for t in ticks):.2f} s of {ticks[0]['hard_seconds']:.0f} s), "
          f"longest open request {max(open_for):.2f} s, worker peak RSS {max(peaks):.0f} MB")
