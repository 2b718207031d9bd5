"""The deployment as CloudFormation, offline: `chalice package --merge-template` runs, cfn-lint finds
nothing in any template as written or as a team would deploy it, and the packaged template holds
the promises docs/deploy.md makes (VPC, invoke settings, permissions, alarms, error answers)."""

import json
import re

import pytest
from chalice.package import YAMLTemplateSerializer

from tests.support import cfn

pytestmark = pytest.mark.packaging

APP_PARAMETERS = {  # what a team must pass at deploy time (no defaults)
    "GameBridgeUrl": "https://bridge.example.org",
    "JwtJwksUrl": "https://id.example.org/.well-known/jwks.json",
    "JwtIssuer": "https://id.example.org",
    "AppDatabaseHost": "events-data.cluster-abc.eu-west-1.rds.amazonaws.com",  # make deploy copies the data stack's output
    "TickName": "event-run-engine-prod-tick",  # make deploy derives it from the stack name
}
COSTLY_DATA_OPTIONS = {"EnableProxy": "true", "EnableNatGateway": "true", "EnableInterfaceEndpoints": "true"}
FUNCTIONS = ("APIHandler", "Tick", "ChatPress", "Migrate")
SECRETS = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:"
CHAT_OPTIONS = {  # a community's Discord and Slack bots (docs/chat.md)
    "CueChannel": "discord:100000000000000001", "EscalationChannel": "slack:C0ESCAL",
    "DiscordBotTokenSecretArn": SECRETS + "discord-bot-AbCdEf", "DiscordPublicKey": "ab" * 32,
    "DiscordGuildId": "800000000000000001", "DiscordRoles": "910000000000000001=gm,910000000000000002=moderator",
    "SlackBotTokenSecretArn": SECRETS + "slack-bot-AbCdEf", "SlackSigningSecretArn": SECRETS + "slack-signing-AbCdEf",
    "SlackTeamId": "T0TEAM", "SlackRoles": "U0MIRA=gm",
}
CHAT_PRESS_ARN = {"Fn::GetAtt": ["ChatPress", "Arn"]}
LOG_GROUPS = [("APIHandler", "ApiLogGroup"), ("Tick", "TickLogGroup"), ("ChatPress", "ChatPressLogGroup"),
              ("Migrate", "MigrateLogGroup")]
TICK_ARN = {"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:${TickName}"}
RULE_ARN = {"Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:rule/${TickName}"}


@pytest.fixture(scope="module")
def packaged() -> dict:
    return cfn.packaged_app()


@pytest.fixture(scope="module")
def app(packaged) -> dict:
    """The packaged template as deployed with only the required parameters."""
    return cfn.render(packaged, APP_PARAMETERS)


@pytest.fixture(scope="module")
def data() -> dict:
    return cfn.load(cfn.DATA_TEMPLATE)


def resources(template):
    return template["Resources"]


def statements(role: dict) -> list[dict]:
    return [s for policy in role["Properties"]["Policies"] for s in policy["PolicyDocument"]["Statement"]]


def actions(statement: dict) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else action


def granted(role: dict, action: str) -> list:
    """Every resource the role may perform `action` on."""
    found = []
    for statement in statements(role):
        if action in actions(statement):
            resource = statement["Resource"]
            found.extend(resource if isinstance(resource, list) else [resource])
    return found


def env(template, function) -> dict:
    return resources(template)[function]["Properties"]["Environment"]["Variables"]


def imported(name: str) -> dict:
    return {"Fn::ImportValue": {"Fn::Sub": "${DataStack}-" + name}}


# ── lint, as written and as deployed ──

def test_the_data_stack_lints_clean_as_written(data):
    assert cfn.lint(data) == []


EXISTING_NETWORK = {"ExistingVpcId": "vpc-0123456789abcdef0", "ExistingSubnetIds": "subnet-0123456789abcdef0,subnet-0fedcba9876543210"}


@pytest.mark.parametrize("options", [{}, COSTLY_DATA_OPTIONS, EXISTING_NETWORK, {"MinCapacity": 0.5},
                                     {"StorageType": "aurora"}],
                         ids=["defaults", "costly", "existing-subnets", "never-pauses", "standard-storage"])
def test_the_data_stack_lints_clean_as_deployed(data, options):
    assert cfn.lint(cfn.render(data, options)) == []


def test_the_packaged_app_lints_clean_as_written_and_as_deployed(packaged):
    assert cfn.lint(packaged) == []
    assert cfn.lint(cfn.render(packaged, APP_PARAMETERS)) == []
    everything = dict(APP_PARAMETERS, ConsoleUrl="https://console.example.org", CueChannel="webhook:https://discord.com/api/webhooks/1/x",
                      AnnounceChannel="webhook:https://hooks.slack.com/services/x", AlarmEmail="ops@example.org", CueEmail="gm@example.org")
    assert cfn.lint(cfn.render(packaged, everything)) == []
    assert cfn.lint(cfn.render(packaged, dict(APP_PARAMETERS, **CHAT_OPTIONS))) == []


@pytest.mark.parametrize(("on", "value", "place", "named"), [
    ("DiscordPublicKey", "ab" * 32, "DiscordGuildId", "800000000000000001"),
    ("SlackSigningSecretArn", SECRETS + "slack-signing-AbCdEf", "SlackTeamId", "T0TEAM"),
])
def test_presses_on_without_the_place_they_count_in_are_refused_by_the_templates_rule(on, value, place, named):
    """The functions would refuse the settings at start (chalicelib/config.py): CloudFormation refuses them first."""
    template = cfn.load(cfn.APP_TEMPLATE)
    with pytest.raises(ValueError, match=f"turns .* presses on: set {place} to the"):
        cfn.render(template, dict(APP_PARAMETERS, **{on: value}))
    cfn.render(template, dict(APP_PARAMETERS, **{on: value, place: named}))


def test_chalice_reads_the_merge_template_as_cloudformation_does():
    as_chalice = YAMLTemplateSerializer().load_template(cfn.APP_TEMPLATE.read_text())
    assert json.loads(json.dumps(as_chalice)) == json.loads(json.dumps(cfn.load(cfn.APP_TEMPLATE)))


# ── no fixed cost by default, each costly part one parameter away ──

