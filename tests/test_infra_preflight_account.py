"""`make deploy`'s preflight against the account (infra/preflight.py, `check_account`): the real AWS CLI against a
moto server, as tests/test_infra_deploy.py drives the deploy. What only the account can tell is refused before
anything is created, each reason with its fix, and every call it makes only reads.

moto serves every call the preflight makes but one: Lambda's `get-account-settings` (moto 5.2 has no such route),
which `Account` answers with the figures a test gives; everything else reaches moto through the CLI.
"""

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest

from infra import deploy, preflight, preflight_account
from tests.support import aws_world, moto_cfn
from tests.support.resolver import Hosts

pytestmark = pytest.mark.realtime  # the AWS CLI, a process per call

REGION = "eu-west-1"
NAMES = preflight.Names("event-run-engine-prod", "event-run-engine-prod-data")
ACCOUNT = "123456789012"  # moto's
DATA = {name: deploy._scalar(spec["Default"]) for name, spec in deploy.parameters_of(deploy.DATA_TEMPLATE).items()
        if "Default" in spec}
APP_DEFAULTS = {name: deploy._scalar(spec["Default"]) for name, spec in deploy.parameters_of(deploy.APP_TEMPLATE).items()
                if "Default" in spec}
APP = {**APP_DEFAULTS, "GameBridgeUrl": "https://bridge.example.org", "JwtJwksUrl": "https://id.example.org/.well-known/jwks.json",
       "JwtIssuer": "https://id.example.org"}
ROOMY = 1000  # an account's usual Lambda concurrency, all of it unreserved
AWS_CLI = shutil.which("aws", path=str(Path(sys.executable).parent))
MOTO_SKIPS = pytest.mark.filterwarnings("ignore:Tried to parse:UserWarning")  # each type moto has no model for


class Account(deploy.Aws):
    """The AWS CLI against moto, as make deploy calls it; Lambda's account settings (which moto does not serve) as
    given. `commands` are the calls made, in order."""

    def __init__(self, unreserved: int = ROOMY, total: int = ROOMY):
        self.commands: list[str] = []
        super().__init__(REGION, str(AWS_CLI), echo=self.commands.append)
        self.settings = {"AccountLimit": {"ConcurrentExecutions": total, "UnreservedConcurrentExecutions": unreserved}}

    def json(self, *args: str):
        if args[:2] == ("lambda", "get-account-settings"):
            self.commands.append(f"$ aws {' '.join(args)} (the test's figures)")
            return self.settings
        return super().json(*args)


@pytest.fixture
def moto(tmp_path):
    assert AWS_CLI, "the AWS CLI (awscli in requirements-dev.txt) is not in this venv: make test installs it"
    with aws_world.moto_endpoint() as url, pytest.MonkeyPatch.context() as patch:  # undone before the server's own
        for name in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):  # none of this machine's profiles
            patch.setenv(name, str(tmp_path / "none"))
        patch.setenv("HOME", str(tmp_path))
        yield SimpleNamespace(url=url, tmp=tmp_path, secrets=boto3.client("secretsmanager"), kms=boto3.client("kms"),
                              cloudformation=boto3.client("cloudformation"), ec2=boto3.client("ec2"))


def refusal(aws: Account, data=None, app=None) -> str:
    """What check_account refuses ("" when the deployment may go on)."""
    try:
        preflight_account.check_account(aws, NAMES, DATA if data is None else data, APP if app is None else app)
    except preflight.Refused as refused:
        return str(refused)
    return ""


def secret_refusal(**app: str) -> str:
    """What `describe-secret` of the team's secrets in `app` makes the preflight refuse (check_account's part)."""
    return "\n".join(preflight_account.secret_problems(Account(), dict(APP, **app), ACCOUNT, None))


def test_a_team_secret_encrypted_with_the_teams_own_key_is_refused(moto):
    """No role of the stack may use the team's KMS key (no kms:Decrypt), so every read of it would be AccessDenied
    once deployed: refused naming the command that encrypts it with Secrets Manager's own key."""
    key = moto.kms.create_key()["KeyMetadata"]["Arn"]
    theirs = moto.secrets.create_secret(Name="discord-bot", SecretString="token", KmsKeyId=key)["ARN"]
    says = secret_refusal(DiscordBotTokenSecretArn=theirs)
    assert f"DiscordBotTokenSecretArn's secret {theirs} is encrypted with the KMS key {key}" in says
    assert f"update-secret --region {REGION} --secret-id {theirs} --kms-key-id alias/aws/secretsmanager" in says

    own = moto.secrets.create_secret(Name="slack-bot", SecretString="xoxb")["ARN"]
    named = moto.secrets.create_secret(Name="slack-signing", SecretString="s", KmsKeyId="alias/aws/secretsmanager")["ARN"]
    assert secret_refusal(SlackBotTokenSecretArn=own, SlackSigningSecretArn=named) == ""


