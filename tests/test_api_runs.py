"""The console's reads and the controls over HTTP: the shapes SPEC §7 gives, with real tokens."""

import re
import uuid
from datetime import datetime, timedelta

import pytest

from chalicelib.api.operations import CORS as cors
from chalicelib.events import journal
from chalicelib.events.actions.perform import Actions
from chalicelib.events.adapters.bridge import BridgeClient
from chalicelib.events.adapters.rehearsal import rehearsal_actions
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.runner import Runner
from chalicelib.events.store import log
from devtools.kit.game_bridge import SECRET
from tests.support.api import ADMIN, GM, MODERATOR, token
from tests.support.factory import insert_run, make_definition, make_run, run_row, step_row
from tests.support.runner_kit import RULES, RecordingChannel, schedule, step, tick
from tests.support.scenes import put_step_in, run_with_steps

ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$")


def test_a_control_answers_ok_with_the_run_and_logs_the_token_subject(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    answer = api.post(f"/runs/{run.id}/pause", {"reason": "  lag spike "}, auth=MODERATOR)
    assert answer.status == 200 and answer.body["ok"] is True
    assert answer.body["run"]["status"] == "paused" and answer.body["run"]["id"] == run.id
    assert ISO_Z.match(answer.body["run"]["updated_at"]) and "claimed_by" not in answer.body["run"]
    [entry] = api.get(f"/runs/{run.id}/log", auth=GM).body["entries"]
    assert entry["actor"] == "mod-mia" and entry["detail"]["reason"] == "lag spike"


def test_a_lost_control_is_409_naming_the_actual_status(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.COMPLETED)
    answer = api.post(f"/runs/{run.id}/resume", auth=ADMIN)
    assert answer.status == 409 and answer.body == {
        "errors": ["this run is completed, not paused"], "detail": {"run_status": "completed"}}


def test_an_unknown_run_is_404(api):
    assert api.post("/runs/424242/cancel", {}, auth=ADMIN).status == 404
    assert api.get("/runs/424242", auth=GM).body == {"errors": ["no run 424242"]}
    assert api.get("/runs/424242/log", auth=GM).status == 404


def test_step_controls_answer_with_the_step(api, db, clock):
    run, (cue, pending, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    put_step_in(db, cue, "parked", clock.now())
    confirmed = api.post(f"/runs/{run.id}/steps/{cue.id}/confirm", {"note": "done in game"}, auth=MODERATOR)
    assert confirmed.status == 200 and set(confirmed.body) == {"ok", "step"}
    assert confirmed.body["step"]["status"] == "done" and confirmed.body["step"]["last_error"] == "done in game"
    skipped = api.post(f"/runs/{run.id}/steps/{pending.id}/skip", auth=ADMIN)
    assert skipped.status == 200 and skipped.body["step"]["status"] == "skipped"


def test_retry_answers_with_the_step_whether_it_resumed_and_the_run(api, db, clock):
    run, (done, failed, _) = run_with_steps(db, clock.now(), RunStatus.PAUSED)
    put_step_in(db, done, "done", clock.now())
    put_step_in(db, failed, "failed", clock.now())
    answer = api.post(f"/runs/{run.id}/steps/{failed.id}/retry", auth=MODERATOR)
    assert answer.status == 200 and set(answer.body) == {"ok", "step", "resumed", "run"}
    assert (answer.body["step"]["status"], answer.body["resumed"], answer.body["run"]["status"]) == ("pending", True, "running")


def test_cancel_answers_the_run_and_how_many_of_its_steps_it_cancelled_as_the_seed_did(api, db, clock):
    """The seed's cancel answered `cancelledSteps` beside the run; the count was only in the log here."""
    run, (done, parked, leased, _pending) = run_with_steps(db, clock.now(), RunStatus.RUNNING, n=4)
    put_step_in(db, done, "done", clock.now())
    put_step_in(db, parked, "parked", clock.now())
    put_step_in(db, leased, "leased", clock.now())  # in flight: left to its answer, not counted
    answer = api.post(f"/runs/{run.id}/cancel", {"reason": "storm"}, auth=MODERATOR, headers={"Idempotency-Key": "c-1"})
    assert answer.status == 200 and set(answer.body) == {"ok", "run", "cancelled_steps"}
    assert (answer.body["run"]["status"], answer.body["cancelled_steps"]) == ("cancelled", 2)
    [entry] = api.get(f"/runs/{run.id}/log", auth=GM).body["entries"]
    assert entry["detail"]["cancelled_steps"] == 2  # the answer and the log agree
    again = api.post(f"/runs/{run.id}/cancel", {"reason": "storm"}, auth=MODERATOR, headers={"Idempotency-Key": "c-1"})
    assert again.body == answer.body  # a replayed press answers the same count
    nothing = make_run(db, clock.now(), status=RunStatus.SCHEDULED)
    assert api.post(f"/runs/{nothing.id}/cancel", {}, auth=ADMIN).body["cancelled_steps"] == 0


def test_get_run_has_steps_counts_and_exactly_the_controls_legal_now(api, db, clock):
    run, (done, failed, pending) = run_with_steps(db, clock.now(), RunStatus.PAUSED)
    put_step_in(db, done, "done", clock.now())
    put_step_in(db, failed, "failed", clock.now())
    body = api.get(f"/runs/{run.id}", auth=MODERATOR).body
    assert body["run"]["id"] == run.id and [s["id"] for s in body["steps"]] == [done.id, failed.id, pending.id]
    assert body["counts"] == {"done": 1, "failed": 1, "pending": 1}
    moderators = ["admin", "moderator"]
    assert body["controls"] == {
        "run": ["resume", "cancel"],
        "phase": [],  # a phase with no deadline: nothing to extend
        "steps": {str(done.id): [], str(failed.id): ["retry"], str(pending.id): ["skip"]},
        "roles": {"run": {"resume": moderators, "cancel": moderators}, "phase": {},
                  "steps": {str(done.id): {}, str(failed.id): {"retry": moderators}, str(pending.id): {"skip": moderators}}},
    }
    # A game master may press none of them here (a gm's skip is for a parked cue): none is offered to them.
    assert api.get(f"/runs/{run.id}", auth=GM).body["controls"] == {
        "run": [], "phase": [], "steps": {str(done.id): [], str(failed.id): [], str(pending.id): []},
        "roles": {"run": {}, "phase": {}, "steps": {str(done.id): {}, str(failed.id): {}, str(pending.id): {}}},
    }


def test_runs_are_listed_newest_first_a_page_at_a_time(api, db, clock):
    made = [make_run(db, clock.advance(60), status=RunStatus.SCHEDULED).id for _ in range(5)]
    seen, cursor = [], None
    while True:
        answer = api.get("/runs?limit=2" + (f"&cursor={cursor}" if cursor else ""), auth=GM)
        assert answer.status == 200 and len(answer.body["runs"]) <= 2
        seen += [r["id"] for r in answer.body["runs"]]
        cursor = answer.body["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(made, reverse=True)


def test_runs_can_be_filtered_by_status_and_definition(api, db, clock):
    paused = make_run(db, clock.now(), status=RunStatus.PAUSED)
    make_run(db, clock.advance(1), status=RunStatus.RUNNING)
    assert [r["id"] for r in api.get("/runs?status=paused", auth=GM).body["runs"]] == [paused.id]
    by_definition = api.get(f"/runs?definition_id={paused.definition_id}", auth=GM).body["runs"]
    assert [r["id"] for r in by_definition] == [paused.id]


def test_runs_can_be_found_by_when_they_were_scheduled_a_page_at_a_time(api, db, clock):
    """Last spring's event among a year of runs: ?from=&to= keeps the runs scheduled in [from, to), newest first
    and paged as ever; either edge alone keeps from then on, or before then; with the other filters too."""
    definition = make_definition(db, clock.now())
    day = datetime(2026, 1, 1, 19)
    made = db.transaction(lambda tx: [insert_run(tx, definition, clock.now(), status=RunStatus.COMPLETED,
                                                 scheduled_for=day + timedelta(days=7 * i)).id for i in range(50)])
    spring = [r for i, r in enumerate(made) if datetime(2026, 3, 1) <= day + timedelta(days=7 * i) < datetime(2026, 4, 1)]
    assert len(spring) == 4
    seen, cursor = [], None
    while True:
        answer = api.get("/runs?from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z&limit=2"
                         + (f"&cursor={cursor}" if cursor else ""), auth=GM)
        assert answer.status == 200, answer.body
        seen += [r["id"] for r in answer.body["runs"]]
        cursor = answer.body["next_cursor"]
        if cursor is None:
            break
    assert seen == spring[::-1]
    edge = api.get("/runs?from=2026-03-05T19:00:00Z&to=2026-03-12T19:00:00Z", auth=GM).body["runs"]
    assert [r["scheduled_for"] for r in edge] == ["2026-03-05T19:00:00Z"], "from included, to excluded"
    later = api.get("/runs?from=2026-12-01T00:00:00%2B01:00&limit=200", auth=GM).body["runs"]
    assert [r["id"] for r in later] == [made[48], made[49]][::-1]
    earlier = api.get("/runs?to=2026-01-08T19:00:00Z", auth=GM).body["runs"]
    assert [r["id"] for r in earlier] == [made[0]]
    other = make_run(db, clock.now(), status=RunStatus.COMPLETED, scheduled_for=datetime(2026, 3, 10))
    mixed = api.get(f"/runs?from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z&definition_id={definition.id}"
                    "&status=completed&rehearsal=exclude", auth=GM).body["runs"]
    assert [r["id"] for r in mixed] == spring[::-1] and other.id not in [r["id"] for r in mixed]


@pytest.mark.parametrize(("query", "message"), [
    ("from=2026-04-01T00:00:00Z&to=2026-03-01T00:00:00Z", "query.to must be after query.from"),
    ("from=2026-03-01T00:00:00Z&to=2026-03-01T00:00:00Z", "query.to must be after query.from"),
    ("from=2026-03-01", "query.from must be a date and time with its zone, such as 2026-12-25T19:00:00Z"),
    ("to=2026-03-01T00:00:00", "query.to must be a date and time with its zone, such as 2026-12-25T19:00:00Z"),
    ("from=last%20spring", "query.from must be a date and time with its zone"),
    ("to=0001-01-01T00:00:00Z", "query.to must be from 1970 to 8999"),
    ("to=1970-01-01T00:00:00Z", "query.to must be after 1970-01-01T00:00:00Z, the earliest time the runs list reads"),
    ("form=2026-03-01T00:00:00Z", "`form` is not a query parameter of GET /runs; did you mean `from`?"),
])
def test_a_bad_scheduled_window_is_a_400_naming_it(api, db, clock, query, message):
    make_run(db, clock.now(), status=RunStatus.COMPLETED)
    answer = api.get(f"/runs?{query}", auth=GM)
    assert answer.status == 400 and any(message in e for e in answer.body["errors"]), answer.body


def test_the_log_is_tailed_after_an_id(api, db, clock):
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    api.post(f"/runs/{run.id}/pause", auth=ADMIN)
    api.post(f"/runs/{run.id}/resume", auth=ADMIN)
    first, second = api.get(f"/runs/{run.id}/log", auth=GM).body["entries"]
    assert [e["detail"]["control"] for e in (first, second)] == ["pause", "resume"]
    assert api.get(f"/runs/{run.id}/log?after_id={first['id']}", auth=GM).body["entries"] == [second]
    assert api.get(f"/runs/{run.id}/log?after_id={second['id']}", auth=GM).body["entries"] == []
    assert api.get(f"/runs/{run.id}/log?after_id=0&limit=1", auth=GM).body["entries"] == [first]


def test_the_log_names_its_chat_identities_as_a_person_reads_them_each_by_its_own_newest_press(api, db, clock):
    """`people`: each chat identity a page's rows name (their actor, or whose hold ended), named by that identity's
    newest chat.pressed row of the run ("Mira (Discord)"), one without a press by its platform; {} for a page
    naming none."""
    run, (cue, _, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    cue = put_step_in(db, cue, "parked", clock.now())
    paused = api.post(f"/runs/{run.id}/pause", auth=ADMIN)
    assert paused.status == 200
    api.post(f"/runs/{run.id}/resume", auth=ADMIN)
    console_only = api.get(f"/runs/{run.id}/log", auth=GM).body
    assert console_only["people"] == {}

    def pressed(actor: str, name: str) -> None:
        row = journal.chat_pressed(cue, actor, "acknowledge", platform=actor.partition(":")[0], user_id=actor.partition(":")[2],
                                   name=name)
        db.transaction(lambda tx: log.append(tx, row, clock.advance(1)))

    pressed("discord:4242", "Mira from before")
    assert api.post(f"/runs/{run.id}/steps/{cue.id}/acknowledge", {}, auth=token("gm", sub="discord:4242")).status == 200
    pressed("discord:4242", "Mira")
    pressed("slack:77", "Sol")  # the run's newest press is another's: Mira is still named by her own
    released = api.post(f"/runs/{run.id}/steps/{cue.id}/release", {}, auth=token("moderator", sub="slack:77"))
    assert released.status == 200, released.body
    assert api.post(f"/runs/{run.id}/steps/{cue.id}/acknowledge", {}, auth=token("gm", sub="discord:99")).status == 200
    answer = api.get(f"/runs/{run.id}/log", auth=GM).body
    assert answer["people"] == {"discord:4242": "Mira (Discord)", "slack:77": "Sol (Slack)", "discord:99": "Discord user 99"}
    last = answer["entries"][-1]["id"]
    assert api.get(f"/runs/{run.id}/log?after_id={last}", auth=GM).body == {"entries": [], "people": {}}
    # A page holding only the release names both: the one who released and whose hold it ended.
    release = next(e for e in answer["entries"] if e["kind"] == "step.released")
    page = api.get(f"/runs/{run.id}/log?after_id={release['id'] - 1}&limit=1", auth=GM).body
    assert page["people"] == {"slack:77": "Sol (Slack)", "discord:4242": "Mira (Discord)"}


def test_another_runs_step_is_404_over_http_and_untouched(api, db, clock):
    mine, _ = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    other, (theirs, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    answer = api.post(f"/runs/{mine.id}/steps/{theirs.id}/skip", auth=ADMIN)
    assert answer.status == 404 and step_row(db, theirs.id).status.value == "pending"
    assert run_row(db, other.id).status is RunStatus.RUNNING


def test_answers_carry_the_console_origin_for_cors(api):
    answer = api.get("/runs", auth=GM)
    assert answer.status == 200
    assert answer.headers["Access-Control-Allow-Origin"] == cors.allow_origin
    assert "Authorization" in answer.headers["Access-Control-Allow-Headers"]


def test_health_and_actions(api):
    assert api.get("/health").body == {"ok": True}
    actions = {a["id"]: a for a in api.get("/actions", auth=GM).body["actions"]}
    assert {"core.wait", "core.cue", "core.announce", "module.action"} <= set(actions)
    assert actions["core.wait"]["params_schema"]["required"] == ["seconds"]


def test_get_run_names_each_phase_with_its_kind_and_state(api, db, clock, runner):
    from tests.support.runner_kit import schedule, step, tick

    doc = {"name": "Harvest", "grace_seconds": 300, "phases": [
        {"name": "Gathering", "steps": [step("core.cue", instruction="Meet at the barn")]},
        {"name": "Feast", "steps": [step("core.announce", message="Eat")]}],
        "ending": [step("core.announce", message="Goodnight")]}
    run = schedule(db, clock.now(), doc)
    assert api.get(f"/runs/{run.id}", auth=GM).body["phases"] == []  # not started: no phase yet
    tick(runner)
    phases = api.get(f"/runs/{run.id}", auth=GM).body["phases"]
    assert [(p["number"], p["kind"], p["name"], p["state"]) for p in phases] == [
        (1, "main", "Gathering", "open"), (2, "main", "Feast", "not_started"), (3, "ending", "ending", "not_started")]
    assert ISO_Z.match(phases[0]["opened_at"]) and phases[1]["opened_at"] is None and phases[0]["drained_at"] is None


@pytest.fixture
def rehearsing(db, clock, game_bridge):
    """A runner that walks dry runs as a deployment does (its rehearsal's own confirm of a cue among it)."""
    live = Actions(bridge=BridgeClient(game_bridge.url, SECRET, timeout=5.0), cue_channel=RecordingChannel("cue"),
                   announce_channel=RecordingChannel("announce"))
    built = Runner(db, clock, live, RULES, concurrency=2, rehearsals=rehearsal_actions(live, RecordingChannel("rehearsal"), None))
    yield built
    built.close()


def test_a_parked_cue_says_whose_its_timeout_is_as_the_engine_decides_it(api, db, clock, rehearsing):
    """`times_out_by` beside `times_out_at`: "rehearsal" when a dry run's own confirm comes first (the cue has no
    timeout, or its own, over the speed, is later), "timeout" for the cue's own; absent for a cue with none."""
    def cue(**timeout) -> dict:
        return {"name": f"Bonfire {uuid.uuid4().hex[:6]}", "grace_seconds": 300,
                "phases": [{"steps": [step("core.cue", instruction="Light the bonfire", **timeout)]}]}

    def parked(run_id: int) -> dict:
        for _ in range(5):
            found = [s for s in api.get(f"/runs/{run_id}", auth=GM).body["steps"] if s["parked"]]
            if found:
                return found[0]
            tick(rehearsing)
        raise AssertionError(f"run {run_id} never parked at its cue")

    def dry(document: dict) -> int:
        definition_id = api.post("/definitions", document, auth=ADMIN).body["definition"]["id"]
        answer = api.post(f"/definitions/{definition_id}/dry-runs",
                          {"speed": 60, "bridge": "simulate", "auto_confirm_seconds": 600}, auth=ADMIN)
        return answer.body["run"]["id"]

    live_timed = parked(schedule(db, clock.now(), cue(timeout_seconds=900)).id)
    live_untimed = parked(schedule(db, clock.now(), cue()).id)
    dry_untimed = parked(dry(cue()))
    dry_later = parked(dry(cue(timeout_seconds=60_000)))  # 1000 s at 60x: after the rehearsal's 600 s
    dry_sooner = parked(dry(cue(timeout_seconds=6_000)))  # 100 s at 60x: before it
    assert [(s["times_out_at"] is not None, s.get("times_out_by"))
            for s in (live_timed, live_untimed, dry_untimed, dry_later, dry_sooner)] == [
        (True, "timeout"), (False, None), (True, "rehearsal"), (True, "rehearsal"), (True, "timeout")]
    assert "times_out_by" not in live_untimed
