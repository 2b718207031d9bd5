"""A run's phases as rows: named and numbered once, opened and drained by the statements that move the run."""

from datetime import timedelta

from bench.harness import StatementRecorder
from chalicelib.events.lifecycle import PhaseKind, PhaseState, RunStatus
from chalicelib.events.store import phases
from tests.support.factory import run_row
from tests.support.runner_kit import schedule, step, tick


def _phases(db, run_id):
    return db.autocommit(lambda tx: phases.list_for_run(tx, run_id))


def _doc(*phase_steps, ending=(), names=None):
    return {"name": "Lantern walk", "grace_seconds": 300,
            "phases": [{"name": (names or [])[i] if names else f"part {i}", "steps": list(s)} for i, s in enumerate(phase_steps)],
            "ending": list(ending)}


def test_a_started_run_has_every_phase_named_and_numbered_with_the_first_open(db, clock, runner):
    run = schedule(db, clock.now(), _doc(
        [step("core.cue", instruction="Gather at the mill")], [step("core.announce", message="Off we go")],
        ending=[step("core.announce", message="Goodnight")], names=["Gathering", "The walk"]))
    assert _phases(db, run.id) == []  # a scheduled run has none yet

    tick(runner)  # starts; the cue parks in phase 1
    rows = _phases(db, run.id)
    assert [(p.number, p.kind, p.name, p.state) for p in rows] == [
        (1, PhaseKind.MAIN, "Gathering", PhaseState.OPEN),
        (2, PhaseKind.MAIN, "The walk", PhaseState.NOT_STARTED),
        (3, PhaseKind.ENDING, "ending", PhaseState.NOT_STARTED),
    ]
    assert rows[0].opened_at == clock.now() and rows[0].drained_at is None
    assert all(p.condition is None and not p.condition_met for p in rows)


def test_each_phase_is_drained_and_the_next_opened_when_the_run_moves_on(db, clock, runner):
    from chalicelib.events.store import steps

    run = schedule(db, clock.now(), _doc(
        [step("core.cue", instruction="Gather at the mill")], [step("core.announce", message="Off we go")],
        ending=[step("core.announce", message="Goodnight")]))
    started = clock.now()
    tick(runner)
    cue = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]
    clock.advance(90)
    assert db.transaction(lambda tx: steps.confirm_parked(tx, cue.id, clock.now(), "all here"))
    tick(runner)  # phase 1 drained, phase 2 announces, the ending announces: completed

    assert run_row(db, run.id).status is RunStatus.COMPLETED
    rows = _phases(db, run.id)
    assert [p.state for p in rows] == [PhaseState.DRAINED] * 3
    assert [(p.opened_at, p.drained_at) for p in rows] == [
        (started, clock.now()), (clock.now(), clock.now()), (clock.now(), clock.now())]


def test_an_ending_run_works_the_phase_its_row_and_current_phase_name(db, clock, runner):
    run = schedule(db, clock.now(), _doc([step("core.announce", message="hi")],
                                         ending=[step("core.wait", seconds=60), step("core.announce", message="bye")]))
    tick(runner)  # phase 1 done; the ending waits 60 s
    moved = run_row(db, run.id)
    assert moved.status is RunStatus.ENDING and moved.current_phase == 2
    assert moved.wake_at == clock.now() + timedelta(seconds=60)  # the ending's held head, not "now"
    assert [(p.kind, p.state) for p in _phases(db, run.id)] == [
        (PhaseKind.MAIN, PhaseState.DRAINED), (PhaseKind.ENDING, PhaseState.OPEN)]
    clock.advance(61)
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert [p.state for p in _phases(db, run.id)] == [PhaseState.DRAINED] * 2


def test_an_empty_ending_has_no_row(db, clock, runner):
    run = schedule(db, clock.now(), _doc([step("core.announce", message="hi")]))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert [(p.number, p.kind, p.state) for p in _phases(db, run.id)] == [(1, PhaseKind.MAIN, PhaseState.DRAINED)]


