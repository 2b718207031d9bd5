"""`make deploy`'s preflight (infra/preflight.py), with a resolver stand-in (tests/support/resolver.py): what cannot
work on the default network or under AWS's name limits, or what the functions refuse at their start, is refused
before any AWS call, each reason with its fix; and the names derived from a long stack name fit. What only the
account can tell is tested against moto in test_infra_preflight_account.py."""

import re
import subprocess
from pathlib import Path

import pytest

from chalicelib import sameness
from chalicelib.config import Settings
from chalicelib.errors import ConfigError
from chalicelib.events.adapters.aws import AwsSwitches
from infra import preflight, preflight_account
from tests.support import cfn
from tests.support.resolver import Hosts, Table

ROOT = Path(__file__).resolve().parents[1]

REGION = "eu-west-1"
NAMES = preflight.Names("event-run-engine-prod", "event-run-engine-prod-data")
APP = {"GameBridgeUrl": "https://bridge.example.org", "JwtJwksUrl": "https://id.example.org/.well-known/jwks.json",
       "JwtIssuer": "https://id.example.org"}
COGNITO = "cognito-idp.eu-west-1.amazonaws.com"
SANDBOX_KEY = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:sandbox-key-AbCdEf"  # a sandbox comes with its key
COGNITO_JWKS = f"https://{COGNITO}/eu-west-1_AbCdEf/.well-known/jwks.json"


@pytest.fixture(autouse=True)
def no_lookup(monkeypatch):
    """The settings' URL comparison (chalicelib/sameness.py) looks up two names that alone differ: answered from a
    table here, which knows no name unless a test says so."""
    monkeypatch.setattr(sameness, "resolve", Table({}))


def refusal(names=NAMES, data=None, app=None, resolve=None, said=None) -> str:
    """What the preflight refuses ("" when it lets the deployment go on)."""
    try:
        preflight.check(names, REGION, data or {}, APP if app is None else app, resolve=resolve or Hosts(),
                        say=(said if said is not None else []).append)
    except preflight.Refused as refused:
        return str(refused)
    return ""


def test_a_jwks_host_without_an_ipv6_address_is_refused_naming_the_front():
    """Cognito's key set is on a host AWS lists without IPv6: deployed, every signed-in request would answer 503
    (the functions have no IPv4 way out). Refused, naming JwksFront=on (or NAT); with the front, accepted."""
    cognito = dict(APP, JwtJwksUrl=COGNITO_JWKS)
    says = refusal(app=cognito, resolve=Hosts(ipv4_only=[COGNITO]))
    assert f"JwtJwksUrl's host {COGNITO} has no IPv6 address (AAAA)" in says
    assert "set JwksFront=on" in says and "EnableNatGateway=true" in says
    assert refusal(app=dict(cognito, JwksFront="on"), resolve=Hosts(ipv4_only=[COGNITO])) == ""
    assert refusal(app=cognito, data={"EnableNatGateway": "true"}, resolve=Hosts(ipv4_only=[COGNITO])) == ""
    assert "does not resolve" in refusal(app=dict(cognito, JwksFront="on"), resolve=Hosts(unknown=[COGNITO]))


def test_a_stack_name_too_long_is_refused_naming_the_longest_that_fits():
    """The data stack is `<stack>-data`, and CloudFormation takes 128 characters: a stack name of 124 is refused
    before anything is created, naming the longest one that works; 123 goes on."""
    too_long = "e" * 124
    says = refusal(names=preflight.Names(too_long, f"{too_long}-data"))
    assert "the data stack's name would be 129 characters, over AWS's 128" in says
    assert "STACK=<at most 123 characters>" in says
    fits = "e" * 123
    assert refusal(names=preflight.Names(fits, f"{fits}-data")) == ""
    assert "not a CloudFormation stack name" in refusal(names=preflight.Names("9lives", "9lives-data"))


