"""Real processes racing for the same steps: each step is claimed exactly once."""

import multiprocessing
from collections import Counter

import pytest

from chalicelib.db import Database
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.store import steps
from tests.support.factory import make_run, materialise, specs

pytestmark = pytest.mark.realtime  # real processes

PROCESSES = 4
RUNS = 30
STEPS_PER_RUN = 10


def _claim_everything(params, run_ids, now, barrier, results):
    db = Database(params)
    barrier.wait()
    won = []
    for run_id in run_ids:
        for candidate in db.autocommit(lambda tx: steps.list_for_phase(tx, run_id, 1)):
            claim = db.autocommit(lambda tx: steps.claim(tx, candidate, now, 60))
            if claim:
                won.append((claim.step_id, claim.attempt))
    results.put(won)


def test_concurrent_claimers_claim_each_step_exactly_once(db, db_params, clock):
    run_ids = []
    for _ in range(RUNS):
        run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
        materialise(db, run, 1, specs(*["world.spawn"] * STEPS_PER_RUN))
        run_ids.append(run.id)
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
    workers = [ctx.Process(target=_claim_everything, args=(db_params, run_ids, clock.now(), barrier, results))
               for _ in range(PROCESSES)]
    for w in workers:
        w.start()
    claims = [c for _ in workers for c in results.get(timeout=120)]
    for w in workers:
        w.join(30)
        assert w.exitcode == 0
    per_step = Counter(step_id for step_id, _ in claims)
    assert len(per_step) == RUNS * STEPS_PER_RUN
    assert set(per_step.values()) == {1}
    assert {attempt for _, attempt in claims} == {1}
    rows = db.autocommit(lambda tx: tx.all("SELECT status, attempts, COUNT(*) AS n FROM event_run_steps GROUP BY status, attempts"))
    assert [(r["status"], r["attempts"], r["n"]) for r in rows] == [("running", 1, RUNS * STEPS_PER_RUN)]
