"""Each statement the tick runs is served by an index, without a sort (an UPDATE locks what it scans); so is
each read of the API's that would otherwise grow with the history (`HISTORY_READS`: the range it must read)."""

from datetime import timedelta

import pytest

from chalicelib.events import journal
from chalicelib.events.ledger import Listed
from chalicelib.events.lifecycle import ClosedBy, RunStatus, SignalEffect, StepStatus
from chalicelib.events.model import Claim
from chalicelib.events.store import chat_messages, definitions, escalations, log, phases, resources, runs, signals, steps
from chalicelib.events.store.runs.reads import RunFilter
from devtools.kit.clock import ManualClock
from devtools.kit.explain import ExplainTx, plan_problems
from tests.conftest import START
from tests.support.factory import make_definition, make_run, materialise, specs


@pytest.fixture
def db(module_db):
    """Every test here only explains (`ExplainTx` runs no statement): one database and one history for the module."""
    return module_db


@pytest.fixture(scope="module")
def history(module_db):
    """Enough rows that the optimiser has a real choice to make."""
    db, clock = module_db, ManualClock(START)
    run = make_run(db, clock.now(), status=RunStatus.RUNNING, current_phase=1)
    first = materialise(db, run, 1, specs(*["world.spawn"] * 5))[0]
    other = make_definition(db, clock.now())
    # Two definitions' runs, an hour apart over 83 days, one in four failed: a window, a definition and a
    # status each keep a part of them (the calendar, a bulk window, the runs list by definition and status).
    db.autocommit(lambda tx: tx.execute(
        """INSERT INTO event_runs (definition_id, definition_version, occurrence_key, status, scheduled_for,
                                   grace_seconds, health, created_at, updated_at, finished_at)
           SELECT IF(seq MOD 2, %s, %s), 1, CONCAT('bulk-', seq), IF(seq MOD 4, 'completed', 'failed'),
                  %s - INTERVAL seq HOUR, 300, 'ok', %s, %s, %s FROM seq_1_to_2000""",
        (run.definition_id, other.id, clock.now() - timedelta(days=1), clock.now(), clock.now(), clock.now())))
    db.autocommit(lambda tx: tx.execute(
        """INSERT INTO event_run_steps (run_id, phase, seq, action_id, params, status, idempotency_key)
           SELECT r.id, 1, s.seq, 'world.spawn', '{}', 'done', 'k' FROM event_runs r JOIN seq_0_to_4 s
            WHERE r.status = 'completed'"""))
    db.autocommit(lambda tx: tx.execute(
        """INSERT INTO event_run_phases (run_id, number, kind, name, opened_at)
           SELECT r.id, s.seq, 'main', 'part', %s FROM event_runs r JOIN seq_1_to_3 s""", (clock.now(),)))
    db.autocommit(lambda tx: tx.execute(  # each finished run was escalated once, long ago, and the post went
        """INSERT INTO event_run_escalations (run_id, since, n, waiting_for, tries, retry_at, sent_at)
           SELECT id, %s, 1, 'resume', 1, NULL, %s FROM event_runs WHERE status = 'completed'""",
        (clock.now() - timedelta(days=1), clock.now() - timedelta(days=1))))
    db.autocommit(lambda tx: tx.execute(  # long runs' logs (26,000 rows on a real one), each of few kinds
        """INSERT INTO event_run_log (run_id, step_id, kind, phase, detail, actor, created_at)
           SELECT %s + r.seq, %s, IF(s.seq MOD 2, 'step.dispatch', 'step.status'), 1, '{}', 'runner', %s
             FROM seq_0_to_1 r JOIN seq_1_to_5000 s""",
        (run.id, first.id, clock.now())))
    db.autocommit(lambda tx: tx.execute(
        """INSERT INTO event_run_log (run_id, kind, phase, detail, actor, created_at)
           SELECT id, 'run.status', 1, '{}', 'runner', %s FROM event_runs""", (clock.now(),)))
    db.autocommit(lambda tx: tx.execute(  # a chat message of every step, settled once its run ended; the live run's not
        """INSERT INTO event_chat_messages (run_id, step_id, platform, channel_id, message_id, posted_at, settled_at,
                                            shown_holder)
           SELECT s.run_id, s.id, 'discord', '100', CONCAT('m', s.id), %s, IF(s.run_id = %s, NULL, %s), ''
             FROM event_run_steps s""", (clock.now(), run.id, clock.now())))
    db.autocommit(lambda tx: tx.execute(
        "ANALYZE TABLE event_runs, event_run_steps, event_run_phases, event_run_escalations, event_run_log,"
        " event_chat_messages"))
    return run, first