@pytest.mark.parametrize("parameter, value", [
    ("GameBridgeUrl", "https://bridge.example.org"),
    ("GameBridgeSandboxUrl", "https://bridge.example.org/sandbox"),
    ("CueChannel", "webhook:https://bridge.example.org/hook"),
    ("RehearsalChannel", "webhook:https://bridge.example.org/hook"),
])
def test_every_outbound_host_needs_an_ipv6_address_on_the_default_network(parameter, value):
    """The game bridge, its sandbox and each webhook channel are reached over IPv6 alone without NAT: a host with
    an A record only is refused naming a dual-stack front or NAT; with the team's own VPC (whose routes are not
    seen from here) it is a warning instead."""
    app = dict(APP, **{parameter: value}, **({"GameBridgeSandboxSecretArn": SANDBOX_KEY} if "Sandbox" in parameter else {}))
    says = refusal(app=app, resolve=Hosts(ipv4_only=["bridge.example.org"]))
    assert f"{parameter}'s host bridge.example.org has no IPv6 address" in says and "dual-stack front" in says
    warned: list[str] = []
    assert refusal(app=app, data={"ExistingVpcId": "vpc-1"}, resolve=Hosts(ipv4_only=["bridge.example.org"]), said=warned) == ""
    assert warned and "unless your own subnets route IPv4 out through a NAT" in warned[0]


@pytest.mark.parametrize("channel, host", [("discord:100000000000000001", "discord.com"), ("slack:C0CUES", "slack.com"),
                                           ("slack:C0CUES", "hooks.slack.com")])
def test_a_chat_channels_platform_needs_an_ipv6_address_too(channel, host):
    """A discord: or slack: channel's bot calls its platform's API (and a Slack press's response_url) from the
    functions: the same IPv6 rule as a webhook's host."""
    says = refusal(app=dict(APP, EscalationChannel=channel), resolve=Hosts(ipv4_only=[host]))
    assert f"EscalationChannel's host {host} has no IPv6 address" in says
    assert refusal(app=dict(APP, EscalationChannel=channel)) == ""


def test_a_region_without_eventbridge_scheduler_is_refused():
    """Without Scheduler the deployment can never sleep (about $83 a month awake): the dual-stack name the functions
    call (IPv4's, with interface endpoints) must resolve in the region."""
    says = refusal(resolve=Hosts(unknown=[f"scheduler.{REGION}.api.aws"]))
    assert f"EventBridge Scheduler is not offered in {REGION}" in says and "deploy to a region that offers it" in says
    endpoints = Hosts(ipv4_only=[f"{api}.{REGION}.amazonaws.com" for api in preflight.AWS_APIS])
    assert refusal(data={"EnableInterfaceEndpoints": "true"}, resolve=endpoints) == ""
    assert f"scheduler.{REGION}.amazonaws.com" in endpoints.asked
    assert "EnableInterfaceEndpoints=true" in refusal(resolve=Hosts(ipv4_only=[f"sns.{REGION}.api.aws"]))


def test_every_reason_is_given_at_once_and_no_lookup_leaves_the_stand_in():
    """Two hosts without IPv6: one refusal naming both, so a team fixes its file once, not once per deploy."""
    hosts = Hosts(ipv4_only=[COGNITO, "bridge.example.org"])
    says = refusal(app=dict(APP, JwtJwksUrl=COGNITO_JWKS), resolve=hosts)
    assert says.count("\n- ") == 1 and "JwtJwksUrl" in says and "GameBridgeUrl" in says
    assert {COGNITO, "bridge.example.org", f"scheduler.{REGION}.api.aws"} <= set(hosts.asked)


def test_a_fronted_key_set_is_a_plain_https_url():
    """The front asks JwtJwksUrl's host at its path alone: a port, a query or a user in it would be lost, so refused."""
    assert "without a port, a query or a user" in refusal(app=dict(APP, JwksFront="on", JwtJwksUrl=f"https://{COGNITO}:8443/k"))


# ── (h) names that fit, whatever the stack name's length ──

