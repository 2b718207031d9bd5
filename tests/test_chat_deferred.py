"""A press while the database does not answer: acknowledged within Discord's 3 s, finished when it answers."""

import dataclasses
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.events.chat import answers
from chalicelib.events.chat.answers import finish
from chalicelib.events.lifecycle import StepStatus
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.store import steps
from tests.support.api import hs_settings
from tests.support.chat import GM_ROLE, chat_settings, every_discord_body_valid
from tests.support.db_door import DatabaseDoor
from tests.support.factory import document
from tests.support.interleaved import WAIT
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


# ── on AWS: the API's worker is frozen with its container once the answer has gone ──
CHAT_FUNCTION = "arn:aws:lambda:eu-west-1:123456789012:function:chat_press"


@pytest.fixture
def world(db, clock, db_params, chat):
    from tests.support.chat_world import ChatWorld, opened

    with opened(ChatWorld, db, clock, db_params, chat) as opened_world:
        yield opened_world


@pytest.fixture
def on_aws(world, monkeypatch):
    """The API as Lambda runs it: the press's other half is the chat function's asynchronous invocation (kept here:
    the test makes it, as Lambda would, with `finish`), and the worker a pool of one of the test's own."""
    from chalicelib.events.adapters import aws as aws_adapter

    invoked = []
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "api")
    monkeypatch.setattr(aws_adapter, "invoke_chat", lambda arn, event: invoked.append((arn, event)))
    monkeypatch.setattr(answers, "_workers", ThreadPoolExecutor(max_workers=1, thread_name_prefix="chat-press"))
    with runtime.override(settings=dataclasses.replace(world.settings, chat_function_arn=CHAT_FUNCTION)):
        yield invoked
    answers._workers.shutdown(wait=True)


def _pressed_on_aws(world, on_aws):
    """A gm's confirm of a posted cue, sent to the API on AWS: its message, and the chat function's event."""
    run, cue = world.cue_posted()
    [message] = world.chat.messages("discord")
    headers, body = world.chat.discord_signed(world.chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:confirm",
                                                                             roles=[GM_ROLE]))
    answer = world.api.call("POST", "/integrations/discord/interactions", raw=body, headers=headers)
    assert (answer.status, answer.body) == (200, {"type": 6})  # not done in time: the chat function finishes it
    [(arn, event)] = on_aws
    assert arn == CHAT_FUNCTION
    return run, message, event


def _nothing_done_by_the_worker_then_the_chat_function_makes_the_press_once(world, run, message, event):
    answers._workers.shutdown(wait=True)  # the worker has gone on, and ended
    assert world.steps(run.id)[0].parked, "the worker pressed after its answer had gone"
    assert not [e for e in log_of(world.db, run.id) if e.actor == "discord:4242"]
    assert not world.chat.received(path="/webhooks/") and world.chat.message(message.id).edits == 0
    finish(event)  # the chat function's invocation
    assert world.steps(run.id)[0].status is StepStatus.DONE
    assert [e.kind for e in log_of(world.db, run.id) if e.actor == "discord:4242"] == ["step.status", "chat.pressed"]
    [edit] = world.chat.received("PATCH", "/messages/@original")
    assert "Confirmed by <@4242>" in edit.json["content"] and edit.json["components"] == []


def test_on_aws_a_press_worker_frozen_in_its_connect_past_the_answer_does_nothing_and_the_chat_function_presses_once(
        world, on_aws, monkeypatch):
    """Lambda freezes the API's container once the answer has gone, its worker inside the database's connect (an
    Aurora resuming); thawed minutes later, the connect done, the worker made the press then, after the presser
    had been told, or the chat function had acted, and whatever the step had become. It begins no press once
    the answer has gone: the chat function's invocation is the one half that acts late."""
    from chalicelib.db import Database

    frozen, thawed = threading.Event(), threading.Event()
    connect = Database._connect_once

    def connected_then_frozen(self, *args, **kwargs):
        made = connect(self, *args, **kwargs)
        if threading.current_thread().name.startswith("chat-press") and not thawed.is_set():
            frozen.set()
            thawed.wait(WAIT)  # the container frozen: its answer goes meanwhile
        return made

    monkeypatch.setattr(Database, "_connect_once", connected_then_frozen)
    run, message, event = _pressed_on_aws(world, on_aws)
    assert frozen.is_set()
    thawed.set()  # the container is thawed by a later request: the worker's connect returns
    _nothing_done_by_the_worker_then_the_chat_function_makes_the_press_once(world, run, message, event)


def test_on_aws_a_press_queued_behind_busy_workers_does_nothing_once_its_answer_has_gone(world, on_aws):
    """The API's presses share a pool of workers: one queued behind busy ones began whenever a worker came free
    (after a thaw, minutes on), and made the press then. Queued past its answer, it does nothing."""
    release = threading.Event()
    answers._workers.submit(release.wait, WAIT)  # the one worker busy (another press, frozen)
    run, message, event = _pressed_on_aws(world, on_aws)
    release.set()
    _nothing_done_by_the_worker_then_the_chat_function_makes_the_press_once(world, run, message, event)
