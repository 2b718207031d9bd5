"""`make deploy`'s sequence (infra/deploy.py) through the real AWS CLI (awscli, requirements-dev.txt) against a
moto server, as far as moto's CloudFormation goes; the calls checked in the order moto took them (its recorder,
tests/support/moto_cfn.py), and what they left in moto.

What runs on moto, as on AWS: who the caller is (STS), the artifact bucket (head, create, public access block),
the data stack's create and then update (change set, execute, outputs read back), `aws cloudformation package`
(the code zip into the bucket), and the app stack's template into the bucket and its change set, with the
parameters the deploy filled from the data stack's outputs (AppDatabaseHost, UseDualStackEndpoints: parameters,
not imports, so EnableProxy and EnableInterfaceEndpoints can be turned on later).

What does not, and why:
- the data stack is data.yaml as moto can hold it (moto_cfn.data_stack_for_moto): moto has no model for Aurora,
  the secrets, RDS Proxy, the VPC's IPv6 block or the API Gateway account setting, and answers 500 to anything that
  refers to one; so the network is the team's own (ExistingVpcId, made in moto first) and the outputs that name
  Aurora or the proxy carry a string naming what they stand for, under data.yaml's own conditions. moto's
  ExecuteChangeSet is given the two steps CloudFormation has and it lacks (the outputs, an update's parameters);
  its update creates no resource a parameter's condition switches on (the interface endpoints), so the update
  is checked by its parameters and outputs, not by the endpoints.
- the app stack stops at its change set's execution: moto does not expand the AWS::Serverless transform, skips
  AWS::Serverless::Function and ::Api, and answers 500 to the first resource that names a function (an
  AWS::Lambda::Permission). So the migrate step (the MigrateSchema custom resource the API and the tick depend on)
  is checked in the template moto was handed, not run; it is run against a real database by test_infra_upgrade.py.
- what the deploy says after the app stack is up (its outputs, the alarm e-mail's unconfirmed subscription, the
  OIDC second pass) needs an app stack moto cannot create, and a pending e-mail subscription moto's SNS never has
  (it confirms at once): that tail alone still runs against the recorded stand-in tests/support/fake_aws.py.
The templates themselves are checked offline by cfn-lint and checkov (test_infra_templates.py, test_infra_scan.py).
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest
import yaml

from infra import deploy, preflight
from tests.support import aws_world, cfn, moto_cfn
from tests.support.resolver import Hosts

ROOT = Path(__file__).resolve().parents[1]
REGION = "eu-west-1"
DATA_STACK, APP_STACK = "event-run-engine-prod-data", "event-run-engine-prod"
BUCKET = f"{APP_STACK}-artifacts-123456789012-{REGION}"
PARAMS = """# a team's file
GameBridgeUrl=https://bridge.example.org
JwtJwksUrl=https://id.example.org/.well-known/jwks.json
JwtIssuer=https://id.example.org
AlarmEmail=ops@example.org
CorsOrigin=https://console.example.org
MaxCapacity=4
"""
LATER = "OidcClientId=console-client\nJwtAudience=console-client\nEnableProxy=true\nEnableInterfaceEndpoints=true\n"
AWS_CLI = shutil.which("aws", path=str(Path(sys.executable).parent))


@pytest.fixture
def moto(tmp_path):
    """A moto server the AWS CLI reaches, holding the team's own network (a VPC, two subnets); the deploy's data
    template is data.yaml as moto can hold it."""
    assert AWS_CLI, "the AWS CLI (awscli in requirements-dev.txt) is not in this venv: make test installs it"
    with aws_world.moto_endpoint() as url, pytest.MonkeyPatch.context() as patch:
        # moto reads the app template's S3 URL path-style only when its host says localhost
        patch.setenv("AWS_ENDPOINT_URL", url.replace("127.0.0.1", "localhost"))
        for name in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):  # none of this machine's profiles
            patch.setenv(name, str(tmp_path / "none"))
        patch.setenv("HOME", str(tmp_path))
        moto_cfn.change_sets_as_cloudformation_executes_them(patch)
        patch.setattr(deploy, "DATA_TEMPLATE", moto_cfn.data_stack_for_moto(tmp_path / "data.yaml"))
        patch.setattr(preflight, "resolve", Hosts())  # every peer and AWS API dual-stack; no lookup leaves the machine
        ec2 = boto3.client("ec2")
        vpc = ec2.create_vpc(CidrBlock="10.30.0.0/16")["Vpc"]["VpcId"]
        subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.30.{i}.0/24", AvailabilityZone=f"{REGION}{zone}")["Subnet"]["SubnetId"]
                   for i, zone in enumerate("ab")]
        network = f"ExistingVpcId={vpc}\nExistingSubnetIds={','.join(subnets)}\n"
        yield SimpleNamespace(url=url, tmp=tmp_path, vpc=vpc, network=network, ec2=ec2,
                              s3=boto3.client("s3"), cloudformation=boto3.client("cloudformation"))


def make_deploy(moto, params: str, capsys, packaged: Path | None = None) -> SimpleNamespace:
    """`make deploy STAGE=prod REGION=eu-west-1` with `params` as infra/prod.params; what moto took meanwhile."""
    (moto.tmp / "prod.params").write_text(params)
    recording = moto_cfn.Recording(moto.url, moto.tmp / "recording.jsonl")
    argv = ["--stage", "prod", "--region", REGION, "--params", str(moto.tmp / "prod.params"), "--out", str(moto.tmp / "out"),
            "--aws", str(AWS_CLI), *(["--packaged", str(packaged)] if packaged else [])]
    code = deploy.main(argv)
    recording.stop()
    printed = capsys.readouterr()
    return SimpleNamespace(code=code, out=printed.out, err=printed.err, requests=recording.requests())


def steps(requests) -> list[tuple[str, ...]]:
    """Each request as (service, operation[, stack]); the bucket and the two uploads by name, each upload's
    requests (head, multipart parts) as one step."""
    taken: list[tuple[str, ...]] = []
    for request in requests:
        step: tuple[str, ...]
        if request["service"] == "s3" and request["operation"].split(" ", 1)[1].startswith(f"/{BUCKET}/"):
            step = ("s3", "the template" if ".template" in request["operation"] else "the code")
        elif request["service"] == "s3":
            step = ("s3", request["operation"].replace(BUCKET, "<bucket>"))
        elif request["service"] == "cloudformation":
            step = ("cloudformation", request["operation"], request["params"].get("StackName", ""))
        else:
            step = (request["service"], request["operation"])
        if not (step[0] == "s3" and taken and taken[-1] == step):
            taken.append(step)
    return taken


def change_sets(requests, stack: str) -> list[dict]:
    """The CreateChangeSet requests for `stack`, in order: each one's type, parameters, capabilities and template URL."""
    found = []
    for params in (r["params"] for r in requests if r["operation"] == "CreateChangeSet" and r["params"]["StackName"] == stack):
        count = sum(1 for key in params if key.endswith(".ParameterKey"))
        given = {params[f"Parameters.member.{i}.ParameterKey"]: params.get(f"Parameters.member.{i}.ParameterValue")
                 for i in range(1, count + 1)}
        found.append({"type": params["ChangeSetType"], "template": params.get("TemplateURL"),
                      "capabilities": {v for k, v in params.items() if k.startswith("Capabilities.member.")},
                      "parameters": {k: v for k, v in given.items() if v is not None}})  # the rest: UsePreviousValue
    return found