def test_by_default_there_is_no_nat_no_proxy_and_no_interface_endpoint(data):
    deployed = cfn.render(data)
    assert cfn.of_type(deployed, "AWS::EC2::NatGateway") == {}
    assert cfn.of_type(deployed, "AWS::EC2::EIP") == {}
    assert cfn.of_type(deployed, "AWS::RDS::DBProxy") == {}
    assert [e["Properties"]["VpcEndpointType"] for e in cfn.of_type(deployed, "AWS::EC2::VPCEndpoint").values()] == ["Gateway"]
    scaling = resources(deployed)["DatabaseCluster"]["Properties"]["ServerlessV2ScalingConfiguration"]
    assert deployed["Parameters"]["MinCapacity"]["Default"] == 0 and scaling["MinCapacity"] == {"Ref": "MinCapacity"}
    assert scaling["SecondsUntilAutoPause"] == {"Ref": "SecondsUntilAutoPause"}
    # a frozen Lambda container's open connection would keep Aurora up for MySQL's default 8 hours
    instance = resources(deployed)["DatabaseInstance"]["Properties"]
    timeouts = resources(deployed)[instance["DBParameterGroupName"]["Ref"]]["Properties"]["Parameters"]
    assert timeouts["wait_timeout"] == {"Ref": "IdleConnectionSeconds"}
    assert deployed["Parameters"]["IdleConnectionSeconds"]["Default"] == 60  # the least: Aurora pauses soonest


@pytest.mark.parametrize("parameter, resource_type, count", [
    ("EnableNatGateway", "AWS::EC2::NatGateway", 1),
    ("EnableProxy", "AWS::RDS::DBProxy", 1),
    ("EnableInterfaceEndpoints", "AWS::EC2::VPCEndpoint", 6),  # five interface endpoints and the S3 gateway
])
def test_each_costly_part_appears_when_its_parameter_is_set(data, parameter, resource_type, count):
    deployed = cfn.render(data, {parameter: "true"})
    assert len(cfn.of_type(deployed, resource_type)) == count
    assert cfn.lint(deployed) == []


def test_aurora_storage_is_io_optimized_unless_standard_is_chosen(data):
    """I/O-Optimized by default (a million more steps then stay under 1/100 of Step Functions); `aurora` selects
    Standard, and the property is always set, so the cluster has the storage the parameter says."""
    def storage(deployed: dict) -> str:
        assert resources(deployed)["DatabaseCluster"]["Properties"]["StorageType"] == {"Ref": "StorageType"}
        return deployed["Parameters"]["StorageType"]["Default"]  # the value the deployment passes

    assert storage(cfn.render(data)) == "aurora-iopt1"
    assert storage(cfn.render(data, {"StorageType": "aurora"})) == "aurora"
    assert set(data["Parameters"]["StorageType"]["AllowedValues"]) == {"aurora-iopt1", "aurora"}


def test_the_proxy_requires_tls_and_so_does_aurora(data):
    proxy = resources(cfn.render(data, {"EnableProxy": "true"}))["DatabaseProxy"]["Properties"]
    assert proxy["RequireTLS"] is True
    assert resources(data)["DatabaseClusterParameters"]["Properties"]["Parameters"]["require_secure_transport"] == "ON"


def test_aurora_is_serverless_v2_mysql_3_with_an_rds_managed_secret(data):
    cluster = resources(data)["DatabaseCluster"]["Properties"]
    assert cluster["Engine"] == "aurora-mysql" and cluster["ManageMasterUserPassword"] is True
    assert data["Parameters"]["EngineVersion"]["Default"].startswith("8.0.mysql_aurora.3.")
    assert resources(data)["DatabaseInstance"]["Properties"]["DBInstanceClass"] == "db.serverless"


# ── the functions ──

@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_function_runs_in_the_private_dual_stack_subnets(app, function):
    vpc = resources(app)[function]["Properties"]["VpcConfig"]
    assert vpc["SubnetIds"] == {"Fn::Split": [",", imported("SubnetIds")]}
    assert vpc["SecurityGroupIds"] == [imported("FunctionSecurityGroupId")]
    assert vpc["Ipv6AllowedForDualStack"] is True
    role = resources(app)[resources(app)[function]["Properties"]["Role"]["Fn::GetAtt"][0]]
    assert role["Properties"]["ManagedPolicyArns"] == [{"Ref": "FunctionNetworkPolicy"}]
    network = resources(app)["FunctionNetworkPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert {"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DeleteNetworkInterface"} <= {
        a for statement in network for a in actions(statement)}
    assert not any(a.startswith("logs:") for statement in network for a in actions(statement))
    for statement in network:  # only the Describe calls, which take no resource, on "*"
        if statement["Resource"] == "*":
            assert all(a.startswith("ec2:Describe") for a in actions(statement)), statement


@pytest.mark.parametrize("function, log_group", LOG_GROUPS)
def test_each_function_may_write_only_its_own_log_group(app, function, log_group):
    role = resources(app)[resources(app)[function]["Properties"]["Role"]["Fn::GetAtt"][0]]
    logs = [a for statement in statements(role) for a in actions(statement) if a.startswith("logs:")]
    assert sorted(logs) == ["logs:CreateLogStream", "logs:PutLogEvents"]  # the group exists: no CreateLogGroup
    assert granted(role, "logs:PutLogEvents") == granted(role, "logs:CreateLogStream") == [{"Fn::GetAtt": [log_group, "Arn"]}]


def test_a_late_tick_is_dropped_and_a_failed_ones_record_goes_to_a_topic_of_its_own_not_the_alarm_topic(app):
    """A tick that keeps failing fails every minute: its records on the alarm topic were 60 e-mails an hour to
    everyone on it, besides TickErrorsAlarm's one. They go to TickFailureTopic, which nobody is subscribed to unless
    they choose (its ARN is an output)."""
    tick = resources(app)["Tick"]["Properties"]
    assert tick["Timeout"] > 60
    invoke = tick["EventInvokeConfig"]
    assert (invoke["MaximumEventAgeInSeconds"], invoke["MaximumRetryAttempts"]) == (60, 0)
    assert invoke["DestinationConfig"]["OnFailure"] == {"Type": "SNS", "Destination": {"Ref": "TickFailureTopic"}}
    assert {"Ref": "TickFailureTopic"} in granted(resources(app)["TickRole"], "sns:Publish")  # Lambda sends it as the tick
    assert {"Ref": "AlarmTopic"} not in granted(resources(app)["TickRole"], "sns:Publish")
    assert not [sub for sub in cfn.of_type(app, "AWS::SNS::Subscription").values()
                if sub["Properties"]["TopicArn"] == {"Ref": "TickFailureTopic"}]
    assert app["Outputs"]["TickFailureTopicArn"]["Value"] == {"Ref": "TickFailureTopic"}
    assert tick["ReservedConcurrentExecutions"] == 2


