"""event_runs, what overlaps: the runs of a definition already under way when another of it falls due, and a
run queued behind one of them (`overlap: queue_one`).

The invariant: a run is queued only while it is scheduled and no other run of its definition waits so, both
held in the UPDATE's WHERE, so two runs falling due at once never both wait; a queued run starts once the runs
before it are over however late (`scheduled.start_within_grace`), and is looked at every `wake.QUEUE_POLL_SECONDS`
meanwhile (`wake.TIMERS`).
"""

from __future__ import annotations

from ....db import Tx, placeholders
from ...lifecycle import LIVE_RUN, RunSQL, RunStatus

UNDER_WAY = tuple(s for s in LIVE_RUN if s is not RunStatus.SCHEDULED)  # started, and not over
# The live runs (not dry runs) of a definition under way beside a run: (definition id, run id, *UNDER_WAY).
UNDER_WAY_BESIDE = (f"""SELECT id FROM event_runs
                         WHERE definition_id = %s AND id <> %s AND mode = {RunSQL.LIVE}
                           AND status IN ({placeholders(len(UNDER_WAY))})""")  # noqa: S608 — the mode is lifecycle's rendering; values are parameters


def under_way_beside(definition_id: int, run_id: int) -> tuple[object, ...]:
    """UNDER_WAY_BESIDE's parameters."""
    return (definition_id, run_id, *(s.value for s in UNDER_WAY))


def under_way(tx: Tx, definition_id: int, run_id: int) -> list[int]:
    """The live runs of the definition (not dry runs) under way beside `run_id`, oldest first."""
    rows = tx.all(f"{UNDER_WAY_BESIDE} ORDER BY id", under_way_beside(definition_id, run_id))
    return [row["id"] for row in rows]


def queued_behind(tx: Tx, run_id: int) -> int | None:
    """The run `run_id` was queued behind, if it was."""
    return tx.scalar("SELECT queued_behind FROM event_runs WHERE id = %s", (run_id,))


def waiting_in_line(tx: Tx, definition_id: int, run_id: int) -> int | None:
    """The scheduled run of the definition that waits behind a run under way (queue_one), other than `run_id`."""
    return tx.scalar(
        f"""SELECT id FROM event_runs WHERE definition_id = %s AND status = {RunSQL.SCHEDULED}
              AND queued_behind IS NOT NULL AND id <> %s LIMIT 1""",  # noqa: S608 — the status is lifecycle's rendering; values are parameters
        (definition_id, run_id),
    )


def queue(tx: Tx, run_id: int, definition_id: int, behind: int) -> bool:
    """Queue the scheduled run behind `behind`; False when it is no longer scheduled or another run of its
    definition already waits."""
    # guard: a-second-occurrence-queues-too
    return tx.execute(
        f"""UPDATE event_runs SET queued_behind = %s
             WHERE id = %s AND status = {RunSQL.SCHEDULED} AND queued_behind IS NULL
               AND NOT EXISTS (SELECT 1 FROM (SELECT id FROM event_runs
                                               WHERE definition_id = %s AND status = {RunSQL.SCHEDULED}
                                                 AND queued_behind IS NOT NULL) AS waiting)""",  # noqa: S608 — the status is lifecycle's rendering; values are parameters
        (behind, run_id, definition_id),
    ) == 1
