"""event_run_escalations: a run that waits too long for a person is escalated once per wait, at least once.

A run waits for a person while it is paused (for a resume: since its last status
change) or held at a phase a person must advance (since the phase drained); its
`waiting_for` says which (`waiting.py`). Each such wait has one row here, keyed by
the run and the moment the wait began, so a wait is escalated once however many
ticks see it, and a later wait of the same run (paused again) is a new one.

The row's INSERT is the claim: a compare-and-set on the run still waiting that
wait, and on no row for it yet (the primary key). Until `sent_at`, `retry_at` is
when the next try is due; each try is claimed by a compare-and-set on the count of
tries, and the last one, sent or failed, clears `retry_at`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ...db import Tx
from ..lifecycle import RunSQL, WaitingFor, WaitSQL
from . import understood

# Every run's current wait for a person, with the moment it began (a derived table: `w`), of the runs whose
# mode and status this version knows; the plain reads hold their steps to it too (`_KNOWN_STEPS`): a newer
# version's run is never escalated by this one. A dry run's wait is escalated after the deployment's interval
# divided by its speed (`due_at`).
# guard: a-stalled-run-it-does-not-understand-is-escalated
_WAITS = f"""(SELECT r.id AS run_id, r.current_phase AS phase, r.waiting_for,
                     IF(r.waiting_for = {WaitSQL.RESUME}, r.updated_at, p.drained_at) AS since,
                     r.speed, r.mode <> {RunSQL.LIVE} AS rehearsal
                FROM event_runs r
                LEFT JOIN event_run_phases p ON p.run_id = r.id AND p.number = r.current_phase
               WHERE r.waiting_for IN ({WaitSQL.STALLS}) AND {understood.run_row("r")})"""  # noqa: S608 — the renderings are constants
# guard: a-stalled-run-with-a-newer-step-is-escalated
_KNOWN_STEPS = understood.steps_known("w.run_id")
# guard: a-stalled-dry-runs-escalation-waits-the-live-interval
_DUE_AT = "w.since + INTERVAL ROUND(%s / w.speed) MICROSECOND"  # the wait's first try: after (µs) on its clock
_NOT_ESCALATED = "NOT EXISTS (SELECT 1 FROM event_run_escalations e WHERE e.run_id = w.run_id AND e.since = w.since)"


@dataclass(frozen=True)
class Wait:
    """A run's wait for a person, due for an escalation try."""

    run_id: int
    phase: int | None
    waiting_for: WaitingFor  # a resume or an advance
    since: datetime
    n: int = 0  # the run's escalation number (0 until claimed)
    tries: int = 0  # tries claimed so far
    rehearsal: bool = False  # a dry run's: escalated to the rehearsal channel


def due(tx: Tx, now: datetime, after: timedelta, limit: int) -> list[Wait]:
    """The waits due for a first try (waited `after` or longer, not escalated), and the unsent escalations
    whose next try has come and whose wait goes on, oldest first."""
    # guard: a-stalled-run-escalated-twice
    rows = tx.all(
        f"""SELECT w.run_id, w.phase, w.waiting_for, w.since, 0 AS n, 0 AS tries, w.rehearsal FROM {_WAITS} w
             WHERE {_DUE_AT} <= %s AND {_NOT_ESCALATED} AND {_KNOWN_STEPS}
            UNION ALL
            SELECT w.run_id, w.phase, w.waiting_for, w.since, e.n, e.tries, w.rehearsal FROM {_WAITS} w
              JOIN event_run_escalations e ON e.run_id = w.run_id AND e.since = w.since
             WHERE e.sent_at IS NULL AND e.retry_at <= %s AND {_KNOWN_STEPS}
             ORDER BY since LIMIT %s""",  # noqa: S608 — the fragments are constants; values are parameters
        (_microseconds(after), now, now, limit),
    )
    return [Wait(**{**row, "waiting_for": WaitingFor(row["waiting_for"]), "rehearsal": bool(row["rehearsal"])}) for row in rows]


def _microseconds(interval: timedelta) -> int:
    return interval // timedelta(microseconds=1)


def next_due(tx: Tx, after: timedelta) -> datetime | None:
    """When the next escalation try is due (a sleeping deployment wakes for it), or None."""
    row = tx.one(
        f"""SELECT (SELECT MIN({_DUE_AT}) FROM {_WAITS} w WHERE {_NOT_ESCALATED} AND {_KNOWN_STEPS}) AS first_wait,
                   (SELECT MIN(e.retry_at) FROM {_WAITS} w
                      JOIN event_run_escalations e ON e.run_id = w.run_id AND e.since = w.since
                     WHERE e.sent_at IS NULL AND {_KNOWN_STEPS}) AS first_retry""",  # noqa: S608 — the fragments are constants
        (_microseconds(after),),
    )
    moments = [] if row is None else [m for m in (row["first_wait"], row["first_retry"]) if m is not None]
    return min(moments) if moments else None


def claim_first(tx: Tx, wait: Wait, retry_at: datetime) -> int | None:
    """The first try of `wait` is this tick's: its row, numbered after the run's earlier escalations; the
    number, or None if the run no longer waits that wait or another tick claimed it first."""
    # guard: a-stalled-wait-escalated-after-it-ended
    claimed = tx.execute(
        f"""INSERT INTO event_run_escalations (run_id, since, n, waiting_for, tries, retry_at)
            SELECT w.run_id, w.since,
                   (SELECT COALESCE(MAX(e.n), 0) + 1 FROM event_run_escalations e WHERE e.run_id = w.run_id),
                   w.waiting_for, 1, %s
              FROM {_WAITS} w WHERE w.run_id = %s AND w.since = %s AND w.waiting_for = %s
            ON DUPLICATE KEY UPDATE run_id = event_run_escalations.run_id""",  # noqa: S608 — the fragment is a constant; values are parameters
        (retry_at, wait.run_id, wait.since, wait.waiting_for),
    ) == 1
    if not claimed:
        return None
    row = tx.one("SELECT n FROM event_run_escalations WHERE run_id = %s AND since = %s", (wait.run_id, wait.since))
    return None if row is None else int(row["n"])


def claim_retry(tx: Tx, wait: Wait, retry_at: datetime, now: datetime) -> bool:
    """Another try of an unsent escalation is this tick's: a compare-and-set on the tries it read."""
    return tx.execute(
        """UPDATE event_run_escalations SET tries = tries + 1, retry_at = %s
            WHERE run_id = %s AND since = %s AND tries = %s AND sent_at IS NULL AND retry_at <= %s""",
        (retry_at, wait.run_id, wait.since, wait.tries, now),
    ) == 1


def over(tx: Tx, wait: Wait, tries: int, now: datetime, *, sent: bool) -> bool:
    """The try `tries` was posted (`sent`), or was the last and failed: nothing more is tried."""
    return tx.execute(
        """UPDATE event_run_escalations SET sent_at = IF(%s, %s, NULL), retry_at = NULL
            WHERE run_id = %s AND since = %s AND tries = %s AND sent_at IS NULL""",
        (sent, now, wait.run_id, wait.since, tries),
    ) == 1
