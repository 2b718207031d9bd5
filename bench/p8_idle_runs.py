"""P8: runs that need nobody cost a tick nothing; and what the loop sends while runs are live but none is due.

P8 ticks once over 10,000 live runs that need nobody (half parked at a cue whose
reminders are exhausted, half behind a three-hour wait) plus one due run, and once, interleaved, over
the due run alone: the statements the tick sends (the server's Com_* counters
of every connection it used) and its time. The due run must start in that tick.

Idle: the wake loop over the same 10,000 runs, none due, for a few seconds of
real time: the statements it sends per second: about ten while the parked cues
wait for a person (every 0.1 s, so a press moves its run at once), and about one
(every 0.9 s) once only the waits are left. Asleep, no invocation runs, so it
sends none.
"""

from __future__ import annotations

import time
import uuid

from chalicelib.db import Database, DatabaseClock
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.runner import Budget
from chalicelib.events.runner.loop import Loop
from chalicelib.events.store import definitions, runs
from devtools.kit.counters import STATEMENTS, session_counters

from .harness import Figure, at_most, median, scratch_database
from .workload import make_runner, schedule_backlog

TARGET = 1.2
IDLE_SECONDS = 8.0
IDLE_TARGET, AWAITED_TARGET = 1.15, 11.5  # reads a second: one every 0.9 s, or every 0.1 s while a person is awaited


def load_idle_runs(db: Database, count: int) -> None:
    """`count` running runs needing nobody, in bulk: half parked at a cue, half behind a three-hour wait."""
    now = DatabaseClock(db).now()
    document = {"name": "Idle", "grace_seconds": 3600, "phases": [{"name": "main", "steps": [
        {"action": "core.cue", "params": {"instruction": "wait for it"}},
        {"action": "core.announce", "params": {"message": "after"}}]}], "ending": []}
    definition = db.transaction(lambda tx: definitions.create(tx, document, actor="bench", now=now))

    def load(tx):
        tx.execute(
            f"""INSERT INTO event_runs (definition_id, definition_version, occurrence_key, status, scheduled_for,
                                        grace_seconds, health, current_phase, started_at, created_at, updated_at, wake_at,
                                        waiting_for)
                SELECT %s, 1, CONCAT('idle-', seq), 'running', %s, 3600, 'ok', 1, %s, %s, %s,
                       IF(MOD(seq, 2) = 0, NULL, %s + INTERVAL 3 HOUR), IF(MOD(seq, 2) = 0, 'cue', NULL)
                  FROM seq_1_to_{int(count)}""",
            (definition.id, now, now, now, now, now),
        )
        # Odd runs wait (step 0 done, step 1 due in three hours); even runs are parked at their cue, its three reminders sent.
        tx.execute(
            """INSERT INTO event_run_steps (run_id, phase, seq, action_id, params, idempotency_key, status, attempts,
                                             due_at, started_at, finished_at, reminders_sent)
                SELECT r.id, 1, s.seq, IF(s.seq = 0, 'core.cue', 'core.announce'),
                       IF(s.seq = 0, '{"instruction": "wait for it", "remind_after_seconds": 60, "remind_limit": 3}', '{}'),
                       LEFT(SHA2(CONCAT(r.id, '|', s.seq), 256), 40),
                       CASE WHEN s.seq = 1 THEN 'pending' WHEN r.wake_at IS NULL THEN 'running' ELSE 'done' END,
                       IF(s.seq = 0, 1, 0), IF(s.seq = 1 AND r.wake_at IS NOT NULL, r.wake_at, NULL),
                       IF(s.seq = 0, %s, NULL), IF(s.seq = 0 AND r.wake_at IS NOT NULL, %s, NULL),
                       IF(s.seq = 0 AND r.wake_at IS NULL, 3, 0)
                  FROM event_runs r JOIN seq_0_to_1 s WHERE r.definition_id = %s""",
            (now, now, definition.id),
        )

    db.transaction(load)
    db.autocommit(lambda tx: tx.all("ANALYZE TABLE event_runs, event_run_steps"))


