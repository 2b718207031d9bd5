"""A parked cue is seen and ends, on the real database: reminders (at most once, each with its own key), one
escalation (at least once), and the timeout's three endings; an acknowledge silences the first two only, a
person's answer stops them all, and a paused run neither reminds nor times out but is escalated once as a
stalled run. The run's wake time follows the cue's next timer, so the tick comes for each."""

from datetime import timedelta

import pytest

from chalicelib.events.actions.notice import Notice
from chalicelib.events.actions.perform import Actions
from chalicelib.events.errors import ChannelError
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import Health
from chalicelib.events.runner import Budget, Runner
from chalicelib.events.store import runs, steps
from tests.support.api import MODERATOR, token
from tests.support.factory import document
from tests.support.runner_kit import RULES, RecordingChannel, game_bridge, log_of, schedule, step  # noqa: F401
from tests.support.together import at_once

ROWAN = token("gm", sub="Rowan")


class FailingChannel(RecordingChannel):
    """Records every notice it is given, and refuses those `refuses` picks (every one, by default)."""

    def __init__(self, name: str, refuses=lambda notice, tried: True):
        super().__init__(name)
        self.refuses = refuses
        self.tried: list[Notice] = []

    def post(self, notice) -> None:
        self.tried.append(notice)
        if self.refuses(notice, len(self.tried)):
            raise ChannelError("the channel answered HTTP 503")
        super().post(notice)


def _runner(db, clock, *, cue=None, escalation=None, escalate_after=0):
    actions = Actions(bridge=None, cue_channel=cue or RecordingChannel("cue"), announce_channel=RecordingChannel("announce"),
                      escalation_channel=escalation, escalate_after_seconds=escalate_after)
    return Runner(db, clock, actions, RULES, concurrency=1)


def _tick(runner):
    return runner.tick(Budget.for_seconds(60))


def _cue(**attention):
    return step("core.cue", instruction="Light the bonfire", **attention)


def _step(db, run_id, index=0):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[index]


def _run(db, run_id):
    return db.autocommit(lambda tx: runs.get(tx, run_id))


def _kinds(db, run_id, kind):
    return [e.detail for e in log_of(db, run_id) if e.kind == kind]


@pytest.fixture
def cue_runner(db, clock):
    made = []

    def build(**kw):
        made.append(_runner(db, clock, **kw))
        return made[-1]

    yield build
    for runner in made:
        runner.close()


def _reminders(channel):
    return [n.idempotency_key.rsplit(":", 1)[1] for n in channel.notices if n.kind == "reminder"]


def test_a_cue_is_reminded_remind_limit_times_each_with_its_own_key_and_the_run_wakes_for_each(db, clock, cue_runner):
    channel = RecordingChannel("cue")
    runner = cue_runner(cue=channel)
    run = schedule(db, clock.now(), document([[_cue(remind_after_seconds=60, remind_limit=3)]]))
    _tick(runner)
    cue = _step(db, run.id)
    assert cue.parked and cue.remind_at == clock.now() + timedelta(seconds=60)
    assert _run(db, run.id).wake_at == cue.remind_at  # the tick comes for the reminder
    for minute in range(1, 6):
        clock.advance(60)
        report = _tick(runner)
        assert report.reminders == (1 if minute <= 3 else 0)
    assert _reminders(channel) == ["r1", "r2", "r3"]
    keys = {n.idempotency_key for n in channel.notices if n.kind == "reminder"}
    assert keys == {f"{cue.idempotency_key}:r{n}" for n in (1, 2, 3)}
    assert "Reminder 2 of 3" in channel.notices[2].text and "waited 2 min" in channel.notices[2].text
    assert [(d["n"], d["of"], d["channel"]) for d in _kinds(db, run.id, "step.reminder")] == [(1, 3, "cue"), (2, 3, "cue"), (3, 3, "cue")]
    assert _run(db, run.id).wake_at is None  # nothing left to wake for: the deployment may sleep