def _plans(db, work):
    conn = db.connect()
    try:
        tx = ExplainTx(conn)
        work(tx)
        return tx.plans
    finally:
        conn.close()


# Reads of the API that a range of a whole history would also serve without a scan or a sort (a definition's
# runs, a run's log): each with the index whose range holds only what it asks for.
HISTORY_READS = {
    # The calendar: a definition's live runs of a window, earliest first.
    "calendar_live_between": (lambda tx, run, s, now: runs.live_between(
        tx, run.definition_id, now - timedelta(days=10), now - timedelta(days=9), 500), "event_runs_definition_time"),
    # A bulk press's count of a window's runs.
    "bulk_count_scheduled_between": (lambda tx, run, s, now: runs.count_matching(
        tx, RunFilter(scheduled_between=(now - timedelta(days=10), now - timedelta(days=9)))), "event_runs_scheduled"),
    # The runs list by definition and status, newest first.
    "list_definition_and_status": (lambda tx, run, s, now: runs.list_page(
        tx, definition_id=run.definition_id, status=RunStatus.FAILED), "event_runs_definition_status"),
    # A new version's warning: the definition's runs still scheduled on an earlier version.
    "scheduled_of_earlier_versions": (lambda tx, run, s, now: runs.scheduled_of_earlier_versions(
        tx, run.definition_id, 2, 5), "event_runs_definition_status"),
    # A run's newest row of a kind it has none of (the run page's who paused it, who has the cue, its
    # escalation; a 412's who changed it), a kind per actor (a log page's chat identities), how a wait ended.
    "log_latest": (lambda tx, run, s, now: log.latest(tx, run.id, journal.RUN_ESCALATED), "event_run_log_kind"),
    # Who paused each paused run of a page: each run's newest run.status row.
    "log_latest_of": (lambda tx, run, s, now: log.latest_of(tx, [run.id, run.id + 1], journal.RUN_STATUS),
                      "event_run_log_kind"),
    "log_latest_of_kinds": (lambda tx, run, s, now: log.latest(
        tx, run.id, journal.RUN_STATUS, journal.RUN_POSTPONED, journal.RUN_DEADLINE_MOVED), "event_run_log_kind"),
    "log_latest_by_actor": (lambda tx, run, s, now: log.latest_by_actor(
        tx, run.id, journal.CHAT_PRESSED, ["mia", "rowan"]), "event_run_log_kind"),
    "how_it_ended": (lambda tx, run, s, now: chat_messages.how_it_ended(tx, run.id, s.id), "event_run_log_kind"),
}