def test_the_api_has_room_to_answer_inside_api_gateways_limit(app):
    api = resources(app)["APIHandler"]["Properties"]
    assert api["MemorySize"] >= 512 and api["Timeout"] <= 29


def test_the_api_gzips_answers_over_a_kilobyte(app):
    # The console's page weight (tests/console: at most 200 KB a run page) counts on it.
    assert resources(app)["RestAPI"]["Properties"]["MinimumCompressionSize"] == 1024


@pytest.mark.parametrize("function, log_group", LOG_GROUPS)
def test_each_function_logs_to_its_own_group_with_retention(app, function, log_group):
    assert resources(app)[function]["Properties"]["LoggingConfig"]["LogGroup"] == {"Ref": log_group}
    assert resources(app)[log_group]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


# ── permissions: exact ARNs, each function only what it calls ──

def test_no_secret_topic_or_function_is_granted_on_a_wildcard(app):
    sensitive = ("secretsmanager:", "sns:", "lambda:Invoke", "events:", "scheduler:", "iam:PassRole")
    for name, role in cfn.of_type(app, "AWS::IAM::Role").items():
        for statement in statements(role):
            if any(a.startswith(sensitive) for a in actions(statement)):
                resource = statement["Resource"]
                for one in resource if isinstance(resource, list) else [resource]:
                    # the one wildcard: a sleep's number at the end of its two schedules' names
                    numbered = json.dumps(one).replace("${TickName}-wake-*", "").replace("${TickName}-backstop-*", "")
                    assert one != "*" and "*" not in numbered, (name, statement)


def app_secret_key(key: str) -> dict:
    """`<app secret arn>:<key>`: one key of the data stack's app secret, as a setting names it."""
    return {"Fn::Sub": [f"${{AppSecret}}:{key}", {"AppSecret": imported("AppSecretArn")}]}


def test_the_api_reads_only_the_app_secret_with_its_signal_key_and_may_only_nudge_the_tick_or_finish_a_press(app):
    """The signal key is a key of the app secret (the engine's keys share it), so the API reads that one secret."""
    role = resources(app)["ApiHandlerRole"]
    assert granted(role, "secretsmanager:GetSecretValue") == [imported("AppSecretArn")]
    assert env(app, "APIHandler")["EVENTS_SIGNAL_SECRET_ARN"] == app_secret_key("signal_key")
    assert "EVENTS_SIGNAL_SECRET_ARN" not in env(app, "Tick") and "GAME_BRIDGE_SECRET_ARN" not in env(app, "APIHandler")
    assert granted(role, "lambda:InvokeFunction") == [CHAT_PRESS_ARN, TICK_ARN]
    assert granted(role, "events:EnableRule") == [RULE_ARN] and granted(role, "events:DisableRule") == []
    assert granted(role, "scheduler:CreateSchedule") == [] and granted(role, "iam:PassRole") == []
    assert granted(role, "sns:Publish") == [] and granted(role, "secretsmanager:PutSecretValue") == []


def test_the_tick_reads_its_two_secrets_and_publishes_only_to_its_topics(app):
    role = resources(app)["TickRole"]
    assert granted(role, "secretsmanager:GetSecretValue") == [imported("AppSecretArn"), imported("GameBridgeSecretArn")]
    assert granted(role, "sns:Publish") == [{"Ref": "CueTopic"}, {"Ref": "AnnounceTopic"}, {"Ref": "TickFailureTopic"}]
    assert "WEBHOOK_SECRET_ARN" not in env(app, "Tick")


def test_a_webhook_channel_signs_with_its_own_key_of_the_app_secret_which_the_tick_reads(packaged):
    chosen = cfn.render(packaged, dict(APP_PARAMETERS, CueChannel="webhook:https://discord.com/api/webhooks/1/x"))
    assert env(chosen, "Tick")["WEBHOOK_SECRET_ARN"] == app_secret_key("webhook_key")
    assert imported("AppSecretArn") in granted(resources(chosen)["TickRole"], "secretsmanager:GetSecretValue")


def test_the_engines_keys_share_the_app_secret_and_the_migrate_function_makes_each_the_settings_name(packaged):
    """No secret of the app stack's own (each costs $0.40 a month): every key a setting names in the app secret is
    one ENGINE_KEYS makes, and MigrateSchema lists them, so adding one runs the migrate that makes it."""
    from chalicelib.migrate_function import ENGINE_KEYS

    chosen = cfn.render(packaged, dict(APP_PARAMETERS, CueChannel="webhook:https://discord.com/api/webhooks/1/x"))
    assert cfn.of_type(chosen, "AWS::SecretsManager::Secret") == {}
    named = {ref["Fn::Sub"][0].split(":")[-1] for function in ("APIHandler", "Tick") for ref in env(chosen, function).values()
             if isinstance(ref, dict) and isinstance(ref.get("Fn::Sub"), list)
             and ref["Fn::Sub"][1].get("AppSecret") == imported("AppSecretArn")}
    assert named == set(ENGINE_KEYS)
    assert resources(chosen)["MigrateSchema"]["Properties"]["EngineKeys"] == ",".join(ENGINE_KEYS)


def test_a_sandbox_for_dry_runs_is_signed_for_by_the_tick_alone(packaged, app):
    assert "GAME_BRIDGE_SANDBOX_URL" not in env(app, "Tick") and "REHEARSAL_CHANNEL" not in env(app, "Tick")
    secret = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:sandbox-AbCdEf"
    chosen = cfn.render(packaged, dict(APP_PARAMETERS, GameBridgeSandboxUrl="https://sandbox.example/bridge",
                                       GameBridgeSandboxSecretArn=secret, RehearsalChannel="webhook:https://hooks.example/r"))
    tick, api = env(chosen, "Tick"), env(chosen, "APIHandler")
    assert tick["GAME_BRIDGE_SANDBOX_URL"] == {"Ref": "GameBridgeSandboxUrl"} == api["GAME_BRIDGE_SANDBOX_URL"]
    assert tick["GAME_BRIDGE_SANDBOX_SECRET_ARN"] == {"Ref": "GameBridgeSandboxSecretArn"}
    assert tick["REHEARSAL_CHANNEL"] == {"Ref": "RehearsalChannel"} and tick["WEBHOOK_SECRET_ARN"] == app_secret_key("webhook_key")
    assert {"Ref": "GameBridgeSandboxSecretArn"} in granted(resources(chosen)["TickRole"], "secretsmanager:GetSecretValue")
    assert "GAME_BRIDGE_SANDBOX_SECRET_ARN" not in api, "the API never holds the sandbox's key"
    assert {"Ref": "GameBridgeSandboxSecretArn"} not in granted(resources(chosen)["ApiHandlerRole"], "secretsmanager:GetSecretValue")


