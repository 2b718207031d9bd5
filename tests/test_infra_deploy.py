"""`make deploy`'s sequence, run against a recorded stand-in for the AWS CLI (tests/support/fake_aws.py):
every call in order, the data stack's outputs handed to the app stack as parameters, a paid option turned on
later, and a parameters file with a mistake refused before AWS is called.

Why not moto's CloudFormation: its server needs Flask (not installed here) and it does not expand the
`AWS::Serverless` transform the packaged template uses, so it could not run the app stack anyway; the
templates themselves are checked offline by cfn-lint and checkov (tests/test_infra_templates.py, test_infra_scan.py)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import cfn

ROOT = Path(__file__).resolve().parents[1]
PARAMS = """# a team's file
GameBridgeUrl=https://bridge.example.org
JwtJwksUrl=https://id.example.org/.well-known/jwks.json
JwtIssuer=https://id.example.org
AlarmEmail=ops@example.org
CorsOrigin=https://console.example.org
MaxCapacity=4
"""


@pytest.fixture
def fake_aws(tmp_path):
    aws = tmp_path / "aws"
    aws.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                   "from tests.support.fake_aws import main\nsys.exit(main(sys.argv[1:]))\n")
    aws.chmod(0o755)
    return aws


def make_deploy(tmp_path, fake_aws, params: str) -> tuple[subprocess.CompletedProcess, list[list[str]]]:
    (tmp_path / "prod.params").write_text(params)
    calls = tmp_path / "calls.jsonl"
    calls.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "infra.deploy", "--stage", "prod", "--region", "eu-west-1", "--params", str(tmp_path / "prod.params"),
         "--out", str(tmp_path / "out"), "--packaged", str(cfn.package_dir()), "--aws", str(fake_aws)],
        cwd=ROOT, env={"PATH": "/usr/bin:/bin", "FAKE_AWS_STATE": str(tmp_path), "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=120)
    recorded = [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []
    return done, recorded


def option(argv, name):
    return argv[argv.index(name) + 1]


def overrides(argv) -> dict:
    start = argv.index("--parameter-overrides") + 1
    end = next((i for i in range(start, len(argv)) if argv[i].startswith("--")), len(argv))
    return dict(item.split("=", 1) for item in argv[start:end])


@pytest.mark.packaging
def test_a_first_deploy_runs_every_step_in_order_and_says_what_is_left_by_hand(tmp_path, fake_aws):
    done, calls = make_deploy(tmp_path, fake_aws, PARAMS)
    assert done.returncode == 0, done.stderr
    assert [tuple(c[:2]) for c in calls] == [
        ("sts", "get-caller-identity"),
        ("s3api", "head-bucket"), ("s3api", "create-bucket"), ("s3api", "put-public-access-block"),
        ("cloudformation", "deploy"),           # the data stack
        ("cloudformation", "describe-stacks"),  # its outputs
        ("cloudformation", "package"),          # the zip to the bucket
        ("cloudformation", "deploy"),           # the app stack: MigrateSchema runs before the API and the tick
        ("cloudformation", "describe-stacks"),
        ("sns", "list-subscriptions-by-topic"),  # is the alarm e-mail confirmed?
    ]
    assert all(option(c, "--region") == "eu-west-1" for c in calls)
    bucket = option(calls[2], "--bucket")
    assert bucket == "event-run-engine-prod-artifacts-123456789012-eu-west-1"
    assert option(calls[2], "--create-bucket-configuration") == "LocationConstraint=eu-west-1"
    data, app = calls[4], calls[7]
    assert option(data, "--template-file") == str(cfn.DATA_TEMPLATE) and option(data, "--stack-name") == "event-run-engine-prod-data"
    assert overrides(data) == {"MaxCapacity": "4"}
    assert option(calls[6], "--s3-bucket") == bucket and option(calls[6], "--template-file") == str(tmp_path / "out" / "sam.yaml")
    assert option(app, "--template-file") == option(calls[6], "--output-template-file")
    assert {"CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"} <= set(app)
    assert overrides(app) == {
        "DataStack": "event-run-engine-prod-data",
        "AppDatabaseHost": "event-run-engine-prod-data.cluster-abc.eu-west-1.rds.amazonaws.com",
        "UseDualStackEndpoints": "true",
        "GameBridgeUrl": "https://bridge.example.org", "JwtJwksUrl": "https://id.example.org/.well-known/jwks.json",
        "JwtIssuer": "https://id.example.org", "AlarmEmail": "ops@example.org", "CorsOrigin": "https://console.example.org",
    }
    out = done.stdout
    assert "ops@example.org must open AWS's 'Subscription Confirmation' e-mail" in out
    assert "register https://a1b2c3.execute-api.eu-west-1.amazonaws.com/api/console as a redirect URI" in out
    assert "JwtAudience=<its id>" in out and "aws secretsmanager get-secret-value" in out
    assert ("The game server's signal key: aws secretsmanager get-secret-value --region eu-west-1 --secret-id"
            " arn:aws:secretsmanager:eu-west-1:123456789012:secret:SignalSecret-AbCdEf --query SecretString") in out


@pytest.mark.packaging
def test_the_second_pass_and_a_paid_option_turned_on_later_reach_the_app_as_parameters(tmp_path, fake_aws):
    assert make_deploy(tmp_path, fake_aws, PARAMS)[0].returncode == 0
    later = PARAMS + "OidcClientId=console-client\nJwtAudience=console-client\nEnableProxy=true\nEnableInterfaceEndpoints=true\n"
    done, calls = make_deploy(tmp_path, fake_aws, later)
    assert done.returncode == 0, done.stderr
    assert ("s3api", "create-bucket") not in [tuple(c[:2]) for c in calls]  # the bucket is there now
    data, app = [c for c in calls if c[:2] == ["cloudformation", "deploy"]]
    assert overrides(data) == {"MaxCapacity": "4", "EnableProxy": "true", "EnableInterfaceEndpoints": "true"}
    assert overrides(app)["AppDatabaseHost"] == "event-run-engine-prod-data-proxy.proxy-abc.eu-west-1.rds.amazonaws.com"
    assert overrides(app)["UseDualStackEndpoints"] == "false"
    assert overrides(app)["OidcClientId"] == overrides(app)["JwtAudience"] == "console-client"
    assert "redirect URI" not in done.stdout


@pytest.mark.packaging
@pytest.mark.parametrize("params, says", [
    (PARAMS + "OidcClientId=console-client\n", "set JwtAudience=console-client too"),
    (PARAMS + "JwtAudiance=x\n", "not a parameter of infra/data.yaml or infra/app.yaml: JwtAudiance"),
    (PARAMS + "AppDatabaseHost=db.example\n", "AppDatabaseHost: make deploy fills these itself"),
    ("GameBridgeUrl=https://bridge.example.org\n", "must set JwtIssuer, JwtJwksUrl"),
])
def test_a_parameters_file_with_a_mistake_is_refused_before_aws_is_called(tmp_path, fake_aws, params, says):
    done, calls = make_deploy(tmp_path, fake_aws, params)
    assert done.returncode == 1 and says in done.stderr
    assert calls == []


def test_the_example_parameters_file_names_only_parameters_the_templates_declare():
    from infra import deploy

    example = (ROOT / "infra" / "example.params").read_text()
    named = {line.lstrip("# ").split("=", 1)[0] for line in example.splitlines() if "=" in line and not line.startswith("# ──")}
    named = {n for n in named if n.isidentifier()}
    declared = set(deploy.parameters_of(deploy.DATA_TEMPLATE)) | set(deploy.parameters_of(deploy.APP_TEMPLATE))
    assert named <= declared, named - declared
    assert declared - set(deploy.FILLED_HERE) - {"MetricsNamespace", "ParkedCueAlarmSeconds", "PausedRunAlarmSeconds",
                                                 "DueLagAlarmSeconds", "VpcCidr",
                                                 "MinCapacity", "SecondsUntilAutoPause", "EngineVersion", "DatabaseName",
                                                 "MasterUsername", "AppUsername", "IdleConnectionSeconds"} <= named