STATEMENTS = {
    "claim": lambda tx, run, s, now: steps.claim(tx, s, now, 60),
    "finish": lambda tx, run, s, now: steps.finish(tx, Claim(s.id, "t", 1), StepStatus.DONE, now),
    "reclaim_stale": lambda tx, run, s, now: steps.reclaim_stale(tx, now, 3),
    "open_steps": lambda tx, run, s, now: steps.open_steps(tx, run.id, 1),
    "delay_next": lambda tx, run, s, now: steps.delay_next(tx, run.id, 1, 0, now),
    "find_due": lambda tx, run, s, now: runs.find_due(tx, now, 100),
    "find_due_next_batch": lambda tx, run, s, now: runs.find_due(tx, now, 100, after=(now, run.id)),
    "find_due_of_a_shard": lambda tx, run, s, now: runs.find_due(tx, now, 100, after=(now, run.id), shard=(1, 2)),
    "recurrences": lambda tx, run, s, now: definitions.recurrences(tx, now),
    "claim_run": lambda tx, run, s, now: runs.take_lease(tx, run.id, "t", now, 60),
    "transition": lambda tx, run, s, now: runs.transition(tx, run.id, [RunStatus.RUNNING], RunStatus.PAUSED, now),
    # The advance control's: its guarded UPDATE, the skips' locked read, and the in-flight step its 409 names.
    "advance_phase": lambda tx, run, s, now: runs.advance_phase(tx, run.id, 1, "mod", now, resuming=False),
    "skip_phase_for_advance": lambda tx, run, s, now: steps.skip_phase_for_advance(tx, run.id, 1, now, None),
    "holding_phase": lambda tx, run, s, now: steps.holding_phase(tx, run.id, 1, now),
    "parked_in_doubt_of": lambda tx, run, s, now: steps.parked_in_doubt_of(tx, run.id),
    "resend": lambda tx, run, s, now: steps.resend(tx, s.id, now),
    "hold": lambda tx, run, s, now: phases.hold(tx, run.id, 1, now),
    # Phases that follow the game: the walker's read, the close and its steps, the answer in an ended phase.
    "open_steps_and_close_due": lambda tx, run, s, now: steps.open_steps_and_close_due(tx, run.id, 1, now, 200),
    "closing": lambda tx, run, s, now: phases.closing(tx, run.id, 1, now),
    "close": lambda tx, run, s, now: phases.close(tx, run.id, 1, ClosedBy.SIGNAL, now),
    "drop_deadline": lambda tx, run, s, now: phases.drop_deadline(tx, run.id, 1, now),
    "fold_signals": lambda tx, run, s, now: phases.fold_signals(tx, run.id),
    "cancel_phase": lambda tx, run, s, now: steps.cancel_phase(tx, run.id, 1, now, "closed"),
    "cancel_if_over": lambda tx, run, s, now: steps.cancel_if_over(tx, Claim(s.id, "t", 1), now),
    "phase_ended": lambda tx, run, s, now: steps.phase_ended(tx, run.id, 1, now),
    "requeue_where_stopped": lambda tx, run, s, now: steps.requeue_where_stopped(tx, run.id, s.id, now),
    "leave_phase": lambda tx, run, s, now: runs.leave_phase(tx, run.id, 1, RunStatus.RUNNING, RunStatus.RUNNING, now,
                                                            next_phase=2),
    # A signal's: its receipt claimed, the phase it names, its guarded UPDATE, and the first receipt a repeat answers.
    "signal_first_receipt": lambda tx, run, s, now: signals.record_first(tx, run.id, "boss_defeated", "game", {"hp": 0}, now),
    "signal_phase_of": lambda tx, run, s, now: signals.phase_of(tx, run.id, "boss_defeated"),
    "signal_meet": lambda tx, run, s, now: signals.meet(tx, run.id, "boss_defeated", "game", now),
    "signal_record_effect": lambda tx, run, s, now: signals.record_effect(tx, run.id, "boss_defeated", SignalEffect.ENDS_PHASE),
    "signal_receipt": lambda tx, run, s, now: signals.get(tx, run.id, "boss_defeated"),
    # Waiting: a park writes the run's waiting_for in its own UPDATE; GET /runs filters and counts on it, and
    # derives each run's waiting from its parked step and its phase's row; a cue acknowledged.
    "park": lambda tx, run, s, now: steps.park(tx, Claim(s.id, "t", 1), "cue"),
    "list_waiting_any": lambda tx, run, s, now: runs.list_page(tx, waiting_for="any"),
    "list_waiting_cue": lambda tx, run, s, now: runs.list_page(tx, waiting_for="cue", before_id=run.id + 1),
    "waiting_counts": lambda tx, run, s, now: runs.waiting_counts(tx),
    "parked_of": lambda tx, run, s, now: steps.parked_of(tx, [run.id, run.id + 1]),
    "current_of": lambda tx, run, s, now: phases.current_of(tx, [(run.id, 1), (run.id + 1, 2)]),
    # Primary-key lookups: a refused advance's or retry's read of the phase, GET /runs/{id}'s of its phases,
    # and a phase's steps read back by an opening whose INSERT IGNORE found them written already.
    "phase_get": lambda tx, run, s, now: phases.get(tx, run.id, 1),
    "phases_list_for_run": lambda tx, run, s, now: phases.list_for_run(tx, run.id),
    "steps_list_for_phase": lambda tx, run, s, now: steps.list_for_phase(tx, run.id, 1),
    "acknowledge": lambda tx, run, s, now: steps.acknowledge(tx, s.id, "rowan", now),
    # Dry runs: the list's filter, and the signal a dry run's engine sends.
    "list_rehearsals_only": lambda tx, run, s, now: runs.list_page(tx, rehearsal="only"),
    "list_rehearsals_excluded": lambda tx, run, s, now: runs.list_page(tx, rehearsal="exclude", before_id=run.id + 1),
    "auto_signal_due": lambda tx, run, s, now: phases.auto_signal_due(tx, run.id, 1, now),
    # The escalate chore's read of the waits due a try, every tick (its UNION's result is sorted: see plan_problems).
    "escalations_due": lambda tx, run, s, now: escalations.due(tx, now, timedelta(minutes=15), 50),
    # A sleeping deployment's read of when the next escalation try is due, before it sleeps.
    "escalations_next_due": lambda tx, run, s, now: escalations.next_due(tx, timedelta(minutes=15)),
    # The chat chore's read of the messages with an edit due, every tick with a bot (none due: this read alone), a
    # sleeping deployment's of when the next is due, and a press's locking read of its message (none newer).
    "chat_unsettled": lambda tx, run, s, now: chat_messages.unsettled(tx, now, 50, frozenset({"discord", "slack"})),
    "chat_next_edit_at": lambda tx, run, s, now: chat_messages.next_edit_at(tx, frozenset({"discord", "slack"})),
    "chat_pressed_on": lambda tx, run, s, now: chat_messages.pressed_on(tx, "discord", "9001", run.id, s.id),
    # An answer's resources: the INSERT whose guard counts the run's rows (one range of the run's ledger), and
    # GET /runs/{id}'s ledger state.
    "record_resources": lambda tx, run, s, now: resources.record(
        tx, run.id, s.id, [Listed("npc", "crow-1", None), Listed("npc", "crow-2", None)], now),
    "ledger_state": lambda tx, run, s, now: resources.ledger_state(tx, run.id),
    **{name: read for name, (read, _) in HISTORY_READS.items()},
}


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_statement_uses_an_index(db, clock, history, name):
    run, first = history
    plans = _plans(db, lambda tx: STATEMENTS[name](tx, run, first, clock.now()))
    assert plans, "the statement was not issued"
    for sql, plan in plans:
        assert not plan_problems(plan), f"{name}: {plan_problems(plan)} in\n{sql}\n{plan}"
        if name in HISTORY_READS:  # a range of the run's or the definition's whole history is no scan, yet grows
            stored = [row for row in plan if not (row.get("table") or "<").startswith("<")
                      and "SUBQUERY" not in row["select_type"]]  # understood.steps_known's, of the steps
            assert {row["key"] for row in stored} == {HISTORY_READS[name][1]}, f"{name}:\n{sql}\n{plan}"


