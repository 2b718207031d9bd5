"""`make deploy`'s preflight: what can be known before AWS is called is checked first, and each refusal names its fix.

The invariant: a deployment that would deploy and then not work is refused before the first AWS call —
a peer the functions cannot reach (the default network has no NAT: they reach the internet over IPv6
only, so every outbound host needs an AAAA record), an AWS API with no name they can reach in the region
(EventBridge Scheduler above all: without it the deployment can never sleep and stays awake, about $83 a
month), a name longer than AWS takes, or a setting the functions refuse at their start
(chalicelib/config.py: its own comparisons are asked here) or that the stack would quietly drop. A game bridge
reached by plain http:// on a public host is warned about, not refused (the engine trusts its answers unsigned;
bridge-check asks the same function, chalicelib/events/bridge_check/plain_http.py).

Then, before anything is created, what only the account can tell (`preflight_account.py`, read-only calls through
the AWS CLI `make deploy` uses): a team-made secret that does not exist, is another region's or account's,
is named by a partial ARN or is encrypted with a key of the team's (no role may decrypt it); a data-stack
parameter that applies only at the first create (`SET_ONCE`) changed from the deployed stack's; and a
Lambda concurrency quota the stack's reserved concurrency would leave under Lambda's 100 unreserved.
`python -m infra.preflight` (`make preflight`, which `make deploy` runs first) does both.

Names: every name the stacks derive from the stack name fits AWS's limit whatever the stack name's length.
`fitted` keeps a name as it always was while it fits, and otherwise cuts the stack's part short and adds
8 hex digits of its hash, so two long stack names that differ only at their end still get two names.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from chalicelib.config import same_channel
from chalicelib.events.bridge_check.plain_http import in_the_clear
from chalicelib.sameness import same_url

STACK_NAME_LIMIT = 128  # CloudFormation
DATA_SUFFIX = "-data"
FUNCTION_NAME_LIMIT = RULE_NAME_LIMIT = SCHEDULE_NAME_LIMIT = 64  # Lambda, EventBridge, EventBridge Scheduler
BUCKET_NAME_LIMIT = PROXY_NAME_LIMIT = 63  # S3, RDS Proxy
NAMESPACE_LIMIT = 255  # CloudWatch
# A sleep's two schedules are `<tick name>-wake-<n>` and `-backstop-<n>`, n the engine state's epoch (BIGINT):
# 12 digits are a million changes of the row a day for 2,700 years.
EPOCH_DIGITS = 12
TICK_NAME_LIMIT = SCHEDULE_NAME_LIMIT - len("-backstop-") - EPOCH_DIGITS
ACCOUNT_DIGITS = 12
NAMESPACE_PREFIX = "EventRunEngine/"
STACK_NAME = re.compile(r"[A-Za-z][-A-Za-z0-9]*")
BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]*[a-z0-9]")
# The AWS APIs the functions call from inside the VPC (docs/deploy.md's outbound calls), by their endpoint prefix.
AWS_APIS = {"secretsmanager": "Secrets Manager", "sns": "SNS", "lambda": "Lambda", "events": "EventBridge",
            "scheduler": "EventBridge Scheduler"}
NAT_COST = "EnableNatGateway=true ($36.50 a month)"
APP_TEMPLATE = Path(__file__).resolve().with_name("app.yaml")
# The secrets a team makes itself (docs/deploy.md, "Secrets you make"): each stack parameter is the secret's ARN,
# which the stack grants its functions to read exactly as given.
TEAM_SECRETS = ("DiscordBotTokenSecretArn", "SlackBotTokenSecretArn", "SlackSigningSecretArn", "GameBridgeSandboxSecretArn")
SECRET_ARN = re.compile(r"arn:aws[a-z-]*:secretsmanager:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):secret:(?P<name>[^:]+)"
                        r"(?P<key>:.*)?")
SECRET_SUFFIX = re.compile(r".+-[A-Za-z0-9]{6}")  # Secrets Manager ends a secret's full ARN with -<6 characters>
LIVE_CHANNELS = ("CueChannel", "AnnounceChannel", "EscalationChannel")
class Refused(Exception):
    """The deployment cannot work as asked: the message lists each reason with its fix."""


def fitted(base: str, suffix: str, limit: int) -> str:
    """`base + suffix` while it fits in `limit`; else base cut short, 8 hex digits of its hash, then the suffix."""
    if len(base) + len(suffix) <= limit:
        return base + suffix
    digest = hashlib.sha256(base.encode()).hexdigest()[:8]
    return f"{base[:limit - len(suffix) - len(digest) - 1].rstrip('-')}-{digest}{suffix}"


@dataclass(frozen=True)
class Names:
    """What the stacks are called and what they call their parts, derived from the app stack's name."""

    stack: str
    data_stack: str

    @property
    def tick(self) -> str:
        """The tick function's and its minute rule's name; its schedules add -wake-<n> and -backstop-<n>."""
        return fitted(self.stack, "-tick", TICK_NAME_LIMIT)

    @property
    def proxy(self) -> str:
        """RDS Proxy's name (the data stack's ProxyName): letters, digits and single hyphens."""
        return fitted(re.sub("-+", "-", self.data_stack), "-proxy", PROXY_NAME_LIMIT)

    @property
    def namespace(self) -> str:
        """The engine's metric namespace, one per stack, so two stacks in an account never share an alarm's metric."""
        return fitted(NAMESPACE_PREFIX + self.stack, "", NAMESPACE_LIMIT)

    def bucket(self, account: str, region: str) -> str:
        """The artifact bucket: lower case, as S3 asks."""
        return fitted(self.stack.lower(), f"-artifacts-{account}-{region}", BUCKET_NAME_LIMIT)

    def derived(self, region: str) -> Iterator[tuple[str, str, int]]:
        """Each name these stacks give something, as (what it names, the longest it can be, AWS's limit)."""
        yield "the app stack", self.stack, STACK_NAME_LIMIT
        yield "the data stack", self.data_stack, STACK_NAME_LIMIT
        yield "the tick function", self.tick, FUNCTION_NAME_LIMIT
        yield "the minute rule", self.tick, RULE_NAME_LIMIT
        for kind in ("wake", "backstop"):
            yield f"a sleep's {kind} schedule", f"{self.tick}-{kind}-{'9' * EPOCH_DIGITS}", SCHEDULE_NAME_LIMIT
        yield "the artifact bucket", self.bucket("9" * ACCOUNT_DIGITS, region), BUCKET_NAME_LIMIT
        yield "the database proxy", self.proxy, PROXY_NAME_LIMIT
        yield "the metric namespace", self.namespace, NAMESPACE_LIMIT