def test_names_derived_from_a_long_stack_name_fit_and_stay_apart():
    """A 123-character stack name (the longest the data stack allows): the tick function and its rule (64), a
    sleep's schedules with a 12-digit epoch (64), the artifact bucket (63, lower case) and the proxy (63) all fit;
    two stack names that differ only at their end keep different names; a short stack name keeps the names it
    always had."""
    long_a, long_b = "Event-Run-Engine-" + "x" * 105 + "a", "Event-Run-Engine-" + "x" * 105 + "b"
    a, b = preflight.Names(long_a, f"{long_a}-data"), preflight.Names(long_b, f"{long_b}-data")
    assert len(long_a) == 123 and preflight.name_problems(a, REGION) == []
    for what, name, limit in a.derived("ap-southeast-2"):
        assert len(name) <= limit, (what, name)
    switches = AwsSwitches(None, None, a.tick, "arn", "role")  # the names the tick gives a sleep's schedules
    assert max(len(switches.wake_up_name(10**12 - 1)), len(switches.backstop_name(10**12 - 1))) <= 64
    bucket = a.bucket("123456789012", "ap-southeast-2")
    assert len(bucket) <= 63 and bucket == bucket.lower() and bucket.endswith("-artifacts-123456789012-ap-southeast-2")
    assert (a.tick, a.proxy, a.bucket("1", REGION), a.namespace) != (b.tick, b.proxy, b.bucket("1", REGION), b.namespace)
    assert a.tick != b.tick and a.proxy != b.proxy and a.bucket("1", REGION) != b.bucket("1", REGION)
    assert a.tick.startswith("Event-Run-Engine-") and a.tick.endswith("-tick")

    short = NAMES
    assert (short.tick, short.proxy, short.namespace) == (
        "event-run-engine-prod-tick", "event-run-engine-prod-data-proxy", "EventRunEngine/event-run-engine-prod")
    assert short.bucket("123456789012", REGION) == "event-run-engine-prod-artifacts-123456789012-eu-west-1"


def test_two_stacks_in_one_account_get_their_own_metric_namespace():
    """Their alarms read the engine's metrics by namespace: a shared one would trip both stacks' alarms."""
    assert preflight.Names("events-a", "events-a-data").namespace != preflight.Names("events-b", "events-b-data").namespace


def test_an_escalation_mention_needs_a_channel_that_can_ping_it():
    """The functions refuse ESCALATION_MENTION with an escalation channel that cannot ping a Discord role (their
    configuration would fail at the first start): refused here first, naming the parameters."""
    role = "910000000000000007"
    assert "EscalationMention pings a Discord role, and escalations would go to sns:<the CueTopic>" in refusal(
        app=dict(APP, EscalationMention=role))
    assert "go to slack:C0CUES" in refusal(app=dict(APP, EscalationMention=role, CueChannel="slack:C0CUES"))
    for channel in ("discord:100000000000000009", "webhook:https://bridge.example.org/hook"):
        assert refusal(app=dict(APP, EscalationMention=role, EscalationChannel=channel)) == ""


@pytest.mark.parametrize(("on", "place"), [("DiscordPublicKey", "DiscordGuildId"), ("SlackSigningSecretArn", "SlackTeamId")])
def test_presses_on_need_the_place_they_count_in(on, place):
    """The functions refuse it at start (chalicelib/config.py): the preflight says it first (the template's rule
    too, for a deployment made without make deploy: tests/test_infra_templates.py)."""
    value = "0" * 64 if on == "DiscordPublicKey" else "arn:aws:secretsmanager:eu-west-1:123456789012:secret:slack-AbCdEf"
    assert f"{on} turns presses on, and {place} is empty: set {place}" in refusal(app=dict(APP, **{on: value}))
    assert refusal(app=dict(APP, **{on: value, place: "T0123"})) == ""


# ── what the functions refuse at their start (chalicelib/config.py), or the stack drops: refused here first ──

def refused_at_start(**env: str) -> str:
    """What the functions' settings say of these environment variables at start ("" when they take them)."""
    try:
        Settings.from_env(env)
    except ConfigError as error:
        return str(error)
    return ""


