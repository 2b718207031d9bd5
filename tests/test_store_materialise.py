import hashlib
import re

import pytest

from chalicelib.events.lifecycle import StepStatus
from chalicelib.events.model import StepSpec
from chalicelib.events.store import steps
from devtools.kit.counters import StatementMeter
from tests.support.factory import make_run, materialise, specs


def test_materialise_writes_steps_in_authored_order_as_pending(db, clock):
    run = make_run(db, clock.now())
    rows = materialise(db, run, 1, specs("core.announce", "core.wait", "world.spawn"))
    assert [(s.phase, s.seq, s.action_id, s.status) for s in rows] == [
        (1, 0, "core.announce", StepStatus.PENDING),
        (1, 1, "core.wait", StepStatus.PENDING),
        (1, 2, "world.spawn", StepStatus.PENDING),
    ]
    assert rows[1].params == {"n": 1}
    assert all(s.attempts == 0 and s.due_at is None for s in rows)


def test_a_new_phase_is_returned_exactly_as_its_rows_read_back(db, clock):
    """Built from the specs and the ids and keys the server chose: the table's defaults, pinned here."""
    run = make_run(db, clock.now())
    written = materialise(db, run, 1, [StepSpec("core.wait", {"seconds": 5}, 1, "skip"), StepSpec("world.spawn", {})])
    assert written == db.autocommit(lambda tx: steps.list_for_phase(tx, run.id, 1))


def test_each_step_gets_a_key_of_its_own_that_ids_handed_out_again_never_repeat(db, clock):
    """A key was sha256(run|id): every deployment's database, and one restored from a backup, hands the same ids out
    again, so a game keeping one store of keys answered a new step another's first answer, its action never applied."""
    run = make_run(db, clock.now())
    first = materialise(db, run, 1, specs("a.b", "c.d", "e.f"))
    assert all(re.fullmatch(r"[0-9a-f]{40}", s.idempotency_key) for s in first)
    assert len({s.idempotency_key for s in first}) == 3
    assert all(s.idempotency_key != hashlib.sha256(f"{run.id}|{s.id}".encode()).hexdigest()[:40] for s in first)

    def restored(tx):  # as a restore from before the phase began leaves it: the same ids given out again
        tx.execute("DELETE FROM event_run_steps WHERE run_id = %s", (run.id,))
        tx.execute(f"ALTER TABLE event_run_steps AUTO_INCREMENT = {first[0].id}")

    db.autocommit(restored)
    again = materialise(db, run, 1, specs("a.b", "c.d", "e.f"))
    assert [s.id for s in again] == [s.id for s in first]
    assert not {s.idempotency_key for s in again} & {s.idempotency_key for s in first}


def test_materialising_again_changes_nothing(db, clock):
    run = make_run(db, clock.now())
    first = materialise(db, run, 1, specs("a.b", "c.d"))
    again = materialise(db, run, 1, specs("x.y", "z.w", "extra.step"))
    assert [(s.id, s.action_id, s.idempotency_key) for s in again] == [
        (s.id, s.action_id, s.idempotency_key) for s in first
    ] + [(again[2].id, "extra.step", again[2].idempotency_key)]


def test_an_existing_key_is_never_overwritten_and_a_missing_one_is_stamped(db, clock):
    run = make_run(db, clock.now())
    first, second = materialise(db, run, 1, specs("a.b", "c.d"))
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET idempotency_key = %s WHERE id = %s", ("k" * 40, first.id)))
    # a crash between the INSERT and the stamp leaves an empty key behind
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_steps SET idempotency_key = '' WHERE id = %s", (second.id,)))
    again = materialise(db, run, 1, specs("a.b", "c.d"))
    assert again[0].idempotency_key == "k" * 40
    assert re.fullmatch(r"[0-9a-f]{40}", again[1].idempotency_key) and again[1].idempotency_key != "k" * 40


@pytest.mark.parametrize("count", [1, 200])
def test_materialise_costs_at_most_three_statements(db, clock, count):
    run = make_run(db, clock.now())
    with StatementMeter(db) as meter:
        rows = materialise(db, run, 1, [StepSpec("a.b", {"i": i}) for i in range(count)])
    assert len(rows) == count
    assert meter.statements <= 3, meter.delta


@pytest.mark.parametrize(
    "bad",
    [
        [StepSpec("a.b", params=["not", "a", "dict"])],  # type: ignore[arg-type]  # malformed on purpose
        [StepSpec("a.b", on_failure="explode")],  # type: ignore[arg-type]  # malformed on purpose
        [],
    ],
)
def test_bad_phase_raises_value_error_and_writes_nothing(db, clock, bad):
    run = make_run(db, clock.now())
    with pytest.raises(ValueError):
        materialise(db, run, 1, bad)
    assert db.autocommit(lambda tx: steps.list_for_run(tx, run.id)) == []
