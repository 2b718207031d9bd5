"""A run's wake time: the earliest of its timers, as one SQL expression over the run's row.

The invariant: a wake time may be early, never late. A tick that looks at a run
too early finds nothing to do and writes the wake time again; a wake time that
is late leaves work undone, so every timer that can make a run claimable must be
in `TIMERS`. A run no timer covers (paused, parked at a cue with no timer left,
over) has no wake time: only a person moves it, and their control sets the wake
time to now (a paused run's escalation is the tick's `escalate` chore, not a wake time).

Each timer is an SQL expression over `r` (the event_runs row) that is a time, or
NULL when the timer does not apply; `%(now)s` is the tick's clock. Later work
(cleanup) adds a timer here and nowhere else.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..lifecycle import RunSQL, StepSQL

# How often a run queued behind an earlier one looks whether that run is over: its start follows the end by
# at most this (the end of a run is not a timer of the run behind it).
QUEUE_POLL_SECONDS = 5

# LEAST() is NULL if any argument is: absent timers count as "never" meanwhile.
NEVER = "'9999-12-31 23:59:59.999999'"

# When a dry run's engine sends the signal a phase `p` of run `r` waits for (`auto_signal_seconds` after it
# opened); NULL for a live run, and for a phase that waits for no signal.
AUTO_SIGNAL_AT = "IF(p.`signal` IS NULL, NULL, p.opened_at + INTERVAL r.auto_signal_seconds SECOND)"


def _next_attention(step: str) -> str:
    """A parked step's (the alias `step`) next attention timer: a reminder, the escalation, the timeout or the
    end of an acknowledge's hold, whichever comes first (never once none is left)."""
    # guard: a-parked
    return (f"LEAST(COALESCE({step}.remind_at, {NEVER}), COALESCE({step}.escalate_at, {NEVER}), COALESCE({step}.times_out_at, {NEVER}),"
            f" COALESCE({step}.held_until, {NEVER}))")


# guard: a-wait-wakes-its-run-never
# guard: a-leased-head-wakes-its-run-never
# guard: a-held-phase-wakes-its-run-now
# guard: a-phase-deadline-wakes-nobody
# guard: a-met-phase-waits-for-its-deadline
# guard: an-emptied-phase-wakes-its-run-never
# guard: a-held-dry-run-never-wakes-for-its-signal
TIMERS: dict[str, str] = {
    # A scheduled run is looked at when it falls due (and started or missed then); one queued behind an
    # earlier run (overlap: queue_one) every QUEUE_POLL_SECONDS, to start once that run is over.
    # guard: a-scheduled-run-wakes-never
    "scheduled_for": f"""IF(r.status = {RunSQL.SCHEDULED}, IF(r.queued_behind IS NULL, r.scheduled_for,
        %(now)s + INTERVAL {QUEUE_POLL_SECONDS} SECOND), NULL)""",
    # A starting run has its first phase to materialise: now.
    # guard: a-starting-run-wakes-never
    "starting": f"IF(r.status = {RunSQL.STARTING}, %(now)s, NULL)",
    # A running or ending run follows the head of the phase it works (current_phase:
    # the move into ending writes the ending's number): a pending step at its
    # due_at (now if it has none), a leased step at its lease's expiry (the sweep
    # takes it back then), a parked step at its next attention timer (a reminder, the
    # escalation, the timeout or the end of its hold; never once none is left); a phase with no open step is left now,
    # unless it is held (a condition not met: never, until meeting it wakes the run,
    # or its deadline: the phase timer).
    # guard: an-ending-run-has-no-head-step-timer
    "phase_head": f"""IF(r.status IN ({RunSQL.WORKING}), COALESCE(
        (SELECT IF(s.status = {StepSQL.PENDING}, COALESCE(s.due_at, %(now)s), COALESCE(s.claim_expires_at,
                   {_next_attention("s")}))
           FROM event_run_steps s
          WHERE s.run_id = r.id AND s.phase = r.current_phase AND s.status IN ({StepSQL.OPEN})
          ORDER BY s.seq LIMIT 1),
        IF(EXISTS (SELECT 1 FROM event_run_phases p
                    WHERE p.run_id = r.id AND p.number = r.current_phase
                      AND p.`condition` IS NOT NULL AND NOT p.condition_met), NULL, %(now)s)), NULL)""",  # noqa: S608 — constants only (NEVER, the status renderings); the time is the named parameter now
    # The phase the run works must be closed: now once its condition is met (a signal, an advance) and
    # it is not closed yet, else at its deadline (an `after` phase's end, a time limit) or, in a dry run,
    # when the engine sends its signal; none once closed.
    "phase_timer": f"""IF(r.status IN ({RunSQL.WORKING}),
        (SELECT IF(p.closed_at IS NOT NULL, NULL, IF(p.condition_met, %(now)s,
                   LEAST(COALESCE(p.deadline, {NEVER}), COALESCE({AUTO_SIGNAL_AT}, {NEVER}))))
           FROM event_run_phases p WHERE p.run_id = r.id AND p.number = r.current_phase), NULL)""",  # noqa: S608 — constants only (the status renderings); the time is the named parameter now
    # A run cleaning up follows the head of what it waits for: a step in flight from before the cleanup (not
    # a revert) at its lease's expiry, else its first open revert (pending: at its due_at, or now; leased: at
    # its lease's expiry; parked, undone by hand: at its next attention timer, as a cue); with nothing open,
    # now (the cleanup is opened or ended).
    # guard: a-cleaning-up-run-never-wakes
    # guard: a-parked-revert-wakes-its-run-never
    # A finished run whose Clean up is under way (`late_cleanup`) likewise.
    "cleanup": f"""IF(r.status = {RunSQL.CLEANING_UP} OR r.late_cleanup = {RunSQL.LATE_CLEANUP_STARTED}, COALESCE(
        (SELECT IF(c.status = {StepSQL.PENDING}, COALESCE(c.due_at, %(now)s), COALESCE(c.claim_expires_at,
                   {_next_attention("c")}))
           FROM event_run_steps c WHERE c.run_id = r.id AND c.status IN ({StepSQL.OPEN})
          ORDER BY c.resource_id IS NOT NULL, c.phase, c.seq LIMIT 1),
        %(now)s), NULL)""",  # noqa: S608 — constants only (NEVER, the status renderings); the time is the named parameter now
}

WAKE_AT = "NULLIF(LEAST({}), {})".format(", ".join(f"COALESCE({t}, {NEVER})" for t in TIMERS.values()), NEVER)


def wake_args(now: datetime) -> dict[str, Any]:
    """The named parameters `WAKE_AT` takes."""
    return {"now": now}
