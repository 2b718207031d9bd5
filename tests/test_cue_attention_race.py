"""Two real `tick` processes work the same parked cues on the real database: every reminder is claimed by
exactly one of them (the compare-and-set on its moment), so each cue gets exactly `remind_limit` reminders,
each posted once under its own key."""

import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from chalicelib.db import DatabaseClock
from chalicelib.events.store import steps
from devtools.kit.game_bridge import Answer
from tests.support.factory import document
from tests.support.runner_kit import ROOT, log_of, schedule, step

CUES = 6
LIMIT = 2
EVERY = 5  # the shortest reminder interval a cue may have


def _ticking(receiver_url: str) -> subprocess.Popen:
    env = {**os.environ, "CUE_CHANNEL": f"webhook:{receiver_url}/hooks/cue", "WEBHOOK_SECRET": "hook-secret",
           "EVENT_TICK_CONCURRENCY": "2", "EVENT_ESCALATE_AFTER_SECONDS": "0"}
    return subprocess.Popen([sys.executable, "-m", "chalicelib", "tick"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow  # two whole `tick` processes over half a minute of real time
def test_two_tick_processes_post_each_reminder_exactly_once(db, game_bridge):
    game_bridge.default = Answer(204, "")
    clock = DatabaseClock(db)
    cue = step("core.cue", instruction="Light the bonfire", remind_after_seconds=EVERY, remind_limit=LIMIT)
    runs = [schedule(db, clock.now(), document([[cue]])) for _ in range(CUES)]
    processes = [_ticking(game_bridge.url) for _ in range(2)]
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            parked = [s for run in runs for s in db.autocommit(lambda tx, r=run: steps.list_for_run(tx, r.id))]
            if len(parked) == CUES and all(s.reminders_sent == LIMIT for s in parked):
                break
            time.sleep(0.5)
        time.sleep(2 * EVERY)  # room for a duplicate to show, were there one
    finally:
        for process in processes:
            process.send_signal(signal.SIGINT)
        outputs = [process.communicate(timeout=60) for process in processes]
    for process, (_, err) in zip(processes, outputs, strict=True):
        assert process.returncode in (0, -signal.SIGINT, 130), err[-2000:]
    reminders = [r.headers["idempotency-key"] for r in game_bridge.received() if r.headers["x-event-kind"] == "reminder"]
    assert len(reminders) == CUES * LIMIT, Counter(reminders)
    assert len(set(reminders)) == len(reminders), "a reminder was posted twice"
    for run in runs:
        rows = [e.detail["n"] for e in log_of(db, run.id) if e.kind == "step.reminder"]
        assert rows == [1, 2]
