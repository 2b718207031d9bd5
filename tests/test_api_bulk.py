"""POST /runs/bulk: a run control on every run a filter matches — previewed, guarded by the count the person saw,
each run changed and logged as its own press would be, refusals listed with why; roles and bad filters."""

from datetime import timedelta

import pytest

from chalicelib.events import commands
from chalicelib.events.commands import bulk
from chalicelib.events.errors import Clash
from chalicelib.events.lifecycle import RunStatus
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.factory import insert_run, make_definition, make_run
from tests.support.scenes import everything, log_rows
from tests.support.together import at_once


def _runs(db, now, definition, statuses, start=0):
    """A run of `definition` in each of `statuses`, an hour apart from `start` hours on, in one transaction."""
    return db.transaction(lambda tx: [
        insert_run(tx, definition, now, status=status, scheduled_for=now + timedelta(hours=start + i),
                   current_phase=1 if status in (RunStatus.RUNNING, RunStatus.PAUSED) else None)
        for i, status in enumerate(statuses)])


def _statuses(db, ids):
    return db.autocommit(lambda tx: {row["id"]: row["status"] for row in tx.all(
        "SELECT id, status FROM event_runs WHERE id IN %s", (list(ids),))})


def test_a_bulk_cancel_of_500_runs_is_refused_on_a_wrong_count_then_cancels_each_with_its_own_log_row(api, db, clock):
    now = clock.now()
    festival, other = make_definition(db, now), make_definition(db, now)
    waiting = _runs(db, now, festival, [RunStatus.SCHEDULED] * 480)
    over = _runs(db, now, festival, [RunStatus.COMPLETED] * 20, start=480)
    untouched = _runs(db, now, other, [RunStatus.SCHEDULED] * 5)
    which = {"definition": festival.id}

    seen = api.post("/runs/bulk", {"control": "cancel", "filter": which, "preview": True}, auth=MODERATOR)
    assert seen.status == 200 and seen.body["count"] == 500
    assert [r["id"] for r in seen.body["runs"]] == sorted((r.id for r in waiting + over), reverse=True)[:bulk.PREVIEW_RUNS]
    before = everything(db)

    wrong = api.post("/runs/bulk", {"control": "cancel", "filter": which, "reason": "server restart",
                                    "expected_count": 499}, auth=MODERATOR)
    assert wrong.status == 409 and "matches 500 runs now, not 499" in wrong.body["errors"][0]
    assert wrong.body["detail"] == {"count": 500}
    assert everything(db) == before

    pressed = api.post("/runs/bulk", {"control": "cancel", "filter": which, "reason": "server restart",
                                      "expected_count": 500}, auth=MODERATOR)
    assert pressed.status == 200 and pressed.body["control"] == "cancel" and pressed.body["count"] == 500
    assert {r["id"] for r in pressed.body["changed"]} == {r.id for r in waiting}
    assert {r["status"] for r in pressed.body["changed"]} == {"cancelled"}
    assert {r["id"] for r in pressed.body["refused"]} == {r.id for r in over}
    assert all(r["why"] == "this run is already completed" and r["run_status"] == "completed"
               for r in pressed.body["refused"]), pressed.body["refused"][0]
    assert set(_statuses(db, [r.id for r in waiting]).values()) == {"cancelled"}
    assert set(_statuses(db, [r.id for r in over]).values()) == {"completed"}
    assert set(_statuses(db, [r.id for r in untouched]).values()) == {"scheduled"}
    for run in waiting[:3] + waiting[-3:]:
        *_, entry = log_rows(db, run.id)
        assert entry["actor"] == "mod-mia" and entry["detail"] == {
            "control": "cancel", "from": "scheduled", "to": "cancelled", "reason": "server restart", "cancelled_steps": 0}
    cancels = db.autocommit(lambda tx: {row["run_id"]: row["n"] for row in tx.all(
        "SELECT run_id, COUNT(*) AS n FROM event_run_log WHERE actor = 'mod-mia' GROUP BY run_id")})
    assert cancels == {run.id: 1 for run in waiting}  # one row each, and none on a run refused


