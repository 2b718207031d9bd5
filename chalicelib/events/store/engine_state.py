"""event_engine_state: the one awake/asleep row, moved only by compare-and-set on its epoch.

- `awake`: the tick's minute rule is on, an invocation is running or due.
- `asleep`: the rule is off, or may be: the one-time wake-up and its backstop of the
  sleep `wake_ups` stand (`sleeps_until` is the wake-up's target).
- `waking`: something created work while the deployment slept and nudged the tick;
  the tick that starts turns the rule back on, then moves the row to awake.

The invariant the row keeps with AWS: **the row is awake only while the minute rule
is on.** Whoever may turn the rule off commits a state other than awake first, and
whoever moves the row to awake turned the rule on first. Every change raises `epoch`
by one, and every move that follows an AWS call is a compare-and-set on the epoch it
read before that call: of a tick going to sleep and a tick waking, exactly one wins
the row, and the other knows it lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ...db import Tx, must_exist


@dataclass(frozen=True)
class EngineState:
    state: str
    epoch: int
    changed_at: datetime
    sleeps_until: datetime | None
    wake_ups: int | None  # the sleep whose wake-up schedules stand (named after it)


def read(tx: Tx) -> EngineState:
    row = must_exist(tx.one("SELECT state, epoch, changed_at, sleeps_until, wake_ups FROM event_engine_state WHERE id = 1"))
    return EngineState(row["state"], int(row["epoch"]), row["changed_at"], row["sleeps_until"],
                       None if row["wake_ups"] is None else int(row["wake_ups"]))


def state(tx: Tx) -> str:
    return tx.scalar("SELECT state FROM event_engine_state WHERE id = 1")


def fall_asleep(tx: Tx, now: datetime, until: datetime) -> int | None:
    """awake -> asleep; the sleep's epoch (its wake-ups are named after it), or None if the row was not awake."""
    # guard: fall-asleep-from-any-state
    moved = tx.execute(
        """UPDATE event_engine_state SET state = 'asleep', changed_at = %s, sleeps_until = %s,
                  epoch = epoch + 1, wake_ups = epoch
            WHERE id = 1 AND state = 'awake'""",
        (now, until),
    )
    return tx.scalar("SELECT epoch FROM event_engine_state WHERE id = 1") if moved == 1 else None


def stay_asleep(tx: Tx, now: datetime, epoch: int, until: datetime) -> bool:
    """asleep -> asleep, once the rule is off: False if anyone moved the row since the sleep began (epoch)."""
    # guard: stay-asleep-without-its-epoch
    return (
        tx.execute(
            """UPDATE event_engine_state SET changed_at = %s, sleeps_until = %s, epoch = epoch + 1
                WHERE id = 1 AND state = 'asleep' AND epoch = %s""",
            (now, until, epoch),
        )
        == 1
    )


def wake(tx: Tx, now: datetime, stale_before: datetime) -> int | None:
    """asleep -> waking (work was created), or waking again once the last nudge is older than
    `stale_before` (it was lost); the nudge's epoch for the one caller that moved it, who nudges the tick."""
    # guard: nudge-from-any-state
    moved = tx.execute(
        """UPDATE event_engine_state SET state = 'waking', changed_at = %s, epoch = epoch + 1
            WHERE id = 1 AND (state = 'asleep' OR (state = 'waking' AND changed_at < %s))""",
        (now, stale_before),
    )
    return tx.scalar("SELECT epoch FROM event_engine_state WHERE id = 1") if moved == 1 else None


def up(tx: Tx, now: datetime, epoch: int) -> bool:
    """asleep or waking -> awake, once the rule is on: False if anyone moved the row since it was read (epoch)."""
    # guard: wake-without-its-epoch
    return (
        tx.execute(
            """UPDATE event_engine_state SET state = 'awake', changed_at = %s, sleeps_until = NULL, epoch = epoch + 1
                WHERE id = 1 AND state <> 'awake' AND epoch = %s""",
            (now, epoch),
        )
        == 1
    )


def call_off(tx: Tx, now: datetime, sleep: int) -> bool:
    """asleep or waking -> awake while the rule is still on (the sleep `sleep` is called off before its rule
    went off); False if the row is awake or a later sleep holds it."""
    # guard: called-off-sleep-wakes-a-later-sleep
    return (
        tx.execute(
            """UPDATE event_engine_state SET state = 'awake', changed_at = %s, sleeps_until = NULL, epoch = epoch + 1
                WHERE id = 1 AND state <> 'awake' AND wake_ups = %s""",
            (now, sleep),
        )
        == 1
    )


def back_to_sleep(tx: Tx, now: datetime, epoch: int) -> bool:
    """waking -> asleep: the nudge (of `epoch`) could not be sent, or its tick could not turn the rule
    on, so the next work created nudges again at once."""
    return (
        tx.execute(
            """UPDATE event_engine_state SET state = 'asleep', changed_at = %s, epoch = epoch + 1
                WHERE id = 1 AND state = 'waking' AND epoch = %s""",
            (now, epoch),
        )
        == 1
    )


def asleep_again(tx: Tx, now: datetime, epoch: int, until: datetime) -> int | None:
    """awake -> asleep when the rule may be off and could not be turned back on; the new sleep's epoch."""
    moved = tx.execute(
        """UPDATE event_engine_state SET state = 'asleep', changed_at = %s, sleeps_until = %s,
                  epoch = epoch + 1, wake_ups = epoch
            WHERE id = 1 AND epoch = %s""",
        (now, until, epoch),
    )
    return tx.scalar("SELECT epoch FROM event_engine_state WHERE id = 1") if moved == 1 else None

