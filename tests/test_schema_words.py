"""The database's CHECK constraints name the same words as the lifecycle's enums: a status, a condition, a
wait or a reason added to one and not the other fails here, not in production at its first write."""

import re

import pytest

from chalicelib.events.lifecycle import (
    CLEANUP_TARGETS,
    STALLS,
    TERMINAL_RUN,
    ClosedBy,
    LateCleanup,
    OnDeadline,
    OnDoubt,
    OnFailure,
    ParkReason,
    PhaseKind,
    RehearsalBridge,
    ResourceStatus,
    RunMode,
    RunStatus,
    SignalEffect,
    StepStatus,
    WaitingFor,
)
from chalicelib.events.model import Health

# Each CHECK constraint that lists a column's words, and the words it must list.
EXPECTED = {
    "event_runs_status_of_lifecycle": set(RunStatus),
    "event_runs_finished_when_terminal": TERMINAL_RUN,
    "event_runs_health_known": set(Health),
    "event_runs_cleanup_target_known": set(CLEANUP_TARGETS),
    "event_runs_late_cleanup_known": set(LateCleanup),
    "event_runs_waiting_for_of_waits": set(WaitingFor),
    "event_runs_mode_known": set(RunMode),
    "event_runs_rehearsal_bridge": set(RehearsalBridge),
    "event_run_steps_status_known": set(StepStatus),
    "event_run_steps_on_failure_known": set(OnFailure),
    "event_run_steps_on_doubt_known": set(OnDoubt),
    "event_run_steps_park_reason_known": set(ParkReason),
    "event_run_phases_kind_known": set(PhaseKind),
    "event_run_phases_on_deadline_known": set(OnDeadline),
    "event_run_phases_closed_by_known": set(ClosedBy),
    "event_run_signals_effect_known": set(SignalEffect),
    "event_run_escalations_waiting_known": set(STALLS),
    "event_run_resources_status_known": set(ResourceStatus),
}
# The deployment's own state (awake, asleep, waking: runner/sleep.py) is no word of a run's lifecycle.
NOT_LIFECYCLE = {"event_engine_state_known"}
LISTED = re.compile(r"`\w+` in \(([^)]*)\)")


@pytest.fixture(scope="module")
def listed(module_db) -> dict[str, set[str]]:
    """Every CHECK constraint of the migrated schema that lists words: its name and the words."""
    rows = module_db.autocommit(lambda tx: tx.all(
        "SELECT CONSTRAINT_NAME AS name, CHECK_CLAUSE AS clause FROM information_schema.CHECK_CONSTRAINTS"
        " WHERE CONSTRAINT_SCHEMA = DATABASE()"))
    return {row["name"]: {word.strip().strip("'") for match in LISTED.findall(row["clause"]) for word in match.split(",")}
            for row in rows if LISTED.search(row["clause"])}


def test_every_list_of_words_the_schema_checks_is_held_to_its_enum(listed):
    assert set(listed) == set(EXPECTED) | NOT_LIFECYCLE


@pytest.mark.parametrize("constraint", sorted(EXPECTED))
def test_the_schemas_words_are_the_enums(listed, constraint):
    assert listed[constraint] == {word.value for word in EXPECTED[constraint]}
