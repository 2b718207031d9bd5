"""docs/operations.md's rollback table names every migration an older release can be rolled back past.

Invariant: every migration in chalicelib/migrations after FIRST_GUARDED_RELEASE_NEWEST (0051, the newest migration of
the first release that leaves a newer version's rows alone, tests/test_rollback.py) has a row of the table "Rolling
back" keeps, saying what to finish before rolling back past it and what the older code would do otherwise: a new
migration without its row fails here, as a route without its row fails tests/test_infra_routes.py.
"""

import re

from chalicelib.schema_version import needed
from tests.support.cfn import ROOT

FIRST_GUARDED_RELEASE_NEWEST = "0051"


def rollback_rows() -> list[list[str]]:
    section = (ROOT / "docs" / "operations.md").read_text().split("\n### Rolling back\n", 1)[1]
    table = section.split("\n| rolling back past |", 1)[1].split("\n\n", 1)[0]
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in table.splitlines()[2:]]


def test_every_migration_an_older_release_can_be_rolled_back_past_has_its_row():
    named = {number for row in rollback_rows() for number in re.findall(r"\b(\d{4})\b", row[0])}
    owed = [m for m in needed() if m[:4] > FIRST_GUARDED_RELEASE_NEWEST]
    assert owed, "no migration after the first guarded release: is the floor right?"
    missing = [m for m in owed if m[:4] not in named]
    assert not missing, f"docs/operations.md's rollback table names no row for {missing}: say what to finish first"


def test_each_row_says_what_to_finish_and_what_the_older_code_would_do():
    for past, finish, otherwise in rollback_rows():
        assert past and finish and otherwise, past
    named = [number for row in rollback_rows() for number in re.findall(r"\b(\d{4})\b", row[0])]
    assert len(named) == len(set(named)), "a migration is named by two rows"
    shipped = {m[:4] for m in needed()}
    assert set(named) <= shipped, set(named) - shipped  # no row for a migration that is not shipped
