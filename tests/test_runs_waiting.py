"""Waiting, everywhere: what a run waits for is kept on its row by the statements that move it, agrees with
what `waiting.py` derives from the rows at every step of a run's life, and `GET /runs` carries it, filters on
it through an index and counts the runs that need a person apart from those working, on the real database.
"""

from datetime import timedelta

import pytest

from chalicelib.events.lifecycle import PhaseKind, RunStatus, Signalled
from chalicelib.events.model import Claim
from chalicelib.events.programme import PhasePlan
from chalicelib.events.store import phases, runs, steps
from chalicelib.migrate import MIGRATIONS
from devtools.kit.explain import plan_problems
from devtools.kit.game_bridge import Answer
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.factory import make_run, run_row
from tests.support.runner_kit import schedule, step, tick
from tests.support.scenes import put_step_in, run_with_steps


def _agrees(api, db, run_id):
    """The row's waiting_for is what GET /runs/{id} derives, and GET /runs carries the same `waiting`."""
    shown = api.get(f"/runs/{run_id}", auth=GM).body
    derived = shown["waiting"]
    assert run_row(db, run_id).waiting_for == (None if derived is None else derived["for"]), shown
    listed = {r["id"]: r for r in api.get("/runs?limit=200", auth=GM).body["runs"]}
    assert listed[run_id]["waiting"] == derived
    return derived


def _doc(*phases, ending=()):
    return {"name": "Harvest", "grace_seconds": 300, "phases": list(phases), "ending": list(ending)}


def _cue_phase(advance=None):
    phase = {"name": "bonfire", "steps": [step("core.cue", instruction="Light the bonfire"),
                                          step("core.announce", message="Lit!")]}
    return phase if advance is None else {**phase, "advance": advance}


def test_a_cue_is_waited_for_from_its_park_to_its_answer_through_a_pause(api, db, clock, runner):
    run = schedule(db, clock.now(), _doc(_cue_phase(), {"name": "after", "steps": [step("core.announce", message="x")]}))
    assert _agrees(api, db, run.id) is None
    tick(runner)
    cue = _agrees(api, db, run.id)
    assert cue["for"] == "cue" and "acknowledged_by" not in cue
    assert api.post(f"/runs/{run.id}/pause", {"reason": "rain"}, auth=MODERATOR).status == 200
    assert _agrees(api, db, run.id)["for"] == "resume"
    assert api.post(f"/runs/{run.id}/resume", None, auth=MODERATOR).status == 200
    assert _agrees(api, db, run.id)["for"] == "cue"  # back to its cue: the resume's statement reads the rows
    assert api.post(f"/runs/{run.id}/steps/{cue['step_id']}/acknowledge", {}, auth=GM).status == 200
    assert _agrees(api, db, run.id)["acknowledged_by"] == "gm-gus"
    assert api.post(f"/runs/{run.id}/steps/{cue['step_id']}/confirm", {"note": "lit"}, auth=GM).status == 200
    assert _agrees(api, db, run.id) is None
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED and _agrees(api, db, run.id) is None


def test_a_skipped_cue_and_a_cancelled_run_wait_for_nothing(api, db, clock, runner):
    skipped = schedule(db, clock.now(), _doc(_cue_phase()))
    cancelled = schedule(db, clock.now() + timedelta(seconds=1), _doc(_cue_phase()))
    clock.advance(1)
    tick(runner)
    cue = _agrees(api, db, skipped.id)
    assert _agrees(api, db, cancelled.id)["for"] == "cue"
    assert api.post(f"/runs/{skipped.id}/steps/{cue['step_id']}/skip", {"reason": "rain"}, auth=GM).status == 200
    assert _agrees(api, db, skipped.id) is None
    assert api.post(f"/runs/{cancelled.id}/cancel", {"reason": "storm"}, auth=ADMIN).status == 200
    assert _agrees(api, db, cancelled.id) is None


