"""event_engine_state: the one awake/asleep row, moved only by compare-and-set.

- `awake`: the tick's minute rule is on, an invocation is running or due.
- `asleep`: the rule is off; at most a one-time wake-up is scheduled (`sleeps_until`).
- `waking`: something created work while the deployment slept and nudged the tick;
  the tick that starts moves the row to awake and turns the rule back on.
"""

from __future__ import annotations

from datetime import datetime

from ...db import Tx


def state(tx: Tx) -> str:
    return tx.scalar("SELECT state FROM event_engine_state WHERE id = 1")


def fall_asleep(tx: Tx, now: datetime, until: datetime | None) -> bool:
    """awake -> asleep; False if the row was not awake (another tick, or work came first)."""
    return (
        tx.execute(
            """UPDATE event_engine_state SET state = 'asleep', changed_at = %s, sleeps_until = %s
                WHERE id = 1 AND state = 'awake'""",
            (now, until),
        )
        == 1
    )


def wake(tx: Tx, now: datetime) -> bool:
    """asleep -> waking (work was created); True only for the caller that moved it, who nudges the tick."""
    return (
        tx.execute(
            "UPDATE event_engine_state SET state = 'waking', changed_at = %s, sleeps_until = NULL WHERE id = 1 AND state = 'asleep'",
            (now,),
        )
        == 1
    )


def up(tx: Tx, now: datetime) -> bool:
    """asleep or waking -> awake (a tick started); True if it was not awake, so the minute rule must go back on."""
    return (
        tx.execute(
            "UPDATE event_engine_state SET state = 'awake', changed_at = %s, sleeps_until = NULL WHERE id = 1 AND state <> 'awake'",
            (now,),
        )
        == 1
    )


def back_to_sleep(tx: Tx, now: datetime) -> bool:
    """waking -> asleep: the nudge could not be sent, so the next work created tries again."""
    return (
        tx.execute(
            "UPDATE event_engine_state SET state = 'asleep', changed_at = %s WHERE id = 1 AND state = 'waking'",
            (now,),
        )
        == 1
    )