def test_a_run_resumed_after_missed_reminders_posts_one_reminder_not_the_backlog(db, clock, cue_runner, api):
    channel = RecordingChannel("cue")
    runner = cue_runner(cue=channel)
    run = schedule(db, clock.now(), document([[_cue(remind_after_seconds=60, remind_limit=5)]]))
    _tick(runner)
    assert api.post(f"/runs/{run.id}/pause", {"reason": "lag"}, auth=MODERATOR).status == 200
    clock.advance(600)  # five reminders' moments pass while the run is paused
    _tick(runner)
    assert _reminders(channel) == []
    assert api.post(f"/runs/{run.id}/resume", None, auth=MODERATOR).status == 200
    resumed_at = clock.now()
    for _ in range(3):
        _tick(runner)
    assert _reminders(channel) == ["r1"]
    assert _step(db, run.id).remind_at == resumed_at + timedelta(seconds=60)  # the next counts from now
    clock.advance(60)
    _tick(runner)
    assert _reminders(channel) == ["r1", "r2"]


def test_a_confirm_between_two_reminders_stops_them(db, clock, cue_runner, api):
    channel = RecordingChannel("cue")
    runner = cue_runner(cue=channel)
    run = schedule(db, clock.now(), document([[_cue(remind_after_seconds=60, escalate_after_seconds=300)]]))
    _tick(runner)
    clock.advance(60)
    _tick(runner)
    cue = _step(db, run.id)
    assert api.post(f"/runs/{run.id}/steps/{cue.id}/confirm", {"note": "lit"}, auth=ROWAN).status == 200
    for _ in range(10):
        clock.advance(60)
        _tick(runner)
    assert _reminders(channel) == ["r1"]
    assert not [n for n in channel.notices if n.kind == "escalation"]
    assert _run(db, run.id).status is RunStatus.COMPLETED


def test_an_acknowledge_silences_reminders_and_escalation_while_it_holds_but_not_the_timeout(db, clock, cue_runner, api):
    channel = RecordingChannel("cue")
    # The acknowledge holds for the deployment's escalation delay (600 s): the cue's timeout comes first.
    runner = cue_runner(cue=channel, escalate_after=600)
    run = schedule(db, clock.now(), document([[_cue(remind_after_seconds=60, timeout_seconds=300)]]))
    _tick(runner)
    clock.advance(60)
    _tick(runner)
    cue = _step(db, run.id)
    assert api.post(f"/runs/{run.id}/steps/{cue.id}/acknowledge", {}, auth=ROWAN).status == 200
    acknowledged = _step(db, run.id)
    assert (acknowledged.remind_at, acknowledged.escalate_at) == (None, None)
    assert acknowledged.times_out_at == cue.times_out_at
    for _ in range(5):
        clock.advance(60)
        _tick(runner)
    assert _reminders(channel) == ["r1"] and not [n for n in channel.notices if n.kind == "escalation"]
    timed_out = _step(db, run.id)
    assert timed_out.status is StepStatus.CANCELLED and timed_out.last_error == "no one confirmed within 300 s"


@pytest.mark.parametrize("where", ["phase", "ending"])
def test_on_timeout_continue_cancels_the_cue_degrades_the_run_and_goes_on(db, clock, cue_runner, where):
    runner = cue_runner()
    cue, after = _cue(timeout_seconds=60), step("core.announce", message="on we go")
    doc = document([[cue, after]]) if where == "phase" else document([[step("core.announce", message="hi")]], ending=[cue, after])
    run = schedule(db, clock.now(), doc)
    _tick(runner)
    clock.advance(59)
    _tick(runner)
    assert _step(db, run.id, -2).parked  # not before its time
    clock.advance(1)
    _tick(runner)
    timed_out, announced = _step(db, run.id, -2), _step(db, run.id, -1)
    assert timed_out.status is StepStatus.CANCELLED and timed_out.last_error == "no one confirmed within 60 s"
    assert announced.status is StepStatus.DONE
    seen = _run(db, run.id)
    assert seen.status is RunStatus.COMPLETED and seen.health is Health.DEGRADED
    (row,) = [d for d in _kinds(db, run.id, "step.status") if d.get("on_timeout")]
    assert (row["from"], row["to"], row["cause"]) == ("running", "cancelled", "no one confirmed within 60 s")