def test_a_skipped_pending_step_behind_a_paused_run_leaves_it_waiting_for_its_resume(api, db, clock):
    run, (_, later, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    assert api.post(f"/runs/{run.id}/pause", {}, auth=ADMIN).status == 200
    assert api.post(f"/runs/{run.id}/steps/{later.id}/skip", {}, auth=MODERATOR).status == 200
    assert _agrees(api, db, run.id)["for"] == "resume"


def test_a_held_phase_is_waited_for_until_its_advance(api, db, clock, runner):
    run = schedule(db, clock.now(), _doc({"name": "warm-up", "advance": {"when": "manual"},
                                          "steps": [step("core.announce", message="Stretch")]},
                                         {"name": "race", "steps": [step("core.announce", message="Go")]}))
    tick(runner)
    assert _agrees(api, db, run.id)["for"] == "advance"
    assert api.post(f"/runs/{run.id}/pause", {}, auth=ADMIN).status == 200
    assert _agrees(api, db, run.id)["for"] == "resume"
    assert api.post(f"/runs/{run.id}/resume", None, auth=ADMIN).status == 200
    assert _agrees(api, db, run.id)["for"] == "advance"  # the resume found its phase held
    assert api.post(f"/runs/{run.id}/advance", {"phase": 1}, auth=MODERATOR).status == 200
    assert _agrees(api, db, run.id) is None
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED and _agrees(api, db, run.id) is None


def test_a_phase_held_for_a_signal_is_waited_for_until_it_comes(api, db, clock, runner):
    run = schedule(db, clock.now(), _doc({"name": "boss", "advance": {"when": "signal", "name": "boss_down"},
                                          "steps": [step("core.announce", message="Fight")]},
                                         {"name": "loot", "steps": [step("core.announce", message="Loot")]}))
    tick(runner)
    assert _agrees(api, db, run.id) == {**_agrees(api, db, run.id), "for": "signal", "signal": "boss_down"}
    assert api.post(f"/runs/{run.id}/signals/boss_down", {}, auth=MODERATOR).status == 202
    assert _agrees(api, db, run.id) is None
    tick(runner)
    assert run_row(db, run.id).status is RunStatus.COMPLETED


def test_a_cue_cancelled_by_its_phases_signal_is_no_longer_waited_for(api, db, clock, runner):
    run = schedule(db, clock.now(), _doc(_cue_phase({"when": "signal", "name": "boss_down"}),
                                         {"name": "loot", "steps": [step("core.announce", message="Loot")]}))
    tick(runner)
    assert _agrees(api, db, run.id)["for"] == "cue"
    assert api.post(f"/runs/{run.id}/signals/boss_down", {}, auth=MODERATOR).status == 202
    assert _agrees(api, db, run.id)["for"] == "cue"  # still parked until the tick closes the phase
    tick(runner)
    assert _agrees(api, db, run.id) is None and run_row(db, run.id).status is RunStatus.COMPLETED


@pytest.mark.parametrize("on_timeout", ["continue", "confirm"])
def test_a_cue_that_timed_out_is_no_longer_waited_for(api, db, clock, runner, on_timeout):
    cue = step("core.cue", instruction="Light the bonfire", timeout_seconds=30, on_timeout=on_timeout)
    run = schedule(db, clock.now(), _doc({"name": "bonfire", "steps": [
        cue, step("core.wait", seconds=3600), step("core.announce", message="Lit!")]}))
    tick(runner)
    assert _agrees(api, db, run.id)["for"] == "cue"
    clock.advance(30)
    tick(runner)  # the cue times out; the run goes on to its hour's wait
    assert run_row(db, run.id).status is RunStatus.RUNNING and _agrees(api, db, run.id) is None
    assert [r["id"] for r in api.get("/runs?waiting=cue", auth=GM).body["runs"]] == []
    assert api.get("/runs", auth=GM).body["summary"]["waiting"]["any"] == 0


def test_an_after_phase_holds_for_nobody(api, db, clock, runner):
    run = schedule(db, clock.now(), _doc({"name": "market", "advance": {"when": "after", "seconds": 600},
                                          "steps": [step("core.announce", message="Open")]},
                                         {"name": "close", "steps": [step("core.announce", message="Shut")]}))
    tick(runner)
    assert _agrees(api, db, run.id) is None


def test_the_runs_list_says_who_paused_each_paused_run_and_why(api, db, clock, runner, game_bridge):
    """A person's pause names them and their reason; the engine's (a failed step under on_failure pause) names
    nobody and gives its cause; a run paused, resumed and paused again says the last pause."""
    by_hand, _ = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    again, _ = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    assert api.post(f"/runs/{by_hand.id}/pause", {"reason": "boss bugged"}, auth=MODERATOR).status == 200
    assert api.post(f"/runs/{again.id}/pause", {"reason": "first"}, auth=MODERATOR).status == 200
    assert api.post(f"/runs/{again.id}/resume", None, auth=MODERATOR).status == 200
    assert api.post(f"/runs/{again.id}/pause", {}, auth=ADMIN).status == 200
    game_bridge.script("world.spawn", Answer(400, {"reason": "the square is full"}))
    failing = schedule(db, clock.now(), _doc({"name": "opening", "steps": [step("world.spawn", npc="scarecrow")]}))
    tick(runner)
    assert run_row(db, failing.id).status is RunStatus.PAUSED

    listed = {r["id"]: r["waiting"] for r in api.get("/runs?waiting=resume", auth=GM).body["runs"]}
    assert (listed[by_hand.id]["paused_by"], listed[by_hand.id]["reason"]) == ("mod-mia", "boss bugged")
    assert (listed[again.id]["paused_by"], listed[again.id]["reason"]) == ("root-admin", None)
    assert listed[failing.id]["paused_by"] is None
    assert listed[failing.id]["reason"] == f"Run {failing.id} · Phase 1 · step 1 (world.spawn) HTTP 400: the square is full"
    for run_id, shown in listed.items():  # the run's own page says the same
        assert _agrees(api, db, run_id) == shown
    assert "paused_by" not in api.get(f"/runs/{by_hand.id}", auth=GM).body["run"]  # on its wait, not the run


# ── GET /runs: the filter and the counts ─────────────────────────────────
def _scene(api, db, clock):
    """Runs of every kind: two parked at a cue, one paused, one working, one scheduled, one completed."""
    made = {}
    for name in ("cue_a", "cue_b", "paused", "working"):
        run, (first, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
        made[name] = run
        if name.startswith("cue"):  # parked by the statement the tick parks a cue with
            cue = put_step_in(db, first, "leased", clock.now())
            assert db.transaction(lambda tx, c=cue: steps.park(tx, Claim(c.id, "tick-token", c.attempts), "cue"))
    api.post(f"/runs/{made['paused'].id}/pause", {}, auth=ADMIN)
    made["scheduled"] = make_run(db, clock.now() + timedelta(hours=1))
    made["completed"] = make_run(db, clock.now(), status=RunStatus.COMPLETED)
    return made


def test_get_runs_filters_on_waiting_and_counts_the_runs_that_need_a_person(api, db, clock):
    made = _scene(api, db, clock)

    def ids(query):
        answer = api.get(f"/runs?{query}", auth=GM)
        assert answer.status == 200, answer.body
        return [r["id"] for r in answer.body["runs"]]

    assert ids("waiting=cue") == [made["cue_b"].id, made["cue_a"].id]
    assert ids("waiting=resume") == [made["paused"].id]
    assert ids("waiting=any") == [made["paused"].id, made["cue_b"].id, made["cue_a"].id]
    assert ids("waiting=advance") == [] and ids("waiting=signal") == [] and ids("waiting=decision") == []
    assert ids("waiting=any&limit=1") == [made["paused"].id]
    page = api.get("/runs?waiting=any&limit=2", auth=GM).body
    assert ids(f"waiting=any&cursor={page['next_cursor']}") == [made["cue_a"].id]
    assert ids("waiting=cue&status=paused") == []
    assert api.get("/runs", auth=GM).body["summary"] == {
        "waiting": {"any": 3, "cue": 2, "advance": 0, "signal": 0, "decision": 0, "resume": 1}, "working": 1}
    # the summary is of every run, whatever the page's filters
    assert api.get("/runs?status=completed", auth=GM).body["summary"]["waiting"]["any"] == 3


def test_a_waiting_filter_that_is_not_one_is_400_naming_them(api):
    answer = api.get("/runs?waiting=confirmation", auth=GM)
    assert answer.status == 400
    assert "waiting" in answer.body["errors"][0] and "resume" in answer.body["errors"][0]


# ── through an index, on a table of many runs ───────────────────────────
@pytest.fixture
def many_runs(db, clock):
    """100,000 finished runs, and a few waiting among the newest and the oldest."""
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    db.autocommit(lambda tx: tx.execute(
        """INSERT INTO event_runs (definition_id, definition_version, occurrence_key, status, scheduled_for,
                                   grace_seconds, health, created_at, updated_at, finished_at)
           SELECT %s, 1, CONCAT('many-', seq), 'completed', %s, 300, 'ok', %s, %s, %s FROM seq_1_to_100000""",
        (run.definition_id, clock.now() - timedelta(days=1), clock.now(), clock.now(), clock.now())))
    db.autocommit(lambda tx: tx.execute(
        "UPDATE event_runs SET status = 'paused', finished_at = NULL, waiting_for = 'resume' WHERE occurrence_key IN"
        " ('many-1', 'many-50000', 'many-100000')"))
    db.autocommit(lambda tx: tx.execute("ANALYZE TABLE event_runs"))
    return run


def _explained(db, sql, args):
    conn = db.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("EXPLAIN " + sql, args)
            columns = [c[0] for c in cur.description]
            return [dict(zip(columns, row, strict=True)) for row in cur.fetchall()]
    finally:
        conn.close()


class _Recording:
    """A Tx that records each statement and answers it from the database."""

    def __init__(self, tx):
        self.tx, self.statements = tx, []

    def _seen(self, sql, args):
        self.statements.append((sql, args))

    def one(self, sql, args=None):
        self._seen(sql, args)
        return self.tx.one(sql, args)

    def all(self, sql, args=None):
        self._seen(sql, args)
        return self.tx.all(sql, args)


def _one_statement(db, work):
    def read(tx):
        recording = _Recording(tx)
        return work(recording), recording.statements

    answer, statements = db.autocommit(read)
    (sql, args), = statements
    return answer, _explained(db, sql, args)


def test_the_filter_and_the_counts_read_ranges_of_indexes_with_no_sort_among_100000_runs(db, many_runs):
    """Built once (100,000 rows take seconds): each filter, then the counts."""
    for waiting_for, found in (("any", 3), ("resume", 3), ("cue", 0)):
        (page, _), plan = _one_statement(db, lambda tx, w=waiting_for: runs.list_page(tx, waiting_for=w, limit=50))
        assert len(page) == found
        assert not plan_problems(plan), plan
        assert plan[0]["key"] in ("event_runs_waiting", "event_runs_waits") and int(plan[0]["rows"]) < 100, plan
    counts, plan = _one_statement(db, runs.waiting_counts)
    assert counts == {"waiting": {"any": 3, "cue": 0, "advance": 0, "signal": 0, "decision": 0, "resume": 3}, "working": 1}
    assert not plan_problems(plan), plan
    assert all(int(row["rows"] or 0) < 100 for row in plan), plan


def test_closing_a_phase_ends_the_wait_for_its_cue_in_the_closes_own_statement(db, clock):
    """Between the unit that closes a phase (its cue cancelled) and the one that leaves it, nothing is waited for."""
    run, (first, *_) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    db.transaction(lambda tx: phases.insert_plan(
        tx, run.id, [PhasePlan(1, PhaseKind.MAIN, "boss", (), Signalled("boss_down"))],
        1, clock.now()))
    cue = put_step_in(db, first, "leased", clock.now())
    assert db.transaction(lambda tx: steps.park(tx, Claim(cue.id, "tick-token", cue.attempts), "cue"))
    assert run_row(db, run.id).waiting_for == "cue"
    db.autocommit(lambda tx: tx.execute("UPDATE event_run_phases SET condition_met = TRUE WHERE run_id = %s", (run.id,)))

    def close(tx):
        assert phases.close(tx, run.id, 1, "signal", clock.now())
        assert cue.id in [s.id for s in steps.cancel_phase(tx, run.id, 1, clock.now(), "closed")]

    db.transaction(close)
    assert run_row(db, run.id).waiting_for is None


def test_runs_waiting_before_the_column_existed_get_it_from_their_rows(api, db, clock, runner):
    """Migration 0035, run over runs whose waiting_for is gone, writes what the statements would have."""
    cue = schedule(db, clock.now(), _doc(_cue_phase()))
    held = schedule(db, clock.now(), _doc({"name": "warm-up", "advance": {"when": "signal", "name": "go"},
                                           "steps": [step("core.announce", message="Stretch")]},
                                          {"name": "race", "steps": [step("core.announce", message="Go")]}))
    market = schedule(db, clock.now(), _doc({"name": "market", "advance": {"when": "after", "seconds": 600},
                                             "steps": [step("core.announce", message="Open")]},
                                            {"name": "close", "steps": [step("core.announce", message="Shut")]}))
    paused = schedule(db, clock.now(), _doc(_cue_phase()))
    done = schedule(db, clock.now(), _doc({"name": "only", "steps": [step("core.announce", message="x")]}))
    tick(runner)
    assert api.post(f"/runs/{paused.id}/pause", {}, auth=ADMIN).status == 200
    everyone = (cue, held, market, paused, done)
    written = {r.id: run_row(db, r.id).waiting_for for r in everyone}
    assert list(written.values()) == ["cue", "signal", None, "resume", None]
    db.autocommit(lambda tx: tx.execute("UPDATE event_runs SET waiting_for = NULL"))
    sql = "\n".join(line for line in (MIGRATIONS / "0035.event-runs-waiting-backfill.sql").read_text().splitlines()
                    if not line.startswith("--"))
    db.autocommit(lambda tx: tx.execute(sql))
    assert {r.id: run_row(db, r.id).waiting_for for r in everyone} == written
