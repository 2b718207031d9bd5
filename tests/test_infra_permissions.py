"""The roles grant what the code calls: AWS calls recorded under moto while the tick, the API's nudge and
the migrate function do their work, each checked against its role in the packaged template."""

import fnmatch
import json
from datetime import UTC, datetime

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from botocore.client import BaseClient
from moto import mock_aws

from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.db import Database
from chalicelib.events import nudge
from chalicelib.events.adapters import aws as aws_adapter
from chalicelib.events.adapters.aws import aws_switches
from chalicelib.events.runner.compose import build_runner
from chalicelib.migrate_function import handle
from devtools.kit.game_bridge import GameBridge
from tests.support import cfn
from tests.support.factory import document
from tests.support.runner_kit import schedule, step, tick

pytestmark = pytest.mark.packaging

REGION = "eu-west-1"
# IAM actions whose name is not the API operation's
IAM_ACTION = {("lambda", "Invoke"): "lambda:InvokeFunction"}


@pytest.fixture
def aws_calls(monkeypatch):
    """Every AWS API call made in the test, as the IAM action it needs."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    calls: list[str] = []
    send = BaseClient._make_api_call

    def recording(client, operation, params):
        prefix = client.meta.service_model.signing_name
        calls.append(IAM_ACTION.get((prefix, operation), f"{prefix}:{operation}"))
        return send(client, operation, params)

    parameters.clear_caches()
    with mock_aws():
        monkeypatch.setattr(BaseClient, "_make_api_call", recording)
        yield calls
    parameters.clear_caches()


def granted_actions(role_name: str) -> set[str]:
    role = cfn.packaged_app()["Resources"][role_name]
    granted: set[str] = set()
    for policy in role["Properties"]["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            action = statement["Action"]
            granted.update([action] if isinstance(action, str) else action)
    return granted


def test_the_tick_role_grants_every_call_a_tick_makes(aws_calls, db_params, db, clock):
    secrets, sns = boto3.client("secretsmanager"), boto3.client("sns")
    database_arn = secrets.create_secret(Name="app", SecretString=json.dumps({
        "host": db_params.host, "port": db_params.port, "username": db_params.user, "password": db_params.password,
        "dbname": db_params.database}))["ARN"]
    bridge_arn = secrets.create_secret(Name="bridge", SecretString="bridge-key")["ARN"]
    cues, announcements = (sns.create_topic(Name=name)["TopicArn"] for name in ("cues", "announcements"))
    setup_calls = len(aws_calls)
    with GameBridge(secret="bridge-key") as bridge:
        settings = Settings(db_secret_arn=database_arn, game_bridge_url=bridge.url, game_bridge_secret_arn=bridge_arn,
                            cue_channel=f"sns:{cues}", announce_channel=f"sns:{announcements}")
        tick_db = Database(runtime.db_params(settings))  # as the Lambda connects: through the secret
        runner = build_runner(settings, tick_db, clock)
        try:
            schedule(db, clock.now(), document([[step("core.announce", message="Doors open"), step("world.spawn", npc="scarecrow"),
                                                 step("core.cue", instruction="Light the bonfire")]]))
            tick(runner)
        finally:
            runner.close()
            tick_db.close()
        assert bridge.received("world.spawn")
    made = set(aws_calls[setup_calls:])
    assert {"secretsmanager:GetSecretValue", "sns:Publish"} <= made  # the recording saw the tick's calls
    assert made <= granted_actions("TickRole"), made - granted_actions("TickRole")


def test_the_migrate_role_grants_every_call_migrate_rotate_and_unlock_make(aws_calls, db_params):
    secrets = boto3.client("secretsmanager")
    admin_arn = secrets.create_secret(Name="admin", SecretString=json.dumps(
        {"username": db_params.user, "password": db_params.password}))["ARN"]
    suffix = db_params.database[-6:]
    app_arn = secrets.create_secret(Name="app", SecretString=json.dumps({
        "username": f"perm_app_{suffix}", "password": "first-password-0123", "host": db_params.host, "port": db_params.port,
        "dbname": db_params.database}))["ARN"]
    env = {"EVENTS_DB_SECRET_ARN": app_arn, "EVENTS_DB_ADMIN_SECRET_ARN": admin_arn, "EVENTS_DB_ADMIN_HOST": db_params.host,
           "EVENTS_DB_APP_HOST": "proxy.example.internal"}
    setup_calls = len(aws_calls)
    try:
        handle({}, env)
        handle({"action": "rotate"}, env)
        handle({"action": "unlock"}, env)
    finally:
        admin = Database(db_params).connect(database=False)
        with admin.cursor() as cursor:
            cursor.execute("DROP USER IF EXISTS %s@'%%'", (f"perm_app_{suffix}",))
        admin.close()
    made = set(aws_calls[setup_calls:])
    assert made == {"secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"}
    assert made <= granted_actions("MigrateRole")


def test_the_tick_role_grants_sleeping_and_waking_and_the_api_role_the_nudge(aws_calls, monkeypatch, db, clock):
    boto3.client("events").put_rule(Name="stack-tick", ScheduleExpression="rate(1 minute)")
    tick_arn = f"arn:aws:lambda:{REGION}:123456789012:function:stack-tick"
    setup_calls = len(aws_calls)
    monkeypatch.setattr(aws_adapter, "_clients", {})  # clients of this test's mock, built by the engine
    switches = aws_switches("stack-tick", tick_arn, "arn:aws:iam::123456789012:role/wake")
    switches.rule_off()
    switches.set_wake_ups(7, datetime(2030, 1, 1, 20, 0), datetime(2030, 1, 1, 20, 5))
    switches.set_wake_ups(7, datetime(2030, 1, 1, 20, 0), datetime(2030, 1, 1, 20, 5))  # a retried create: an update
    switches.rule_on()
    switches.cancel_wake_ups(7)
    granted_schedules = next(
        st["Resource"] for policy in cfn.packaged_app()["Resources"]["TickRole"]["Properties"]["Policies"]
        for st in policy["PolicyDocument"]["Statement"] if "scheduler:CreateSchedule" in st["Action"])
    patterns = [r["Fn::Sub"].split(":schedule/")[1].replace("${TickName}", "stack-tick") for r in granted_schedules]
    for name, pattern in zip((switches.wake_up_name(7), switches.backstop_name(7)), patterns, strict=True):
        assert fnmatch.fnmatchcase(f"default/{name}", pattern), (name, pattern)  # each name its own grant (rule = TickName)
    tick_made = set(aws_calls[setup_calls:])
    assert {"events:DisableRule", "events:EnableRule", "scheduler:CreateSchedule", "scheduler:UpdateSchedule",
            "scheduler:DeleteSchedule"} <= tick_made
    assert tick_made <= granted_actions("TickRole"), tick_made - granted_actions("TickRole")

    monkeypatch.setattr(aws_adapter, "_clients", {})
    api_from = len(aws_calls)
    db.autocommit(lambda tx: tx.execute("UPDATE event_engine_state SET state = 'asleep'"))
    # The API's nudge: the rule on, then the invoke (moto has no such function: the call made is what counts).
    nudge.after_work_created(db, Settings(sleep=True, tick_rule_name="stack-tick", tick_function_arn=tick_arn), clock.now())
    monkeypatch.setattr(aws_adapter, "_clients", {})  # not a client bound to this test's mock
    api_made = set(aws_calls[api_from:])
    assert api_made == {"events:EnableRule", "lambda:InvokeFunction"}
    assert api_made <= granted_actions("ApiHandlerRole"), api_made - granted_actions("ApiHandlerRole")
    assert api_made <= granted_actions("ChatPressRole"), api_made - granted_actions("ChatPressRole")  # a chat press's nudge
    assert "lambda:InvokeFunction" in granted_actions("ApiHandlerRole")


def test_the_api_role_grants_the_calls_a_signed_signal_makes(aws_calls, db, db_params, clock):
    from chalice.test import Client

    from app import app
    from chalicelib.api import signature
    from chalicelib.secrets import forget
    from tests.support.api import hs_settings
    from tests.support.factory import make_run

    arn = boto3.client("secretsmanager").create_secret(Name="signal", SecretString="game-signal-key")["ARN"]
    doc = {"name": "Boss night", "phases": [{"name": "boss", "advance": {"when": "signal", "name": "boss_defeated"},
                                             "steps": [step("core.announce", message="Fight!")]}]}
    path = f"/runs/{make_run(db, clock.now(), doc=doc).id}/signals/boss_defeated"
    stamp = str(int(clock.now().replace(tzinfo=UTC).timestamp()))
    headers = {"Content-Type": "application/json", signature.TIMESTAMP: stamp,
               signature.SIGNATURE: signature.sign("game-signal-key", stamp, path, b"")}
    forget()
    setup_calls = len(aws_calls)
    with runtime.override(database=db, clock=clock, settings=hs_settings(db_params, signal_secret_arn=arn)), Client(app) as client:
        assert client.http.post(path, headers=headers, body=b"").status_code == 202
    forget()  # not a client bound to this test's mock
    made = set(aws_calls[setup_calls:])
    assert made == {"secretsmanager:GetSecretValue"}
    assert made <= granted_actions("ApiHandlerRole")


def test_the_chat_roles_grant_the_calls_a_chat_message_and_a_press_make(aws_calls, monkeypatch, db, db_params, clock):
    """The tick posts with the bot's token read from its secret; the API reads Slack's signing secret and hands a press
    to the chat function; that function reaches the database through the app secret: each within its own role."""
    from chalice.test import Client

    from app import app
    from chalicelib.events.chat.answers import finish
    from chalicelib.events.chat.interactions import ChatPress
    from chalicelib.secrets import forget
    from devtools.kit.fake_chat import FakeChat
    from tests.support.api import hs_settings
    from tests.support.chat import chat_settings

    secrets = boto3.client("secretsmanager")
    database_arn = secrets.create_secret(Name="app", SecretString=json.dumps({
        "host": db_params.host, "port": db_params.port, "username": db_params.user, "password": db_params.password,
        "dbname": db_params.database}))["ARN"]
    role = boto3.client("iam").create_role(RoleName="chat", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    chat_arn = boto3.client("lambda").create_function(
        FunctionName="chat", Runtime="python3.13", Role=role, Handler="app.chat_press", Code={"ZipFile": _zip()})["FunctionArn"]
    with FakeChat() as fake:
        bot_arn = secrets.create_secret(Name="discord-bot", SecretString=fake.token)["ARN"]
        signing_arn = secrets.create_secret(Name="slack-signing", SecretString=fake.signing_secret)["ARN"]
        forget()
        monkeypatch.setattr(aws_adapter, "_clients", {})
        tick_from = len(aws_calls)
        settings = chat_settings(fake, Settings(db_secret_arn=database_arn), discord_bot_token=None,
                                 discord_bot_token_secret_arn=bot_arn)
        schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire")]]))
        runner = build_runner(settings, db, clock)
        try:
            tick(runner)
        finally:
            runner.close()
        [message] = fake.messages("discord")
        tick_made = set(aws_calls[tick_from:])
        assert tick_made == {"secretsmanager:GetSecretValue"} and tick_made <= granted_actions("TickRole")

        forget()
        api_from = len(aws_calls)
        monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "api")  # on AWS: the press's other half is the chat function's
        api_settings = chat_settings(fake, hs_settings(db_params), slack_signing_secret=None,
                                     slack_signing_secret_arn=signing_arn, chat_function_arn=chat_arn)
        payload = fake.slack_interaction(message, "ev:1:2:confirm", team="T0ELSEWHERE")  # refused: said privately, after
        headers, body = fake.slack_signed(payload)
        with runtime.override(database=db, clock=clock, settings=api_settings), Client(app) as client:
            assert client.http.post("/integrations/slack/interactions", headers=headers, body=body).status_code == 200
        api_made = set(aws_calls[api_from:])
        assert api_made == {"secretsmanager:GetSecretValue", "lambda:InvokeFunction"}
        assert api_made <= granted_actions("ApiHandlerRole"), api_made - granted_actions("ApiHandlerRole")

        forget()
        chat_from = len(aws_calls)
        press = ChatPress("discord", "4242", "mira", ["gm"], 1, 2, "confirm", None, "1", message.channel_id, message.id,
                          "guild", {"application_id": "1", "token": "gone"})
        press_settings = Settings(db_secret_arn=database_arn, discord_api_url=fake.discord_url)
        press_db = Database(runtime.db_params(press_settings))  # as the chat function connects: through the secret
        try:
            with runtime.override(database=press_db, clock=clock, settings=press_settings):
                finish({"press": press.event()})
        finally:
            press_db.close()
        chat_made = set(aws_calls[chat_from:])
        assert chat_made == {"secretsmanager:GetSecretValue"} and chat_made <= granted_actions("ChatPressRole")
    forget()
    monkeypatch.setattr(aws_adapter, "_clients", {})


def _zip() -> bytes:
    import io
    import zipfile

    made = io.BytesIO()
    with zipfile.ZipFile(made, "w") as archive:
        archive.writestr("app.py", "def chat_press(event, context):\n    return None\n")
    return made.getvalue()