def test_a_team_secret_that_is_not_there_is_refused_naming_how_to_make_it(moto):
    missing = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:sandbox-key-AbCdEf"
    says = secret_refusal(GameBridgeSandboxSecretArn=missing)
    assert (f"GameBridgeSandboxSecretArn: no secret {missing} in {REGION}: make it (`aws secretsmanager create-secret "
            f"--region {REGION} --name <name> --secret-string <value>`") in says

    gone = moto.secrets.create_secret(Name="sandbox-key", SecretString="k")["ARN"]
    moto.secrets.delete_secret(SecretId=gone, RecoveryWindowInDays=7)
    says = secret_refusal(GameBridgeSandboxSecretArn=gone)
    assert f"{gone} is scheduled for deletion" in says and f"restore-secret --region {REGION} --secret-id {gone}" in says


def test_a_partial_arn_that_looks_whole_is_refused_with_the_whole_one(moto):
    """A secret named discord-tokens: its partial ARN ends in six characters after a hyphen, as a whole one does, so
    only Secrets Manager can tell. Its own ARN is given as the fix."""
    whole = moto.secrets.create_secret(Name="discord-tokens", SecretString="token")["ARN"]
    partial = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:discord-tokens"
    assert whole != partial
    says = secret_refusal(DiscordBotTokenSecretArn=partial)
    assert f"DiscordBotTokenSecretArn={partial} is a partial ARN" in says and f"set DiscordBotTokenSecretArn={whole}" in says
    assert secret_refusal(DiscordBotTokenSecretArn=whole) == ""


def test_another_accounts_secret_and_the_bridges_own_key_are_refused(moto):
    """Another account's secret cannot be decrypted with Secrets Manager's own key; the game bridge's key as the
    sandbox's would let a dry run sign as the live engine (the tick refuses it at start)."""
    elsewhere = f"arn:aws:secretsmanager:{REGION}:210987654321:secret:slack-bot-AbCdEf"
    says = secret_refusal(SlackBotTokenSecretArn=elsewhere)
    assert f"SlackBotTokenSecretArn's secret is in account 210987654321, and the stack deploys to {ACCOUNT}" in says

    bridge = moto.secrets.create_secret(Name="GameBridgeSecret", SecretString="k")["ARN"]
    app = dict(APP, GameBridgeSandboxUrl="https://sandbox.example.org", GameBridgeSandboxSecretArn=bridge)
    says = preflight_account.secret_problems(Account(), app, ACCOUNT, bridge_secret=bridge)
    assert says and "is the game bridge's own key (the data stack's GameBridgeSecretArn)" in says[0]
    assert preflight_account.secret_problems(Account(), app, ACCOUNT, bridge_secret=bridge.replace("GameBridge", "Other")) == []


@MOTO_SKIPS
def test_a_parameter_set_once_is_refused_when_the_file_would_change_it(moto):
    """DatabaseName (and MasterUsername) would replace the cluster, AppUsername regenerate the app secret, another VPC
    or subnets move nothing: the deployed data stack's value is put back, by name, before anything is sent."""
    vpc = moto.ec2.create_vpc(CidrBlock="10.30.0.0/16")["Vpc"]["VpcId"]
    subnets = [moto.ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.30.{i}.0/24", AvailabilityZone=f"{REGION}{zone}")["Subnet"]["SubnetId"]
               for i, zone in enumerate("ab")]
    template = moto_cfn.data_stack_for_moto(moto.tmp / "data.yaml").read_text()
    network = {"ExistingVpcId": vpc, "ExistingSubnetIds": ",".join(subnets)}
    moto.cloudformation.create_stack(StackName=NAMES.data_stack, TemplateBody=template, Capabilities=["CAPABILITY_IAM"],
                                     Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in network.items()])
    deployed = dict(DATA, **network)

    aws = Account()
    says = refusal(aws, data=dict(deployed, DatabaseName="events2", AppUsername="engine"))
    assert (f"DatabaseName is set once, at the first deploy: the data stack {NAMES.data_stack} has DatabaseName=events, and "
            "the parameters file would make it events2 (CloudFormation would replace the database cluster): put "
            "DatabaseName=events back in the parameters file") in says
    assert "AppUsername is set once, at the first deploy" in says and "regenerate the app secret" in says
    assert says.count("\n- ") == 1  # both at once
    stack = preflight_account.parameters(aws.described(NAMES.data_stack))
    assert stack is not None

    def set_once(**changed: str) -> str:
        return "".join(preflight_account.set_once_problems(stack, dict(deployed, **changed), NAMES.data_stack))

    assert "ExistingSubnetIds is set once" in set_once(ExistingSubnetIds=subnets[0])
    assert "ExistingVpcId is set once" in set_once(ExistingVpcId="", ExistingSubnetIds="")
    # the same subnets in another order, a VpcCidr that names nothing with the team's VPC, what may change: accepted
    assert set_once(ExistingSubnetIds=",".join(reversed(subnets)), VpcCidr="10.9.0.0/16", MaxCapacity="4",
                    BackupRetentionPeriod="14") == ""
    assert refusal(Account(), data=dict(deployed, ExistingSubnetIds=",".join(reversed(subnets)))) == ""


