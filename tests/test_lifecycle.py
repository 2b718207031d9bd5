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
        if isinstance(node, ast.FunctionDef) and _writes_skipped(node, in_the_store=path.is_relative_to(root / "events" / "store"))
    )
    # A person's skip of one step, and a person's advance of a phase (its pending and parked steps).
    assert writers == ["events/store/steps/closing.py:skip_phase_for_advance", "events/store/steps/people.py:skip_by_human"]


def _writes_skipped(function, *, in_the_store: bool) -> bool:
    """A function that writes skipped: through a move of the step table into skipped (`SKIP`), or, in the store,
    by handing StepStatus.SKIPPED to a helper that writes it (elsewhere the status only names a log row's)."""
    import ast

    passed = in_the_store and any(isinstance(node, ast.Call) and any(ast.unparse(arg) == "StepStatus.SKIPPED" for arg in node.args)
                                  for node in ast.walk(function))
    return passed or any(isinstance(node, ast.Name) and node.id == "SKIP" for node in ast.walk(function))


# ── the step transitions table ────────────────────────────────────────────
STEP_HEADER = "| move | from | to | who | when | finished_at | lease | attempts | retries | in_doubt |"


def test_the_contracts_step_table_is_the_lifecycles():
    lines = CONTRACT.read_text().splitlines()
    start = lines.index(STEP_HEADER) + 2
    rows = []
    for row in lines[start:]:
        if not row.startswith("|"):
            break
        rows.append(tuple(cell.strip() for cell in row.strip().strip("|").split(" | ")))
    assert rows == lifecycle.step_table()


def test_only_the_claim_raises_attempts_and_no_move_lowers_them():
    """The store's first rule: a sweep that reset attempts once made the attempt ceiling unreachable, and a
    retry that reset them sent the game an attempt its status endpoint had fenced off. A person's retry or
    resend renews the allowance instead."""
    from chalicelib.events.lifecycle import STEP_MOVES, Count

    assert set(Count) == {Count.KEPT, Count.RAISED}  # a counter has no move that lowers it
    assert [m for m in STEP_MOVES if m.attempts is Count.RAISED] == [lifecycle.CLAIM]
    assert {m.name for m in STEP_MOVES if m.renews_allowance} == {"retry", "resend"}
    assert all(m.who is Who.PERSON for m in STEP_MOVES if m.renews_allowance)


def test_a_step_move_writes_finished_at_exactly_as_its_statuses_say():
    from chalicelib.events.lifecycle import STEP_MOVES, StepStatus

    for move in STEP_MOVES:
        assert move.stamps_finished_at is (move.to is not None and move.to.terminal)
        assert not (move.stamps_finished_at and move.clears_finished_at)
        assert move.clears_finished_at is (move.to is StepStatus.PENDING and any(s.terminal for s in move.sources))


def test_skipped_is_a_persons_move_or_a_branch_not_taken_and_a_lease_taken_back_is_in_doubt():
    from chalicelib.events.lifecycle import PASS_OVER, STEP_MOVES, Doubt, StepStatus

    assert all(m.who is Who.PERSON or m is PASS_OVER for m in STEP_MOVES if m.to is StepStatus.SKIPPED)
    assert PASS_OVER.sources == (StepStatus.PENDING,)  # the tick skips only a step that never started
    assert all(m.in_doubt is Doubt.SET for m in STEP_MOVES if m.name == "reclaim")
    assert all(not s.terminal for m in STEP_MOVES for s in m.sources if m.name != "retry")


def test_every_update_of_a_step_goes_through_the_one_writer():
    """No statement writes event_run_steps but `store/steps/write.py`, which renders it from its move's row."""
    import re

    root = Path(__file__).resolve().parent.parent / "chalicelib"
    writer = root / "events" / "store" / "steps" / "write.py"
    updates = re.compile(r"UPDATE\s+event_run_steps\b|JOIN\s+event_run_steps\s+\w+\s+ON[^;]*\bSET\s+\w+\.", re.IGNORECASE)
    found = [f"{path.relative_to(root)}:{n}" for path in sorted(root.rglob("*.py")) if path != writer
             for n, line in enumerate(path.read_text().splitlines(), 1) if updates.search(line)]
    assert found == []


def test_every_row_of_the_step_table_is_a_statement_of_the_store():
    import ast

    from chalicelib.events.lifecycle import STEP_MOVES

    steps = Path(__file__).resolve().parent.parent / "chalicelib" / "events" / "store" / "steps"
    used = {node.id for path in steps.glob("*.py") for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Name)}
    declared = {name: value for name, value in vars(lifecycle).items()
                if isinstance(value, lifecycle.StepMove) or (isinstance(value, dict) and value
                                                             and all(isinstance(v, lifecycle.StepMove) for v in value.values()))}
    assert set(declared) <= used
    assert {id(m) for v in declared.values() for m in (v.values() if isinstance(v, dict) else [v])} == {id(m) for m in STEP_MOVES}
