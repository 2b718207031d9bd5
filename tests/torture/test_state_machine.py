"""R5: a Hypothesis state machine drives the runner, crashes, late answers, the clock and every control at once.

Rules: a tick (the game bridge scripted to one answer class for it), a worker
that claims a step and dies (before or after sending it), the late answer of
such a worker, the clock moving, and every control pressed over HTTP by a random
caller. After every rule the invariants are read back from the database:

- at most one step of a run is running, and a step's token and lease come and go together;
- attempts only rise (a person's retry or resend renews the step's allowance, never lowers the count);
- terminal statuses are final (a failed step may be re-queued by a retry, nothing else moves);
- the log replays to the rows (tests.support.torture.audit): each transition has exactly one
  row, and a dispatch is only ever of a pending step, so a parked step is never re-dispatched;
  no wake time is late, each phase's deadline column is its `opened_at` plus its document's
  seconds, and after a tick no phase past that deadline is left open at a run the tick could work;
- the game side never receives one (key, attempt) twice, a person's retry included (the key never varies, and
  the attempt only rises, so a game keeping the attempt fence never refuses a retry);
- what each run waits for, as its row keeps it (`waiting_for`, the index GET /runs?waiting= reads), is what
  `waiting.py` derives from its rows;
- the API never answers 5xx, and each control answers what `commands.refusal` and the roles predict for the rows
  as they stood (a gm's confirm or skip of a parked cue as a moderator's; acknowledge or take-over by whoever has
  it, 200; a gm's release of a cue someone else has, 403);
  each signal of the finale (which a timeout also closes, 90 s after it opened) answers the effect the contract
  gives for the rows as they stood, or the first receipt again.
"""

from collections import Counter

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from chalicelib.events import commands
from chalicelib.events.actions.context import ActionContext
from chalicelib.events.actions.outcome import Outcome
from chalicelib.events.adapters.bridge import BridgeClient
from chalicelib.events.lifecycle import TERMINAL_RUN, RunStatus
from chalicelib.events.runner import Budget, Rules
from chalicelib.events.store import phases, resources, runs, steps
from chalicelib.roles import CONTROLLERS
from devtools.kit.game_bridge import SECRET, Answer
from tests.conftest import START, restore_migrated
from tests.support.api import ADMIN, GM, MODERATOR
from tests.support.plans import fields_of
from tests.support.runner_kit import apply_outcome, make_runner, schedule, step
from tests.support.torture import audit, sized

RULES = Rules(lease_seconds=60, max_attempts=3, retry_seconds=30)
DOCUMENT = {
    "name": "Machine",
    "grace_seconds": 300,
    "phases": [
        {"name": "opening", "advance": {"when": "manual"},  # held once drained, until a person advances it
         "steps": [step("world.spawn"), step("core.cue", instruction="light it"), step("world.reward", on_failure="skip")]},
        # ends on the game's signal, or is closed (timed out) 90 s after it opened
        {"name": "finale", "advance": {"when": "signal", "name": "finale_over", "timeout_seconds": 90},
         "steps": [step("core.wait", seconds=30), step("world.finale", on_failure="abort_run")]},
    ],
    "ending": [step("world.cleanup")],
}
ANSWERS = {"done": Answer(200), "retry": Answer(503), "refused": Answer(422), "failed": Answer(400)}
LATE = {"done": Outcome.done(), "retry": Outcome.retry("late 503"), "refused": Outcome.refused("late 422"),
        "failed": Outcome.failed("late 400")}
CALLERS = {"admin": ADMIN, "moderator": MODERATOR, "gm": GM, "stranger": "not-a-token"}
SUBS = {"admin": "root-admin", "moderator": "mod-mia", "gm": "gm-gus"}  # the tokens' subjects
RUNS = 4
TERMINAL_STEP = ("done", "failed", "refused", "skipped", "cancelled")


def _nothing_to_clean_up(tx, run_id, now):
    """Why a finished run's Clean up is refused by its rows (None: it begins), as `CleanUp.refused` words it: a
    step in flight, or nothing its cleanup would send (what is left and why)."""
    planned = resources.cleanup_counts(tx, run_id).reverts
    opened = tx.one(f"SELECT {resources.step_open('r.id')} AS opened FROM event_runs r WHERE r.id = %s", (run_id,))["opened"]
    if planned and not opened:
        return None
    if resources.in_flight_count(tx, run_id, now):
        return "a step of this run is still in flight; clean up once its answer is in (what it created is reverted too)"
    left = "; ".join(f"{reason.count} left: {reason.why}" for reason in resources.left_unreverted(tx, run_id))
    return "this run has nothing live to revert and no failed revert to send again" + (f" ({left})" if left else "")

