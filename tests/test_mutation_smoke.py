"""The guard-mutation check cannot rot: every snippet still applies, and three mutations are still killed."""

import pytest

from tests.mutation import check, run
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