@pytest.mark.parametrize("live, value, rehearsal", [
    ("CueChannel", "discord:100000000000000001", "discord:100000000000000001"),
    ("AnnounceChannel", "slack:C0ANNOUNCE", "slack:C0ANNOUNCE"),
    ("EscalationChannel", "webhook:https://hooks.example.org/a", "webhook:https://HOOKS.example.org:443/a/"),
])
def test_a_rehearsal_channel_that_is_a_live_one_is_refused_as_the_tick_refuses_it(live, value, rehearsal):
    """Deployed, the tick refused it at every start (a minute's invocation failing each minute, the deploy having
    "succeeded"). The preflight asks config.py's own question: a webhook is compared as a place, not as text."""
    says = refusal(app=dict(APP, **{live: value, "RehearsalChannel": rehearsal}))
    assert f"RehearsalChannel={rehearsal} is the same place as {live}={value}" in says
    assert "set RehearsalChannel to a channel no live post goes to, or leave it out" in says
    env = re.sub(r"(?<!^)(?=[A-Z])", "_", live).upper()  # CueChannel -> CUE_CHANNEL
    assert refused_at_start(**{env: value, "REHEARSAL_CHANNEL": rehearsal})  # the same refusal, at start
    other = "discord:100000000000000002" if value.startswith("discord") else "webhook:https://hooks.example.org/b"
    assert refusal(app=dict(APP, **{live: value, "RehearsalChannel": other})) == ""
    assert refusal(app=dict(APP, **{live: value, "RehearsalChannel": "log"})) == ""


@pytest.mark.parametrize("sandbox", ["https://Bridge.example.org:443/", "https://bridge.example.org/./", "https://game.example.org"])
def test_a_sandbox_that_is_the_game_bridge_is_refused(sandbox, monkeypatch):
    """A dry run would act in the live game; the functions refuse it at start. Another spelling of the bridge's URL,
    or another name of its address (the table: game.example.org is bridge.example.org), is the bridge all the same."""
    monkeypatch.setattr(sameness, "resolve", Table({"bridge.example.org": ["2001:db8::7"], "game.example.org": ["2001:db8::7"]}))
    app = dict(APP, GameBridgeSandboxUrl=sandbox, GameBridgeSandboxSecretArn=SANDBOX_KEY)
    says = refusal(app=app)
    assert f"GameBridgeSandboxUrl={sandbox} reaches the same place as GameBridgeUrl=https://bridge.example.org" in says
    assert refused_at_start(GAME_BRIDGE_URL=APP["GameBridgeUrl"], GAME_BRIDGE_SANDBOX_URL=sandbox)
    assert refusal(app=dict(app, GameBridgeSandboxUrl="https://sandbox.example.org")) == ""


def test_a_sandbox_and_its_key_come_together():
    """The stack's HasSandbox wants both: one alone was dropped without a word, and every sandbox dry run answered
    409 (or the key was never read)."""
    url_alone = refusal(app=dict(APP, GameBridgeSandboxUrl="https://sandbox.example.org"))
    assert "GameBridgeSandboxUrl is set and GameBridgeSandboxSecretArn is empty" in url_alone
    assert "set GameBridgeSandboxSecretArn to the ARN of a secret holding the sandbox's own key" in url_alone
    key_alone = refusal(app=dict(APP, GameBridgeSandboxSecretArn=SANDBOX_KEY))
    assert "GameBridgeSandboxSecretArn is set and GameBridgeSandboxUrl is empty" in key_alone
    assert refusal(app=dict(APP, GameBridgeSandboxUrl="https://sandbox.example.org", GameBridgeSandboxSecretArn=SANDBOX_KEY)) == ""