def name_problems(names: Names, region: str, bucket: str | None = None) -> list[str]:
    """Why these names would be refused by AWS, each with its fix (none when they all fit)."""
    problems = []
    for what, stack in (("app", names.stack), ("data", names.data_stack)):
        if not STACK_NAME.fullmatch(stack):
            problems.append(f"the {what} stack's name {stack!r} is not a CloudFormation stack name (a letter, then "
                            "letters, digits and hyphens): choose another STACK")
    longest = STACK_NAME_LIMIT - len(DATA_SUFFIX)
    for what, name, limit in names.derived(region):
        if len(name) > limit:
            fix = (f"STACK=<at most {longest} characters> (the data stack adds {DATA_SUFFIX!r})"
                   if what.endswith("stack") else "a shorter STACK")
            problems.append(f"{what}'s name would be {len(name)} characters, over AWS's {limit}: {fix}")
    if bucket is not None and not (len(bucket) <= BUCKET_NAME_LIMIT and BUCKET_NAME.fullmatch(bucket)):
        problems.append(f"ARTIFACT_BUCKET={bucket} is not an S3 bucket name (at most {BUCKET_NAME_LIMIT} lower-case "
                        "letters, digits, dots and hyphens): leave it out and make deploy names one")
    return problems


@dataclass(frozen=True)
class Addresses:
    """Whether a host name has IPv4 (A) and IPv6 (AAAA) addresses."""

    ipv4: bool
    ipv6: bool


Resolver = Callable[[str], Addresses]


