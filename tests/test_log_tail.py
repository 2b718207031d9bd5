"""A reader tailing a run's log by `after_id` (the console's live log, any API client) reads every row, whatever
commits meanwhile: a run's rows commit in the order of their ids (each is appended under its run's row lock),
so no row commits behind a higher one a reader has already passed."""

import threading

import pytest

from chalicelib.db import DatabaseClock
from chalicelib.events import commands
from chalicelib.events.views.runs import log_page
from tests.support.factory import document
from tests.support.interference import LOCK_WAITS_EVERY, lock_waits, log_rows_held
from tests.support.interleaved import until
from tests.support.runner_kit import log_of, schedule, step, tick_process

pytestmark = pytest.mark.realtime  # a real tick process

TWO_STEPS = document([[step("world.spawn"), step("world.reward")]])


def test_a_tick_row_committing_after_a_persons_press_is_still_read_by_a_reader_tailing_the_log(db, game_bridge):
    clock = DatabaseClock(db)
    run = schedule(db, clock.now(), TWO_STEPS)
    read: list[int] = []

    def tail(after_id: int) -> int:
        """One look of a tailing reader, through the API's view: the id it asks after next."""
        entries = log_page(db, run.id, {"after_id": after_id, "limit": 1000})["entries"]
        read.extend(entry["id"] for entry in entries)
        return max([after_id, *read])

    first_step_done = (f"NEW.run_id = {run.id} AND NEW.kind = 'step.status'"
                       " AND JSON_VALUE(NEW.detail, '$.to') = 'done'")
    with log_rows_held(db, first_step_done) as release:
        process = tick_process(game_bridge.url)
        # The tick's unit has written its row (it has an id) and waits, its transaction open.
        until(lambda: lock_waits(db) == 1, "the tick's row of its first step's end to wait at the gate",
              LOCK_WAITS_EVERY)
        press = threading.Thread(target=commands.pause, args=(db, run.id),
                                 kwargs={"actor": "mod-mia", "now": clock.now(), "reason": "mid-unit"})
        press.start()
        until(lambda: not press.is_alive() or lock_waits(db) == 2, "the pause to commit or wait", LOCK_WAITS_EVERY)
        after_id = tail(0)  # what a console polling now reads
        release()
        press.join(60)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err[-2000:]
    tail(after_id)  # and its next poll

    every_row = [entry.id for entry in log_of(db, run.id)]
    assert any(entry.kind == "run.status" and entry.actor == "mod-mia" for entry in log_of(db, run.id))
    assert sorted(read) == every_row, f"rows never read by the tail: {sorted(set(every_row) - set(read))}"
