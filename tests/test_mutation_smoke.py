"""The guard-mutation check cannot rot: every snippet still applies, and three mutations are still killed."""

import pytest

from tests.mutation import Mutation, check, run
from tests.mutation.catalogue import MUTATIONS

SMOKE = ("sweep-requeues-at-the-ceiling", "cancel-if-run-over-without-the-token", "control-reads-the-run-unlocked")


def test_every_guard_mutation_still_applies_exactly_once():
    assert check(MUTATIONS) == []


@pytest.mark.slow
def test_three_guard_mutations_are_killed_by_their_tests():
    by_name = {m.name: m for m in MUTATIONS}
    results = run([by_name[name] for name in SMOKE], timeout=300)
    assert [(r.mutation.name, r.verdict) for r in results] == [(name, "killed") for name in SMOKE], [
        r.output[-2000:] for r in results if r.verdict != "killed"
    ]


def test_a_guard_moved_with_its_marker_keeps_its_mutation(tmp_path):
    """The catalogue addresses guards by name: moving the marked clause to another file changes nothing there,
    while a snippet that leaves its region, or a marker nobody addresses, is reported."""
    (tmp_path / "chalicelib").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("")
    clause = "def claim(tx):\n    # guard: claim-lease\n    return tx.execute('WHERE expires < %s')\n"
    (tmp_path / "chalicelib" / "a.py").write_text(clause)
    mutation = Mutation("claim-at-the-instant", "claim-lease", "expires < %s", "expires <= %s", ("tests/test_x.py",))
    assert check([mutation], tmp_path) == []
    (tmp_path / "chalicelib" / "a.py").write_text("")
    (tmp_path / "chalicelib" / "b.py").write_text("X = 1\n\n\n" + clause)
    assert check([mutation], tmp_path) == []
    elsewhere = "def other():\n    # guard: claim-lease\n    return 1\n\n\n"
    (tmp_path / "chalicelib" / "b.py").write_text(elsewhere + clause.replace("    # guard: claim-lease\n", ""))
    assert check([mutation], tmp_path) == [
        "claim-at-the-instant: its snippet occurs 0 times in guard 'claim-lease' (chalicelib/b.py; must be exactly once)"]
    (tmp_path / "chalicelib" / "b.py").write_text(clause + "# guard: orphan\nY = 2\n")
    assert check([mutation], tmp_path) == ["guard 'orphan' (chalicelib/b.py) is marked but no mutation addresses it"]


def test_a_few_chosen_mutations_need_not_address_every_guard():
    """`make mutate MUTATE_ARGS="--only NAME"` runs a subset: the other markers are not orphans then."""
    chosen = [m for m in MUTATIONS if m.name in SMOKE]
    assert check(chosen, whole=False) == []
    assert any("marked but no mutation addresses it" in problem for problem in check(chosen))