@pytest.mark.parametrize("where", ["phase", "ending"])
def test_on_timeout_confirm_assumes_the_cue_done_as_the_runner(db, clock, cue_runner, where):
    runner = cue_runner()
    cue = _cue(timeout_seconds=30, on_timeout="confirm")
    doc = document([[cue]]) if where == "phase" else document([[step("core.announce", message="hi")]], ending=[cue])
    run = schedule(db, clock.now(), doc)
    _tick(runner)
    clock.advance(30)
    _tick(runner)
    assert _run(db, run.id).status is RunStatus.COMPLETED
    cue = _step(db, run.id, -1)
    assert cue.status is StepStatus.DONE and cue.last_error == "assumed done after 30 s"
    (row,) = [e for e in log_of(db, run.id) if e.kind == "step.status" and e.step_id == cue.id and e.detail["to"] == "done"]
    assert row.actor == "runner" and row.detail["cause"] == "assumed done after 30 s"
    assert _run(db, run.id).health is Health.DEGRADED


def test_on_timeout_pause_pauses_the_run_with_the_cue_still_waiting_and_a_paused_run_does_not_time_out(db, clock, cue_runner):
    channel = RecordingChannel("cue")
    runner = cue_runner(cue=channel)
    run = schedule(db, clock.now(), document([[_cue(remind_after_seconds=20, timeout_seconds=30, on_timeout="pause")]]))
    _tick(runner)
    clock.advance(30)
    _tick(runner)
    seen, cue = _run(db, run.id), _step(db, run.id)
    assert seen.status is RunStatus.PAUSED and seen.health is Health.DEGRADED
    # the step by its one name, as every page names it (its database id is no word for a person)
    assert seen.last_error == f"{cue.named} no one confirmed within 30 s"
    assert seen.last_error.startswith(f"Run {run.id} · Phase 1 · step 1 (")
    assert cue.parked and cue.times_out_at is None  # a person answers it after the resume
    reminded = len(channel.notices)
    for _ in range(5):
        clock.advance(60)
        _tick(runner)
    assert len(channel.notices) == reminded  # a paused run neither reminds nor times out
    assert _step(db, run.id).parked


def test_on_timeout_pause_in_the_ending_only_degrades(db, clock, cue_runner):
    runner = cue_runner()
    run = schedule(db, clock.now(), document([[step("core.announce", message="hi")]],
                                             ending=[_cue(timeout_seconds=30, on_timeout="pause")]))
    _tick(runner)
    clock.advance(30)
    _tick(runner)
    seen, cue = _run(db, run.id), _step(db, run.id, -1)
    assert seen.status is RunStatus.ENDING and seen.health is Health.DEGRADED
    assert cue.parked and cue.times_out_at is None


def test_a_failed_reminder_is_logged_with_its_error_and_not_sent_again(db, clock, cue_runner):
    channel = FailingChannel("cue", refuses=lambda notice, tried: notice.idempotency_key.endswith(":r1"))
    runner = cue_runner(cue=channel)
    run = schedule(db, clock.now(), document([[_cue(remind_after_seconds=60, remind_limit=2)]]))
    _tick(runner)
    assert _step(db, run.id).parked
    for _ in range(4):
        clock.advance(60)
        _tick(runner)
    assert [n.idempotency_key.rsplit(":", 1)[1] for n in channel.tried if n.kind == "reminder"] == ["r1", "r2"]
    assert [d["n"] for d in _kinds(db, run.id, "step.reminder")] == [1, 2]
    (failed,) = _kinds(db, run.id, "notice.failed")
    assert (failed["notice"], failed["n"], failed["again_at"]) == ("step.reminder", 1, None)
    assert "HTTP 503" in failed["error"] and failed["idempotency_key"].endswith(":r1")