def resolve(host: str) -> Addresses:
    """This machine's resolver's answer for `host` (its AAAA records are what the functions' IPv6 route needs)."""
    def has(family: socket.AddressFamily) -> bool:
        try:
            return bool(socket.getaddrinfo(host, 443, family, socket.SOCK_STREAM))
        except (socket.gaierror, UnicodeError):
            return False

    return Addresses(ipv4=has(socket.AF_INET), ipv6=has(socket.AF_INET6))


# The hosts a chat channel's bot calls (docs/chat.md): Discord's API, Slack's, and Slack's response_url of a press.
CHAT_HOSTS = {"discord": ("discord.com",), "slack": ("slack.com", "hooks.slack.com")}


def outbound_peers(app: dict[str, str]) -> list[tuple[str, str]]:
    """The hosts outside AWS the functions call, as (the parameter that names it, its host)."""
    peers = []
    for parameter in ("JwtJwksUrl", "GameBridgeUrl", "GameBridgeSandboxUrl", "CueChannel", "AnnounceChannel",
                      "EscalationChannel", "RehearsalChannel"):
        value = app.get(parameter, "")
        url = value.removeprefix("webhook:") if parameter.endswith("Channel") else value
        if url.startswith(("http://", "https://")) and (host := urlsplit(url).hostname):
            peers.append((parameter, host))
        if parameter.endswith("Channel"):
            peers += [(parameter, host) for host in CHAT_HOSTS.get(value.partition(":")[0], ())]
    return peers


def jwks_front_problems(app: dict[str, str]) -> list[str]:
    """A front (JwksFront=on) serves the key set from the host and path of JwtJwksUrl, and from nothing else."""
    if app.get("JwksFront") != "on":
        return []
    url = urlsplit(app.get("JwtJwksUrl", ""))
    if url.port is not None or url.query or url.username:
        return [(f"JwtJwksUrl={app['JwtJwksUrl']}: with JwksFront=on it must be https://<host>/<path>, without a "
                 "port, a query or a user (the front asks the host at its path alone)")]
    return []


def chat_problems(app: dict[str, str]) -> list[str]:
    """Chat settings the functions would refuse at their first start (chalicelib/config.py), said with the
    parameter to change."""
    problems = []
    escalated_to = app.get("EscalationChannel") or app.get("CueChannel") or "sns:<the CueTopic>"
    if app.get("EscalationMention") and escalated_to.partition(":")[0] not in ("webhook", "discord"):
        problems.append(f"EscalationMention pings a Discord role, and escalations would go to {escalated_to}, which"
                        " cannot ping it: set EscalationChannel to webhook:<url> or discord:<channel id>, or leave"
                        " EscalationMention empty")
    for key, place, where in (("DiscordPublicKey", "DiscordGuildId", "server"), ("SlackSigningSecretArn", "SlackTeamId", "workspace")):
        if app.get(key) and not app.get(place):
            problems.append(f"{key} turns presses on, and {place} is empty: set {place} to the {where} whose presses"
                            " count (without it every press would be refused)")
    return problems


def dry_run_problems(app: dict[str, str]) -> list[str]:
    """Dry-run settings the functions refuse at start or the stack drops without a word: a rehearsal channel that
    is a live one, a sandbox that is the game bridge, a sandbox without its key or a key without its sandbox."""
    problems = []
    rehearsal = app.get("RehearsalChannel", "").strip()
    for name in LIVE_CHANNELS:
        live = app.get(name, "").strip()
        if rehearsal and live and same_channel(rehearsal, live):  # config.py's own comparison
            problems.append(f"RehearsalChannel={rehearsal} is the same place as {name}={live}, so every dry run would post"
                            " where the live event is read (the tick refuses it at start): set RehearsalChannel to a "
                            "channel no live post goes to, or leave it out (the tick's log)")
    sandbox, key = app.get("GameBridgeSandboxUrl", "").strip(), app.get("GameBridgeSandboxSecretArn", "").strip()
    bridge = app.get("GameBridgeUrl", "").strip()
    if sandbox and bridge and same_url(sandbox, bridge):  # config.py's own comparison
        problems.append(f"GameBridgeSandboxUrl={sandbox} reaches the same place as GameBridgeUrl={bridge}, so a dry run "
                        "would act in the live game (the functions refuse it at start): set GameBridgeSandboxUrl to "
                        "the sandbox's own URL, or leave it out")
    if sandbox and not key:
        problems.append("GameBridgeSandboxUrl is set and GameBridgeSandboxSecretArn is empty: the stack would drop the "
                        "sandbox (a dry run with \"bridge\": \"sandbox\" answers 409): set GameBridgeSandboxSecretArn to "
                        "the ARN of a secret holding the sandbox's own key (docs/deploy.md, \"Secrets you make\"), or "
                        "leave GameBridgeSandboxUrl out")
    if key and not sandbox:
        problems.append("GameBridgeSandboxSecretArn is set and GameBridgeSandboxUrl is empty: the stack would drop the "
                        "sandbox's key unused: set GameBridgeSandboxUrl to the sandbox's URL, or leave "
                        "GameBridgeSandboxSecretArn out")
    return problems


