"""A press while the database does not answer: acknowledged within Discord's 3 s, finished when it answers."""

import dataclasses
import time

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.events.lifecycle import StepStatus
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.store import steps
from tests.support.api import hs_settings
from tests.support.chat import GM_ROLE, chat_settings, every_discord_body_valid
from tests.support.db_door import DatabaseDoor
from tests.support.factory import document
from tests.support.runner_kit import log_of, schedule, step, tick

pytestmark = pytest.mark.realtime  # the database is held for real seconds


def _a_cue_posted(db, clock, db_params, chat):
    """The chat's settings, and a run whose cue a tick posted to the fake Discord: (settings, run, cue, message)."""
    settings = chat_settings(chat, hs_settings(db_params))
    run = schedule(db, clock.now(), document([[step("core.cue", instruction="Open the gates")]]))
    runner = build_runner(settings, db, clock)
    try:
        tick(runner)
    finally:
        runner.close()
    cue = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]
    [message] = chat.messages()
    return settings, run, cue, message


def test_a_press_while_the_database_is_silent_is_acknowledged_in_time_and_finished_when_it_answers(db, clock, db_params, chat):
    settings, run, cue, message = _a_cue_posted(db, clock, db_params, chat)
    with DatabaseDoor(db_params) as door:
        door.stall(None)  # an Aurora resuming from a pause: connections are accepted and held silent
        with runtime.override(settings=dataclasses.replace(settings, db_url=door.url()), clock=clock), Client(app) as client:
            headers, body = chat.discord_signed(chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:confirm",
                                                                         roles=[GM_ROLE]))
            started = time.monotonic()
            answer = client.http.post("/integrations/discord/interactions", headers=headers, body=body)
            assert time.monotonic() - started < 3.0
            assert (answer.status_code, answer.json_body) == (200, {"type": 6})
            door.open()  # it resumes
            deadline = time.monotonic() + 30
            while not chat.received("PATCH", "/messages/@original") and time.monotonic() < deadline:
                time.sleep(0.05)
            runtime.database().close()
    [edit] = chat.received("PATCH", "/messages/@original")
    assert "Confirmed by <@4242>" in edit.json["content"] and edit.json["components"] == []
    assert db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0].status is StepStatus.DONE
    every_discord_body_valid(chat)


def test_a_skip_opens_its_modal_at_once_while_the_database_is_silent_and_its_submission_is_finished_when_it_answers(
        db, clock, db_params, chat):
    """Opening the modal asks the database nothing: it is answered at once, not after the 1.5 s a press waits; its
    submission is acknowledged in time and finished once the database answers, through @original."""
    from chalicelib.events.chat.answers import PRESS_ANSWER_SECONDS

    settings, run, cue, message = _a_cue_posted(db, clock, db_params, chat)
    with DatabaseDoor(db_params) as door:
        door.stall(None)
        with runtime.override(settings=dataclasses.replace(settings, db_url=door.url()), clock=clock), Client(app) as client:
            def sent(payload):
                headers, body = chat.discord_signed(payload)
                started = time.monotonic()
                answer = client.http.post("/integrations/discord/interactions", headers=headers, body=body)
                return answer.json_body, time.monotonic() - started

            modal, took = sent(chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:skip", roles=[GM_ROLE]))
            assert modal["type"] == 9 and took < PRESS_ANSWER_SECONDS, (modal, took)
            acknowledged, took = sent(chat.discord_modal_submit(message, modal["data"], {"reason": "gates jammed"},
                                                                roles=[GM_ROLE]))
            assert acknowledged == {"type": 6} and took < 3.0
            door.open()
            deadline = time.monotonic() + 30
            while not chat.received("PATCH", "/messages/@original") and time.monotonic() < deadline:
                time.sleep(0.05)
            runtime.database().close()
    [edit] = chat.received("PATCH", "/messages/@original")
    assert "Skipped by <@4242>" in edit.json["content"] and edit.json["components"] == []
    skipped = db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]
    assert skipped.status is StepStatus.SKIPPED
    assert [e.detail["reason"] for e in log_of(db, run.id) if e.kind == "step.status" and e.actor == "discord:4242"] == [
        "gates jammed"]
    every_discord_body_valid(chat)
