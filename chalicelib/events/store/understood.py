"""The runs this version of the engine understands, as SQL: what every statement that picks work holds a run to.

The invariant: a run is found due, leased, swept, escalated or listed only when
this version knows every word of its rows that decides what is done with it: the
run's mode and status, and each of its steps' status and park reason. A row
holding another word was written by a newer version (the code was rolled back
past the migration that brought the word): it is left exactly as it stands, for
the version that knows it, never run as something it is not (a dry run as a
live one, a decision as a cue). docs/operations.md, "Rolling back", says what to
finish before rolling back past each migration.

The steps are read only by plain reads (`run`, `steps_known`: the due runs, the
next wake time, the waits due an escalation, the runs page), which lock nothing;
a statement that writes holds the run to its own words alone (`run_row`): its
read of the run's steps would lock them, against the tick's other workers, and
MySQL refuses an UPDATE whose WHERE reads the table it updates. A run is written
only after a plain read found it, so the steps are held to theirs all the same.
"""

from __future__ import annotations

from ..lifecycle import RunSQL, StepSQL


def run_row(alias: str) -> str:
    """SQL: the run `alias` (a row of event_runs) has a mode and a status this version knows."""
    # guard: a-run-of-an-unknown-mode-is-understood
    # guard: a-run-of-an-unknown-status-is-understood
    return f"({alias}.mode IN ({RunSQL.MODES}) AND {alias}.status IN ({RunSQL.KNOWN}))"


def steps_known(run_id: str) -> str:
    """SQL: every step of the run whose id is `run_id` (an SQL expression) has a status and a park reason this
    version knows. A scalar subquery on one range of the steps' (run_id, …) index per run, named: never
    materialised over the whole table (as an optimiser may do with NOT EXISTS), nor scanned where the table
    is small."""
    # guard: a-step-of-an-unknown-status-is-understood
    # guard: a-step-parked-for-an-unknown-reason-is-understood
    return f"""(SELECT newer.id FROM event_run_steps newer FORCE INDEX (event_run_steps_position)
                 WHERE newer.run_id = {run_id}
                   AND (newer.status NOT IN ({StepSQL.KNOWN}) OR newer.park_reason NOT IN ({StepSQL.PARK_REASONS}))
                 LIMIT 1) IS NULL"""  # noqa: S608 — the lifecycle's renderings and a caller's expression (constants)


def run(alias: str) -> str:
    """SQL: the run `alias` (a row of event_runs) is one this version understands, its steps with it (a plain
    read's: see above)."""
    return f"({run_row(alias)} AND {steps_known(f'{alias}.id')})"