def secret_arn_problems(app: dict[str, str], region: str) -> list[str]:
    """Team-made secrets named so that no function could read them, whatever the account holds: not an ARN, a key
    of the secret after it, another region's, or a partial ARN (the stack's roles are granted the ARN as given,
    and IAM matches a partial one to no read)."""
    problems = []
    for name in TEAM_SECRETS:
        value = app.get(name, "").strip()
        if not value:
            continue
        arn = SECRET_ARN.fullmatch(value)
        if arn is None:
            problems.append(f"{name}={value} is not a secret's ARN (arn:aws:secretsmanager:<region>:<account>:secret:"
                            "<name>-<6 characters>): use the ARN `aws secretsmanager create-secret` printed")
        elif arn["key"]:
            problems.append(f"{name}={value} names a key of the secret ({arn['key'][1:]}), and the stack grants its "
                            f"functions the secret by the ARN as given, so none could read it: give the secret's ARN "
                            f"alone ({value[:-len(arn['key'])]}), the whole secret being the value")
        elif arn["region"] != region:
            problems.append(f"{name}'s secret is in {arn['region']}, and the stack deploys to {region}, where its "
                            f"functions read their secrets: make the secret in {region} (`aws secretsmanager "
                            f"create-secret --region {region} …`, docs/deploy.md) and set {name} to its ARN")
        elif not SECRET_SUFFIX.fullmatch(arn["name"]):
            problems.append(f"{name}={value} is a partial ARN, without the -<6 characters> Secrets Manager ends a "
                            "secret's ARN with: the stack grants its functions this ARN as given, and IAM matches a "
                            "partial one to no read: use the ARN `aws secretsmanager create-secret` printed "
                            f"(`aws secretsmanager describe-secret --region {region} --secret-id {value} --query ARN "
                            "--output text` prints it)")
    return problems


def host_problems(app: dict[str, str], data: dict[str, str], region: str, resolve: Resolver) -> tuple[list[str], list[str]]:
    """(refusals, warnings) for every host the functions would call, each with its fix."""
    refusals: list[str] = []
    warnings: list[str] = []
    own_network = bool(data.get("ExistingVpcId"))  # its routes are the team's: a NAT there is not seen from here
    nat = data.get("EnableNatGateway") == "true" and not own_network
    for parameter, host in outbound_peers(app):
        found = resolve(host)
        fronted = parameter == "JwtJwksUrl" and app.get("JwksFront") == "on"  # CloudFront reaches it over either
        if not (found.ipv4 or found.ipv6):
            refusals.append(f"{parameter}'s host {host} does not resolve (no A, no AAAA record): check {parameter}")
        elif not found.ipv6 and not nat and not fronted:
            fix = ("set JwksFront=on (a CloudFront front for the key set, dual-stack and free at this volume: "
                   f"docs/deploy.md, \"Identity over IPv6\"), or {NAT_COST}" if parameter == "JwtJwksUrl" else
                   "give it an IPv6 address or put a dual-stack front before it (Cloudflare's proxy, an ALB, "
                   f"API Gateway: docs/deploy.md), or {NAT_COST}")
            said = (f"{parameter}'s host {host} has no IPv6 address (AAAA), and the functions reach the internet "
                    f"over IPv6 only: {fix}")
            (warnings if own_network else refusals).append(
                said + (" — unless your own subnets route IPv4 out through a NAT" if own_network else ""))
    for parameter in ("GameBridgeUrl", "GameBridgeSandboxUrl"):
        if exposed := in_the_clear(app.get(parameter, "")):
            warnings.append(f"{parameter}={app[parameter].strip()} is {exposed}")
    interface_endpoints = data.get("EnableInterfaceEndpoints") == "true"
    for prefix, service in AWS_APIS.items():
        name = f"{prefix}.{region}.{'amazonaws.com' if interface_endpoints else 'api.aws'}"
        found = resolve(name)
        if found.ipv6 or (interface_endpoints and found.ipv4):
            continue
        where = f"{name} does not resolve" + ("" if interface_endpoints else " to an IPv6 address")
        if prefix == "scheduler":
            refusals.append(f"EventBridge Scheduler is not offered in {region} ({where}): the deployment could never "
                            "sleep and would stay awake, about $83 a month: deploy to a region that offers it")
        else:
            refusals.append(f"{service} has no name the functions can reach in {region} ({where}): "
                            + ("deploy to a region that offers it" if interface_endpoints else
                               "EnableInterfaceEndpoints=true (the IPv4 names through endpoints, $73 a month), or "
                               "another region"))
    return refusals, warnings