def test_a_failed_escalation_is_tried_again_then_recorded_and_counted(db, clock, cue_runner):
    escalation = FailingChannel("escalation")  # refuses every post
    runner = cue_runner(escalation=escalation)
    run = schedule(db, clock.now(), document([[_cue(escalate_after_seconds=60)]]))
    _tick(runner)
    clock.advance(60)
    errors = 0
    for _ in range(RULES.max_attempts + 2):
        errors += _tick(runner).errors
        clock.advance(RULES.retry_seconds)
    assert len(escalation.tried) == RULES.max_attempts
    assert {n.idempotency_key for n in escalation.tried} == {f"{_step(db, run.id).idempotency_key}:e"}
    tries = _kinds(db, run.id, "step.escalated")
    assert [(d["attempt"], d["of"]) for d in tries] == [(n, RULES.max_attempts) for n in range(1, RULES.max_attempts + 1)]
    failures = _kinds(db, run.id, "notice.failed")
    assert [d["attempt"] for d in failures] == list(range(1, RULES.max_attempts + 1))
    assert all("HTTP 503" in d["error"] for d in failures)
    assert [d["again_at"] is None for d in failures] == [False] * (RULES.max_attempts - 1) + [True]
    assert errors == 1  # RunErrors counts the escalation that never got through
    assert _step(db, run.id).escalate_at is None


def test_an_escalation_that_gets_through_on_a_retry_is_recorded_once(db, clock, cue_runner):
    escalation = FailingChannel("escalation", refuses=lambda notice, tried: tried == 1)
    runner = cue_runner(escalation=escalation, escalate_after=120)  # the cue has no escalation of its own
    run = schedule(db, clock.now(), document([[_cue()]]))
    _tick(runner)
    clock.advance(120)
    _tick(runner)
    clock.advance(RULES.retry_seconds)
    _tick(runner)
    clock.advance(600)
    _tick(runner)
    assert len(escalation.tried) == 2 and len(escalation.notices) == 1
    first, second = _kinds(db, run.id, "step.escalated")
    assert (first["attempt"], second["attempt"], second["channel"]) == (1, 2, "escalation")
    (failed,) = _kinds(db, run.id, "notice.failed")
    assert failed["attempt"] == 1 and failed["again_at"] is not None


def test_a_paused_run_is_escalated_once_per_pause_as_a_stalled_run(db, clock, cue_runner, api):
    escalation = RecordingChannel("escalation")
    runner = cue_runner(escalation=escalation, escalate_after=900)
    run = schedule(db, clock.now(), document([[_cue(remind_after_seconds=60)]]))
    _tick(runner)
    assert api.post(f"/runs/{run.id}/pause", {"reason": "boss bugged"}, auth=MODERATOR).status == 200
    clock.advance(899)
    _tick(runner)
    assert escalation.notices == []
    clock.advance(1)
    for _ in range(3):
        _tick(runner)
        clock.advance(300)
    (notice,) = escalation.notices
    assert notice.kind == "stall" and notice.idempotency_key == f"{run.id}:stall:1"
    assert "waited 15 min to be resumed" in notice.text
    (row,) = _kinds(db, run.id, "run.escalated")
    assert (row["waiting_for"], row["n"], row["attempt"]) == ("resume", 1, 1)
    assert api.post(f"/runs/{run.id}/resume", {}, auth=MODERATOR).status == 200
    _tick(runner)
    assert api.post(f"/runs/{run.id}/pause", {}, auth=MODERATOR).status == 200
    clock.advance(900)
    _tick(runner)
    stalls = [n.idempotency_key for n in escalation.notices if n.kind == "stall"]
    assert stalls == [f"{run.id}:stall:1", f"{run.id}:stall:2"]


def test_a_run_held_for_a_persons_advance_is_escalated_once(db, clock, cue_runner):
    escalation = RecordingChannel("escalation")
    runner = cue_runner(escalation=escalation, escalate_after=600)
    doc = document([[step("core.announce", message="hi")], [step("core.announce", message="next")]])
    doc["phases"][0]["advance"] = {"when": "manual"}
    run = schedule(db, clock.now(), doc)
    _tick(runner)
    assert _run(db, run.id).waiting_for == "advance"
    for _ in range(4):
        clock.advance(300)
        _tick(runner)
    (notice,) = escalation.notices
    assert notice.idempotency_key == f"{run.id}:stall:1" and "to advance its phase" in notice.text


def test_escalation_is_off_at_nought(db, clock, cue_runner, api):
    escalation = RecordingChannel("escalation")
    runner = cue_runner(escalation=escalation, escalate_after=0)
    run = schedule(db, clock.now(), document([[_cue()]]))
    _tick(runner)
    assert _step(db, run.id).escalate_at is None and _run(db, run.id).wake_at is None
    assert api.post(f"/runs/{run.id}/pause", {}, auth=MODERATOR).status == 200
    clock.advance(7 * 24 * 3600)
    _tick(runner)
    assert escalation.notices == []