# A window's share of this small table: the preview's large enough that walking back from the newest run
# looks cheaper for 20 runs; the press's small enough that a range beats reading the whole table.
@pytest.mark.parametrize(("limit", "days"), [(20, 15), (1000, 5)], ids=["preview", "press"])
def test_a_bulk_window_reads_the_windows_runs_alone(db, clock, history, limit, days):
    """A bulk press's window, newest first: one range of `event_runs_scheduled`, the window's runs sorted (a
    press acts on at most bulk.MAX_RUNS), never a walk back through every run newer than the window."""
    window = (clock.now() - timedelta(days=80), clock.now() - timedelta(days=80 - days))  # among the oldest runs
    [(sql, plan), *_] = _plans(db, lambda tx: runs.matching(tx, RunFilter(scheduled_between=window), limit))
    assert "full scan" not in plan_problems(plan) and plan[0]["key"] == "event_runs_scheduled", (sql, plan)


@pytest.mark.parametrize("of_a_definition", [False, True], ids=["every-definition", "one-definition"])
@pytest.mark.parametrize("days", [1, 15, 60])
def test_the_runs_lists_window_reads_the_windows_runs_alone(db, clock, history, of_a_definition, days):
    """The runs list's ?from=&to= as the console asks it (live runs, a page of 26, perhaps of one definition):
    one range of the window's scheduled times, its runs sorted, never a walk back through the (mode, id) or
    (definition_id, id) key past every newer run (last spring's month of a definition read its year since)."""
    run, _ = history
    window = (clock.now() - timedelta(days=60), clock.now() - timedelta(days=60 - days))
    [(sql, plan), *_] = _plans(db, lambda tx: runs.list_page(
        tx, definition_id=run.definition_id if of_a_definition else None, rehearsal="exclude",
        scheduled_between=window, limit=25))
    assert "full scan" not in plan_problems(plan), (sql, plan)
    assert plan[0]["key"] in {"event_runs_scheduled", "event_runs_definition_time"}, (sql, plan)
