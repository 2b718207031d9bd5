"""Creating, versioning and reading definitions, and scheduling runs, over HTTP."""

import json
from datetime import timedelta

import pytest

from chalicelib.events.lifecycle import TERMINAL_RUN, RunStatus
from chalicelib.events.store import log, runs
from tests.support.api import ADMIN, GM
from tests.support.factory import document as factory_document
from tests.support.factory import make_definition
from tests.support.scenes import everything, set_run, table_counts
from tests.test_definitions_validate import SPEC_EXAMPLE


def _create(api, document=SPEC_EXAMPLE) -> int:
    answer = api.post("/definitions", document, auth=ADMIN)
    assert answer.status == 201, answer.body
    return answer.body["definition"]["id"]


def _iso(when) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _document(api, definition_id: int, version: int) -> dict:
    answer = api.get(f"/definitions/{definition_id}/versions/{version}", auth=GM)
    assert answer.status == 200, answer.body
    assert (answer.body["version"]["definition_id"], answer.body["version"]["version"]) == (definition_id, version)
    return answer.body["version"]["document"]


def test_create_answers_201_with_id_and_version_and_stores_the_document(api):
    answer = api.post("/definitions", SPEC_EXAMPLE, auth=ADMIN)
    assert answer.status == 201 and answer.body["definition"] == {"id": answer.body["definition"]["id"], "version": 1}
    assert [w["code"] for w in answer.body["warnings"]] == ["module_actions_undeclared"]  # world.spawn, unchecked
    definition_id = answer.body["definition"]["id"]
    detail = api.get(f"/definitions/{definition_id}", auth=GM).body
    assert detail["definition"]["name"] == "Harvest festival" and detail["definition"]["schedule_cron"] == "0 20 * * 5"
    assert detail["definition"]["created_by"] == "root-admin"
    [version] = detail["versions"]
    assert version["version"] == 1 and version["created_by"] == "root-admin"
    assert _document(api, definition_id, 1)["phases"][0]["steps"][2]["action"] == "world.spawn"


def test_put_saves_the_next_version_and_keeps_the_old_one(api):
    definition_id = _create(api)
    changed = {**SPEC_EXAMPLE, "name": "Harvest festival II", "schedule": None}
    answer = api.put(f"/definitions/{definition_id}", changed, auth=ADMIN)
    assert answer.status == 200 and answer.body["definition"] == {"id": definition_id, "version": 2}
    detail = api.get(f"/definitions/{definition_id}", auth=GM).body
    assert detail["definition"]["current_version"] == 2 and detail["definition"]["schedule_cron"] is None
    assert [v["version"] for v in detail["versions"]] == [1, 2]
    assert [_document(api, definition_id, v)["name"] for v in (1, 2)] == ["Harvest festival", "Harvest festival II"]
    assert [d["id"] for d in api.get("/definitions", auth=GM).body["definitions"]] == [definition_id]