def measured_tick(db: Database) -> tuple[int, float, bool]:
    """(statements, seconds, the due run started) of one tick with one fresh due run, on one worker."""
    run_id = schedule_backlog(db, 1, 2, label=f"p8-{uuid.uuid4().hex[:6]}")[0]
    runner = make_runner(db, concurrency=1)
    try:
        worker_counters = lambda: runner._pool.submit(session_counters, db).result()  # noqa: E731 — the worker's own connection
        before_main, before_worker = session_counters(db), worker_counters()
        started = time.perf_counter()
        runner.tick(Budget.for_seconds(60), plan=False)
        elapsed = time.perf_counter() - started
        after_main, after_worker = session_counters(db), worker_counters()
    finally:
        runner.close()
    sent = sum(after_main.get(k, 0) - before_main.get(k, 0) + after_worker.get(k, 0) - before_worker.get(k, 0)
               for k in STATEMENTS) - 1  # the SHOW of the worker's `after` is not a statement counted here
    run = db.autocommit(lambda tx: runs.get(tx, run_id))
    started_run = run is not None and run.status is not RunStatus.SCHEDULED
    return sent, elapsed, started_run


def answer_the_cues(db: Database) -> None:
    """The parked runs gone (as if their cues were answered and they ended): only the three-hour waits are left."""
    db.transaction(lambda tx: (
        tx.execute("DELETE s FROM event_run_steps s JOIN event_runs r ON r.id = s.run_id WHERE r.waiting_for = 'cue'"),
        tx.execute("DELETE FROM event_runs WHERE waiting_for = 'cue'")))


def idle_reads_per_second(db: Database) -> tuple[float, int]:
    """The wake loop over live runs none of which is due: statements per second of real time, and ticks."""
    runner = make_runner(db, concurrency=1)
    loop = Loop(runner, finish_by=time.monotonic() + IDLE_SECONDS + runner.step_worst_case_seconds, tick_seconds=15)
    try:
        before = session_counters(db)
        started = time.monotonic()
        loop.run()
        elapsed = time.monotonic() - started
        after = session_counters(db)
    finally:
        runner.close()
    # The first tick is the invocation's start (clock, sweep, plan, find_due); after it, only wake reads.
    sent = sum(after.get(k, 0) - before.get(k, 0) for k in STATEMENTS)
    return loop.wake_reads / elapsed, sent


def run(sizes) -> list[Figure]:
    idle_runs = 10_000 if sizes.rounds > 1 else 2_000
    rounds = max(5, sizes.rounds)
    with scratch_database("p8_idle") as crowded, scratch_database("p8_alone") as alone:
        load_idle_runs(crowded, idle_runs)
        with_idle, only_due = [], []
        for _ in range(rounds):  # interleaved, so a noisy neighbour hurts both sides alike
            only_due.append(measured_tick(alone))
            with_idle.append(measured_tick(crowded))
        awaited_per_second, _ = idle_reads_per_second(crowded)
        answer_the_cues(crowded)
        reads_per_second, idle_statements = idle_reads_per_second(crowded)
    if not all(started for _, _, started in with_idle + only_due):
        raise RuntimeError("P8: the due run did not start in its tick")
    print(f"\nP8: statements per tick with {idle_runs:,} idle runs {[s for s, _, _ in with_idle]},"
          f" alone {[s for s, _, _ in only_due]}; seconds {[round(t, 4) for _, t, _ in with_idle]}"
          f" vs {[round(t, 4) for _, t, _ in only_due]}")
    print(f"P8 idle: {reads_per_second:.2f} wake reads/s over {IDLE_SECONDS:.0f} s ({idle_statements} statements"
          f" in all, the first tick's included); {awaited_per_second:.2f}/s while cues wait; asleep: 0 (no invocation runs)")
    print(f"cost inputs: awake and idle, 60 invocations and {reads_per_second * 3600:,.0f} reads an hour;"
          " asleep, 0 and 0 (--idle-wakes-per-month counts only the one-time wake-ups before events)")
    label = f"tick over {idle_runs:,} runs needing nobody + 1 due"
    return [
        Figure("P8", f"{label}: statements", median([s for s, _, _ in with_idle]), "",
               baseline=median([s for s, _, _ in only_due]), baseline_what="(the due run alone)",
               target=at_most(TARGET, ratio=True)),
        Figure("P8", f"{label}: time", median([t for _, t, _ in with_idle]), "s",
               baseline=median([t for _, t, _ in only_due]), baseline_what="(the due run alone)",
               target=at_most(TARGET, ratio=True)),
        Figure("idle", "wake-loop reads per second, runs live, none due, nobody awaited", reads_per_second, "/s",
               target=at_most(IDLE_TARGET)),
        Figure("idle", "wake-loop reads per second, runs live, none due, cues awaited", awaited_per_second, "/s",
               target=at_most(AWAITED_TARGET)),
    ]
