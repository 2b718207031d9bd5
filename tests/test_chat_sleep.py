"""A press in chat wakes a sleeping deployment, as the console's control does.

Before, a chat press committed its command (the run's wake time now) and nudged nothing: with the deployment
asleep behind a parked cue, a GM's confirm in Discord or Slack waited for the run's next timer, or the sleep's
daily backstop, before the run went on.
"""

import time

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.events import nudge
from chalicelib.events.lifecycle import StepStatus
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.runner.sleep import Sleeper
from chalicelib.events.store import steps
from tests.support import sleep_world
from tests.support.api import hs_settings
from tests.support.aws_world import FUNCTION, ROLE, RULE
from tests.support.chat import CUE_CHANNEL, GM_ROLE, SLACK_CHANNEL, SLACK_GM, chat_settings
from tests.support.factory import document
from tests.support.runner_kit import schedule, step, tick
from tests.support.sleep_world import HORIZON, reset_state, rule_state, state

aws, lambda_api = sleep_world.aws, sleep_world.lambda_api  # the sleep world's fixtures: moto's AWS, the Lambda API
# reminded and escalated after an hour: the deployment sleeps behind the parked cue until then
CUE = document([[step("core.cue", instruction="Light the bonfire", remind_after_seconds=3600, escalate_after_seconds=3600),
                 step("core.announce", message="lit")]])


@pytest.fixture
def asleep_at_a_cue(db, clock, db_params, chat, aws, lambda_api, monkeypatch):
    """(settings for a cue channel) -> the run and its cue, posted by a tick, the deployment asleep behind it and
    its nudges going to the loopback Lambda API."""
    monkeypatch.setattr(nudge, "invoke_tick", lambda arn: lambda_api.invoke(arn))

    def make(cue_channel: str):
        reset_state(db)
        settings = chat_settings(chat, hs_settings(db_params, sleep=True, tick_rule_name=RULE, tick_function_arn=FUNCTION,
                                                   wake_role_arn=ROLE), cue_channel=cue_channel)
        run = schedule(db, clock.now(), CUE)
        runner = build_runner(settings, db, clock)
        try:
            tick(runner)
        finally:
            runner.close()
        assert Sleeper(db, aws, HORIZON).try_sleep(clock.now())  # the cue parked: nothing left to wake for soon
        assert state(db) == "asleep" and rule_state(aws) == "DISABLED"
        return settings, run, db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0]

    return make


def test_a_gms_confirm_in_discord_wakes_a_sleeping_deployment_once(db, clock, chat, lambda_api, asleep_at_a_cue):
    settings, run, cue = asleep_at_a_cue(f"discord:{CUE_CHANNEL}")
    [message] = chat.messages("discord")
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        headers, body = chat.discord_signed(chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:confirm", roles=[GM_ROLE]))
        answer = client.http.post("/integrations/discord/interactions", headers=headers, body=body)
        assert (answer.status_code, answer.json_body["type"]) == (200, 7)  # the message as the press left it
        assert len(lambda_api.calls) == 1 and state(db) == "waking"
        again = client.http.post("/integrations/discord/interactions", headers=headers, body=body)  # re-delivered
        assert again.status_code == 200
    assert len(lambda_api.calls) == 1  # a repeat makes no work, and nudges nothing
    assert db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0].status is StepStatus.DONE


def test_a_gms_confirm_in_slack_wakes_a_sleeping_deployment(db, clock, chat, lambda_api, asleep_at_a_cue):
    settings, run, cue = asleep_at_a_cue(f"slack:{SLACK_CHANNEL}")
    [message] = chat.messages("slack")
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        headers, body = chat.slack_signed(chat.slack_interaction(message, f"ev:{run.id}:{cue.id}:confirm", user=SLACK_GM))
        assert client.http.post("/integrations/slack/interactions", headers=headers, body=body).status_code == 200
        deadline = time.monotonic() + 10  # answered empty at once; the press is finished after
        while not lambda_api.calls and time.monotonic() < deadline:
            time.sleep(0.02)
    assert len(lambda_api.calls) == 1 and state(db) == "waking"
    assert db.autocommit(lambda tx: steps.list_for_run(tx, run.id))[0].status is StepStatus.DONE


def test_a_press_whose_maker_froze_before_its_nudge_is_nudged_by_the_half_that_finishes_it(db, clock, chat, lambda_api,
                                                                                         asleep_at_a_cue):
    """On AWS the API answers a slow press at 1.5 s and Lambda may freeze its worker between the press's commit
    and its nudge; the chat function then finished the press as a repeat, which nudged nothing: the run stayed
    asleep for up to a day."""
    from chalicelib.events.chat.answers import finish
    from chalicelib.events.chat.interactions import ChatPress, perform

    settings, run, cue = asleep_at_a_cue(f"discord:{CUE_CHANNEL}")
    [message] = chat.messages("discord")
    press = ChatPress("discord", "4242", "mira", ["gm"], run.id, cue.id, "confirm", None, "interaction-7",
                      message.channel_id, message.id, settings.discord_guild_id or "", {"application_id": "1", "token": "t"})
    perform(db, clock, press, frozenset({"gm", "moderator"}))  # the worker's half: committed, then frozen
    assert not lambda_api.calls and state(db) == "asleep"
    with runtime.override(database=db, clock=clock, settings=settings):
        finish({"press": press.event()})  # the chat function's half
    assert len(lambda_api.calls) == 1 and state(db) == "waking"


def test_a_press_whose_maker_froze_inside_its_nudge_has_the_minute_rule_turned_on_by_the_half_that_finishes_it(
        db, clock, chat, lambda_api, aws, asleep_at_a_cue):
    """Frozen after the state row moved to waking but before the minute rule was turned on and the tick invoked:
    the row's compare-and-set refuses the finishing half's own nudge (waking, not yet stale), and nothing woke
    the deployment until the sleep's wake-up. The finishing half turns the rule on: a tick within the minute."""
    from chalicelib.events.chat.answers import finish
    from chalicelib.events.chat.interactions import ChatPress, perform
    from chalicelib.events.store import engine_state

    settings, run, cue = asleep_at_a_cue(f"discord:{CUE_CHANNEL}")
    [message] = chat.messages("discord")
    press = ChatPress("discord", "4242", "mira", ["gm"], run.id, cue.id, "confirm", None, "interaction-8",
                      message.channel_id, message.id, settings.discord_guild_id or "", {"application_id": "1", "token": "t"})
    perform(db, clock, press, frozenset({"gm", "moderator"}))
    now = clock.now()
    assert db.transaction(lambda tx: engine_state.wake(tx, now, now - nudge.WAKING_STALE)) is not None  # then frozen
    assert rule_state(aws) == "DISABLED" and not lambda_api.calls
    with runtime.override(database=db, clock=clock, settings=settings):
        finish({"press": press.event()})
    assert rule_state(aws) == "ENABLED" and state(db) == "waking"