def test_chat_settings_reach_only_the_function_that_uses_each_and_each_secret_only_its_reader(packaged, app):
    """The bots' tokens are the tick's (it posts and edits the messages); the Slack signing secret is the API's (it
    checks a press); who may press is the API's and, for the buttons a message shows, the tick's and chat_press's;
    the chat function finishes a slow press through the interaction itself, so it
    reads the database's secret, and Slack's bot token only to read a press's user groups (with SLACK_ROLES); the
    API may invoke it and nothing else may."""
    chat_settings = ("DISCORD_BOT_TOKEN_SECRET_ARN", "SLACK_BOT_TOKEN_SECRET_ARN", "DISCORD_PUBLIC_KEY", "DISCORD_GUILD_ID",
                     "DISCORD_ROLES", "SLACK_SIGNING_SECRET_ARN", "SLACK_TEAM_ID", "SLACK_ROLES")
    for function in ("APIHandler", "Tick", "ChatPress"):  # none unless a community sets them
        assert not set(chat_settings) & set(env(app, function)), function
    chosen = cfn.render(packaged, dict(APP_PARAMETERS, **CHAT_OPTIONS))
    tick, api, chat = env(chosen, "Tick"), env(chosen, "APIHandler"), env(chosen, "ChatPress")
    bots = [{"Ref": "DiscordBotTokenSecretArn"}, {"Ref": "SlackBotTokenSecretArn"}]
    assert [tick["DISCORD_BOT_TOKEN_SECRET_ARN"], tick["SLACK_BOT_TOKEN_SECRET_ARN"]] == bots
    assert tick["CUE_CHANNEL"] == {"Ref": "CueChannel"} and tick["ESCALATION_CHANNEL"] == {"Ref": "EscalationChannel"}
    assert {k: api[k] for k in chat_settings[2:]} == {
        "DISCORD_PUBLIC_KEY": {"Ref": "DiscordPublicKey"}, "DISCORD_GUILD_ID": {"Ref": "DiscordGuildId"},
        "DISCORD_ROLES": {"Ref": "DiscordRoles"}, "SLACK_SIGNING_SECRET_ARN": {"Ref": "SlackSigningSecretArn"},
        "SLACK_TEAM_ID": {"Ref": "SlackTeamId"}, "SLACK_ROLES": {"Ref": "SlackRoles"}}
    assert api["EVENTS_CHAT_FUNCTION_ARN"] == CHAT_PRESS_ARN == env(app, "APIHandler")["EVENTS_CHAT_FUNCTION_ARN"]
    assert set(chat_settings) & set(chat) == {"DISCORD_ROLES", "SLACK_ROLES", "SLACK_BOT_TOKEN_SECRET_ARN"}
    assert (chat["SLACK_ROLES"], chat["SLACK_BOT_TOKEN_SECRET_ARN"]) == ({"Ref": "SlackRoles"}, bots[1])
    # who may press decides the buttons a message carries: the tick posts it, chat_press edits it after a slow press
    for shows_buttons in (tick, chat):
        assert (shows_buttons["DISCORD_ROLES"], shows_buttons["SLACK_ROLES"]) == ({"Ref": "DiscordRoles"}, {"Ref": "SlackRoles"})
    assert not {"DISCORD_PUBLIC_KEY", "SLACK_SIGNING_SECRET_ARN"} & set(tick), "the tick judges no press"
    assert chat["EVENTS_DB_SECRET_ARN"] == imported("AppSecretArn")
    roles = {name: resources(chosen)[name] for name in ("TickRole", "ApiHandlerRole", "ChatPressRole", "MigrateRole")}
    reads = {name: granted(role, "secretsmanager:GetSecretValue") for name, role in roles.items()}
    assert reads["TickRole"][-2:] == bots and {"Ref": "SlackSigningSecretArn"} not in reads["TickRole"]
    assert reads["ApiHandlerRole"] == [imported("AppSecretArn"), {"Ref": "SlackSigningSecretArn"}]
    assert reads["ChatPressRole"] == [imported("AppSecretArn"), bots[1]]
    assert granted(resources(app)["ChatPressRole"], "secretsmanager:GetSecretValue") == [imported("AppSecretArn")]
    assert not any(bot in reads["MigrateRole"] for bot in bots)
    invokers = {name for name, role in cfn.of_type(chosen, "AWS::IAM::Role").items()
                if CHAT_PRESS_ARN in granted(role, "lambda:InvokeFunction")}
    assert invokers == {"ApiHandlerRole"}
    # a press it made wakes a sleeping deployment as the API's do: the tick's rule on and the tick invoked, nothing else
    assert granted(roles["ChatPressRole"], "lambda:InvokeFunction") == [TICK_ARN]
    assert granted(roles["ChatPressRole"], "events:EnableRule") == [RULE_ARN]
    assert [a for s in statements(roles["ChatPressRole"]) for a in actions(s)
            if a.startswith(("lambda:", "sns:", "events:", "scheduler:"))] == ["lambda:InvokeFunction", "events:EnableRule",
                                                                                "sns:Publish"]
    assert granted(roles["ChatPressRole"], "sns:Publish") == [{"Ref": "AlarmTopic"}]  # a dropped press's record
    press = resources(chosen)["ChatPress"]["Properties"]
    assert press["EventInvokeConfig"]["MaximumEventAgeInSeconds"] <= 900  # Discord's interaction token: 15 minutes
    assert press["Timeout"] >= 20 + 5 and "ReservedConcurrentExecutions" in press


