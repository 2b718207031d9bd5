"""The runs this version of the engine understands, as SQL: what every statement that picks work holds a run to.

The invariant: a run is found due, leased, swept, escalated or listed only when
this version knows every word of its rows that decides what is done with it: the
run's mode and status, and each of its steps' status and park reason. A row
holding another word was written by a newer version (the code was rolled back
past the migration that brought the word): it is left exactly as it stands, for
the version that knows it, never run as something it is not (a dry run as a
live one, a decision as a cue). docs/operations.md, "Rolling back", says what to
finish before rolling back past each migration.

A statement that updates event_run_steps holds the run to its own words only
(`run_row`): MySQL refuses an UPDATE whose WHERE reads the table it updates.
"""

from __future__ import annotations

from ..lifecycle import RunSQL, StepSQL


def run_row(alias: str) -> str:
    """SQL: the run `alias` (a row of event_runs) has a mode and a status this version knows."""
    # guard: a-run-of-an-unknown-mode-is-understood
    # guard: a-run-of-an-unknown-status-is-understood
    return f"({alias}.mode IN ({RunSQL.MODES}) AND {alias}.status IN ({RunSQL.KNOWN}))"


def run(alias: str) -> str:
    """SQL: the run `alias` (a row of event_runs) is one this version understands, its steps with it."""
    # guard: a-step-of-an-unknown-status-is-understood
    # guard: a-step-parked-for-an-unknown-reason-is-understood
    newer_steps = f"""SELECT 1 FROM event_run_steps newer WHERE newer.run_id = {alias}.id
                        AND (newer.status NOT IN ({StepSQL.KNOWN}) OR newer.park_reason NOT IN ({StepSQL.PARK_REASONS}))"""  # noqa: S608 — the lifecycle's renderings and a caller's alias (constants)
    return f"({run_row(alias)} AND NOT EXISTS ({newer_steps}))"