def test_a_new_version_says_which_scheduled_runs_keep_the_version_they_were_made_from(api, db, clock):
    """An admin fixing a definition before it goes live is told that the runs already scheduled play the version
    they were made from (the save used to answer no warning, and scheduling the same time again answered the old
    run as if it were the new version's). A run under way, a dry run and a run of the new version are not named."""
    definition_id = _create(api)
    times = [_iso(clock.now() + timedelta(days=day)) for day in range(1, 9)]
    made = [api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": when}, auth=ADMIN).body["run"]["id"]
            for when in times[:7]]
    set_run(db, made[0], status=RunStatus.RUNNING.value)  # under way: it plays its version, as everyone expects
    assert api.post(f"/definitions/{definition_id}/dry-runs", {"speed": 60, "bridge": "simulate"}, auth=ADMIN).status == 201

    saved = api.put(f"/definitions/{definition_id}", {**SPEC_EXAMPLE, "name": "Harvest festival (fixed)"}, auth=ADMIN)
    assert saved.status == 200, saved.body
    [kept] = [w for w in saved.body["warnings"] if w["code"] == "runs_keep_their_version"]
    named = ", ".join(f"run {run_id} at {when} (version 1)" for run_id, when in zip(made[1:6], times[1:6], strict=True))
    assert kept["message"] == (f"6 scheduled runs keep the version they were made from: {named} and 1 more. A run plays"
                               " the version it was made from; runs planned or scheduled from now on play version 2, and a"
                               " scheduled run moves to it when a person upgrades it (its page's Upgrade, or ticked on"
                               " the runs list)")
    again = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": times[1]}, auth=ADMIN)
    assert (again.status, again.body["run"]["id"], again.body["run"]["definition_version"]) == (200, made[1], 1)

    newer = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": times[7]}, auth=ADMIN).body["run"]
    for run_id in made[2:]:
        set_run(db, run_id, status=RunStatus.CANCELLED.value)
    saved = api.put(f"/definitions/{definition_id}", {**SPEC_EXAMPLE, "name": "Harvest festival (fixed again)"}, auth=ADMIN)
    [kept] = [w for w in saved.body["warnings"] if w["code"] == "runs_keep_their_version"]
    assert kept["message"].startswith(f"2 scheduled runs keep the version they were made from: run {made[1]} at"
                                      f" {times[1]} (version 1), run {newer['id']} at {times[7]} (version 2). "), kept
    for run_id in (made[1], newer["id"]):
        set_run(db, run_id, status=RunStatus.CANCELLED.value)
    saved = api.put(f"/definitions/{definition_id}", {**SPEC_EXAMPLE, "name": "Harvest festival (third)"}, auth=ADMIN)
    assert [w["code"] for w in saved.body["warnings"]] == ["module_actions_undeclared"], "no run keeps an older one"


def test_put_of_an_unknown_definition_is_404(api):
    assert api.put("/definitions/999999", SPEC_EXAMPLE, auth=ADMIN).status == 404
    assert api.get("/definitions/999999", auth=GM).status == 404
    assert api.get("/definitions/999999/versions/1", auth=GM).status == 404


def test_a_version_the_definition_does_not_have_is_404(api):
    definition_id = _create(api)
    answer = api.get(f"/definitions/{definition_id}/versions/2", auth=GM)
    assert answer.status == 404 and answer.body == {"errors": [f"definition {definition_id} has no version 2"]}


def test_a_definition_lists_its_versions_without_their_documents(api):
    big = {**SPEC_EXAMPLE, "phases": [{"steps": [{"action": "world.spawn", "params": {"blob": "x" * 15_000}}] * 50}]}
    definition_id = _create(api, big)
    for _ in range(7):
        assert api.put(f"/definitions/{definition_id}", big, auth=ADMIN).status == 200
    answer = api.get(f"/definitions/{definition_id}", auth=GM)
    assert [v["version"] for v in answer.body["versions"]] == list(range(1, 9))
    assert all(set(v) == {"definition_id", "version", "created_by", "created_at"} for v in answer.body["versions"])
    assert len(json.dumps(answer.body)) < 5_000  # eight 750 kB documents stay out of it


def test_definitions_are_listed_a_page_at_a_time_with_a_cursor_to_the_next(api, db, clock):
    created = [make_definition(db, clock.now(), factory_document(name=f"event {i}")).id for i in range(7)]
    seen, cursor, pages = [], None, 0
    while True:
        answer = api.get("/definitions?limit=3" + (f"&cursor={cursor}" if cursor else ""), auth=GM)
        assert answer.status == 200, answer.body
        seen += [d["id"] for d in answer.body["definitions"]]
        cursor, pages = answer.body["next_cursor"], pages + 1
        if cursor is None:
            break
    assert seen == created and pages == 3
    assert api.get("/definitions", auth=GM).body == {
        "definitions": api.get("/definitions?limit=50", auth=GM).body["definitions"], "next_cursor": None,
    }


