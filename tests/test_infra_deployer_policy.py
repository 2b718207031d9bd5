"""infra/deployer-policy.json grants what deploying needs: the actions CloudFormation takes, with the caller's
rights, for every resource type the stacks hold, and the AWS calls `infra/` makes or tells the operator to make.

What each resource type needs is CloudFormation's own word: the handlers' permissions in the resource schemas
cfn-lint ships (its data/schemas). So a resource type added to a template fails here until the policy grants what
its handlers list, less those listed in NOT_NEEDED (each for a property no template sets, with why). The SAM types
are expanded as the transform expands them (only the properties the templates use: another one fails here until its
resources are named). The CLI's own commands (`cloudformation deploy`, `package`, `wait`, `s3 rb`) are checked
against what moto saw them call."""

import fnmatch
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import botocore.session
import cfnlint
import pytest

from infra import deploy
from tests.support import aws_world, cfn, moto_cfn

ROOT = Path(__file__).resolve().parents[1]
POLICY = json.loads((ROOT / "infra" / "deployer-policy.json").read_text())
SCHEMAS = Path(cfnlint.__file__).parent / "data" / "schemas"
REGION = "eu-west-1"
AWS_CLI = shutil.which("aws", path=str(Path(sys.executable).parent))

# What the handlers list for properties the templates never set (each entry must still be listed by some handler,
# so the list cannot outlive its reason).
NOT_NEEDED = {
    "kms:*": "no template names a KMS key: Aurora, Lambda and Secrets Manager use their AWS managed keys, whose key "
             "policies let the account's callers use them through the service",
    "elasticfilesystem:*": "no function mounts a file system",
    "s3files:*": "no function mounts a file system",
    "firehose:*": "no log group delivers to Firehose",
    "vpc-lattice:*": "no VPC endpoint joins a service network",
    "vpce:*": "no VPC endpoint is cross-region",
    "s3:REST.PUT.OBJECT": "no log group delivers to S3 (and it names no IAM action)",
    "lambda:PassCapacityProvider": "no function runs on a capacity provider",
    "lambda:AssociateRuntimeAlias": "no function names a runtime alias",
    "logs:AssociateKmsKey": "no log group names a KMS key",
    "logs:DisassociateKmsKey": "no log group names a KMS key",
    "logs:CreateLogDelivery": "no log group delivers elsewhere",
    "logs:*DataProtectionPolicy": "no log group has a data protection policy",
    "logs:*IndexPolicy": "no log group has a field index policy",
    "logs:PutBearerTokenAuthentication": "no log group takes bearer tokens",
    "logs:*ResourcePolicy": "no log group has a resource policy",
    "logs:PutLogGroupDeletionProtection": "no log group is protected from deletion",
    "sns:PutDataProtectionPolicy": "no topic has a data protection policy",
    "ec2:AcceptAddressTransfer": "the Elastic IP is allocated, not transferred",
    "ec2:AllocateIpamPoolCidr": "no VPC draws from IPAM",
    "ec2:CreateVpcEncryptionControl": "no VPC sets encryption control",
    "ec2:*VpnGateway": "no VPN gateway",
    "iam:*GroupPolicy": "the managed policy is attached to roles only",
    "iam:*UserPolicy": "the managed policy is attached to roles only",
    "iam:*RolePermissionsBoundary": "no role has a permissions boundary",
    "rds:*RoleTo*": "no cluster or instance has associated roles",
    "rds:RemoveRoleFrom*": "no cluster or instance has associated roles",
    "rds:*ReadReplica": "no read replica",
    "rds:*HttpEndpoint": "the Data API is off",
    "rds:RemoveFromGlobalCluster": "no global database",
    "rds:*DBInstanceAutomatedBackupsReplication": "no cross-region backup replication",
    "rds:RestoreDBInstance*": "Aurora's instances are restored with their cluster",
    "rds:CreateDBSnapshot": "an Aurora instance keeps no snapshot of its own (the cluster's final snapshot does)",
    "secretsmanager:*RegionsFromReplication": "no secret is replicated",
    "secretsmanager:ReplicateSecretToRegions": "no secret is replicated",
    "cloudfront:*ConnectionGroup": "the front is a standard distribution, not a tenant one",
    "cloudfront:GetVpcOrigin": "the front's origin is the identity provider's public host",
}

