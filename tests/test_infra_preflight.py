"""`make deploy`'s preflight (infra/preflight.py), with a resolver stand-in (tests/support/resolver.py): what cannot
work on the default network or under AWS's name limits is refused before any AWS call, each reason with its fix;
and the names derived from a long stack name fit."""

import pytest

from chalicelib.events.adapters.aws import AwsSwitches
from infra import preflight
from tests.support.resolver import Hosts

REGION = "eu-west-1"
NAMES = preflight.Names("event-run-engine-prod", "event-run-engine-prod-data")
APP = {"GameBridgeUrl": "https://bridge.example.org", "JwtJwksUrl": "https://id.example.org/.well-known/jwks.json",
       "JwtIssuer": "https://id.example.org"}
COGNITO = "cognito-idp.eu-west-1.amazonaws.com"
COGNITO_JWKS = f"https://{COGNITO}/eu-west-1_AbCdEf/.well-known/jwks.json"


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
    app = dict(APP, **{parameter: value})
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
    """Without Scheduler the deployment can never sleep (about $86 a month awake): the dual-stack name the functions
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
    assert f"{on} turns presses on, and {place} is empty: set {place}" in refusal(app=dict(APP, **{on: "x"}))
    assert refusal(app=dict(APP, **{on: "x", place: "T0123"})) == ""
