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

The three states are `SleepState`, named in this module's SQL only as `SleepSQL`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from ...db import Tx, must_exist
from ..lifecycle import sql_literal


class SleepState(str, Enum):
    """The row's `state` (migration 0009's CHECK holds the same three)."""

    AWAKE = "awake"
    ASLEEP = "asleep"
    WAKING = "waking"


class SleepSQL:
    """The states as SQL, rendered as `lifecycle.RunSQL` renders a status."""

    AWAKE = sql_literal(SleepState.AWAKE)
    ASLEEP = sql_literal(SleepState.ASLEEP)
    WAKING = sql_literal(SleepState.WAKING)


@dataclass(frozen=True)
class EngineState:
    state: SleepState
    epoch: int
    changed_at: datetime
    sleeps_until: datetime | None
    wake_ups: int | None  # the sleep whose wake-up schedules stand (named after it)


def read(tx: Tx) -> EngineState:
    row = must_exist(tx.one("SELECT state, epoch, changed_at, sleeps_until, wake_ups FROM event_engine_state WHERE id = 1"))
    return EngineState(SleepState(row["state"]), int(row["epoch"]), row["changed_at"], row["sleeps_until"],
                       None if row["wake_ups"] is None else int(row["wake_ups"]))


def state(tx: Tx) -> SleepState:
    return SleepState(tx.scalar("SELECT state FROM event_engine_state WHERE id = 1"))


def fall_asleep(tx: Tx, now: datetime, until: datetime) -> int | None:
    """awake -> asleep; the sleep's epoch (its wake-ups are named after it), or None if the row was not awake."""
    # guard: fall-asleep-from-any-state
    moved = tx.execute(
        f"""UPDATE event_engine_state SET state = {SleepSQL.ASLEEP}, changed_at = %s, sleeps_until = %s,
                  epoch = epoch + 1, wake_ups = epoch
            WHERE id = 1 AND state = {SleepSQL.AWAKE}""",  # noqa: S608 — the states are their enum's renderings
        (now, until),
    )
    return tx.scalar("SELECT epoch FROM event_engine_state WHERE id = 1") if moved == 1 else None


def stay_asleep(tx: Tx, now: datetime, epoch: int, until: datetime) -> bool:
    """asleep -> asleep, once the rule is off: False if anyone moved the row since the sleep began (epoch)."""
    # guard: stay-asleep-without-its-epoch
    return (
        tx.execute(
            f"""UPDATE event_engine_state SET changed_at = %s, sleeps_until = %s, epoch = epoch + 1
                WHERE id = 1 AND state = {SleepSQL.ASLEEP} AND epoch = %s""",  # noqa: S608 — the state is its enum's rendering
            (now, until, epoch),
        )
        == 1
    )


def wake(tx: Tx, now: datetime, stale_before: datetime) -> int | None:
    """asleep -> waking (work was created), or waking again once the last nudge is older than
    `stale_before` (it was lost); the nudge's epoch for the one caller that moved it, who nudges the tick."""
    # guard: nudge-from-any-state
    moved = tx.execute(
        f"""UPDATE event_engine_state SET state = {SleepSQL.WAKING}, changed_at = %s, epoch = epoch + 1
            WHERE id = 1 AND (state = {SleepSQL.ASLEEP} OR (state = {SleepSQL.WAKING} AND changed_at < %s))""",  # noqa: S608 — the states are their enum's renderings
        (now, stale_before),
    )
    return tx.scalar("SELECT epoch FROM event_engine_state WHERE id = 1") if moved == 1 else None


def up(tx: Tx, now: datetime, epoch: int) -> bool:
    """asleep or waking -> awake, once the rule is on: False if anyone moved the row since it was read (epoch)."""
    # guard: wake-without-its-epoch
    return (
        tx.execute(
            f"""UPDATE event_engine_state SET state = {SleepSQL.AWAKE}, changed_at = %s, sleeps_until = NULL, epoch = epoch + 1
                WHERE id = 1 AND state <> {SleepSQL.AWAKE} AND epoch = %s""",  # noqa: S608 — the state is its enum's rendering
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
            f"""UPDATE event_engine_state SET state = {SleepSQL.AWAKE}, changed_at = %s, sleeps_until = NULL, epoch = epoch + 1
                WHERE id = 1 AND state <> {SleepSQL.AWAKE} AND wake_ups = %s""",  # noqa: S608 — the state is its enum's rendering
            (now, sleep),
        )
        == 1
    )


def back_to_sleep(tx: Tx, now: datetime, epoch: int) -> bool:
    """waking -> asleep: the nudge (of `epoch`) could not be sent, or its tick could not turn the rule
    on, so the next work created nudges again at once."""
    return (
        tx.execute(
            f"""UPDATE event_engine_state SET state = {SleepSQL.ASLEEP}, changed_at = %s, epoch = epoch + 1
                WHERE id = 1 AND state = {SleepSQL.WAKING} AND epoch = %s""",  # noqa: S608 — the states are their enum's renderings
            (now, epoch),
        )
        == 1
    )


def asleep_again(tx: Tx, now: datetime, epoch: int, until: datetime) -> int | None:
    """awake -> asleep when the rule may be off and could not be turned back on; the new sleep's epoch."""
    moved = tx.execute(
        f"""UPDATE event_engine_state SET state = {SleepSQL.ASLEEP}, changed_at = %s, sleeps_until = %s,
                  epoch = epoch + 1, wake_ups = epoch
            WHERE id = 1 AND epoch = %s""",  # noqa: S608 — the state is its enum's rendering
        (now, until, epoch),
    )
    return tx.scalar("SELECT epoch FROM event_engine_state WHERE id = 1") if moved == 1 else None

