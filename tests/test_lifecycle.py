"""The lifecycle module is the contract's transitions table, and its derived sets say what the table says."""

from itertools import pairwise
from pathlib import Path

import pytest

from chalicelib.events import lifecycle
from chalicelib.events.lifecycle import DUE, RUNNABLE, TERMINAL_RUN, TRANSITIONS, RunStatus, Wake, Who, writes

CONTRACT = Path(__file__).resolve().parent.parent / "docs" / "contract.md"
HEADER = "| from | to | who | when | finished_at | claim | wake time |"


def _tables() -> list[list[tuple[str, ...]]]:
    """Every table of the contract with the transitions header, as rows of cells."""
    lines = CONTRACT.read_text().splitlines()
    tables = []
    for number, line in enumerate(lines):
        if line.strip() == HEADER:
            rows = []
            for row in lines[number + 2:]:
                if not row.startswith("|"):
                    break
                rows.append(tuple(cell.strip() for cell in row.strip().strip("|").split(" | ")))
            tables.append(rows)
    return tables


def test_the_contracts_transitions_table_is_the_lifecycles():
    (current,) = _tables()
    assert current == lifecycle.table()


def test_two_rows_for_the_same_move_write_the_same_things():
    for row in TRANSITIONS:
        for source in row.sources:
            found = writes([source], row.to)
            assert (found.wake, found.clears_claim, found.stamps_finished_at) == (
                row.wake, row.clears_claim, row.stamps_finished_at), (source, row.to)


def test_a_move_nobody_declared_is_refused():
    with pytest.raises(ValueError, match="no transition"):
        writes([RunStatus.COMPLETED], RunStatus.RUNNING)
    with pytest.raises(ValueError, match="no transition"):
        writes([RunStatus.ENDING], RunStatus.PAUSED)  # an ending run never pauses
    with pytest.raises(ValueError, match="no transition"):
        writes([], RunStatus.PAUSED)


def test_terminal_moves_stamp_finished_at_and_drop_the_claim_and_the_wake():
    for row in TRANSITIONS:
        assert row.stamps_finished_at is (row.to in TERMINAL_RUN)
        if row.to in TERMINAL_RUN:
            assert row.clears_claim and row.wake is Wake.CLEARED
        assert not any(s in TERMINAL_RUN for s in row.sources), "nothing moves a run out of a terminal status"


def test_a_person_who_makes_work_wakes_the_run_and_a_pause_stops_its_timers():
    for row in TRANSITIONS:
        if row.who is Who.PERSON and row.to in RUNNABLE:
            assert row.wake is Wake.NOW
        if row.to is RunStatus.PAUSED:
            assert row.wake is Wake.CLEARED and row.clears_claim


def test_the_runners_sets_follow_from_the_statuses_facts():
    assert set(RUNNABLE) <= set(DUE)
    assert not set(DUE) & TERMINAL_RUN
    assert RunStatus.PAUSED not in DUE
    assert [s.value for s in RunStatus] == [v["status"] for v in lifecycle.vocabulary()["run_statuses"]]


def test_the_sql_renderings_are_the_statuses_quoted():
    assert ", ".join(f"'{s.value}'" for s in DUE) == lifecycle.RunSQL.DUE
    assert lifecycle.StepSQL.OPEN == "'pending', 'running'"
    assert all(a < b for a, b in pairwise(lifecycle.RunSQL.TERMINAL.split(", ")))


@pytest.mark.parametrize("status", [RunStatus.COMPLETED, RunStatus.RUNNING])
def test_the_database_holds_finished_at_set_exactly_when_the_run_is_terminal(db, clock, status):
    import pymysql

    from tests.support.factory import make_run, run_row

    run = make_run(db, clock.now(), status=status, current_phase=1)
    wrong = "NULL" if status.terminal else "updated_at"
    with pytest.raises(pymysql.err.OperationalError, match="event_runs_finished_when_terminal"):
        db.autocommit(lambda tx: tx.execute(f"UPDATE event_runs SET finished_at = {wrong} WHERE id = %s", (run.id,)))
    assert run_row(db, run.id) == run


def test_the_tick_starts_a_scheduled_or_starting_run_and_moves_the_rest_on():
    assert lifecycle.BEFORE_FIRST_PHASE == (RunStatus.SCHEDULED, RunStatus.STARTING)
    assert lifecycle.STEP_FAILURES == (lifecycle.StepStatus.FAILED, lifecycle.StepStatus.REFUSED)


def test_skipped_is_written_only_by_a_persons_skip():
    """The engine closes a step it will not run as cancelled; skipped is a person's decision, a skip or an
    advance (docs/contract.md)."""
    import ast

    root = Path(__file__).resolve().parent.parent / "chalicelib"
    writers = sorted(
        f"{path.relative_to(root)}:{node.name}"
        for path in root.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and _writes_skipped(node)
    )
    # A person's skip of one step, and a person's advance of a phase (its pending and parked steps).
    assert writers == ["events/store/steps.py:skip_by_human", "events/store/steps.py:skip_phase_for_advance"]


def _writes_skipped(function) -> bool:
    """A function that writes skipped: in its own SET, or by handing StepSQL.SKIPPED to a helper that writes it."""
    import ast

    passed = any(isinstance(node, ast.Call) and any(ast.unparse(arg) == "StepSQL.SKIPPED" for arg in node.args)
                 for node in ast.walk(function))
    return passed or "status = {StepSQL.SKIPPED}," in ast.unparse(function)