def check(names: Names, region: str, data: dict[str, str], app: dict[str, str], *, resolve: Resolver = resolve,
          bucket: str | None = None, say: Callable[[str], None] = print) -> None:
    """Refuse (Refused, every reason at once) what cannot work; say what may not."""
    refusals = (name_problems(names, region, bucket) + jwks_front_problems(app) + chat_problems(app)
                + dry_run_problems(app) + secret_arn_problems(app, region))
    hosts, warnings = host_problems(app, data, region, resolve)
    for warning in warnings:
        say(f"WARNING: {warning}")
    if refusals + hosts:
        raise Refused("\n".join(f"- {reason}" for reason in refusals + hosts))


def main(argv: Sequence[str] | None = None) -> int:
    """`make preflight` (and the first step of `make deploy`): the parameters file checked offline, then against
    the account, each refusal with its fix."""
    from infra import deploy  # the parameters file read, and the AWS CLI called, as make deploy reads and calls them
    from infra.preflight_account import check_account  # it imports this module's names

    parser = argparse.ArgumentParser(description="make deploy's preflight: the parameters file, then the account")
    parser.add_argument("--stage", default="prod")
    parser.add_argument("--stack", help="the app stack (default event-run-engine-<stage>)")
    parser.add_argument("--data-stack", help="the data stack (default <stack>-data)")
    parser.add_argument("--region")
    parser.add_argument("--bucket", help="the artifact bucket (default <stack>-artifacts-<account>-<region>)")
    parser.add_argument("--params", type=Path, help="the parameters file (default infra/<stage>.params)")
    parser.add_argument("--aws", default="aws", help="the AWS CLI to run")
    args = parser.parse_args(argv)
    stack = args.stack or f"event-run-engine-{args.stage}"
    names = Names(stack, args.data_stack or f"{stack}-data")
    if not args.region:
        print("make preflight: set REGION=<aws region> (or AWS_REGION): the stacks live there", file=sys.stderr)
        return 2
    try:
        data, app = deploy.split_params(deploy.read_params(args.params or deploy.ROOT / "infra" / f"{args.stage}.params"))
        check(names, args.region, data, app, resolve=resolve, bucket=args.bucket)
        aws = deploy.Aws(args.region, args.aws)
        check_account(aws, names, sent(deploy.overrides(deploy.DATA_TEMPLATE, data)),
                      sent(deploy.overrides(deploy.APP_TEMPLATE, app)))
    except Refused as refused:
        print(f"make preflight: refused, nothing created:\n{refused}", file=sys.stderr)
        return 1
    except deploy.DeployError as error:
        print(f"make preflight: {error}", file=sys.stderr)
        return 1
    print(f"make preflight: {names.stack} and {names.data_stack} can be deployed to {args.region} as the file says")
    return 0


def sent(overrides: Sequence[str]) -> dict[str, str]:
    """`--parameter-overrides Name=Value …` (infra/deploy.py's `overrides`) as the values it sends."""
    return dict(item.split("=", 1) for item in overrides[1:])


if __name__ == "__main__":
    sys.exit(main())