def _signal_effect(run, row) -> str:
    """What a first signal does, judged from the run and its signal phase's row as they stood (the contract)."""
    if row is None:
        return "kept_for_phase"  # no phase rows yet: the start folds it in
    left = run.current_phase is not None and run.current_phase > row["number"]
    if row["condition_met"] or row["closed_at"] is not None or left or run.status is RunStatus.ENDING:
        return "phase_over"
    if run.current_phase == row["number"]:
        return "acts_on_resume" if run.status is RunStatus.PAUSED else "ends_phase"
    return "kept_for_phase"


def test_the_engine_keeps_its_invariants_under_any_interleaving(db, clock, api, game_bridge):
    runner = make_runner(db, clock, game_bridge, rules=RULES, concurrency=1)
    client = BridgeClient(game_bridge.url, SECRET, timeout=5)

    class EngineMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            restore_migrated(db)
            clock.set(START)
            # Rules should meet every kind of state early: the first run starts and parks at its cue, the
            # second starts and pauses on a failed spawn, the third waits, scheduled, for the first tick, and
            # the fourth waits at its finale.
            self.run_ids = [schedule(db, START, DOCUMENT).id for _ in range(2)]
            game_bridge.script("world.spawn", ANSWERS["done"], ANSWERS["failed"])  # one tick takes runs in id order
            runner.tick(Budget.for_seconds(30))
            # The fourth is advanced past its opening to the finale, which a signal or its time limit ends.
            finale = schedule(db, START, DOCUMENT).id
            game_bridge.script("world.spawn", ANSWERS["done"])
            runner.tick(Budget.for_seconds(30))
            commands.advance(db, finale, 1, actor="mod-mia", now=START, reason="to the finale")
            runner.tick(Budget.for_seconds(30))
            self.run_ids += [schedule(db, START, DOCUMENT).id, finale]
            self.abandoned = []  # (step, claim) of workers that died holding a claim
            self.seen_steps, self.seen_runs, self.seen_log_id = {}, {}, 0
            self.deliveries_before = len(game_bridge.received())  # the bridge outlives the example
            self.ticked_at = None  # the clock of a tick that was the last rule, for the audit's phase deadlines

        # ── the runner and the failures around it ──────────────────────
        @rule(answer=st.sampled_from(sorted(ANSWERS)))
        def tick(self, answer):
            game_bridge.default = ANSWERS[answer]
            self.ticked_at = clock.now()
            report = runner.tick(Budget.for_seconds(30))
            assert report.errors == 0

        @rule(seconds=st.sampled_from([1, 31, 61]))
        def clock_moves(self, seconds):
            clock.advance(seconds)

        @rule(which=st.integers(0, RUNS - 1), sent=st.booleans())
        def worker_dies_holding_a_claim(self, which, sent):
            now = clock.now()
            nxt = db.autocommit(lambda tx: tx.one(
                "SELECT id FROM event_run_steps WHERE run_id = %s AND status IN ('pending', 'running') ORDER BY phase, seq LIMIT 1",
                (self.run_ids[which],)))
            if nxt is None:
                return
            target = db.autocommit(lambda tx: steps.get(tx, nxt["id"]))
            # As a tick worker does: the run lease first, then the step, with one clock and one lease length.
            if not db.autocommit(lambda tx: runs.take_lease(tx, target.run_id, "dead-worker", now, RULES.lease_seconds)):
                return
            claim = db.autocommit(lambda tx: steps.claim(tx, target, now, RULES.lease_seconds))
            if claim is None:
                return
            if sent and not target.action_id.startswith("core."):
                client.dispatch(ActionContext.of(target, claim.attempt, now))  # delivered; the answer dies with the worker
            self.abandoned.append((target, claim))

        @precondition(lambda self: self.abandoned)
        @rule(index=st.integers(0, 10), verdict=st.sampled_from(sorted(LATE)))
        def a_dead_workers_answer_arrives_late(self, index, verdict):
            target, claim = self.abandoned.pop(index % len(self.abandoned))
            db.transaction(lambda tx: apply_outcome(tx, target, claim, LATE[verdict], clock.now(), RULES))

        # ── people, over HTTP ───────────────────────────────────────────
        @rule(control=st.sampled_from(commands.RUN_CONTROLS), caller=st.sampled_from(sorted(CALLERS)),
              which=st.integers(0, RUNS - 1))
        def press_a_run_control(self, control, caller, which):
            run = db.autocommit(lambda tx: runs.get(tx, self.run_ids[which]))
            body = {} if control == "resume" else {"reason": "torture", **fields_of(control, clock.now())}
            refusal = commands.refusal(control, run)
            if control == "advance":  # the phase the person sees, judged by the offer's own rule
                body["phase"] = run.current_phase or 1
                phase, flying = db.autocommit(lambda tx: (
                    phases.get(tx, run.id, body["phase"]), steps.holding_phase(tx, run.id, body["phase"], clock.now())))
                refusal = commands.advance_refusal(run, body["phase"], phase, flying)
            if control == "cleanup" and refusal is None:
                refusal = db.autocommit(lambda tx: _nothing_to_clean_up(tx, run.id, clock.now()))
            if control == "upgrade" and refusal is None:  # the machine saves no version: each run plays the current one
                refusal = f"this run already plays version {run.definition_version}, the definition's current version"
            answer = api.post(f"/runs/{run.id}/{control}", body, auth=CALLERS[caller])
            self._judge(answer, caller, refusal, {"run_status": run.status.value})

        @rule(control=st.sampled_from(commands.STEP_CONTROLS), caller=st.sampled_from(sorted(CALLERS)),
              which=st.integers(0, RUNS - 1), index=st.integers(0, 10), foreign=st.booleans())
        def press_a_step_control(self, control, caller, which, index, foreign):
            run = db.autocommit(lambda tx: runs.get(tx, self.run_ids[which]))
            owner = self.run_ids[(which + 1) % RUNS] if foreign else run.id
            # The steps a person would press first lead the list: in flight or failed, then waiting, then the rest.
            candidates = sorted(db.autocommit(lambda tx: steps.list_for_run(tx, owner)),
                                key=lambda s: {"running": 0, "failed": 0, "pending": 1}.get(s.status.value, 2))
            target = candidates[index % len(candidates)] if candidates else None
            step_id = target.id if target else 999_999_999
            furthest = None if run.current_phase is None else db.autocommit(
                lambda tx: steps.last_started_seq(tx, run.id, run.current_phase))
            declared = commands.CONTROLS[control]
            body = {**({"note": "torture"} if declared.note_required else {}), **fields_of(control, clock.now())}
            answer = api.post(f"/runs/{run.id}/steps/{step_id}/{control}", body, auth=CALLERS[caller])
            if foreign or target is None:
                self._judge(answer, caller, None, missing=True, gate=commands.CONTROLS[control].gate)
                return
            refusal = commands.refusal(control, run, target, furthest)
            if refusal is not None:  # a refusal about a step names it by its one name
                refusal = f"{target.named}: {refusal}"
            mine = target.parked_cue and target.acknowledged_by == SUBS.get(caller)
            if control in ("acknowledge", "take-over") and mine:
                refusal = None  # theirs already: 200, nothing written
            if control == "release" and caller == "gm" and refusal is None and not mine:
                assert answer.status == 403, (answer.status, answer.body)  # someone else's: a gm releases their own only
                return
            if caller == "gm" and "gm" in declared.cue_roles and not target.parked:
                # a gm may press it on a parked cue only: 403 where a moderator could, else the 409 everyone gets
                assert answer.status == (403 if refusal is None else 409), (answer.status, answer.body, refusal)
                if refusal is not None:
                    assert answer.body["errors"] == [refusal], answer.body
                return
            self._judge(answer, caller, refusal,
                        {"run_status": run.status.value, "step_status": target.status.value, "step_parked": target.parked},
                        gate=declared.gate)
            if control == "retry" and answer.status == 200:
                assert answer.body["resumed"] is True and answer.body["run"]["status"] in ("running", "starting")

        def _at_the_finale(self):
            return [r["id"] for r in db.autocommit(lambda tx: tx.all(
                "SELECT id FROM event_runs WHERE current_phase = 2 AND status IN ('running', 'paused')"))]

        @rule(caller=st.sampled_from(sorted(CALLERS)), which=st.integers(0, RUNS - 1))
        def the_game_signals(self, caller, which):
            self._signal(caller, self.run_ids[which])

        @precondition(lambda self: self._at_the_finale())
        @rule(caller=st.sampled_from(["admin", "moderator"]), index=st.integers(0, RUNS - 1))
        def the_game_signals_a_run_at_its_finale(self, caller, index):
            at = self._at_the_finale()
            self._signal(caller, at[index % len(at)])

        def _signal(self, caller, run_id):
            """The finale's signal, sent as staff would: its answer is what the rows said before it."""
            run = db.autocommit(lambda tx: runs.get(tx, run_id))
            row, first = db.autocommit(lambda tx: (
                tx.one("SELECT number, condition_met, closed_at FROM event_run_phases WHERE run_id = %s AND `signal` = %s",
                       (run.id, "finale_over")),
                tx.one("SELECT effect FROM event_run_signals WHERE run_id = %s AND name = %s", (run.id, "finale_over"))))
            answer = api.post(f"/runs/{run.id}/signals/finale_over", {"hp": 0}, auth=CALLERS[caller])
            assert answer.status < 500, answer.body
            if caller in ("stranger", "gm"):
                assert answer.status == (401 if caller == "stranger" else 403), answer.body
                return
            if first is not None:
                assert (answer.status, answer.body["effect"]) == (200, first["effect"]), answer.body
            elif run.status in TERMINAL_RUN:
                assert answer.status == 409, answer.body
            else:
                assert (answer.status, answer.body["effect"]) == (202, _signal_effect(run, row)), (run, row, answer.body)

        def _judge(self, answer, caller, refusal, detail=None, missing=False, gate=CONTROLLERS):
            assert answer.status < 500, answer.body
            expected = (401 if caller == "stranger" else 403 if caller not in gate else 404 if missing
                        else 200 if refusal is None else 409)
            assert answer.status == expected, (answer.status, answer.body, refusal)
            if expected == 409:  # the refusal, and the statuses as they stood beside it
                assert answer.body == {"errors": [refusal], "detail": detail}

        # ── what must hold after every rule ─────────────────────────────
        @invariant()
        def the_rows_and_the_log_agree(self):
            def read(tx):
                return (
                    tx.all("SELECT id, run_id, status, attempts, claimed_by, claim_expires_at FROM event_run_steps"),
                    {r["id"]: r["status"] for r in tx.all("SELECT id, status FROM event_runs")},
                    tx.all("""SELECT id, step_id FROM event_run_log
                               WHERE kind = 'step.status' AND JSON_VALUE(detail, '$.control') = 'retry' AND id > %s""",
                           (self.seen_log_id,)),
                    tx.one("SELECT COALESCE(MAX(id), 0) AS id FROM event_run_log")["id"],
                )

            step_rows, run_status, retried_rows, last_log_id = db.autocommit(read)
            retried = {r["step_id"] for r in retried_rows}
            running_per_run = {}
            for s in step_rows:
                assert (s["claimed_by"] is None) == (s["claim_expires_at"] is None), s
                if s["status"] == "running":
                    running_per_run[s["run_id"]] = running_per_run.get(s["run_id"], 0) + 1
                before = self.seen_steps.get(s["id"])
                if before is None:
                    continue
                assert s["attempts"] >= before[1], (before, s)  # attempts only rise, a retry's included
                if before[0] in TERMINAL_STEP and s["status"] != before[0]:
                    assert before[0] == "failed" and s["status"] == "pending" and s["id"] in retried, (before, s)
            assert all(n == 1 for n in running_per_run.values()), running_per_run
            for run_id, status in self.seen_runs.items():
                if status in {s.value for s in TERMINAL_RUN}:
                    assert run_status[run_id] == status
            assert audit(db, clock.now(), self.ticked_at) == []
            self.ticked_at = None
            for run_id in self.run_ids:  # what each run waits for, as its row keeps it, is what waiting.py derives
                shown = api.get(f"/runs/{run_id}?steps_limit=1", auth=GM).body
                kept = db.autocommit(lambda tx, r=run_id: runs.get(tx, r)).waiting_for
                assert kept == (shown["waiting"] or {}).get("for"), (run_id, kept, shown["waiting"], shown["run"])
            delivered = Counter((r.headers["idempotency-key"], r.json["attempt"])
                                for r in game_bridge.received()[self.deliveries_before:])
            assert all(n == 1 for n in delivered.values()), delivered
            self.seen_steps = {s["id"]: (s["status"], s["attempts"]) for s in step_rows}
            self.seen_runs, self.seen_log_id = run_status, last_log_id

    try:
        run_state_machine_as_test(EngineMachine, settings=settings(
            max_examples=sized(200, 2_000), stateful_step_count=sized(15, 40), deadline=None,
            suppress_health_check=[HealthCheck.too_slow]))
    finally:
        runner.close()