# The SAM types, as the transform expands the properties the templates give them.
SAM_FUNCTION = {"Architectures", "CodeUri", "Environment", "EventInvokeConfig", "Events", "FunctionName", "Handler",
                "LoggingConfig", "MemorySize", "ReservedConcurrentExecutions", "Role", "Runtime", "Tags", "Timeout",
                "Tracing", "VpcConfig"}
SAM_EVENTS = {"Schedule": ("AWS::Events::Rule", "AWS::Lambda::Permission"), "Api": ("AWS::Lambda::Permission",)}
SAM_API = {"AccessLogSetting", "DefinitionBody", "EndpointConfiguration", "MethodSettings", "MinimumCompressionSize",
           "Name", "StageName"}

# The AWS CLI's own commands (awscli/customizations), as the API calls they make; checked against moto below.
CLI_COMMANDS = {
    ("cloudformation", "deploy"): {"cloudformation:DescribeStacks", "cloudformation:GetTemplateSummary",
                                   "cloudformation:CreateChangeSet", "cloudformation:DescribeChangeSet",
                                   "cloudformation:ExecuteChangeSet", "s3:GetObject", "s3:PutObject"},
    ("cloudformation", "package"): {"s3:GetObject", "s3:PutObject"},
    ("cloudformation", "wait"): {"cloudformation:DescribeStacks"},
    ("s3", "rb"): {"s3:ListBucket", "s3:DeleteObject", "s3:DeleteBucket"},
}
# An operation whose IAM action has another name.
IAM_NAME = {"s3:HeadBucket": "s3:ListBucket", "s3:HeadObject": "s3:GetObject", "s3:ListObjectsV2": "s3:ListBucket",
            "s3:PutPublicAccessBlock": "s3:PutBucketPublicAccessBlock", "s3:DeleteObjects": "s3:DeleteObject",
            "lambda:Invoke": "lambda:InvokeFunction"}


def allowed(action: str) -> bool:
    """Whether an Allow statement of the policy names `action` (its wildcards as IAM reads them, without case)."""
    for statement in POLICY["Statement"]:
        patterns = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if statement["Effect"] == "Allow" and any(fnmatch.fnmatchcase(action.lower(), p.lower()) for p in patterns):
            return True
    return False


def not_needed(action: str) -> bool:
    return any(fnmatch.fnmatchcase(action.lower(), pattern.lower()) for pattern in NOT_NEEDED)


def resource_types(template: dict) -> set[str]:
    """Every resource type the template makes, the SAM types as the resources the transform makes of them."""
    types: set[str] = set()
    for name, resource in template["Resources"].items():
        kind, properties = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::Serverless::Function":
            assert set(properties) <= SAM_FUNCTION, f"{name}: name what SAM makes of {set(properties) - SAM_FUNCTION}"
            types |= {"AWS::Lambda::Function"} | ({"AWS::IAM::Role"} if "Role" not in properties else set())
            types |= {"AWS::Lambda::EventInvokeConfig"} if "EventInvokeConfig" in properties else set()
            for event in properties.get("Events", {}).values():
                assert event["Type"] in SAM_EVENTS, f"{name}: name what SAM makes of a {event['Type']} event"
                types |= set(SAM_EVENTS[event["Type"]])
        elif kind == "AWS::Serverless::Api":
            assert set(properties) <= SAM_API, f"{name}: name what SAM makes of {set(properties) - SAM_API}"
            types |= {"AWS::ApiGateway::RestApi", "AWS::ApiGateway::Deployment", "AWS::ApiGateway::Stage"}
        else:
            types.add(kind)
    return types


def handler_permissions(kind: str) -> set[str]:
    """What CloudFormation's handlers of `kind` call (create, read, update, delete), per its resource schema."""
    where = json.loads((SCHEMAS / "providers" / f"{REGION}.json").read_text())
    assert kind in where, f"{kind}: no resource schema in cfn-lint {cfnlint.__version__}"
    schema = json.loads((SCHEMAS / "resources" / f"{where[kind]}.json").read_text())
    assert "handlers" in schema, f"{kind}: its schema lists no handlers' permissions: name them here"
    return {action for handler in ("create", "read", "update", "delete")
            for action in schema["handlers"].get(handler, {}).get("permissions", [])}


def needs_of(types: set[str]) -> dict[str, set[str]]:
    """Each action the resource types need, with the types that need it."""
    needs: dict[str, set[str]] = {}
    for kind in sorted(types):
        listed = {"lambda:InvokeFunction"} if kind.startswith("Custom::") else handler_permissions(kind)  # the service token
        for action in listed:
            needs.setdefault(action, set()).add(kind)
    return needs