def test_a_preview_changes_nothing_and_a_bulk_pause_then_resume_follows_the_status_filter(api, db, clock):
    now = clock.now()
    festival = make_definition(db, now)
    running = _runs(db, now, festival, [RunStatus.RUNNING] * 3)
    scheduled = _runs(db, now, festival, [RunStatus.SCHEDULED] * 2, start=3)
    before = everything(db)
    seen = api.post("/runs/bulk", {"control": "pause", "filter": {"definition": festival.id, "status": "running"},
                                   "preview": True, "reason": "boss bugged"}, auth=ADMIN)
    assert seen.body["count"] == 3 and {r["status"] for r in seen.body["runs"]} == {"running"}, seen.body
    assert everything(db) == before

    paused = api.post("/runs/bulk", {"control": "pause", "filter": {"definition": festival.id, "status": "running"},
                                     "reason": "boss bugged", "expected_count": 3}, auth=ADMIN)
    assert paused.status == 200 and paused.body["refused"] == []
    assert set(_statuses(db, [r.id for r in running]).values()) == {"paused"}
    assert set(_statuses(db, [r.id for r in scheduled]).values()) == {"scheduled"}
    assert log_rows(db, running[0].id)[-1]["detail"]["reason"] == "boss bugged"

    resumed = api.post("/runs/bulk", {"control": "resume", "filter": {"status": "paused", "definition": festival.id},
                                      "expected_count": 3}, auth=MODERATOR)
    assert [r["status"] for r in resumed.body["changed"]] == ["running"] * 3


def test_a_bulk_press_sent_again_with_its_idempotency_key_answers_what_the_first_changed_and_changes_nothing(api, db, clock):
    """Review D4: a bulk pause whose answer was lost is sent again by the console with the same key; the re-send
    says the runs the first press paused as changed (replayed), not refused as already paused."""
    now = clock.now()
    festival = make_definition(db, now)
    running = _runs(db, now, festival, [RunStatus.RUNNING] * 2)
    [over] = _runs(db, now, festival, [RunStatus.COMPLETED], start=2)
    ids = [r.id for r in running] + [over.id]
    body = {"control": "pause", "filter": {"ids": ids}, "reason": "boss bugged", "expected_count": 3}
    key = {"Idempotency-Key": "bulk-pause-7f3a"}
    first = api.post("/runs/bulk", body, auth=MODERATOR, headers=key)
    assert first.status == 200 and {r["id"] for r in first.body["changed"]} == {r.id for r in running}
    assert not any(r.get("replayed") for r in first.body["changed"])
    logged = everything(db)

    again = api.post("/runs/bulk", body, auth=MODERATOR, headers=key)
    assert again.status == 200, again.body
    assert sorted(again.body["changed"], key=lambda r: r["id"]) == [
        {"id": r.id, "status": "paused", "replayed": True} for r in sorted(running, key=lambda r: r.id)]
    assert [r["id"] for r in again.body["refused"]] == [over.id]  # refused before, refused again
    assert everything(db) == logged  # not a row more

    # Another person's press with that key is theirs alone: each run refuses it, naming whose it is.
    resume = {"control": "resume", "filter": {"ids": ids}, "expected_count": 3}
    other = api.post("/runs/bulk", resume, auth=ADMIN, headers=key)
    assert other.status == 200 and other.body["changed"] == []
    assert all("was used by mod-mia" in r["why"] for r in other.body["refused"] if r["id"] != over.id), other.body
    # A fresh key is a new press: the paused runs resume.
    resumed = api.post("/runs/bulk", resume, auth=MODERATOR, headers={"Idempotency-Key": "bulk-resume-1"})
    assert {r["id"] for r in resumed.body["changed"]} == {r.id for r in running}