# ── every claim is a compare-and-set on what its tick read ─────────────────
def _attender(db, clock, channel):
    from chalicelib.events.runner.attention import Attender

    actions = Actions(bridge=None, cue_channel=channel, announce_channel=RecordingChannel("announce"),
                      escalation_channel=channel)
    return Attender(db, actions, RULES, clock.now(), Budget.for_seconds(60))


def _parked_with(db, clock, cue_runner, **attention):
    runner = cue_runner()
    run = schedule(db, clock.now(), document([[_cue(**attention)]]))
    _tick(runner)
    return run, _step(db, run.id)


def test_a_reminder_another_tick_claimed_is_not_posted_again(db, clock, cue_runner):
    run, cue = _parked_with(db, clock, cue_runner, remind_after_seconds=60)
    clock.advance(60)
    channel = RecordingChannel("cue")
    first = _attender(db, clock, channel)
    clock.advance(1)
    second = _attender(db, clock, channel)  # a tick a second later that read the same moment
    assert first.remind(cue) is True
    assert second.remind(cue) is False  # the first tick has it
    assert _reminders(channel) == ["r1"] and len(_kinds(db, run.id, "step.reminder")) == 1


@pytest.mark.parametrize("meanwhile", ["acknowledged", "paused"])
def test_a_reminder_and_an_escalation_read_before_a_person_acted_are_not_posted(db, clock, cue_runner, api, meanwhile):
    run, cue = _parked_with(db, clock, cue_runner, remind_after_seconds=60, escalate_after_seconds=120)
    clock.advance(120)
    path = f"/runs/{run.id}/steps/{cue.id}/acknowledge" if meanwhile == "acknowledged" else f"/runs/{run.id}/pause"
    assert api.post(path, {}, auth=ROWAN if meanwhile == "acknowledged" else MODERATOR).status == 200
    channel = RecordingChannel("cue")
    attender = _attender(db, clock, channel)
    assert attender.remind(cue) is False
    assert attender.escalate(cue) == (False, False)
    assert channel.notices == []


def test_a_timeout_another_tick_acted_on_is_not_acted_on_again(db, clock, cue_runner):
    _, cue = _parked_with(db, clock, cue_runner, timeout_seconds=60, on_timeout="confirm")
    clock.advance(60)
    assert db.transaction(lambda tx: steps.time_out(tx, cue, StepStatus.DONE, clock.now(), "assumed done")) is True
    assert db.transaction(lambda tx: steps.time_out(tx, cue, StepStatus.DONE, clock.now(), "assumed done")) is False
    assert db.transaction(lambda tx: steps.drop_timeout(tx, cue, clock.now())) is False


def test_two_ticks_that_read_the_same_moment_act_on_it_together_and_one_escalates_once_and_one_times_out_once(
        db, db_params, clock, cue_runner):
    """Two ticks that read one parked cue's escalation (and another cue's timeout) act on it together, on connections
    of their own, five times each: one claims the try, posts once and writes one row, or times the cue out; the
    other does nothing."""
    for _ in range(5):
        run, cue = _parked_with(db, clock, cue_runner, escalate_after_seconds=60)
        _, timed = _parked_with(db, clock, cue_runner, timeout_seconds=60, on_timeout="confirm")
        clock.advance(60)
        channel = RecordingChannel("escalation")
        tried = at_once(db_params, *[lambda own: _attender(own, clock, channel).escalate(cue)] * 2)
        assert sorted(tried) == [(False, False), (True, False)]
        assert [n.kind for n in channel.notices] == ["escalation"] and len(_kinds(db, run.id, "step.escalated")) == 1
        timed_out = at_once(db_params, *[lambda own: own.transaction(lambda tx: steps.time_out(
            tx, timed, StepStatus.DONE, clock.now(), "assumed done"))] * 2)
        assert sorted(timed_out) == [False, True] and _step(db, timed.run_id).status is StepStatus.DONE