@pytest.mark.packaging
def test_the_policy_grants_what_every_resource_type_of_the_stacks_needs():
    types = resource_types(cfn.load(cfn.DATA_TEMPLATE)) | resource_types(cfn.packaged_app())
    assert {"AWS::RDS::DBCluster", "AWS::Lambda::Function", "AWS::CloudFront::Distribution", "Custom::Migrate"} <= types
    needs = needs_of(types)
    missing = {action: sorted(kinds) for action, kinds in needs.items() if not allowed(action) and not not_needed(action)}
    assert missing == {}, "infra/deployer-policy.json lacks these (or NOT_NEEDED should say why not)"
    stale = [pattern for pattern in NOT_NEEDED if not any(fnmatch.fnmatchcase(a.lower(), pattern.lower()) for a in needs)]
    assert stale == [], "no handler lists these any more"
    # teardown waits for Lambda's network interfaces only with this; CloudFormation invokes the migrate function as us
    assert allowed("ec2:DescribeNetworkInterfaces") and allowed("lambda:InvokeFunction")
    assert needs["ec2:DescribeNetworkInterfaces"] >= {"AWS::Lambda::Function"}


def test_a_new_resource_type_fails_until_its_actions_are_granted():
    """The check above, shown failing: an SQS queue is no part of the stacks, and the policy grants it nothing."""
    needs = needs_of({"AWS::SQS::Queue"})
    assert needs and not any(allowed(action) for action in needs)


def cli_calls() -> set[tuple[str, str]]:
    """Every `aws <service> <command>` infra/ runs (deploy.Aws calls) or tells the operator to run (its messages)."""
    found: set[tuple[str, str]] = set()
    for path in sorted((ROOT / "infra").glob("*.py")):
        text = path.read_text()
        found |= set(re.findall(r"\b(?:aws|self)(?:\.json)?\(\s*\"([a-z0-9-]+)\",\s*\"([a-z0-9-]+)\"", text))
        found |= set(re.findall(r"\baws (s3api|s3|[a-z0-9]+(?:-[a-z0-9]+)*) ([a-z][a-z0-9-]+)", text))
    return found


def boto3_calls() -> set[str]:
    """Every operation infra/'s boto3 clients call (invoke_migrate.py: make migrate, rotate, unlock and purge)."""
    found: set[str] = set()
    session = botocore.session.get_session()
    for path in sorted((ROOT / "infra").glob("*.py")):
        text = path.read_text()
        methods = set(re.findall(r"\.([a-z][a-z0-9_]*)\(", text))
        for service in set(re.findall(r"client\(\"([a-z0-9-]+)\"", text)):
            model = session.get_service_model(service)
            found |= {IAM_NAME.get(f"{model.signing_name}:{op}", f"{model.signing_name}:{op}")
                      for op in model.operation_names if botocore.xform_name(op) in methods}
    return found


def iam_actions(service: str, command: str) -> set[str]:
    """The IAM actions `aws <service> <command>` needs."""
    if (service, command) in CLI_COMMANDS:
        return CLI_COMMANDS[service, command]
    model = botocore.session.get_session().get_service_model("s3" if service == "s3api" else service)
    [operation] = [op for op in model.operation_names if botocore.xform_name(op, "-") == command] or [None]
    assert operation, f"`aws {service} {command}`: not an API call: add what it calls to CLI_COMMANDS"
    if model.signing_name == "apigateway":  # API Gateway's management actions are named by their HTTP method
        return {f"apigateway:{model.operation_model(operation).http['method']}"}
    action = f"{model.signing_name}:{operation}"
    return {IAM_NAME.get(action, action)}


def test_the_policy_grants_every_aws_call_the_deploy_makes_or_names():
    calls = cli_calls()
    assert {("cloudformation", "deploy"), ("lambda", "get-account-settings"), ("secretsmanager", "describe-secret"),
            ("s3api", "create-bucket"), ("cloudformation", "delete-stack")} <= calls
    actions = {action for service, command in calls for action in iam_actions(service, command)} | boto3_calls()
    assert {"lambda:InvokeFunction", "cloudformation:DescribeStacks", "s3:PutBucketPublicAccessBlock"} <= actions
    assert sorted(a for a in actions if not allowed(a)) == []


