"""One press finished twice at once (the API's worker and the chat function both finish a slow press), on two
real processes: it takes once, and the second shows the message as the first left it, not a refusal.

Before, the second read the press's message with a plain read before it waited for the run's lock: its
snapshot predated the first's commit, so it did not see the first's Idempotency-Key, its confirm found the cue
no longer parked, and the GM was told "Your press did not take" of a press that took. The interleaving is
forced: the first holds its transaction open (after its command) until the second waits on a lock.
"""

import pytest

from chalicelib.db import Database
from chalicelib.events.chat import interactions
from chalicelib.events.chat.interactions import ChatPress, perform
from chalicelib.events.lifecycle import StepStatus
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.store import steps
from devtools.kit.clock import ManualClock
from tests.support.chat import GM_ROLE, chat_settings
from tests.support.factory import document
from tests.support.interleaved import SPAWN, WAIT, answers_of, until
from tests.support.runner_kit import schedule, step, tick

pytestmark = pytest.mark.realtime  # real processes

MAPPED = frozenset({"gm", "moderator"})


def _first(params, press, now, started, results):
    db, onlooker = Database(params), Database(params)
    shown = interactions._message_of

    def show_then_hold(tx, step, platform, mapped):
        message = shown(tx, step, platform, mapped)
        started.set()
        until(lambda: _the_second_waits_for_a_lock(onlooker), "the second press never waited for the first's locks")
        return message

    interactions._message_of = show_then_hold
    pressing = perform(db, ManualClock(now), press, MAPPED)
    results.put(("first", pressing.refused))


def _second(params, press, now, started, results):
    assert started.wait(WAIT)
    pressing = perform(Database(params), ManualClock(now), press, MAPPED)
    results.put(("second", pressing.refused))


def _the_second_waits_for_a_lock(db: Database) -> bool:
    """The second is in a statement the first's locks hold: its read of the message, or its lock of the run."""
    return bool(db.autocommit(lambda tx: tx.scalar(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()"
        " AND (INFO LIKE '%%FROM event_chat_messages%%' OR INFO LIKE '%%FROM event_runs%%FOR UPDATE%%')")))


def test_a_press_finished_twice_at_once_takes_once_and_neither_half_says_it_did_not_take(db, db_params, clock, chat):
    settings = chat_settings(chat)
    run = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire")]]))
    runner = build_runner(settings, db, clock)
    try:
        tick(runner)
    finally:
        runner.close()
    [cue] = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))
    [message] = chat.messages("discord")
    press = ChatPress("discord", "4242", "mira", ["gm"], run.id, cue.id, "confirm", None, "interaction-1",
                      message.channel_id, message.id, settings.discord_guild_id or "", {})
    assert GM_ROLE in dict(settings.discord_roles)
    started, results = SPAWN.Event(), SPAWN.Queue()
    refusals = answers_of((_first, (db_params, press, clock.now(), started, results)),
                          (_second, (db_params, press, clock.now(), started, results)), results=results)
    assert refusals == {"first": None, "second": None}
    assert db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0].status is StepStatus.DONE
    presses = db.autocommit(lambda tx: tx.scalar(
        "SELECT COUNT(*) FROM event_run_log WHERE run_id = %s AND kind = 'chat.pressed'", (run.id,)))
    assert presses == 1
