"""Each test starts from what the migrations left: every table they made empty but for the rows they seeded."""

from tests.conftest import START, YOYO_PREFIXES, restore_migrated
from tests.support.factory import document
from tests.support.runner_kit import schedule


def _contents(db) -> dict[str, list[dict]]:
    """Every row of every table the migrations made, read from the database (not from the fixtures' own list)."""
    names = db.autocommit(lambda tx: tx.all(
        "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()"))
    tables = [row["name"] for row in names if not row["name"].startswith(YOYO_PREFIXES)]
    return {table: db.autocommit(lambda tx: tx.all(f"SELECT * FROM `{table}`")) for table in tables}


def test_what_a_test_leaves_is_gone_before_the_next_and_the_engine_is_awake_again(db):
    migrated = _contents(db)
    run = schedule(db, START, document())
    # What the list of tables once forgot: a resource left in the game world, and an engine put to sleep.
    db.autocommit(lambda tx: tx.execute(
        "INSERT INTO event_run_resources (run_id, step_id, kind, resource_id, status, recorded_at, changed_at) "
        "VALUES (%s, 1, 'npc', 'npc-1', 'live', %s, %s)", (run.id, START, START)))
    db.autocommit(lambda tx: tx.execute(
        "UPDATE event_engine_state SET state = 'asleep', sleeps_until = %s, epoch = epoch + 5, wake_ups = 5", (START,)))
    left = _contents(db)
    assert {t for t, rows in left.items() if rows != migrated[t]} >= {
        "event_definitions", "event_runs", "event_run_resources", "event_engine_state"}

    restore_migrated(db)  # what the `db` fixture does before the next test

    assert _contents(db) == migrated
    assert [(r["state"], r["epoch"], r["sleeps_until"], r["wake_ups"]) for r in migrated["event_engine_state"]] == [
        ("awake", 0, None, None)]
    assert [t for t, rows in migrated.items() if rows] == ["event_engine_state"]