@pytest.mark.parametrize("parameter", preflight.TEAM_SECRETS)
@pytest.mark.parametrize("value, says", [
    ("arn:aws:secretsmanager:eu-west-1:123456789012:secret:teamsecret",
     "is a partial ARN, without the -<6 characters> Secrets Manager ends a secret's ARN with"),
    ("arn:aws:secretsmanager:us-east-1:123456789012:secret:team-secret-AbCdEf",
     ("secret is in us-east-1, and the stack deploys to eu-west-1, where its functions read their secrets: make the "
      "secret in eu-west-1 (`aws secretsmanager create-secret --region eu-west-1")),
    ("arn:aws:secretsmanager:eu-west-1:123456789012:secret:team-secret-AbCdEf:token",
     "names a key of the secret (token), and the stack grants its functions the secret by the ARN as given"),
    ("arn:aws:secretsmanager:eu-west-1:secret:team-secret", "is not a secret's ARN"),
])
def test_a_team_secret_no_function_could_read_is_refused_before_aws_is_called(parameter, value, says):
    """The stack grants its roles each team-made secret by the ARN given: a partial ARN (IAM matches it to no read),
    a key after it, or another region's secret passed the template's pattern and every read was AccessDenied."""
    app = dict(APP, **{parameter: value})
    app.update({"GameBridgeSandboxSecretArn": {"GameBridgeSandboxUrl": "https://sandbox.example.org"},
                "SlackSigningSecretArn": {"SlackTeamId": "T0123"}}.get(parameter, {}))
    said = refusal(app=app)
    assert f"{parameter}" in said and says in said
    assert "create-secret" in said or "names a key" in said
    assert refusal(app=dict(app, **{parameter: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:team-secret-AbCdEf"})) == ""


# ── what make deploy reads from the templates and the files ──

def test_the_reservations_are_read_as_the_template_declares_them():
    """The preflight reads each function's reserved concurrency from app.yaml's lines; cfn-lint's YAML reader agrees,
    and ApiReservedConcurrency is the parameter's value."""
    template = cfn.load(cfn.APP_TEMPLATE)
    defaults = {name: str(spec.get("Default", "")) for name, spec in template["Parameters"].items()}
    declared = {name: spec["Properties"]["ReservedConcurrentExecutions"] for name, spec in template["Resources"].items()
                if "ReservedConcurrentExecutions" in spec.get("Properties", {})}
    expected = {name: int(defaults[v["Ref"]] if isinstance(v, dict) else v) for name, v in declared.items()}
    assert preflight_account.reservations(defaults) == expected and expected["APIHandler"] == 50
    assert preflight_account.reservations(dict(defaults, ApiReservedConcurrency="7"))["APIHandler"] == 7


def test_the_parameters_set_once_are_said_so_where_a_team_sets_them():
    """DatabaseName, MasterUsername, AppUsername, VpcCidr, ExistingVpcId and ExistingSubnetIds apply at the data stack's
    first create only: the template's descriptions, the example file and docs/deploy.md say so."""
    declared = cfn.load(cfn.DATA_TEMPLATE)["Parameters"]
    example = (ROOT / "infra" / "example.params").read_text()
    guide = (ROOT / "docs" / "deploy.md").read_text()
    for name in preflight_account.SET_ONCE:
        assert "set once, at the first deploy" in " ".join(declared[name]["Description"].split()).lower(), name
        assert re.search(rf"^# {name}=", example, re.MULTILINE), name
        assert f"`{name}`" in guide, name
    assert "set once, at the first deploy" in example and "set once, at the first deploy" in guide


@pytest.mark.realtime  # make -n
def test_make_deploy_runs_the_whole_preflight_first():
    """The account's checks are made before the deploy's first write, with the deploy's own stack, region, CLI and file."""
    done = subprocess.run(["make", "-n", "deploy", "REGION=eu-north-1", "STACK=events-x", "PARAMS=infra/x.params"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    commands = [line for line in done.stdout.replace("\\\n", " ").splitlines() if "-m infra." in line]
    assert [c.split("-m ")[1].split()[0] for c in commands] == ["infra.preflight", "infra.deploy"]
    for command in commands:
        assert "--stack events-x --region 'eu-north-1'" in command and "--aws " in command
        assert "--params infra/x.params" in command


def test_a_game_bridge_on_plain_http_to_a_public_host_is_warned_about_and_a_private_one_is_not():
    """The engine trusts the bridge's answers unsigned (a revert in one is a command it later sends): over the
    Internet they need TLS. A warning, not a refusal: the host may resolve only inside the team's network."""
    warned: list[str] = []
    assert refusal(app=dict(APP, GameBridgeUrl="http://bridge.example.org:8081"), said=warned) == ""
    [said] = [w for w in warned if "GameBridgeUrl" in w]
    assert said.startswith("WARNING: GameBridgeUrl=http://bridge.example.org:8081 is plain http:// to bridge.example.org")
    assert "serve the bridge over HTTPS with a publicly trusted certificate" in said
    quiet: list[str] = []
    assert refusal(app=dict(APP, GameBridgeUrl="http://10.0.4.7:8081"), said=quiet) == ""
    assert refusal(app=APP, said=quiet) == "" and [w for w in quiet if "GameBridgeUrl" in w] == []
