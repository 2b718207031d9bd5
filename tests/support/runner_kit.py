"""What the runner's tests share: a scripted game bridge, a runner wired to it, runs, the log.

Fixtures are imported by name into the test modules that use them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from chalicelib.db import Database, Tx, must_exist
from chalicelib.events.actions.outcome import Outcome
from chalicelib.events.actions.perform import Actions
from chalicelib.events.adapters.bridge import BridgeClient
from chalicelib.events.model import Claim, LogEntry, Run, Step
from chalicelib.events.runner import Budget, Rules, Runner, TickReport
from chalicelib.events.runner.outcomes import Applied, settle_outcome
from chalicelib.events.store import log, runs
from devtools.kit.clock import ManualClock
from devtools.kit.game_bridge import SECRET, GameBridge
from tests.support.factory import make_definition

RULES = Rules(lease_seconds=120, max_attempts=3, retry_seconds=30)
ROOT = Path(__file__).resolve().parents[2]
LEASE = 8  # of tick processes: short, so crash tests see it expire


def apply_outcome(tx: Tx, step: Step, claim: Claim, outcome: Outcome, now: datetime, rules: Rules) -> Applied:
    """An outcome and its log rows, in `tx`: what the runner's unit of work does for a dispatched step."""
    applied, log_rows = settle_outcome(tx, step, claim, outcome, now, rules)
    log.append_many(tx, log_rows, now)
    return applied


class RecordingChannel:
    timeout = 0.0

    def __init__(self, name: str):
        self.name = name
        self.notices: list = []

    @property
    def posts(self) -> list[str]:
        return [notice.text for notice in self.notices]

    def post(self, notice) -> None:
        self.notices.append(notice)


def make_runner(
    db: Database, clock, bridge: GameBridge | None, *, rules: Rules = RULES, concurrency: int = 2, timeout: float = 5.0,
    asks_status: bool = False,
) -> Runner:
    client = BridgeClient(bridge.url, SECRET, timeout=timeout, asks_status=asks_status) if bridge else None
    actions = Actions(bridge=client, cue_channel=RecordingChannel("cue"), announce_channel=RecordingChannel("announce"))
    return Runner(db, clock, actions, rules, concurrency=concurrency)


def tick(runner: Runner, seconds: float = 60) -> TickReport:
    report = runner.tick(Budget.for_seconds(seconds))
    assert report.errors == 0, "a run raised inside the tick (see the log)"
    return report


def to_post_again(db: Database, now: datetime, run_id: int, step_id: int, *, by_a_person: bool) -> None:
    """A posted notice's step made due again, its run woken: as the sweep of a lost acknowledgement's lease
    leaves it, or (`by_a_person`) as a person's retry does, new attempts allowed from those spent."""
    allowance = ", attempts_allowed_from = attempts" if by_a_person else ""
    db.autocommit(lambda tx: tx.execute(
        f"UPDATE event_run_steps SET status = 'pending', due_at = NULL{allowance} WHERE id = %s", (step_id,)))
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET wake_at = %s WHERE id = %s", (now, run_id)))


def schedule(db: Database, now: datetime, doc: dict, *, scheduled_for: datetime | None = None, grace: int = 300) -> Run:
    """A scheduled run of a new definition, as the API would create it."""
    definition = make_definition(db, now, doc)
    run, _ = db.transaction(
        lambda tx: runs.insert_occurrence(
            tx,
            definition_id=definition.id,
            definition_version=definition.current_version,
            scheduled_for=scheduled_for or now,
            grace_seconds=grace,
            now=now,
        )
    )
    return must_exist(run)


def log_of(db: Database, run_id: int) -> list[LogEntry]:
    return db.autocommit(lambda tx: log.after(tx, run_id, 0, 1000))


def run_story(db: Database, run_id: int) -> list[tuple[str, str]]:
    """The run's status changes in log order, as (from, to)."""
    return [(must_exist(e.detail)["from"], must_exist(e.detail)["to"]) for e in log_of(db, run_id) if e.kind == "run.status"]


def step(action: str, on_failure: str | None = None, **params) -> dict:
    authored = {"action": action, "params": params}
    if on_failure:
        authored["on_failure"] = on_failure
    return authored


@pytest.fixture
def game_bridge():
    with GameBridge() as bridge:
        yield bridge


@pytest.fixture
def runner(db, clock: ManualClock, game_bridge):
    built = make_runner(db, clock, game_bridge)
    yield built
    built.close()


# `python -m chalicelib` with the engine's INFO lines on stderr too (the command itself shows WARNING and up).
SAYING_INFO = ("-c", ("import logging, sys; logging.basicConfig(level=logging.INFO, format='%(message)s'); "
                     "from chalicelib.__main__ import main; sys.exit(main())"))


def tick_process(bridge_url: str, budget_seconds: float = 30, info: bool = False, **env) -> subprocess.Popen:
    """`python -m chalicelib tick --once` against the test database (conftest exported EVENTS_DB_URL); `info`:
    its INFO lines too, for a test that acts on what the tick meets."""
    settings = {
        "GAME_BRIDGE_URL": bridge_url,
        "GAME_BRIDGE_SECRET": SECRET,
        "EVENT_STEP_LEASE_SECONDS": str(LEASE),
        "EVENT_TICK_CONCURRENCY": "2",
        **env,
    }
    return subprocess.Popen(
        [sys.executable, *(SAYING_INFO if info else ("-m", "chalicelib")), "tick", "--once", "--budget", str(budget_seconds)],
        cwd=ROOT, env={**os.environ, **settings}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