def test_a_bulk_cancel_offers_the_cleanup_choice_a_single_cancel_offers(api, db, clock):
    now = clock.now()
    festival = make_definition(db, now)
    [run] = _runs(db, now, festival, [RunStatus.SCHEDULED])
    pressed = api.post("/runs/bulk", {"control": "cancel", "filter": {"definition": festival.id}, "cleanup": True,
                                      "expected_count": 1}, auth=ADMIN)
    assert pressed.status == 200 and pressed.body["changed"] == [{"id": run.id, "status": "cancelled"}]
    assert log_rows(db, run.id)[-1]["detail"]["cleanup"] is True


def test_a_window_of_scheduled_times_picks_the_runs_scheduled_in_it(api, db, clock):
    now = clock.now()
    festival = make_definition(db, now)
    runs = _runs(db, now, festival, [RunStatus.SCHEDULED] * 4)  # now, +1 h, +2 h, +3 h
    window = {"from": (now + timedelta(hours=1)).isoformat() + "Z", "to": (now + timedelta(hours=3)).isoformat() + "Z"}
    seen = api.post("/runs/bulk", {"control": "cancel", "filter": {"scheduled_between": window}, "preview": True},
                    auth=ADMIN)
    assert [r["id"] for r in seen.body["runs"]] == [runs[2].id, runs[1].id]


def test_the_runs_a_person_ticked_are_paused_by_one_press_and_a_run_gone_meanwhile_is_a_409(api, db, clock):
    now = clock.now()
    festival = make_definition(db, now)
    first, second, third = _runs(db, now, festival, [RunStatus.RUNNING] * 3)
    ticked = {"ids": [third.id, first.id]}
    seen = api.post("/runs/bulk", {"control": "pause", "filter": ticked, "preview": True}, auth=MODERATOR)
    assert seen.body["count"] == 2 and [r["id"] for r in seen.body["runs"]] == [third.id, first.id]
    pressed = api.post("/runs/bulk", {"control": "pause", "filter": ticked, "reason": "restart", "expected_count": 2},
                       auth=MODERATOR)
    assert pressed.status == 200 and {r["id"] for r in pressed.body["changed"]} == {first.id, third.id}
    assert _statuses(db, [first.id, second.id, third.id]) == {first.id: "paused", second.id: "running", third.id: "paused"}
    before = everything(db)
    gone = api.post("/runs/bulk", {"control": "resume", "filter": {"ids": [first.id, 999_999]}, "expected_count": 2},
                    auth=MODERATOR)
    assert gone.status == 409 and "matches 1 run now, not 2" in gone.body["errors"][0]
    assert everything(db) == before