def test_a_phase_row_costs_no_statement_of_its_own_beyond_the_start(db, clock, runner):
    """The start inserts every row in one statement; each later phase is opened (and the one before
    drained) by the run's own guarded UPDATE: a run of three phases sends the same statements as
    before phase rows, plus that one INSERT."""
    run = schedule(db, clock.now(), _doc(*[[step("core.announce", message=f"part {i}")] for i in range(3)]))
    with StatementRecorder().installed() as recorder:
        tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    # Statements that write a phase row (the claim's guard and the walker's read only look at one).
    touching = [s.shape for u in recorder.units for s in u.statements
                if "event_run_phases" in s.sql and not s.shape.startswith(("SELECT", "UPDATE event_run_steps"))]
    assert len(touching) == 4  # the start's INSERT, and the three moves that leave a phase
    assert touching[0].startswith("INSERT IGNORE INTO event_run_phases")
    assert all(shape.startswith("UPDATE event_runs LEFT JOIN event_run_phases") for shape in touching[1:])
    opening = [u for u in recorder.units if any("INSERT IGNORE INTO event_run_steps" in s.sql for s in u.statements)]
    later = [u for u in opening if not any("event_run_phases (" in s.sql for s in u.statements)]
    # The settle, its leave (which opens the next phase's row), the three statements that
    # materialise the phase (P3), the run's lock and the log rows (log.py), the next claim: as before phase rows.
    assert [len(u.statements) for u in later] == [8, 8]


def test_a_phase_with_more_open_steps_than_one_read_returns_is_read_again_at_once(db, clock, runner, monkeypatch):
    """Issue 23 item 13: the runner reads a phase's open steps a page at a time; when it has worked
    a full page it reads the next one in the same tick instead of waiting for the next tick."""
    from chalicelib.events.runner import walk

    monkeypatch.setattr(walk, "OPEN_STEPS_PER_READ", 3)
    lines = [step("core.announce", message=f"line {i}") for i in range(8)]
    run = schedule(db, clock.now(), _doc([step("core.wait", seconds=60), *lines], [step("core.announce", message="after")]))
    tick(runner)  # starts, waits: the rest of the phase is read from the database when the wait is over
    clock.advance(61)
    report = tick(runner)
    assert report.dispatched == 9 and run_row(db, run.id).status is RunStatus.COMPLETED
    assert runner.actions.announce_channel.posts == [f"line {i}" for i in range(8)] + ["after"]


def _held_first_phase(monkeypatch):
    """Runs whose first phase carries a condition (a person's advance): its row has it too."""
    import dataclasses

    from chalicelib.events.lifecycle import Manual
    from chalicelib.events.programme import programme_of
    from chalicelib.events.runner import tick as tick_module

    def with_condition(document):
        programme = programme_of(document)
        first = dataclasses.replace(programme.phases[0], condition=Manual())
        return dataclasses.replace(programme, phases=(first, *programme.phases[1:]))

    monkeypatch.setattr(tick_module, "programme_of", with_condition)


def test_a_drained_phase_that_is_held_costs_the_tick_nothing_until_its_condition_is_met(db, clock, runner, monkeypatch):
    _held_first_phase(monkeypatch)
    run = schedule(db, clock.now(), _doc([step("core.announce", message="Gather")], [step("core.announce", message="Go")]))
    drained_at = clock.now()
    tick(runner)  # phase 1's one step is done: the phase is drained, and held
    held = run_row(db, run.id)
    assert held.status is RunStatus.RUNNING and held.current_phase == 1 and held.claimed_by is None
    assert held.wake_at is None and runner.next_wake() is None  # no timer: the deployment may sleep
    assert [(p.state, p.drained_at) for p in _phases(db, run.id)] == [
        (PhaseState.HELD, drained_at), (PhaseState.NOT_STARTED, None)]

    clock.advance(600)
    idle = tick(runner)
    assert (idle.runs_seen, idle.dispatched) == (0, 0)  # the held run is not even read
    assert runner.actions.announce_channel.posts == ["Gather"]

    # Meeting the condition (a person's or a signal's move, later) wakes the run; the walk goes on.
    db.autocommit(lambda tx: tx.execute(
        "UPDATE event_run_phases SET condition_met = TRUE, met_at = %s, met_by = 'gm-gus' WHERE run_id = %s AND number = 1",
        (clock.now(), run.id)))
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET wake_at = %s WHERE id = %s", (clock.now(), run.id)))
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED
    assert runner.actions.announce_channel.posts == ["Gather", "Go"]
    rows = _phases(db, run.id)
    assert [p.state for p in rows] == [PhaseState.DRAINED] * 2 and rows[0].drained_at == drained_at
    assert (rows[0].met_by, rows[0].met_at) == ("gm-gus", clock.now())