def test_vpc_cidr_is_set_once_when_the_stack_made_the_network():
    deployed = dict(DATA, ExistingVpcId="", ExistingSubnetIds="")
    [says] = preflight_account.set_once_problems(deployed, dict(deployed, VpcCidr="10.21.0.0/16"), "x-data")
    assert "VpcCidr is set once, at the first deploy" in says and "put VpcCidr=10.20.0.0/16 back" in says
    # a first create that rolled back is made again from nothing: no stack to keep
    assert preflight_account.parameters({"StackStatus": "ROLLBACK_COMPLETE", "Parameters": [{"ParameterKey": "VpcCidr",
                                                                                     "ParameterValue": "10.20.0.0/16"}]}) is None


def test_a_lambda_quota_too_low_for_the_reservations_is_refused_naming_the_request(moto):
    """A new account's concurrency (often 10) fails the app stack's create 10-15 minutes in, at its first function:
    the stack reserves 58 (the API's 50, the tick's 2, chat_press's 5, migrate's 1) and Lambda keeps 100 free."""
    says = refusal(Account(unreserved=10, total=10))
    assert "10 of its 10 are unreserved, and the stack reserves 58 (APIHandler 50, Tick 2, ChatPress 5, Migrate 1)" in says
    assert "while Lambda keeps 100 unreserved, so 158 must be" in says
    assert (f"aws service-quotas request-service-quota-increase --region {REGION} --service-code lambda --quota-code "
            "L-B99A9384 --desired-value 158") in says
    assert "lower ApiReservedConcurrency" not in says  # no API small enough would fit
    reserved = preflight_account.reservations(APP)

    def quota(unreserved: int) -> str:
        return "".join(preflight_account.concurrency_problems(
            {"AccountLimit": {"ConcurrentExecutions": unreserved, "UnreservedConcurrentExecutions": unreserved}}, reserved, 0, REGION))

    assert quota(158) == ""
    assert "--desired-value 158" in quota(150) and "or lower ApiReservedConcurrency to 42" in quota(150)


def test_an_upgrade_counts_what_the_stack_reserves_already(moto):
    """Once deployed, the stack's own reservations are out of the unreserved figure: only a larger
    ApiReservedConcurrency needs more."""
    stand_in = {"Parameters": {"ApiReservedConcurrency": {"Type": "Number"}},
                "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}
    moto.cloudformation.create_stack(StackName=NAMES.stack, TemplateBody=json.dumps(stand_in),
                                     Parameters=[{"ParameterKey": "ApiReservedConcurrency", "ParameterValue": "50"}])
    assert refusal(Account(unreserved=100, total=158)) == ""
    says = refusal(Account(unreserved=100, total=158), app=dict(APP, ApiReservedConcurrency="80"))
    assert "the stack reserves 88 (APIHandler 80, Tick 2, ChatPress 5, Migrate 1) beyond the 58 it holds" in says
    assert "--desired-value 188" in says and "or lower ApiReservedConcurrency to 50" in says


@MOTO_SKIPS
def test_make_preflight_says_every_reason_at_once_and_only_reads(moto, monkeypatch, capsys):
    """`python -m infra.preflight` (make preflight, make deploy's first step): the file read as make deploy reads it,
    offline checks first, then the account's; nothing is made, whatever it finds."""
    key = moto.kms.create_key()["KeyMetadata"]["Arn"]
    theirs = moto.secrets.create_secret(Name="discord-bot", SecretString="token", KmsKeyId=key)["ARN"]
    params = moto.tmp / "prod.params"
    params.write_text("GameBridgeUrl=https://bridge.example.org\nJwtJwksUrl=https://id.example.org/.well-known/jwks.json\n"
                      f"JwtIssuer=https://id.example.org\nCueChannel=discord:100000000000000001\nDiscordBotTokenSecretArn={theirs}\n")
    accounts: list[Account] = []
    monkeypatch.setattr(deploy, "Aws", lambda region, command: accounts.append(Account(unreserved=10, total=10)) or accounts[-1])
    monkeypatch.setattr(preflight, "resolve", Hosts())
    argv = ["--stage", "prod", "--region", REGION, "--params", str(params), "--aws", str(AWS_CLI)]

    assert preflight.main(argv) == 1
    err = capsys.readouterr().err
    assert "make preflight: refused, nothing created:" in err
    assert err.count("\n- ") == 2 and "is encrypted with the KMS key" in err and "--desired-value 158" in err
    assert [c.split()[2:4] for c in accounts[0].commands] == [
        ["sts", "get-caller-identity"], ["cloudformation", "describe-stacks"], ["secretsmanager", "describe-secret"],
        ["cloudformation", "describe-stacks"], ["lambda", "get-account-settings"]]
    assert moto.cloudformation.describe_stacks()["Stacks"] == [] and boto3.client("s3").list_buckets()["Buckets"] == []

    moto.secrets.update_secret(SecretId=theirs, KmsKeyId="alias/aws/secretsmanager")
    monkeypatch.setattr(deploy, "Aws", lambda region, command: Account())
    assert preflight.main(argv) == 0
    assert "make preflight: event-run-engine-prod and event-run-engine-prod-data can be deployed" in capsys.readouterr().out