def test_a_game_master_may_not_press_a_bulk_control(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    before = everything(db)
    for body in ({"control": "pause", "filter": {"status": "running"}, "expected_count": 1},
                 {"control": "cancel", "filter": {"status": "running"}, "preview": True}):
        answer = api.post("/runs/bulk", body, auth=GM)
        assert answer.status == 403, answer.body
    assert everything(db) == before and run.status is RunStatus.RUNNING


@pytest.mark.parametrize("body, said", [
    ({"control": "pause", "filter": {}, "expected_count": 1}, "body.filter"),
    ({"control": "pause", "filter": {"colour": "red"}, "expected_count": 1}, "colour"),
    ({"control": "pause", "filter": {"status": "asleep"}, "expected_count": 1}, "body.filter.status"),
    ({"control": "pause", "filter": {"waiting": "nobody"}, "expected_count": 1}, "body.filter.waiting"),
    ({"control": "pause", "filter": {"definition": 0}, "expected_count": 1}, "body.filter.definition"),
    ({"control": "pause", "filter": {"ids": []}, "expected_count": 0}, "body.filter.ids"),
    ({"control": "pause", "filter": {"ids": [3, 3]}, "expected_count": 1}, "body.filter.ids"),
    ({"control": "pause", "filter": {"ids": ["3"]}, "expected_count": 1}, "body.filter.ids"),
    ({"control": "retry", "filter": {"status": "running"}, "expected_count": 1}, "body.control"),
    ({"control": "pause", "filter": {"status": "running"}}, "expected_count is required"),
    ({"control": "pause", "filter": {"status": "running"}, "expected_count": -1}, "body.expected_count"),
    ({"control": "resume", "filter": {"status": "paused"}, "reason": "x", "expected_count": 1}, "resume takes no reason"),
    ({"control": "pause", "filter": {"status": "running"}, "cleanup": True, "expected_count": 1}, "pause takes no cleanup"),
    ({"control": "pause", "filter": {"scheduled_between": {"from": "2026-12-05T10:00:00Z"}}, "expected_count": 1},
     "body.filter.scheduled_between"),
    ({"control": "pause", "filter": {"scheduled_between": {"from": "2026-12-05T10:00:00Z", "to": "2026-12-05T09:00:00Z"}},
      "expected_count": 1}, "from must be before to"),
    ({"control": "pause", "filter": {"scheduled_between": {"from": "2026-12-05T10:00:00", "to": "2026-12-05T11:00:00Z"}},
      "expected_count": 1}, "body.filter.scheduled_between.from must be a date and time with its zone, such as 2026-12-25T19:00:00Z"),
])
def test_a_bad_bulk_press_is_400_and_changes_nothing(api, db, clock, body, said):
    make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    before = everything(db)
    answer = api.post("/runs/bulk", body, auth=ADMIN)
    assert answer.status == 400 and said in " ".join(answer.body["errors"]), answer.body
    assert everything(db) == before


def test_a_filter_matching_more_than_a_request_may_act_on_is_400_naming_the_count(api, db, clock, monkeypatch):
    monkeypatch.setattr(bulk, "MAX_RUNS", 2)
    festival = make_definition(db, clock.now())
    _runs(db, clock.now(), festival, [RunStatus.SCHEDULED] * 3)
    before = everything(db)
    answer = api.post("/runs/bulk", {"control": "cancel", "filter": {"definition": festival.id}, "expected_count": 3},
                      auth=ADMIN)
    assert answer.status == 400 and "matches 3 runs; at most 2" in answer.body["errors"][0]
    assert everything(db) == before


@pytest.mark.parametrize("which", ["ids", "status"])
def test_one_bulk_press_sent_twice_at_once_changes_each_run_once_and_the_other_replays_or_is_the_counts_409(
        db, db_params, clock, monkeypatch, which):
    """The console's press and its automatic re-send, with one key, at once on connections of their own, over three
    batches each (ten runs a batch here), five times: each run paused once with one row; the other sending lists it
    replayed, or, its status filter matching fewer once the first's batches committed, is the count's 409 and
    changes nothing. Never a run refused as already paused, never a run paused twice."""
    monkeypatch.setattr(bulk, "BATCH", 10)
    for attempt in range(5):
        festival = make_definition(db, clock.now())
        running = {r.id for r in _runs(db, clock.now(), festival, [RunStatus.RUNNING] * 25)}
        shown = {"ids": {"ids": sorted(running)}, "status": {"definition": festival.id, "status": "running"}}[which]
        pressed = bulk.BulkPress.of({"control": "pause", "filter": shown, "reason": "boss bugged", "expected_count": 25}, None)
        by = commands.Context("mod-mia", clock.now(), commands.Press(key=f"bulk-pause-{attempt}"))
        answers = at_once(db_params, *[lambda own: bulk.press(own, pressed, by)] * 2)
        took = [a for a in answers if not isinstance(a, Exception)]
        assert all(isinstance(a, Clash) and a.detail["count"] < 25 for a in answers if a not in took), answers
        assert all(a["refused"] == [] and {r["id"] for r in a["changed"]} == running for a in took), took
        firsts = sorted(r["id"] for a in took for r in a["changed"] if not r.get("replayed"))
        assert firsts == sorted(running)  # each run changed by one sending, the other (if any) replaying it
        assert {r["status"] for a in took for r in a["changed"]} == {"paused"}
        assert set(_statuses(db, running).values()) == {"paused"}
        pauses = db.autocommit(lambda tx: [row["run_id"] for row in tx.all(
            "SELECT run_id FROM event_run_log WHERE kind = 'run.status' AND actor = 'mod-mia' AND run_id IN %s",
            (sorted(running),))])
        assert sorted(pauses) == sorted(running)
