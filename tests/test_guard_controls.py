"""Each control is one transaction with its log row, and it acts on the rows as they are, locked.

A rival session tries to change the same run (or step) at the exact moment the
control has read it; the control's lock must keep it out, so the control's 409
names the status the row is really in and the log's `from` is never stale.
"""

import pymysql
import pytest

from chalicelib.events import commands, journal
from chalicelib.events.errors import Conflict
from chalicelib.events.lifecycle import RunStatus
from chalicelib.events.store import log, runs, steps
from tests.support.factory import run_row, step_row
from tests.support.interference import Rival, log_rows_refused
from tests.support.scenes import put_step_in, run_with_steps, snapshot

REFUSED = "log-refused"


def _rival_after_first_read(monkeypatch, module, name, rival_move):
    """Run `rival_move` right after the control's first read through `module.name`."""
    real = getattr(module, name)
    fired = []

    def read(*args, **kwargs):
        found = real(*args, **kwargs)
        if not fired:
            fired.append(rival_move())
        return found

    monkeypatch.setattr(module, name, read)
    return fired


def _rival_before_first_read(monkeypatch, module, name, rival_move):
    """Run `rival_move` as the control starts, just before its first read through `module.name`."""
    real = getattr(module, name)
    fired = []

    def read(*args, **kwargs):
        if not fired:
            fired.append(rival_move())
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, read)
    return fired


def _run_moved_by_rival(db, clock, run, source, to, **changes):
    def change(tx):
        assert runs.transition(tx, run.id, [source], to, clock.now(), **changes)
        log.append(tx, journal.run_status(run.id, run.current_phase, source, to, cause="a rival"), clock.now())

    return lambda: Rival(db).attempt("SELECT id FROM event_runs WHERE id = %s", (run.id,), change)


def _story_is_a_chain(db, run_id, first):
    rows = [e.detail for e in db.autocommit(lambda tx: log.after(tx, run_id)) if e.kind == "run.status"]
    current = first
    for row in rows:
        assert row["from"] == current, f"a log row claims the run left {row['from']}, but it was {current}"
        current = row["to"]
    assert current == run_row(db, run_id).status.value


def test_a_control_logs_the_status_the_run_really_left(db, clock, monkeypatch):
    run, _ = run_with_steps(db, clock.now(), RunStatus.STARTING, current_phase=None)
    rival = _run_moved_by_rival(db, clock, run, RunStatus.STARTING, RunStatus.RUNNING, current_phase=1)
    _rival_after_first_read(monkeypatch, runs, "get", rival)
    commands.pause(db, run.id, actor="mod-mia", now=clock.now())
    _story_is_a_chain(db, run.id, "starting")


def test_a_controls_409_names_the_status_the_run_is_really_in(db, clock, monkeypatch):
    run, _ = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    rival = _run_moved_by_rival(db, clock, run, RunStatus.RUNNING, RunStatus.CANCELLED, last_error="called off")
    # After the control's first read the lock keeps the rival out (the test above): a 409 comes only from a
    # rival that got in first, as the person pressed on a run they still saw running.
    fired = _rival_before_first_read(monkeypatch, runs, "get", rival)
    with pytest.raises(Conflict) as lost:
        commands.pause(db, run.id, actor="mod-mia", now=clock.now())
    assert fired == ["committed"]
    assert str(lost.value) == commands.refusal("pause", run_row(db, run.id))
    _story_is_a_chain(db, run.id, "running")


def test_a_step_controls_409_names_the_state_the_step_is_really_in(db, clock, monkeypatch):
    run, (spawn, _, _) = run_with_steps(db, clock.now(), RunStatus.RUNNING)
    claim = db.autocommit(lambda tx: steps.claim(tx, spawn, clock.now(), 120))

    def claimer_finishes():  # the dispatcher's answer arrives as the person presses skip
        return Rival(db).attempt(
            "SELECT id FROM event_run_steps WHERE id = %s", (spawn.id,),
            lambda tx: steps.finish(tx, claim, "done", clock.now()),
        )

    _rival_after_first_read(monkeypatch, steps, "get_on_run", claimer_finishes)
    with pytest.raises(Conflict) as lost:
        commands.skip(db, run.id, spawn.id, actor="mod-mia", now=clock.now())
    assert str(lost.value) == f"{spawn.named}: " + str(commands.refusal("skip", run_row(db, run.id), step_row(db, spawn.id)))


# ── each control and its log row commit together ──────────────────────────
def _scene(db, clock, control):
    """A run (and step) on which `control` is legal; returns the call that presses it."""
    now = clock.now()
    if control in ("pause", "cancel"):
        run, _ = run_with_steps(db, now, RunStatus.RUNNING)
        return run, lambda: getattr(commands, control)(db, run.id, actor=REFUSED, now=now)
    if control == "resume":
        run, _ = run_with_steps(db, now, RunStatus.PAUSED)
        return run, lambda: commands.resume(db, run.id, actor=REFUSED, now=now)
    run, (first, _second, _) = run_with_steps(db, now, RunStatus.PAUSED if control == "retry" else RunStatus.RUNNING)
    if control in ("confirm", "acknowledge"):
        put_step_in(db, first, "parked", now)
    if control in ("release", "take-over"):
        put_step_in(db, first, "held", now)
    if control == "resend":
        put_step_in(db, first, "parked_in_doubt", now)
    if control == "retry":
        put_step_in(db, first, "failed", now)
    press = getattr(commands, control.replace("-", "_"))
    note = {"note": "Rowan went offline"} if commands.CONTROLS[control].note_required else {}
    return run, lambda: press(db, run.id, first.id, actor=REFUSED, now=now, **note)


@pytest.mark.parametrize("control", ["pause", "resume", "cancel", "confirm", "skip", "retry", "resend", "acknowledge",
                                     "release", "take-over"])
def test_a_control_whose_log_row_cannot_be_written_changes_nothing(db, clock, control):
    run, press = _scene(db, clock, control)
    before = snapshot(db, run.id)
    with log_rows_refused(db, f"NEW.actor = '{REFUSED}'"), pytest.raises(pymysql.err.MySQLError):
        press()
    assert snapshot(db, run.id) == before
    press()  # and once the log takes rows again, the same press goes through
    assert snapshot(db, run.id)["log"]