def test_the_policy_is_a_managed_policy_without_a_service_wide_grant():
    """A customer managed policy holds 6,144 characters, whitespace not counted; no statement grants a whole service,
    and PassRole goes to the three services that take the stacks' roles."""
    assert len(re.sub(r"\s", "", json.dumps(POLICY))) <= 6144
    patterns = [p for s in POLICY["Statement"] for p in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])]
    assert not [p for p in patterns if p == "*" or p.endswith(":*")]
    [passing] = [s for s in POLICY["Statement"] if s["Action"] == "iam:PassRole"]
    assert set(passing["Condition"]["StringEquals"]["iam:PassedToService"]) == {
        "lambda.amazonaws.com", "rds.amazonaws.com", "apigateway.amazonaws.com"}


def s3_action(request: dict) -> str:
    """The IAM action of an S3 request moto recorded (its method, its path's depth and its sub-resource)."""
    method, target = request["operation"].split(" ", 1)
    path, _, resource = target.partition("?")
    on_object = path.strip("/").count("/") >= 1
    if resource == "publicAccessBlock":
        return "s3:PutBucketPublicAccessBlock"
    if resource == "delete":
        return "s3:DeleteObject"
    if on_object:
        return {"HEAD": "s3:GetObject", "GET": "s3:GetObject", "PUT": "s3:PutObject", "POST": "s3:PutObject",
                "DELETE": "s3:DeleteObject"}[method]
    return {"HEAD": "s3:ListBucket", "GET": "s3:ListBucket", "PUT": "s3:CreateBucket", "DELETE": "s3:DeleteBucket"}[method]


@pytest.mark.realtime  # the AWS CLI
def test_the_clis_own_commands_call_what_the_table_says(tmp_path):
    """`cloudformation package`, `deploy --s3-bucket` and `wait`, `s3 rb --force`, and the artifact bucket's s3api
    calls, run by the real CLI against moto: every request moto took is an action CLI_COMMANDS (or the s3api
    calls' own names) gives, and the policy grants."""
    assert AWS_CLI, "the AWS CLI (awscli in requirements-dev.txt) is not in this venv"
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "handler.py").write_text("def handle(event, context):\n    return None\n")
    (tmp_path / "function.yaml").write_text(
        "Resources:\n  Function:\n    Type: AWS::Lambda::Function\n    Properties:\n      Code: code\n"
        "      Handler: handler.handle\n      Runtime: python3.13\n      Role: arn:aws:iam::123456789012:role/r\n")
    (tmp_path / "stack.yaml").write_text("Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n")
    bucket = "events-x-artifacts-123456789012-eu-west-1"
    with aws_world.moto_endpoint() as url, pytest.MonkeyPatch.context() as patch:  # undone before the server's own
        patch.setenv("AWS_ENDPOINT_URL", url.replace("127.0.0.1", "localhost"))  # path-style S3, as the deploy test
        for name in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
            patch.setenv(name, str(tmp_path / "none"))
        patch.setenv("HOME", str(tmp_path))
        aws = deploy.Aws(REGION, str(AWS_CLI), echo=lambda _: None)
        recording = moto_cfn.Recording(url, tmp_path / "recording.jsonl")
        deploy.ensure_bucket(aws, bucket)
        aws("cloudformation", "package", "--template-file", str(tmp_path / "function.yaml"), "--s3-bucket", bucket,
            "--output-template-file", str(tmp_path / "packaged.yaml"))
        aws("cloudformation", "deploy", "--template-file", str(tmp_path / "stack.yaml"), "--stack-name", "events-x",
            "--s3-bucket", bucket, "--no-fail-on-empty-changeset")
        aws("cloudformation", "wait", "stack-create-complete", "--stack-name", "events-x")
        subprocess.run([str(AWS_CLI), "s3", "rb", f"s3://{bucket}", "--force", "--region", REGION], check=True,
                       capture_output=True, timeout=120)
        recording.stop()
        requests = recording.requests()
    taken = {s3_action(r) if r["service"] == "s3" else f"{r['service']}:{r['operation']}" for r in requests}
    said = set().union(*(CLI_COMMANDS[c] for c in CLI_COMMANDS)) | {
        a for c in (("s3api", "head-bucket"), ("s3api", "create-bucket"), ("s3api", "put-public-access-block"))
        for a in iam_actions(*c)}
    assert {"s3:PutObject", "cloudformation:CreateChangeSet", "s3:DeleteBucket"} <= taken
    assert sorted(taken - said) == [] and sorted(a for a in taken if not allowed(a)) == []