def test_a_held_phase_is_never_left_even_by_a_worker_that_did_not_see_it_held(db, clock, runner, monkeypatch):
    from chalicelib.events.store import runs

    _held_first_phase(monkeypatch)
    run = schedule(db, clock.now(), _doc([step("core.announce", message="Gather")], [step("core.announce", message="Go")]))
    tick(runner)
    assert not db.transaction(lambda tx: runs.leave_phase(
        tx, run.id, 1, RunStatus.RUNNING, RunStatus.RUNNING, clock.now(), next_phase=2))
    assert run_row(db, run.id).current_phase == 1
    assert [p.state for p in _phases(db, run.id)] == [PhaseState.HELD, PhaseState.NOT_STARTED]


def test_no_phase_number_is_computed_anywhere():
    """A phase's number is its place in the programme's walk (`programme.programme_of`), read from there or
    from its row: nothing adds to or subtracts from a phase number (the old `len(phases) + 1`,
    `current_phase + 1` and `phases.length + 1` named the ending three ways in three languages)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "chalicelib"
    arithmetic = re.compile(r"(phase\w*|phases\)|phases\.length|\bnumber)\s*[-+]\s*1\b", re.IGNORECASE)
    # 0021 moves runs that went into ending under the old rule onto the new one, once; 0023 numbers
    # the ending of runs started before phase rows existed by that rule, once.
    exempt = {root / "migrations" / name for name in ("0021.event-runs-ending-phase.sql",
                                                       "0023.event-run-phases-backfill-ending.sql")}
    found = [f"{path.relative_to(root)}:{n}: {line.strip()}"
             for path in sorted(root.rglob("*")) if path.suffix in (".py", ".js", ".sql") and path not in exempt
             for n, line in enumerate(path.read_text().splitlines(), 1) if arithmetic.search(line)]
    assert found == []


def test_runs_started_before_phase_rows_existed_get_them_from_their_documents(db, clock, runner, game_bridge):
    """Migrations 0022 and 0023, run over runs whose rows are gone, write the rows the runner would have
    (numbers, kinds, names and states; their times are not known, so they are the run's start)."""
    from pathlib import Path

    from chalicelib.events.store import steps

    cue = [step("core.cue", instruction="Wait for the lanterns")]
    walking = schedule(db, clock.now(), _doc([step("core.announce", message="a")], cue,
                                              ending=[step("core.announce", message="bye")], names=["", "Walk"]))
    done = schedule(db, clock.now(), _doc([step("core.announce", message="a")], ending=[step("core.announce", message="b")]))
    ending = schedule(db, clock.now(), _doc([step("core.announce", message="a")], ending=[step("core.wait", seconds=60),
                                                                                         step("core.announce", message="b")]))
    never = schedule(db, clock.now() + timedelta(hours=1), _doc([step("core.announce", message="a")]))
    tick(runner)
    assert [run_row(db, r.id).status for r in (walking, done, ending, never)] == [
        RunStatus.RUNNING, RunStatus.COMPLETED, RunStatus.ENDING, RunStatus.SCHEDULED]
    assert db.autocommit(lambda tx: steps.list_for_run(tx, walking.id))[-1].parked

    def shapes():
        return {r.id: [(p.number, p.kind, p.name, p.state) for p in _phases(db, r.id)] for r in (walking, done, ending, never)}

    written = shapes()
    assert written[walking.id][1] == (2, PhaseKind.MAIN, "Walk", PhaseState.OPEN)
    db.autocommit(lambda tx: tx.execute("DELETE FROM event_run_phases"))
    migrations = Path(__file__).resolve().parents[1] / "chalicelib" / "migrations"
    for name in ("0022.event-run-phases-backfill.sql", "0023.event-run-phases-backfill-ending.sql"):
        sql = "\n".join(line for line in (migrations / name).read_text().splitlines() if not line.startswith("--"))
        db.autocommit(lambda tx, sql=sql: tx.execute(sql))
    assert shapes() == written
    assert all(p.opened_at in (None, clock.now()) for r in (walking, done, ending) for p in _phases(db, r.id))