def test_a_timeout_is_not_acted_on_before_its_moment_or_on_a_paused_run(db, clock, cue_runner, api):
    run, cue = _parked_with(db, clock, cue_runner, timeout_seconds=60)
    clock.advance(59)
    assert db.transaction(lambda tx: steps.time_out(tx, cue, StepStatus.CANCELLED, clock.now(), "early")) is False
    clock.advance(1)
    assert api.post(f"/runs/{run.id}/pause", {}, auth=MODERATOR).status == 200
    assert db.transaction(lambda tx: steps.time_out(tx, cue, StepStatus.CANCELLED, clock.now(), "paused")) is False
    assert _step(db, run.id).parked


def test_a_stalled_wait_that_ended_before_its_claim_is_not_escalated(db, clock, api):
    from chalicelib.events.store import escalations

    run = schedule(db, clock.now(), document([[_cue()]]))
    runner = _runner(db, clock)
    try:
        _tick(runner)
    finally:
        runner.close()
    assert api.post(f"/runs/{run.id}/pause", {}, auth=MODERATOR).status == 200
    clock.advance(900)
    (wait,) = db.autocommit(lambda tx: escalations.due(tx, clock.now(), timedelta(seconds=900), 10))
    assert api.post(f"/runs/{run.id}/resume", {}, auth=MODERATOR).status == 200
    assert db.autocommit(lambda tx: escalations.claim_first(tx, wait, clock.now())) is None
    assert db.autocommit(lambda tx: escalations.next_due(tx, timedelta(seconds=900))) is None
    clock.advance(60)
    assert api.post(f"/runs/{run.id}/pause", {}, auth=MODERATOR).status == 200  # a new wait: not the one read
    assert db.autocommit(lambda tx: escalations.claim_first(tx, wait, clock.now())) is None
    assert db.autocommit(lambda tx: escalations.next_due(tx, timedelta(seconds=900))) == clock.now() + timedelta(seconds=900)


def test_escalated_waits_do_not_crowd_out_the_next_one(db, clock, cue_runner, api, monkeypatch):
    from chalicelib.events.runner import stalls

    monkeypatch.setattr(stalls, "WAITS_PER_TICK", 1)
    escalation = RecordingChannel("escalation")
    runner = cue_runner(escalation=escalation, escalate_after=600)
    first, second = (schedule(db, clock.now(), document([[_cue()]])) for _ in range(2))
    _tick(runner)
    for run in (first, second):
        assert api.post(f"/runs/{run.id}/pause", {}, auth=MODERATOR).status == 200
        clock.advance(1)
    clock.advance(600)
    for _ in range(3):
        _tick(runner)
    assert [n.idempotency_key for n in escalation.notices] == [f"{first.id}:stall:1", f"{second.id}:stall:1"]


class LostMidPost(RecordingChannel):
    """A tick that dies while posting (its process killed, say): the post never returns."""

    def post(self, notice) -> None:
        raise SystemExit("the tick's process is gone")


def test_a_tick_lost_mid_post_leaves_the_claims_row_so_the_log_says_what_was_begun(db, clock, cue_runner):
    run = schedule(db, clock.now(), document([[_cue(remind_after_seconds=60, escalate_after_seconds=120)]]))
    _tick(cue_runner())
    clock.advance(60)
    with pytest.raises(SystemExit):
        _tick(cue_runner(cue=LostMidPost("cue")))
    (reminder,) = _kinds(db, run.id, "step.reminder")
    assert reminder["n"] == 1 and _step(db, run.id).reminders_sent == 1  # the claim and its row, together
    clock.advance(60)
    with pytest.raises(SystemExit):
        _tick(cue_runner(escalation=LostMidPost("escalation")))
    (first,) = _kinds(db, run.id, "step.escalated")
    assert first["attempt"] == 1
    escalation = RecordingChannel("escalation")
    clock.advance(RULES.retry_seconds)
    _tick(cue_runner(escalation=escalation))
    assert len(escalation.notices) == 1  # at least once: the lost try is followed by another
    assert [d["attempt"] for d in _kinds(db, run.id, "step.escalated")] == [1, 2]
    assert _kinds(db, run.id, "notice.failed") == []