def change_set(requests, stack: str) -> dict:
    """The one CreateChangeSet request for `stack`."""
    [made] = change_sets(requests, stack)
    return made


def stack_parameters(moto, stack: str) -> dict:
    described = moto.cloudformation.describe_stacks(StackName=stack)["Stacks"][0]
    return {p["ParameterKey"]: p["ParameterValue"] for p in described.get("Parameters", [])}


def stack_outputs(moto, stack: str) -> dict:
    described = moto.cloudformation.describe_stacks(StackName=stack)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}


APP_PARAMETERS = {
    "GameBridgeUrl": "https://bridge.example.org", "JwtJwksUrl": "https://id.example.org/.well-known/jwks.json",
    "JwtIssuer": "https://id.example.org", "AlarmEmail": "ops@example.org", "CorsOrigin": "https://console.example.org",
}


MOTO_SKIPS = pytest.mark.filterwarnings("ignore:Tried to parse:UserWarning")  # each type moto has no model for


@pytest.mark.packaging
@MOTO_SKIPS
def test_a_first_deploy_reaches_moto_in_order_and_hands_the_data_stack_outputs_to_the_app_stack(moto, capsys):
    done = make_deploy(moto, PARAMS + moto.network, capsys, cfn.package_dir())

    # where moto stops: the app stack's change set executes AWS::Serverless resources it cannot expand
    assert done.code == 1
    assert "make deploy: cloudformation deploy failed" in done.err and "500 Internal Server Error" in done.err
    assert steps(done.requests) == [
        ("sts", "GetCallerIdentity"),
        ("s3", "HEAD /<bucket>"), ("s3", "PUT /<bucket>"), ("s3", "PUT /<bucket>?publicAccessBlock"),
        ("cloudformation", "DescribeStacks", DATA_STACK),     # make deploy: a first create?
        ("cloudformation", "DescribeStacks", DATA_STACK),     # the CLI: create or update?
        ("cloudformation", "CreateChangeSet", DATA_STACK),    # created with the cluster unprotected
        ("cloudformation", "DescribeChangeSet", DATA_STACK),
        ("cloudformation", "ExecuteChangeSet", DATA_STACK),
        ("cloudformation", "DescribeStacks", DATA_STACK),     # the CLI, until the stack is complete
        ("cloudformation", "DescribeStacks", DATA_STACK),     # the CLI: create or update?
        ("cloudformation", "GetTemplateSummary", DATA_STACK),  # an update: the CLI reads the stack's parameters
        ("cloudformation", "CreateChangeSet", DATA_STACK),    # then protected, as the file says
        ("cloudformation", "DescribeChangeSet", DATA_STACK),
        ("cloudformation", "ExecuteChangeSet", DATA_STACK),
        ("cloudformation", "DescribeStacks", DATA_STACK),     # the CLI, until the stack is complete
        ("cloudformation", "DescribeStacks", DATA_STACK),     # make deploy: its outputs
        ("s3", "the code"),                                   # aws cloudformation package
        ("cloudformation", "DescribeStacks", APP_STACK),      # make deploy: a first create that rolled back?
        ("cloudformation", "DescribeStacks", APP_STACK),      # the CLI: create or update?
        ("s3", "the template"),                               # over 51,200 bytes: through the bucket
        ("cloudformation", "CreateChangeSet", APP_STACK),
        ("cloudformation", "DescribeChangeSet", APP_STACK),
        ("cloudformation", "ExecuteChangeSet", APP_STACK),    # moto: 500 (AWS::Serverless not expanded)
    ]
    assert {r["region"] for r in done.requests} == {REGION}

    # the bucket, private
    blocked = moto.s3.get_public_access_block(Bucket=BUCKET)["PublicAccessBlockConfiguration"]
    assert all(blocked.values()) and len(blocked) == 4
    assert moto.s3.get_bucket_location(Bucket=BUCKET)["LocationConstraint"] == REGION

    # the data stack, created with the file's data parameters, its security groups in the team's VPC
    created, protected = change_sets(done.requests, DATA_STACK)
    assert created["type"] == "CREATE" and created["capabilities"] == {"CAPABILITY_IAM"}
    assert {"MaxCapacity": "4", "ExistingVpcId": moto.vpc, "ProxyName": f"{DATA_STACK}-proxy",
            "ExistingSubnetIds": moto.network.split("=")[-1].strip(),
            "DeletionProtection": "false"}.items() <= created["parameters"].items()
    assert set(created["parameters"]) == set(deploy.parameters_of(deploy.DATA_TEMPLATE))  # the rest at their defaults
    assert protected["type"] == "UPDATE" and protected["parameters"] == {**created["parameters"], "DeletionProtection": "true"}
    described = moto.cloudformation.describe_stacks(StackName=DATA_STACK)["Stacks"][0]
    assert described["StackStatus"] == "UPDATE_COMPLETE" and stack_parameters(moto, DATA_STACK)["MaxCapacity"] == "4"
    assert stack_parameters(moto, DATA_STACK)["DeletionProtection"] == "true"  # on once the create completed
    outputs = stack_outputs(moto, DATA_STACK)
    group = moto.ec2.describe_security_groups(GroupIds=[outputs["FunctionSecurityGroupId"]])["SecurityGroups"][0]
    assert group["VpcId"] == moto.vpc

    # the app stack's change set: the data stack's outputs as parameters, the package's template from the bucket
    app = change_set(done.requests, APP_STACK)
    assert app["capabilities"] == {"CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"}
    assert {
        "DataStack": DATA_STACK, "AppDatabaseHost": outputs["AppDatabaseHost"], "UseDualStackEndpoints": "true",
        "TickName": f"{APP_STACK}-tick", "JwksPath": "/.well-known/jwks.json", "MetricsNamespace": f"EventRunEngine/{APP_STACK}",
        **APP_PARAMETERS}.items() <= app["parameters"].items()
    assert set(app["parameters"]) == set(deploy.parameters_of(deploy.APP_TEMPLATE))  # the rest at their defaults
    assert outputs["AppDatabaseHost"] == f"{DATA_STACK}.DatabaseCluster.Endpoint.Address"  # moto's stand-in for Aurora's
    key = app["template"].split(f"/{BUCKET}/", 1)[1]
    template = yaml.safe_load(moto.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert template["Transform"] == "AWS::Serverless-2016-10-31"
    resources = template["Resources"]
    assert resources["MigrateSchema"]["Type"] == "Custom::Migrate"
    assert resources["APIHandler"]["DependsOn"] == resources["Tick"]["DependsOn"] == "MigrateSchema"  # migrations first
    code = {spec["Properties"]["CodeUri"] for spec in resources.values() if spec["Type"] == "AWS::Serverless::Function"}
    assert len(code) == 1 and code.pop().startswith(f"s3://{BUCKET}/{APP_STACK}/")
    assert {o["Key"] for o in moto.s3.list_objects_v2(Bucket=BUCKET)["Contents"]} >= {key}
    assert moto.cloudformation.describe_stacks(StackName=APP_STACK)["Stacks"][0]["StackStatus"] == "REVIEW_IN_PROGRESS"


@pytest.mark.packaging
@MOTO_SKIPS
def test_the_second_pass_and_the_paid_options_turned_on_later_update_the_data_stack_and_reach_the_app_as_parameters(moto, capsys):
    make_deploy(moto, PARAMS + moto.network, capsys, cfn.package_dir())
    done = make_deploy(moto, PARAMS + moto.network + LATER, capsys, cfn.package_dir())

    assert ("s3", "PUT /<bucket>") not in steps(done.requests)  # the bucket is there now
    data = change_set(done.requests, DATA_STACK)
    assert data["type"] == "UPDATE"
    assert {"EnableProxy": "true", "EnableInterfaceEndpoints": "true"}.items() <= data["parameters"].items()
    assert moto.cloudformation.describe_stacks(StackName=DATA_STACK)["Stacks"][0]["StackStatus"] == "UPDATE_COMPLETE"
    assert {"EnableProxy": "true", "EnableInterfaceEndpoints": "true"}.items() <= stack_parameters(moto, DATA_STACK).items()
    assert stack_outputs(moto, DATA_STACK)["UseDualStackEndpoints"] == "false"

    app = change_set(done.requests, APP_STACK)
    assert app["parameters"]["AppDatabaseHost"] == f"{DATA_STACK}.DatabaseProxy.Endpoint"  # the proxy's, now
    assert app["parameters"]["UseDualStackEndpoints"] == "false"
    assert app["parameters"]["OidcClientId"] == app["parameters"]["JwtAudience"] == "console-client"
    assert done.code == 1 and "500 Internal Server Error" in done.err  # moto stops the app stack where it did before


@pytest.mark.packaging
@MOTO_SKIPS
def test_a_line_removed_from_the_parameters_file_returns_its_parameter_to_the_templates_default(moto, capsys):
    """On an update the AWS CLI keeps the previous value of a parameter it is not given: a proxy turned off by
    removing its line would stay on (and billed) with nothing said. Every declared parameter is sent."""
    make_deploy(moto, PARAMS + moto.network + LATER, capsys, cfn.package_dir())
    done = make_deploy(moto, PARAMS + moto.network, capsys, cfn.package_dir())

    data = change_set(done.requests, DATA_STACK)
    assert data["type"] == "UPDATE"
    assert {"EnableProxy": "false", "EnableInterfaceEndpoints": "false"}.items() <= data["parameters"].items()
    assert {"EnableProxy": "false", "EnableInterfaceEndpoints": "false"}.items() <= stack_parameters(moto, DATA_STACK).items()
    app = change_set(done.requests, APP_STACK)
    assert app["parameters"]["OidcClientId"] == "" and app["parameters"]["JwtAudience"] == "events-console"
    assert app["parameters"]["AppDatabaseHost"] != f"{DATA_STACK}.DatabaseProxy.Endpoint"  # the cluster's again


@pytest.mark.parametrize("params, says", [
    (PARAMS + "OidcClientId=console-client\n", "set JwtAudience=console-client too"),
    (PARAMS + "JwtAudiance=x\n", "not a parameter of infra/data.yaml or infra/app.yaml: JwtAudiance"),
    (PARAMS + "AppDatabaseHost=db.example\n", "AppDatabaseHost: make deploy fills these itself"),
    (PARAMS + "TickName=mine\n", "TickName: make deploy fills these itself"),
    ("GameBridgeUrl=https://bridge.example.org\n", "must set JwtIssuer, JwtJwksUrl"),
    (PARAMS.replace("https://id.example.org/", "https://cognito-idp.eu-west-1.amazonaws.com/"),
     "JwtJwksUrl's host cognito-idp.eu-west-1.amazonaws.com has no IPv6 address (AAAA)"),
])
def test_a_parameters_file_with_a_mistake_is_refused_before_aws_is_called(moto, capsys, params, says, monkeypatch):
    monkeypatch.setattr(preflight, "resolve", Hosts(ipv4_only=["cognito-idp.eu-west-1.amazonaws.com"]))
    done = make_deploy(moto, params, capsys)
    assert done.code == 1 and says in done.err
    assert done.requests == []


# ── the tail moto cannot reach (the module's docstring): against the recorded stand-in ──

def fake_deploy(tmp_path, params: str) -> subprocess.CompletedProcess:
    aws = tmp_path / "aws"
    aws.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                   "from tests.support.fake_aws import main\nsys.exit(main(sys.argv[1:]))\n")
    aws.chmod(0o755)
    (tmp_path / "prod.params").write_text(params)
    return subprocess.run(  # make deploy with the resolver stand-in: every host dual-stack, nothing asked of DNS
        [sys.executable, "-m", "tests.support.resolver", "--stage", "prod", "--region", REGION, "--params", str(tmp_path / "prod.params"),
         "--out", str(tmp_path / "out"), "--packaged", str(cfn.package_dir()), "--aws", str(aws)],
        cwd=ROOT, env={"PATH": "/usr/bin:/bin", "FAKE_AWS_STATE": str(tmp_path), "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=120)


@pytest.mark.packaging
def test_once_the_app_stack_is_up_the_deploy_says_what_is_left_by_hand(tmp_path):
    first = fake_deploy(tmp_path, PARAMS)
    assert first.returncode == 0, first.stderr
    calls = [json.loads(line)[:2] for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert calls[-2:] == [["cloudformation", "describe-stacks"], ["sns", "list-subscriptions-by-topic"]]
    assert "ops@example.org must open AWS's 'Subscription Confirmation' e-mail" in first.stdout
    assert "register https://a1b2c3.execute-api.eu-west-1.amazonaws.com/api/console as a redirect URI" in first.stdout
    assert "JwtAudience=<its id>" in first.stdout and "aws secretsmanager get-secret-value" in first.stdout
    assert ("The game server's signal key: aws secretsmanager get-secret-value --region eu-west-1 --secret-id"
            " arn:aws:secretsmanager:eu-west-1:123456789012:secret:AppSecret-AbCdEf --query SecretString --output text"
            """ | python3 -c 'import json, sys; print(json.load(sys.stdin)["signal_key"])'""") in first.stdout
    second = fake_deploy(tmp_path, PARAMS + LATER)
    assert second.returncode == 0, second.stderr
    assert "redirect URI" not in second.stdout  # the second pass is done


@pytest.mark.packaging
def test_an_unconfirmed_cue_e_mail_is_said_as_the_alarm_e_mail_is(tmp_path):
    """CueEmail subscribes an address to the cue topic as AlarmEmail does to the alarm topic; only the alarm
    e-mail's pending confirmation was said."""
    done = fake_deploy(tmp_path, PARAMS + "CueEmail=gm@example.org\n")
    assert done.returncode == 0, done.stderr
    assert "ops@example.org must open AWS's 'Subscription Confirmation' e-mail and confirm: until then no alarm" in done.stdout
    assert ("gm@example.org must open AWS's 'Subscription Confirmation' e-mail and confirm: until then no cue on the cue"
            " topic reaches them") in done.stdout


@pytest.mark.packaging
@pytest.mark.parametrize("stack", [DATA_STACK, APP_STACK])
def test_a_first_create_that_rolled_back_is_deleted_and_created_again(tmp_path, stack):
    """CloudFormation can only delete a stack in ROLLBACK_COMPLETE (a new account's Lambda concurrency quota fails
    the app stack's first create): make deploy used to stop there, and the only remedy the docs named, make
    teardown, deletes the data stack too."""
    assert fake_deploy(tmp_path, PARAMS).returncode == 0
    state = json.loads((tmp_path / "state.json").read_text())
    (tmp_path / "state.json").write_text(json.dumps({**state, "statuses": {stack: "ROLLBACK_COMPLETE"}}))
    (tmp_path / "calls.jsonl").unlink()

    again = fake_deploy(tmp_path, PARAMS)
    assert again.returncode == 0, again.stderr
    assert f"{stack} is ROLLBACK_COMPLETE: its first create failed" in again.stdout
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    deleted = [c[c.index("--stack-name") + 1] for c in calls if c[:2] == ["cloudformation", "delete-stack"]]
    assert deleted == [stack]  # the other stack is left as it is
    operations = [(c[1], c[c.index("--stack-name") + 1]) for c in calls if c[:2] in (
        ["cloudformation", "delete-stack"], ["cloudformation", "deploy"]) and c[c.index("--stack-name") + 1] == stack]
    assert operations[0] == ("delete-stack", stack) and set(operations[1:]) == {("deploy", stack)}  # then created again


@pytest.mark.packaging
def test_a_stack_whose_rollback_failed_is_left_to_the_operator_with_the_commands_named(tmp_path):
    assert fake_deploy(tmp_path, PARAMS).returncode == 0
    state = json.loads((tmp_path / "state.json").read_text())
    (tmp_path / "state.json").write_text(json.dumps({**state, "statuses": {APP_STACK: "ROLLBACK_FAILED"}}))
    again = fake_deploy(tmp_path, PARAMS)
    assert again.returncode == 1
    assert f"{APP_STACK} is ROLLBACK_FAILED" in again.stderr
    assert f"aws cloudformation delete-stack --region {REGION} --stack-name {APP_STACK}" in again.stderr
    assert "delete-stack" not in (tmp_path / "calls.jsonl").read_text()


@pytest.mark.packaging
def test_an_app_stack_whose_update_rollback_failed_is_refused_naming_the_command_that_continues_it(tmp_path):
    """A migration that failed during an upgrade could leave the app stack in UPDATE_ROLLBACK_FAILED (the rollback's
    Update to MigrateSchema failed too). CloudFormation then refuses every update, and make deploy stopped at the CLI's
    'can not be updated' with no way out said: it names the continue-update-rollback that skips MigrateSchema."""
    assert fake_deploy(tmp_path, PARAMS).returncode == 0
    state = json.loads((tmp_path / "state.json").read_text())
    (tmp_path / "state.json").write_text(json.dumps({**state, "statuses": {APP_STACK: "UPDATE_ROLLBACK_FAILED"}}))
    (tmp_path / "calls.jsonl").unlink()
    again = fake_deploy(tmp_path, PARAMS)
    assert again.returncode == 1
    assert f"{APP_STACK} is UPDATE_ROLLBACK_FAILED" in again.stderr
    assert (f"aws cloudformation continue-update-rollback --stack-name {APP_STACK} --region {REGION}"
            " --resources-to-skip MigrateSchema\n") in again.stderr
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [c[c.index("--stack-name") + 1] for c in calls if c[:2] == ["cloudformation", "deploy"]] == [DATA_STACK]


@pytest.mark.packaging
def test_a_data_stack_whose_update_rollback_failed_is_refused_naming_the_command_that_continues_it(tmp_path):
    assert fake_deploy(tmp_path, PARAMS).returncode == 0
    state = json.loads((tmp_path / "state.json").read_text())
    (tmp_path / "state.json").write_text(json.dumps({**state, "statuses": {DATA_STACK: "UPDATE_ROLLBACK_FAILED"}}))
    again = fake_deploy(tmp_path, PARAMS)
    assert again.returncode == 1 and f"{DATA_STACK} is UPDATE_ROLLBACK_FAILED" in again.stderr
    assert f"`aws cloudformation continue-update-rollback --stack-name {DATA_STACK} --region {REGION}`" in again.stderr
    assert "--resources-to-skip" not in again.stderr  # the data stack has no custom resource


def test_the_example_parameters_file_names_only_parameters_the_templates_declare():
    example = (ROOT / "infra" / "example.params").read_text()
    named = {line.lstrip("# ").split("=", 1)[0] for line in example.splitlines() if "=" in line and not line.startswith("# ──")}
    named = {n for n in named if n.isidentifier()}
    declared = set(deploy.parameters_of(deploy.DATA_TEMPLATE)) | set(deploy.parameters_of(deploy.APP_TEMPLATE))
    assert named <= declared, named - declared
    assert declared - set(deploy.FILLED_HERE) - {"MetricsNamespace", "ParkedCueAlarmSeconds", "PausedRunAlarmSeconds",
                                                 "DueLagAlarmSeconds", "VpcCidr",
                                                 "MinCapacity", "SecondsUntilAutoPause", "EngineVersion", "DatabaseName",
                                                 "MasterUsername", "AppUsername", "IdleConnectionSeconds"} <= named


# ── make teardown, against moto's CloudFormation ──

TICK = f"{APP_STACK}-tick"
TEAMS_SECRET = f"arn:aws:secretsmanager:{REGION}:123456789012:secret:discord-bot-AbCdEf"
# The app stack as moto can hold it: what a teardown meets is its import of the data stack's exports.
APP_STAND_IN = {
    "Parameters": {"DataStack": {"Type": "String"}, "TickName": {"Type": "String"},
                   "DiscordBotTokenSecretArn": {"Type": "String", "Default": ""},
                   "SlackSigningSecretArn": {"Type": "String", "Default": ""}},
    "Resources": {"AlarmTopic": {"Type": "AWS::SNS::Topic", "Properties": {
        "DisplayName": {"Fn::ImportValue": {"Fn::Sub": "${DataStack}-FunctionSecurityGroupId"}}}}},
    "Outputs": {"SignalSecretArn": {"Value": f"arn:aws:secretsmanager:{REGION}:123456789012:secret:SignalSecret-AbCdEf"}},
}


@pytest.mark.realtime  # the AWS CLI
@MOTO_SKIPS
def test_teardown_deletes_the_app_stack_then_the_data_stack_with_its_protection_off(moto, capsys, monkeypatch):
    """The teardown the docs gave (delete the app stack, then `make deploy` with DeletionProtection=false, then
    delete the data stack) re-created the app stack, whose imports kept the data stack. make teardown deletes the
    app stack and waits, turns the cluster's protection off, deletes the data stack and waits, and prints what it
    keeps on purpose (the secrets, the final snapshot, the bucket) with how to delete each."""
    moto_cfn.deletions_refused_as_aws_refuses_them(monkeypatch)
    moto.cloudformation.create_stack(
        StackName=DATA_STACK, TemplateBody=deploy.DATA_TEMPLATE.read_text(), Capabilities=["CAPABILITY_IAM"],
        Parameters=[{"ParameterKey": key, "ParameterValue": value} for key, value in (
            ("ExistingVpcId", moto.vpc), ("ExistingSubnetIds", moto.network.split("=")[-1].strip()),
            ("DeletionProtection", "true"))])
    moto.cloudformation.create_stack(StackName=APP_STACK, TemplateBody=json.dumps(APP_STAND_IN), Parameters=[
        {"ParameterKey": "DataStack", "ParameterValue": DATA_STACK}, {"ParameterKey": "TickName", "ParameterValue": TICK},
        {"ParameterKey": "DiscordBotTokenSecretArn", "ParameterValue": TEAMS_SECRET}])

    def teardown(*confirm: str) -> SimpleNamespace:
        recording = moto_cfn.Recording(moto.url, moto.tmp / "recording.jsonl")
        code = deploy.main(["--teardown", *confirm, "--stage", "prod", "--region", REGION, "--aws", str(AWS_CLI)])
        recording.stop()
        printed = capsys.readouterr()
        return SimpleNamespace(code=code, out=printed.out, err=printed.err, requests=recording.requests())

    stack_parameters_before = stack_parameters(moto, DATA_STACK)
    unconfirmed = teardown()
    assert unconfirmed.code == 1 and f"run it again with CONFIRM={APP_STACK}" in unconfirmed.err
    assert unconfirmed.requests == []

    done = teardown("--confirm", APP_STACK)
    assert done.code == 0, done.err
    assert steps(done.requests) == [
        ("sts", "GetCallerIdentity"),
        ("cloudformation", "DescribeStacks", APP_STACK),
        ("cloudformation", "DeleteStack", APP_STACK),
        ("cloudformation", "DescribeStacks", APP_STACK),   # the CLI's waiter: gone
        ("cloudformation", "DescribeStacks", DATA_STACK),
        ("cloudformation", "UpdateStack", DATA_STACK),     # the cluster's deletion protection off
        ("cloudformation", "DescribeStacks", DATA_STACK),  # the CLI's waiter: updated
        ("cloudformation", "DeleteStack", DATA_STACK),
        ("cloudformation", "DescribeStacks", DATA_STACK),  # the CLI's waiter: gone
    ]
    update = next(r["params"] for r in done.requests if r["operation"] == "UpdateStack")
    assert update["UsePreviousTemplate"] == "true"
    given = {update[key]: update.get(key.replace("ParameterKey", "ParameterValue"), "")  # a blank value is not in the form
             for key in update if key.endswith(".ParameterKey")}
    assert given == {**stack_parameters_before, "DeletionProtection": "false"}  # the rest as they were
    for stack in (APP_STACK, DATA_STACK):
        with pytest.raises(moto.cloudformation.exceptions.ClientError, match="does not exist"):
            moto.cloudformation.describe_stacks(StackName=stack)
    kept = done.out.split("Kept on purpose", 1)[1]
    delete = "aws secretsmanager delete-secret --region eu-west-1 --recovery-window-in-days 7 --secret-id"
    assert f"a secret the stacks made: {delete} {APP_STAND_IN['Outputs']['SignalSecretArn']['Value']}" in kept
    assert f"a secret your team made (the parameters file names it): {delete} {TEAMS_SECRET}" in kept
    assert "SlackSigningSecretArn" not in kept and kept.count("your team made") == 1  # an empty one is none
    assert f"aws s3 rb --region eu-west-1 s3://{BUCKET} --force" in kept
    # the snapshot: found by its cluster and deleted, not every manual snapshot of the account listed
    assert ("--db-cluster-identifier event-run-engine-prod-data --snapshot-type manual --query"
            " 'DBClusterSnapshots[].DBClusterSnapshotIdentifier' --output text") in kept
    assert "aws rds delete-db-cluster-snapshot --region eu-west-1 --db-cluster-snapshot-identifier <that name>" in kept
    assert "aws apigateway get-account --region eu-west-1 --query cloudwatchRoleArn" in kept and "aws iam delete-role" in kept
    assert (f"aws scheduler list-schedules --region eu-west-1 --name-prefix {TICK}-`, then"
            " `aws scheduler delete-schedule --region eu-west-1 --name <each>`") in kept


@pytest.mark.realtime  # make -n
@pytest.mark.parametrize("target", ["migrate", "rotate", "unlock", "mark-applied"])
def test_make_migrate_rotate_unlock_and_mark_applied_call_the_region_given(target):
    """`make migrate REGION=eu-north-1` used to invoke the function in whatever region the shell's profile named
    (boto3 reads AWS_DEFAULT_REGION, never REGION)."""
    done = subprocess.run(["make", "-n", target, "REGION=eu-north-1", "STACK=events-x", "ID=0079.event-run-log-kind"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    [command] = [line for line in done.stdout.splitlines() if "invoke_migrate.py" in line]
    assert command.endswith("--region 'eu-north-1'") and "--stack events-x" in command
    if target == "mark-applied":
        assert "--action mark_applied --id '0079.event-run-log-kind'" in command


@pytest.mark.realtime  # deploy.main runs the AWS CLI (test_tiers reads it so), though this case returns first
def test_a_teardown_without_a_region_is_told_as_a_teardown(monkeypatch, capsys):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    assert deploy.main(["--teardown", "--confirm", APP_STACK]) == 2
    assert capsys.readouterr().err.startswith("make teardown: set REGION=<aws region>")  # it said "make deploy"