def test_an_invalid_document_is_400_listing_every_problem_and_nothing_is_written(api, db):
    document = {**SPEC_EXAMPLE, "phases": [{"steps": [{"action": "core.nope"}, {"action": "core.wait", "params": {}}]}]}
    answer = api.post("/definitions", document, auth=ADMIN)
    assert answer.status == 400 and len(answer.body["errors"]) == 2
    assert "core.nope" in answer.body["errors"][0] and "seconds" in answer.body["errors"][1]
    assert table_counts(db)["event_definitions"] == 0
    definition_id = _create(api)
    assert api.put(f"/definitions/{definition_id}", document, auth=ADMIN).status == 400
    assert table_counts(db)["event_definition_versions"] == 1


def test_scheduling_answers_201_then_200_with_the_same_run(api, db, clock):
    definition_id = _create(api)
    when = _iso(clock.now() + timedelta(days=1))
    first = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": when}, auth=ADMIN)
    again = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": when}, auth=ADMIN)
    assert (first.status, again.status) == (201, 200)
    assert first.body["run"] == again.body["run"] and first.body["run"]["status"] == "scheduled"
    assert first.body["run"]["scheduled_for"] == when and first.body["run"]["grace_seconds"] == 300
    assert table_counts(db)["event_runs"] == 1
    (entry,) = db.autocommit(lambda tx: log.after(tx, first.body["run"]["id"]))
    assert (entry.kind, entry.detail["from"], entry.detail["to"]) == ("run.status", None, "scheduled")
    assert (entry.actor, entry.detail["cause"]) == ("root-admin", "scheduled by root-admin")  # once, by its creator


@pytest.mark.parametrize("status", [s for s in RunStatus if not s.terminal])
def test_scheduling_the_occurrence_of_a_live_run_again_answers_200_with_that_run(api, db, clock, status):
    definition_id = _create(api)
    when = _iso(clock.now() + timedelta(days=1))
    run_id = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": when}, auth=ADMIN).body["run"]["id"]
    set_run(db, run_id, status=status.value)
    again = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": when}, auth=ADMIN)
    assert again.status == 200 and (again.body["run"]["id"], again.body["run"]["status"]) == (run_id, status.value)


@pytest.mark.parametrize("status", sorted(TERMINAL_RUN))
def test_scheduling_the_occurrence_of_a_finished_run_is_409_naming_the_run_and_its_status(api, db, clock, status):
    definition_id = _create(api)
    when = _iso(clock.now() + timedelta(days=1))
    run_id = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": when}, auth=ADMIN).body["run"]["id"]
    set_run(db, run_id, status=status.value, finished_at=clock.now())  # a terminal run has finished (the schema's CHECK)
    before = everything(db)
    again = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": when}, auth=ADMIN)
    assert again.status == 409
    assert again.body["errors"] == [
        (
            f"the run of this occurrence (run {run_id}) is {status.value} and will not run again;"
            " a run at another time is a new occurrence"
        )
    ]
    assert everything(db) == before


def test_the_same_instant_in_another_zone_is_the_same_occurrence(api, db, clock):
    definition_id = _create(api)
    utc = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": "2027-01-01T20:00:00Z"}, auth=ADMIN)
    paris = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": "2027-01-01T21:00:00+01:00"}, auth=ADMIN)
    assert (utc.status, paris.status) == (201, 200) and utc.body["run"]["id"] == paris.body["run"]["id"]


def test_a_time_in_the_past_inside_the_grace_window_is_a_run_for_now(api, db, clock):
    definition_id = _create(api)
    answer = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": _iso(clock.now() - timedelta(seconds=200))}, auth=ADMIN)
    assert answer.status == 201
    due = db.autocommit(lambda tx: runs.find_due(tx, clock.now(), 10))
    assert [r.id for r in due] == [answer.body["run"]["id"]]


def test_a_time_beyond_the_grace_window_is_refused(api, db, clock):
    definition_id = _create(api)
    answer = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": _iso(clock.now() - timedelta(seconds=301))}, auth=ADMIN)
    assert answer.status == 400 and "grace window (300 s)" in answer.body["errors"][0]
    assert table_counts(db)["event_runs"] == 0


def test_scheduling_an_unknown_definition_is_404(api, clock):
    assert api.post("/definitions/999999/runs", {"scheduled_for": _iso(clock.now())}, auth=ADMIN).status == 404