def test_a_chat_press_dropped_after_its_retry_reaches_the_alarm_topic(app):
    """The press's asynchronous half has one retry and 15 minutes; dropped after them, it was silent (no metric, no
    record): a person's press lost. Its failure record (the press itself) now goes to the alarm topic."""
    invoke = resources(app)["ChatPress"]["Properties"]["EventInvokeConfig"]
    assert invoke["MaximumRetryAttempts"] == 1
    assert invoke["DestinationConfig"]["OnFailure"] == {"Type": "SNS", "Destination": {"Ref": "AlarmTopic"}}
    assert {"Ref": "AlarmTopic"} in granted(resources(app)["ChatPressRole"], "sns:Publish")  # Lambda sends it as the function


def test_only_migrate_sees_the_admin_secret_and_only_it_may_write_the_app_secret(app):
    for role in ("ApiHandlerRole", "TickRole"):
        assert imported("AdminSecretArn") not in granted(resources(app)[role], "secretsmanager:GetSecretValue")
    role = resources(app)["MigrateRole"]
    assert granted(role, "secretsmanager:GetSecretValue") == [imported("AdminSecretArn"), imported("AppSecretArn")]
    assert granted(role, "secretsmanager:PutSecretValue") == [imported("AppSecretArn")]


def test_sleep_and_wake_have_exactly_the_names_and_permissions_the_tick_uses(app):
    tick, api = env(app, "Tick"), env(app, "APIHandler")
    rule_name = {"Ref": "TickName"}
    assert resources(app)["Tick"]["Properties"]["FunctionName"] == rule_name
    assert resources(app)["Tick"]["Properties"]["Events"]["TickEvent"]["Properties"]["Name"] == rule_name
    chat = env(app, "ChatPress")  # a press it made wakes a sleeping deployment
    assert (tick["EVENTS_TICK_RULE_NAME"] == api["EVENTS_TICK_RULE_NAME"] == chat["EVENTS_TICK_RULE_NAME"] == rule_name
            and tick["EVENTS_SLEEP"] == "on")
    assert tick["EVENTS_TICK_FUNCTION_ARN"] == api["EVENTS_TICK_FUNCTION_ARN"] == chat["EVENTS_TICK_FUNCTION_ARN"] == TICK_ARN
    assert tick["EVENTS_WAKE_ROLE_ARN"] == {"Fn::GetAtt": ["WakeRole", "Arn"]}
    role = resources(app)["TickRole"]
    assert granted(role, "events:DisableRule") == granted(role, "events:EnableRule") == [RULE_ARN]
    schedules = [{"Fn::Sub": "arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}"
                             f":schedule/default/${{TickName}}-{kind}-*"} for kind in ("wake", "backstop")]
    assert (granted(role, "scheduler:CreateSchedule") == granted(role, "scheduler:UpdateSchedule")
            == granted(role, "scheduler:DeleteSchedule") == schedules)  # a sleep's wake-up and its backstop, nothing else
    for unused in ("events:DescribeRule", "scheduler:GetSchedule"):  # the tick never calls them
        assert granted(role, unused) == []
    assert granted(role, "iam:PassRole") == [{"Fn::GetAtt": ["WakeRole", "Arn"]}]
    wake = resources(app)["WakeRole"]["Properties"]
    assert wake["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert granted(resources(app)["WakeRole"], "lambda:InvokeFunction") == [TICK_ARN]


# ── people hear about it ──

def test_cues_and_announcements_go_to_their_topics_unless_a_webhook_is_chosen(packaged):
    default = env(cfn.render(packaged, APP_PARAMETERS), "Tick")
    assert default["CUE_CHANNEL"] == {"Fn::Sub": "sns:${CueTopic}"}
    assert default["ANNOUNCE_CHANNEL"] == {"Fn::Sub": "sns:${AnnounceTopic}"}
    hook = "webhook:https://discord.com/api/webhooks/1/x"
    assert env(cfn.render(packaged, dict(APP_PARAMETERS, CueChannel=hook)), "Tick")["CUE_CHANNEL"] == {"Ref": "CueChannel"}


def test_every_alarm_the_operators_need_exists_and_notifies_the_alarm_topic(app):
    alarms = cfn.of_type(app, "AWS::CloudWatch::Alarm")
    assert set(alarms) == {"TickErrorsAlarm", "DatabaseUnreachableAlarm", "BackstopWakeAlarm", "NudgeFailedAlarm",
                           "SleepFailedAlarm", "RunErrorsAlarm", "RunsPausedOrMissedAlarm", "RunsFailedAlarm",
                           "ParkedCueAlarm", "PausedRunAlarm", "DueLagAlarm", "Api5xxAlarm"}
    for name, alarm in alarms.items():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": "AlarmTopic"}]
        # An idle month is not an alarm; a wait for a person keeps its state while the deployment sleeps.
        kept = name in ("ParkedCueAlarm", "PausedRunAlarm")
        assert alarm["Properties"]["TreatMissingData"] == ("ignore" if kept else "notBreaching"), name


def test_every_alarms_e_mail_names_its_runbook_and_a_log_group_the_stack_writes(app):
    """The alarm e-mail shows the description: it says where the runbook is and which log group holds the cause."""
    groups = {spec["Properties"]["LogGroupName"]["Fn::Sub"] for spec in cfn.of_type(app, "AWS::Logs::LogGroup").values()}
    runbooks = (cfn.ROOT / "docs" / "operations.md").read_text().split("\n## Alarms\n", 1)[1].split("\n## ", 1)[0]
    for name, alarm in cfn.of_type(app, "AWS::CloudWatch::Alarm").items():
        description = alarm["Properties"]["AlarmDescription"]["Fn::Sub"]
        assert re.search(r"Runbook: docs/operations\.md, Alarms; log groups? ", description), name
        named = re.split(r"log groups? ", description)[-1].split(", ")
        assert set(named) <= groups, name
        assert f"| `{name}` |" in runbooks, f"{name} has no runbook row"
        row = next(line for line in runbooks.splitlines() if line.startswith(f"| `{name}` |"))
        for group in named:  # the row names each group the alarm's cause may be logged in
            assert group.replace("${AWS::StackName}", "<stack>").replace("${TickName}", "<stack>-tick") in row or \
                len(named) == 1, (name, group)


def test_a_wait_for_a_person_alarms_while_the_deployment_sleeps(packaged):
    """The two wait alarms read what every tick invocation publishes, keep their state through the silence of
    a sleep (missing data is ignored, not called fine), tell the alarm topic when the wait is over, and the
    tick is told when to escalate, so a sleeping deployment wakes with a figure past the threshold."""
    rendered = cfn.render(packaged, APP_PARAMETERS)
    alarms = cfn.of_type(rendered, "AWS::CloudWatch::Alarm")
    for name, metric, threshold in (("ParkedCueAlarm", "ParkedCueAgeSeconds", "ParkedCueAlarmSeconds"),
                                    ("PausedRunAlarm", "PausedRunAgeSeconds", "PausedRunAlarmSeconds")):
        properties = alarms[name]["Properties"]
        assert (properties["MetricName"], properties["Threshold"]) == (metric, {"Ref": threshold})
        assert properties["TreatMissingData"] == "ignore" and properties["OKActions"] == [{"Ref": "AlarmTopic"}]
    tick = env(rendered, "Tick")
    assert tick["EVENT_ESCALATE_AFTER_SECONDS"] == {"Ref": "EscalateAfterSeconds"}
    parameters = rendered["Parameters"]
    assert parameters["ParkedCueAlarmSeconds"]["Default"] <= parameters["EscalateAfterSeconds"]["Default"]
    assert parameters["PausedRunAlarmSeconds"]["Default"] <= parameters["EscalateAfterSeconds"]["Default"]


def test_api_gateways_own_refusals_answer_in_the_errors_shape_with_cors(app):
    responses = resources(app)["RestAPI"]["Properties"]["DefinitionBody"]["x-amazon-apigateway-gateway-responses"]
    assert {"DEFAULT_4XX", "DEFAULT_5XX", "MISSING_AUTHENTICATION_TOKEN"} <= set(responses)
    for response in responses.values():
        headers = response["responseParameters"]
        assert headers["gatewayresponse.header.Access-Control-Allow-Origin"] == {"Fn::Sub": "'${CorsOrigin}'"}
        # API Gateway puts the message in as a quoted JSON string
        body = response["responseTemplates"]["application/json"].replace("$context.error.messageString", '"Forbidden"')
        errors = json.loads(body)["errors"]
        assert errors and all(isinstance(e, str) for e in errors)
    assert responses["MISSING_AUTHENTICATION_TOKEN"]["statusCode"] == 404


def test_prod_signs_staff_in_through_the_identity_provider_only(app):
    api = env(app, "APIHandler")
    assert api["EVENTS_JWT_JWKS_URL"] == {"Ref": "JwtJwksUrl"}
    for development_only in ("EVENTS_JWT_SECRET", "EVENTS_CONSOLE_DEV_TOKENS", "GAME_BRIDGE_SECRET", "EVENTS_DB_URL"):
        for function in FUNCTIONS:
            assert development_only not in env(app, function), (function, development_only)


def test_the_alarms_read_metrics_the_engine_publishes_under_its_namespace_and_service(app):
    from chalicelib import observability
    from chalicelib.events.runner import tick_metrics

    published = {*tick_metrics.NAMES, "DueLagSeconds", "ParkedCueAgeSeconds", "PausedRunAgeSeconds",
                 observability.DATABASE_UNREACHABLE, observability.BACKSTOP_WAKES, observability.RESOURCES_LEFT,
                 observability.DATABASE_UNAVAILABLE_ANSWERS, observability.SLEEP_FAILED, observability.NUDGE_FAILED}
    assert app["Parameters"]["MetricsNamespace"]["Default"] == observability.DEFAULT_NAMESPACE
    read = []
    for alarm in cfn.of_type(app, "AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        metrics = [m["MetricStat"]["Metric"] for m in props.get("Metrics", []) if "MetricStat" in m] or [props]
        for metric in metrics:
            if metric["Namespace"] == {"Ref": "MetricsNamespace"}:
                assert metric["Dimensions"] == [{"Name": "service", "Value": observability.SERVICE}]
                read.append(metric["MetricName"])
    assert set(read) == {"RunErrors", "RunsPaused", "RunsMissed", "RunsFailed", "ParkedCueAgeSeconds", "PausedRunAgeSeconds",
                         "DueLagSeconds", "DatabaseUnreachable", "BackstopWakes", "DatabaseUnavailableAnswers", "NudgeFailed",
                         "SleepFailed"}
    assert set(read) <= published


def test_every_alarm_on_a_figure_an_idle_invocation_leaves_out_calls_its_absence_fine(app, db, clock, monkeypatch):
    """The tick publishes a count only when it is not zero (CloudWatch bills a metric per hour published): an
    alarm on one must treat missing data as notBreaching, and a metric-math alarm must FILL it with 0, or an
    idle hour would read as an alarm or as no data. The figures an idle invocation does publish (the wait ages,
    0) are the ones whose alarms ignore missing data: only that 0 returns them to OK."""
    from chalicelib import observability, runtime
    from chalicelib.config import Settings
    from chalicelib.events.runner.lambda_handler import scheduled_tick
    from devtools.kit.lambda_invocation import InjectedTime, lambda_context

    InjectedTime(clock).install(monkeypatch)
    with runtime.override(settings=Settings(), database=db, clock=clock):
        summary = scheduled_tick(lambda_context())  # nothing scheduled: the idle wake's invocation
    board = observability.metrics()
    board.clear_metrics()
    observability.record_tick_metrics(summary)
    published_idle = set(board.metric_set)
    board.clear_metrics()
    left_out, kept = set(), set()
    for name, alarm in cfn.of_type(app, "AWS::CloudWatch::Alarm").items():
        props = alarm["Properties"]
        read = {m["Id"]: m["MetricStat"]["Metric"] for m in props.get("Metrics", []) if "MetricStat" in m} or {None: props}
        expression = next((m["Expression"] for m in props.get("Metrics", []) if "Expression" in m), None)
        for metric_id, metric in read.items():
            if metric["Namespace"] != {"Ref": "MetricsNamespace"}:
                continue  # AWS's own metrics (Lambda's Errors, API Gateway's 5XXError)
            if metric["MetricName"] in published_idle:
                kept.add(metric["MetricName"])
                assert props["TreatMissingData"] == "ignore", name
                continue
            left_out.add(metric["MetricName"])
            assert props["TreatMissingData"] == "notBreaching", name
            if expression is not None:
                assert f"FILL({metric_id}, 0)" in expression, name
    assert kept == {"ParkedCueAgeSeconds", "PausedRunAgeSeconds"}
    assert left_out == {"RunErrors", "RunsPaused", "RunsMissed", "RunsFailed", "DueLagSeconds", "DatabaseUnreachable",
                        "BackstopWakes", "SleepFailed", "NudgeFailed", "DatabaseUnavailableAnswers"}


def test_the_package_names_no_region_so_one_package_deploys_anywhere(packaged):
    assert cfn.REGION not in json.dumps(packaged)  # packaged with AWS_DEFAULT_REGION=eu-west-1


# ── the paid options can be turned on (and off) later ──

def exports(deployed: dict) -> dict[str, object]:
    """The data stack's exports as a deployment with these options has them: name suffix -> value."""
    found = {}
    for output in deployed["Outputs"].values():
        if "Export" in output:
            name = output["Export"]["Name"]["Fn::Sub"]
            assert name.startswith("${AWS::StackName}-")
            found[name.removeprefix("${AWS::StackName}-")] = output["Value"]
    return found


def imports(node) -> set[str]:
    if isinstance(node, dict):
        if set(node) == {"Fn::ImportValue"}:
            name = node["Fn::ImportValue"]["Fn::Sub"]
            assert name.startswith("${DataStack}-")
            return {name.removeprefix("${DataStack}-")}
        return set().union(*(imports(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(imports(v) for v in node)) if node else set()
    return set()


@pytest.mark.parametrize("option, output", [("EnableProxy", "AppDatabaseHost"),
                                            ("EnableInterfaceEndpoints", "UseDualStackEndpoints"),
                                            ("EnableNatGateway", None)])
def test_turning_a_paid_option_on_changes_no_export_the_app_stack_imports(data, packaged, option, output):
    """CloudFormation refuses to update an export another stack imports: every export the app imports must
    keep its value whichever way each option is set; what an option does change reaches the app as a parameter."""
    off, on = cfn.render(data, {option: "false"}), cfn.render(data, {option: "true"})
    imported = imports(packaged["Resources"]) | imports(packaged.get("Outputs", {}))
    assert imported and imported <= set(exports(off)) and imported <= set(exports(on))
    for name in imported:
        assert exports(off)[name] == exports(on)[name], f"{option} changes the imported export {name}"
    if output is not None:  # the value the option changes: an output read by make deploy, never an export
        assert off["Outputs"][output]["Value"] != on["Outputs"][output]["Value"]
        assert "Export" not in data["Outputs"][output] and output in packaged["Parameters"]
        assert output not in imported


def test_the_app_takes_the_proxy_host_and_the_endpoint_choice_as_parameters(app):
    assert env(app, "Migrate")["EVENTS_DB_APP_HOST"] == {"Ref": "AppDatabaseHost"}
    for function in FUNCTIONS:
        assert env(app, function)["AWS_USE_DUALSTACK_ENDPOINT"] == {"Ref": "UseDualStackEndpoints"}


# ── upgrades: the schema first, then the code ──

def test_the_api_and_the_tick_take_traffic_only_after_the_packages_migrations_ran(packaged, app):
    from chalicelib import schema_version

    migrate = resources(app)["MigrateSchema"]
    assert migrate["Type"] == "Custom::Migrate"
    props = migrate["Properties"]
    assert props["ServiceToken"] == {"Fn::GetAtt": ["Migrate", "Arn"]}
    # make package writes the newest migration in, so a package that brings one updates (and so runs) it
    assert props["Schema"] == schema_version.stamp()
    shipped = sorted(p.stem for p in schema_version.MIGRATIONS.glob("*.sql"))
    assert props["Schema"].startswith(f"{shipped[-1]}-of-{len(shipped)}-")
    # a migration added anywhere in the order (not only at the end) changes it, and so runs the migrate function
    assert schema_version.stamp((*shipped[:1], "0002a.added-between", *shipped[1:])) != props["Schema"]
    assert props["AppDatabaseHost"] == {"Ref": "AppDatabaseHost"}  # turning the proxy on repoints the app secret
    for function in ("APIHandler", "Tick"):
        depends = resources(app)[function].get("DependsOn")
        assert "MigrateSchema" in ([depends] if isinstance(depends, str) else depends)
    assert "SCHEMA-OF-THIS-PACKAGE" not in json.dumps(packaged)


def test_cloudformation_waits_for_the_migrate_function_only_as_long_as_it_can_run(app):
    """A migrate function that dies without answering (killed mid-migration) held the stack for CloudFormation's
    default hour: the custom resource's ServiceTimeout is the function's timeout and a margin for its answer."""
    from chalicelib.migrate import STALE_LOCK_SECONDS
    from chalicelib.migrate_function import ANSWER_SECONDS

    timeout = resources(app)["Migrate"]["Properties"]["Timeout"]
    waits = resources(app)["MigrateSchema"]["Properties"]["ServiceTimeout"]
    assert timeout + ANSWER_SECONDS <= waits <= timeout + 120
    assert timeout < STALE_LOCK_SECONDS  # `make unlock` never clears the lock of a migrate that may still run


def test_cloudformations_invocation_of_the_migrate_function_is_never_retried_nor_run_after_it_stopped_waiting(app):
    """Lambda's default for an asynchronous invocation (CloudFormation's) is two retries and six hours in the queue:
    a migration that timed out ran again and met its own lock, and a rollback's request, queued behind it or behind
    a `make purge` (reserved concurrency 1), outlasted ServiceTimeout, leaving the stack in UPDATE_ROLLBACK_FAILED."""
    migrate = resources(app)["Migrate"]["Properties"]
    invoke = migrate["EventInvokeConfig"]
    assert invoke["MaximumRetryAttempts"] == 0
    waits = resources(app)["MigrateSchema"]["Properties"]["ServiceTimeout"]
    assert invoke["MaximumEventAgeInSeconds"] + migrate["Timeout"] <= waits


# ── what the template scanners asked for ──

def test_the_api_writes_an_access_log_with_retention(app):
    api = resources(app)["RestAPI"]["Properties"]
    assert api["AccessLogSetting"]["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}
    fields = json.loads(api["AccessLogSetting"]["Format"].replace("\n", " "))
    assert {"requestId", "ip", "status", "path"} <= set(fields)
    assert resources(app)["ApiAccessLogGroup"]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def test_the_data_stack_gives_api_gateway_its_logging_role_unless_the_account_has_one(data):
    assert "ApiGatewayAccount" in resources(cfn.render(data))
    assert "ApiGatewayAccount" not in resources(cfn.render(data, {"SetApiGatewayLogsRole": "false"}))


def test_the_stage_and_every_route_open_to_anyone_are_throttled(app):
    from chalicelib.api.routes import OPERATIONS

    settings = resources(app)["RestAPI"]["Properties"]["MethodSettings"]
    by_path = {(m["ResourcePath"], m["HttpMethod"]): m for m in settings}
    stage = by_path[("/*", "*")]
    assert (stage["ThrottlingRateLimit"], stage["ThrottlingBurstLimit"]) == ({"Ref": "ApiThrottleRate"}, {"Ref": "ApiThrottleBurst"})
    paths = resources(app)["RestAPI"]["Properties"]["DefinitionBody"]["paths"]
    open_routes = {(op.path, op.method) for op in OPERATIONS if op.roles is None}
    open_routes |= {(path, "GET") for path in paths if path.startswith("/console")}  # the page, assets, config, session
    assert ("/health", "GET") in open_routes
    for path, method in open_routes:
        route = by_path[("/" + path.replace("/", "~1"), method)]  # API Gateway's spelling: /~1console~1session
        assert route["ThrottlingRateLimit"] == {"Ref": "ApiPublicThrottleRate"}, path
    for resource_path, method in by_path:  # API Gateway refuses a setting for a route that does not exist
        if resource_path != "/*":
            assert method.lower() in paths[resource_path[1:].replace("~1", "/")], resource_path
    public, whole = app["Parameters"]["ApiPublicThrottleRate"]["Default"], app["Parameters"]["ApiThrottleRate"]["Default"]
    assert public < whole


def test_the_database_and_the_secrets_outlive_a_deleted_stack(data):
    """Deleting a stack keeps its cluster (a final snapshot) and its secrets; a first create that fails takes its
    secrets with it (RetainExceptOnCreate: nobody holds them yet), so a retry does not pile up secrets at $0.40 each."""
    assert resources(data)["DatabaseCluster"]["DeletionPolicy"] == "Snapshot"
    assert data["Parameters"]["DeletionProtection"]["Default"] == "true"
    for secret in ("AppSecret", "GameBridgeSecret"):  # the app secret holds the signal and webhook keys too
        assert (resources(data)[secret]["DeletionPolicy"], resources(data)[secret]["UpdateReplacePolicy"]) == (
            "RetainExceptOnCreate", "Retain")


def test_a_first_create_that_fails_can_roll_back_its_cluster(data):
    """The cluster's deletion protection is a parameter (make deploy passes "false" to the first create and the
    file's value once it completed): fixed on, a failed first create would stop at ROLLBACK_FAILED on a cluster
    CloudFormation may not delete."""
    assert resources(data)["DatabaseCluster"]["Properties"]["DeletionProtection"] == {"Ref": "DeletionProtection"}
    assert cfn.render(data, {"DeletionProtection": "false"})["Parameters"]["DeletionProtection"]["Default"] == "false"


def test_aurora_is_a_long_term_support_version_that_pauses_at_zero(data):
    version = data["Parameters"]["EngineVersion"]["Default"]
    assert version.startswith("8.0.mysql_aurora.3.10.")  # the LTS line; 0 ACU needs 3.08.0 or later
    assert resources(data)["DatabaseInstance"]["Properties"]["AutoMinorVersionUpgrade"] is False  # AWS's advice for LTS


# ── two stacks in one account, and long stack names ──

def test_the_api_and_its_5xx_alarm_are_named_after_the_stack(app):
    """API Gateway's metrics are per API name: two stacks' APIs both named event-run-engine would each trip the
    other's 5xx alarm."""
    assert resources(app)["RestAPI"]["Properties"]["Name"] == {"Ref": "AWS::StackName"}
    answered = next(m for m in resources(app)["Api5xxAlarm"]["Properties"]["Metrics"] if m["Id"] == "answered")
    dimensions = {d["Name"]: d["Value"] for d in answered["MetricStat"]["Metric"]["Dimensions"]}
    assert dimensions["ApiName"] == {"Ref": "AWS::StackName"}


def test_every_name_of_the_tick_comes_from_tick_name_which_fits_its_schedules(packaged):
    """The tick function, its rule and a sleep's schedules are named from TickName (make deploy fits it to the
    stack name), never from the stack name itself, which may be 123 characters long."""
    text = json.dumps(packaged)
    assert "${AWS::StackName}-tick" not in text
    from infra import preflight

    assert packaged["Parameters"]["TickName"]["MaxLength"] == preflight.TICK_NAME_LIMIT


# ── identity without NAT ──

def test_a_jwks_front_gives_the_api_the_key_set_over_ipv6(packaged):
    """JwksFront=on: a dual-stack CloudFront distribution in front of the JWKS host, and the API's key URL its
    own, at the same path; off (the default), neither."""
    url = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC/.well-known/jwks.json"
    fronted = cfn.render(packaged, dict(APP_PARAMETERS, JwtJwksUrl=url, JwksFront="on",
                                        JwksPath="/eu-west-1_AbC/.well-known/jwks.json"))
    config = resources(fronted)["JwksDistribution"]["Properties"]["DistributionConfig"]
    assert config["IPV6Enabled"] is True and config["Enabled"] is True
    [origin] = config["Origins"]
    assert origin["DomainName"] == {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "JwtJwksUrl"}]}]}
    assert url.split("/")[2] == "cognito-idp.eu-west-1.amazonaws.com"  # what that picks
    assert origin["CustomOriginConfig"]["OriginProtocolPolicy"] == "https-only"
    behaviour = config["DefaultCacheBehavior"]
    assert behaviour["AllowedMethods"] == ["GET", "HEAD"] and behaviour["ViewerProtocolPolicy"] == "https-only"
    assert env(fronted, "APIHandler")["EVENTS_JWT_JWKS_URL"] == {"Fn::Sub": "https://${JwksDistribution.DomainName}${JwksPath}"}
    assert cfn.lint(fronted) == []
    default = cfn.render(packaged, APP_PARAMETERS)
    assert "JwksDistribution" not in resources(default)
    assert env(default, "APIHandler")["EVENTS_JWT_JWKS_URL"] == {"Ref": "JwtJwksUrl"}
