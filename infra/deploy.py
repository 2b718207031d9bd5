"""`make deploy STAGE=prod`: the whole deployment, in order, with the AWS CLI — from nothing, or as an upgrade.

    python -m infra.deploy --stage prod --region eu-west-1 --params infra/prod.params

0. the preflight (`infra/preflight.py`), before any AWS call: every outbound host
   the stack is given resolves over IPv6 (or the way it is reached), the AWS APIs
   the functions call (EventBridge Scheduler among them) have a name in the region
   they can reach, and every name derived from the stack name fits AWS's limits;
1. who and where: `aws sts get-caller-identity` (the account), the region given;
2. the artifact bucket (`<stack>-artifacts-<account>-<region>` unless named, shortened
   to fit), created private if missing: CloudFormation reads the code from it;
3. the data stack (`infra/data.yaml`: network, Aurora, secrets), with the data
   parameters of the parameters file; created the first time with the cluster's
   deletion protection off, and turned on (as the file says) once the create has
   completed, so a first create that fails rolls back whole instead of stopping at
   a cluster it may not delete;
4. the data stack's outputs: `AppDatabaseHost` and `UseDualStackEndpoints` become
   app parameters (not imports, so turning EnableProxy or EnableInterfaceEndpoints
   on later is one more `make deploy`);
5. the package (`infra/package.py`), with the CorsOrigin of the parameters file;
6. `aws cloudformation package` (the zip to the bucket) and `deploy` of the app
   stack (its template through the bucket too: it is over CloudFormation's 51,200
   bytes for a template sent inline): CloudFormation runs the package's migrations
   (the MigrateSchema custom resource) before it creates or updates the API and the
   tick, which depend on it;
7. the app stack's outputs, the alarm and cue e-mail subscriptions' state, and
   what is left to do by hand (the OIDC client's second pass, the game side's key).

The parameters file holds `Name=Value` lines (`#` starts a comment), each a
parameter of `infra/data.yaml` or `infra/app.yaml`; `infra/example.params` lists
them all; a parameter the file leaves out is sent at its template default, so removing
a line turns its option back off (left out of the call, CloudFormation would keep the
previous value). Anything else is refused before AWS is called, and so is an OIDC client
whose tokens the API would refuse (`JwtAudience` must be the client id). The names
derived from the stack's (TickName, ProxyName, the metric namespace unless the file
sets MetricsNamespace) and JwtJwksUrl's path (JwksPath) are filled here.

`--teardown` (`make teardown`) is the way back: the app stack deleted and waited
for, then the data stack's deletion protection turned off and the data stack
deleted (a final snapshot kept), and what outlives them printed with how to delete it.

A stack in UPDATE_ROLLBACK_FAILED (an update whose rollback failed: CloudFormation
refuses every update of it) is refused before anything is sent, naming the
`continue-update-rollback` that gets it out (skipping MigrateSchema for the app stack).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from infra import preflight

ROOT = Path(__file__).resolve().parents[1]
DATA_TEMPLATE = ROOT / "infra" / "data.yaml"
APP_TEMPLATE = ROOT / "infra" / "app.yaml"
FROM_DATA_STACK = ("AppDatabaseHost", "UseDualStackEndpoints")  # outputs the app takes as parameters
FILLED_HERE = ("DataStack", "TickName", "JwksPath", "ProxyName", *FROM_DATA_STACK)


class DeployError(Exception):
    """A deployment that cannot go on: the message says what to change."""


def parameters_of(template: Path) -> dict[str, dict[str, str]]:
    """The template's parameters and their properties' first lines, read from its `Parameters:` section (the
    templates are this repository's own YAML: two spaces a level, a parameter per `  Name:` line)."""
    found: dict[str, dict[str, str]] = {}
    inside, current = False, None
    for line in template.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            inside = line.rstrip() == "Parameters:"
            continue
        if not inside:
            continue
        if re.fullmatch(r"  \w+:\s*", line):
            current = found.setdefault(line.strip().rstrip(":"), {})
        elif current is not None and (match := re.fullmatch(r"    (\w+):\s*(.*)", line)):
            current[match.group(1)] = match.group(2)
    return found


def read_params(path: Path) -> dict[str, str]:
    if not path.exists():
        raise DeployError(f"no parameters file {path}: copy infra/example.params there and fill it in")
    values: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, equals, value = line.partition("=")
        if not equals or not name.strip():
            raise DeployError(f"{path}:{number}: expected Name=Value, got {line!r}")
        values[name.strip()] = value.strip()
    return values


def split_params(values: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The file's parameters as (data stack's, app stack's); refuses what neither template declares."""
    data_names, app = set(parameters_of(DATA_TEMPLATE)), parameters_of(APP_TEMPLATE)
    filled = sorted(set(values) & set(FILLED_HERE))
    if filled:
        raise DeployError(f"{', '.join(filled)}: make deploy fills these itself; remove them from the parameters file")
    unknown = sorted(set(values) - data_names - set(app))
    if unknown:
        raise DeployError(f"not a parameter of infra/data.yaml or infra/app.yaml: {', '.join(unknown)}")
    data = {k: v for k, v in values.items() if k in data_names}
    app_values = {k: v for k, v in values.items() if k in app}
    missing = sorted(n for n, spec in app.items() if "Default" not in spec and n not in app_values and n not in FILLED_HERE)
    if missing:
        raise DeployError(f"the parameters file must set {', '.join(missing)} (no default)")
    client = app_values.get("OidcClientId", "")
    if client and app_values.get("JwtAudience", app["JwtAudience"].get("Default", "")) != client:
        raise DeployError(f"OidcClientId is {client!r}: set JwtAudience={client} too (the console's tokens carry the client id as aud)")
    return data, app_values


def overrides(template: Path, values: dict[str, str]) -> list[str]:
    """Every parameter `template` declares: `values`' or else its default. A parameter left out of
    `--parameter-overrides` keeps its previous value on an update, so a line removed from the file would
    change nothing (a proxy turned off would stay on)."""
    defaults = {name: _scalar(spec["Default"]) for name, spec in parameters_of(template).items() if "Default" in spec}
    complete = {**defaults, **values}
    return ["--parameter-overrides", *(f"{k}={v}" for k, v in complete.items())] if complete else []


def _scalar(text: str) -> str:
    """A `Default:` line's YAML scalar as its string, quoted or not."""
    if text[:1] == '"':
        return str(json.loads(text))
    if text[:1] == "'":
        return text[1:-1].replace("''", "'")
    return text


class Aws:
    """The AWS CLI, one command at a time, each echoed before it runs."""

    def __init__(self, region: str, command: str = "aws", echo: Callable[[str], None] = print):
        self.region, self.command, self.echo = region, command, echo

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = [self.command, *args, "--region", self.region]
        self.echo("$ " + " ".join(argv))
        done = subprocess.run(argv, capture_output=True, text=True)  # noqa: S603 — the AWS CLI, no shell
        if check and done.returncode:
            raise DeployError(f"{' '.join(args[:2])} failed ({done.returncode}):\n{done.stderr.strip() or done.stdout.strip()}")
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "--output", "json").stdout or "null")

    def outputs(self, stack: str) -> dict[str, str]:
        stacks = self.json("cloudformation", "describe-stacks", "--stack-name", stack)["Stacks"]
        return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}

    def described(self, stack: str) -> dict[str, Any] | None:
        """The stack as describe-stacks tells it, or None when there is none of that name."""
        done = self("cloudformation", "describe-stacks", "--stack-name", stack, "--output", "json", check=False)
        if done.returncode:
            if "does not exist" in done.stderr:
                return None
            raise DeployError(f"cloudformation describe-stacks failed ({done.returncode}):\n{done.stderr.strip()}")
        return json.loads(done.stdout)["Stacks"][0]

    def wait(self, condition: str, stack: str) -> None:
        if self("cloudformation", "wait", condition, "--stack-name", stack, check=False).returncode:
            raise DeployError(f"{stack} did not reach {condition.removeprefix('stack-')}: `aws cloudformation "
                              f"describe-stack-events --region {self.region} --stack-name {stack}` says why")


def ensure_bucket(aws: Aws, bucket: str) -> None:
    if aws("s3api", "head-bucket", "--bucket", bucket, check=False).returncode == 0:
        return
    location = [] if aws.region == "us-east-1" else ["--create-bucket-configuration", f"LocationConstraint={aws.region}"]
    aws("s3api", "create-bucket", "--bucket", bucket, *location)
    aws("s3api", "put-public-access-block", "--bucket", bucket, "--public-access-block-configuration",
        "BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true")


def clear_failed_create(aws: Aws, stack: str, custom_resource: str | None = None) -> str | None:
    """The stack's status, once a first create that failed is out of the way: CloudFormation can only delete a
    stack in ROLLBACK_COMPLETE (the create rolled back whole, so nothing of it is left), so it is deleted here and
    created again; one whose rollback failed holds resources, and is the operator's to look at. So is an update
    whose rollback failed (UPDATE_ROLLBACK_FAILED: CloudFormation refuses every update until the rollback is
    continued), said with the command that continues it, skipping `custom_resource` (the stack's custom resource,
    whose rollback a function must answer) when that is what failed."""
    status = (aws.described(stack) or {}).get("StackStatus")
    events = f"`aws cloudformation describe-stack-events --region {aws.region} --stack-name {stack}`"
    if status == "ROLLBACK_COMPLETE":
        aws.echo(f"{stack} is ROLLBACK_COMPLETE: its first create failed ({events} says why); the empty stack is "
                 "deleted and created again")
        aws("cloudformation", "delete-stack", "--stack-name", stack)
        aws.wait("stack-delete-complete", stack)
        return None
    if status == "ROLLBACK_FAILED":
        raise DeployError(f"{stack} is ROLLBACK_FAILED: its first create failed and so did the rollback ({events} says "
                          f"which resource is left and why). Remove that cause, then `aws cloudformation delete-stack "
                          f"--region {aws.region} --stack-name {stack}` and make deploy again")
    if status == "UPDATE_ROLLBACK_FAILED":
        go_on = f"aws cloudformation continue-update-rollback --stack-name {stack} --region {aws.region}"
        if custom_resource is None:
            raise DeployError(f"{stack} is UPDATE_ROLLBACK_FAILED: an update failed and so did its rollback ({events} "
                              f"says which resource and why; CloudFormation refuses every update meanwhile). Remove that "
                              f"cause, then `{go_on}`, wait for UPDATE_ROLLBACK_COMPLETE, and make deploy again")
        raise DeployError(
            f"{stack} is UPDATE_ROLLBACK_FAILED: an update failed and so did its rollback ({events} says which resource "
            f"and why; CloudFormation refuses every update meanwhile). When it is {custom_resource} (its function did "
            f"not answer the rollback in time: busy with a make purge or make migrate, or killed), run\n"
            f"  {go_on} --resources-to-skip {custom_resource}\n"
            f"(the database keeps the schema it has, which the older code runs on), wait for UPDATE_ROLLBACK_COMPLETE "
            f"(`aws cloudformation describe-stacks --stack-name {stack} --region {aws.region}` shows it), then make deploy "
            f"again: it migrates what is missing. Another resource: remove its cause, then `{go_on}`")
    return status


def deploy_data_stack(aws: Aws, stack: str, params: dict[str, str]) -> None:
    """The data stack as the file says; the first create with the cluster unprotected until it completed."""
    def deploy_with(values: dict[str, str]) -> None:
        aws("cloudformation", "deploy", "--template-file", str(DATA_TEMPLATE), "--stack-name", stack,
            "--capabilities", "CAPABILITY_IAM", "--no-fail-on-empty-changeset", *overrides(DATA_TEMPLATE, values))

    status = clear_failed_create(aws, stack)
    protection = params.get("DeletionProtection", "true")  # the template's default
    if status is None and protection != "false":
        deploy_with({**params, "DeletionProtection": "false"})  # a protected cluster would stop its own rollback
        params = {**params, "DeletionProtection": protection}  # said, or the update would keep the previous value
    deploy_with(params)


def deploy(args: argparse.Namespace, aws: Aws, package: Callable[[Path, str], Any],
           resolve: preflight.Resolver = preflight.resolve) -> dict[str, str]:
    data_params, app_params = split_params(read_params(args.params))
    names = preflight.Names(args.stack, args.data_stack)
    preflight.check(names, aws.region, data_params, app_params, resolve=resolve, bucket=args.bucket, say=aws.echo)
    account = aws.json("sts", "get-caller-identity")["Account"]
    aws.echo(f"account {account}, region {aws.region}: data stack {args.data_stack}, app stack {args.stack}")
    bucket = args.bucket or names.bucket(account, aws.region)
    ensure_bucket(aws, bucket)

    deploy_data_stack(aws, args.data_stack, {**data_params, "ProxyName": names.proxy})
    data_out = aws.outputs(args.data_stack)
    missing = [name for name in FROM_DATA_STACK if name not in data_out]
    if missing:
        raise DeployError(f"the data stack {args.data_stack} has no output {', '.join(missing)}: is it infra/data.yaml?")

    package(args.out, app_params.get("CorsOrigin", "*"))
    packaged = args.out / "packaged.yaml"
    aws("cloudformation", "package", "--template-file", str(args.out / "sam.yaml"), "--s3-bucket", bucket,
        "--s3-prefix", args.stack, "--output-template-file", str(packaged))
    filled = {"DataStack": args.data_stack, "TickName": names.tick, "JwksPath": urlsplit(app_params["JwtJwksUrl"]).path,
              **{name: data_out[name] for name in FROM_DATA_STACK}}
    app_params = {"MetricsNamespace": names.namespace, **app_params}  # one per stack unless the file names one
    # e.g. a new account's Lambda concurrency below what the functions reserve; or a rollback MigrateSchema did not answer
    clear_failed_create(aws, args.stack, custom_resource="MigrateSchema")
    # Through the bucket: CloudFormation takes a template of over 51,200 bytes (the packaged one is ~110 kB)
    # only from S3, and the CLI refuses a bigger --template-file without --s3-bucket.
    aws("cloudformation", "deploy", "--template-file", str(packaged), "--stack-name", args.stack,
        "--s3-bucket", bucket, "--s3-prefix", args.stack,
        "--capabilities", "CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND", "--no-fail-on-empty-changeset",
        *overrides(APP_TEMPLATE, {**filled, **app_params}))
    app_out = aws.outputs(args.stack)
    report(aws, app_params, app_out, data_out)
    return app_out


def report(aws: Aws, app_params: dict[str, str], app_out: dict[str, str], data_out: dict[str, str]) -> None:
    say = aws.echo
    say(f"\nAPI: {app_out.get('EndpointURL')}   console: {app_out.get('EndpointURL', '')}console")
    for email, topic, until in (("AlarmEmail", "AlarmTopicArn", "no alarm reaches anyone"),
                                ("CueEmail", "CueTopicArn", "no cue on the cue topic reaches them")):
        if not app_params.get(email) or topic not in app_out:
            continue
        subscriptions = aws.json("sns", "list-subscriptions-by-topic", "--topic-arn", app_out[topic])["Subscriptions"]
        pending = [s["Endpoint"] for s in subscriptions if s["SubscriptionArn"] == "PendingConfirmation"]
        if pending:
            say(f"TO DO: {', '.join(pending)} must open AWS's 'Subscription Confirmation' e-mail and confirm: "
                f"until then {until}")
    if not app_params.get("OidcClientId"):
        say(f"TO DO (sign-in, second pass): register {app_out.get('ConsoleRedirectUri')} as a redirect URI of a new "
            "OIDC client at the identity provider, then set OidcClientId=<its id> and JwtAudience=<its id> in the "
            "parameters file and run make deploy again")
    say(f"The game side's key: aws secretsmanager get-secret-value --region {aws.region} "
        f"--secret-id {data_out.get('GameBridgeSecretArn', '<GameBridgeSecretArn>')} --query SecretString --output text")
    # the signal key is the signal_key of the app secret, beside the app user's credentials: print that key alone
    say(f"The game server's signal key: aws secretsmanager get-secret-value --region {aws.region} "
        f"--secret-id {data_out.get('AppSecretArn', '<AppSecretArn>')} --query SecretString --output text"
        """ | python3 -c 'import json, sys; print(json.load(sys.stdin)["signal_key"])'""")


def teardown(args: argparse.Namespace, aws: Aws) -> None:
    """Delete the app stack, then the data stack (its cluster's deletion protection turned off first), waiting for
    each: the app stack imports the data stack's exports, and CloudFormation keeps an export while it is imported.
    Then say what outlives them, each with the command that deletes it (`kept_on_purpose`)."""
    if args.confirm != args.stack:
        raise DeployError(f"make teardown deletes {args.stack} and {args.data_stack}, the database with them (a final "
                          f"snapshot is kept): run it again with CONFIRM={args.stack}")
    account = aws.json("sts", "get-caller-identity")["Account"]
    aws.echo(f"account {account}, region {aws.region}: deleting {args.stack}, then {args.data_stack}")
    left: dict[str, dict[str, dict[str, str]]] = {}  # each stack's outputs and parameters, as it was before deletion
    for stack in (args.stack, args.data_stack):
        described = aws.described(stack)
        if described is None:
            aws.echo(f"{stack}: no such stack")
            continue
        parameters = {p["ParameterKey"]: p.get("ParameterValue") or "" for p in described.get("Parameters", [])}
        left[stack] = {"outputs": {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])},
                       "parameters": parameters}
        if parameters.get("DeletionProtection", "false") != "false":  # the data stack: a protected cluster is not deleted
            unprotected = {**parameters, "DeletionProtection": "false"}  # the rest as the stack has them (none is NoEcho)
            aws("cloudformation", "update-stack", "--stack-name", stack, "--use-previous-template",
                "--capabilities", "CAPABILITY_IAM", "--parameters",
                json.dumps([{"ParameterKey": name, "ParameterValue": value} for name, value in unprotected.items()]))
            aws.wait("stack-update-complete", stack)
        aws("cloudformation", "delete-stack", "--stack-name", stack)
        aws.wait("stack-delete-complete", stack)
        aws.echo(f"{stack}: deleted")
    bucket = args.bucket or preflight.Names(args.stack, args.data_stack).bucket(account, aws.region)
    aws.echo("\nKept on purpose (a secret costs $0.40 a month, the snapshot its storage; the rest is free):")
    for line in kept_on_purpose(aws.region, left.get(args.stack), left.get(args.data_stack), bucket,
                                preflight.Names(args.stack, args.data_stack).tick):
        aws.echo("  " + line)


def kept_on_purpose(region: str, app: dict[str, dict[str, str]] | None, data: dict[str, dict[str, str]] | None,
                    bucket: str, tick_name: str) -> list[str]:
    """What a teardown leaves, each with the command that deletes it: the secrets the stacks made (the game side, or
    data brought back from the snapshot, may still need them) and the ones the team made and named in the parameters
    file, the cluster's final snapshot, the artifact bucket, the account's API Gateway logging role (other APIs of
    the account may log with it), and the schedules a sleeping deployment leaves."""
    app_parameters = (app or {}).get("parameters", {})
    data_outputs = (data or {}).get("outputs", {})
    made = [arn for stack in (app, data) for name, arn in sorted((stack or {}).get("outputs", {}).items())
            if name.endswith("SecretArn") and name != "AdminSecretArn"]  # RDS deletes its admin secret with the cluster
    teams = [arn for name, arn in sorted(app_parameters.items()) if name.endswith("SecretArn") and arn]
    delete = f"aws secretsmanager delete-secret --region {region} --recovery-window-in-days 7 --secret-id"
    lines = [f"a secret the stacks made: {delete} {arn}" for arn in made]
    lines += [f"a secret your team made (the parameters file names it): {delete} {arn}" for arn in teams]
    endpoint = data_outputs.get("ClusterEndpoint", "")
    cluster = endpoint.split(".", 1)[0] if endpoint else "<the cluster's identifier>"
    lines.append(f"the cluster's final snapshot: its name is printed by `aws rds describe-db-cluster-snapshots --region {region}"
                 f" --db-cluster-identifier {cluster} --snapshot-type manual --query 'DBClusterSnapshots[].DBClusterSnapshotIdentifier'"
                 f" --output text`; delete it with `aws rds delete-db-cluster-snapshot --region {region}"
                 " --db-cluster-snapshot-identifier <that name>`")
    lines.append(f"the artifact bucket: aws s3 rb --region {region} s3://{bucket} --force")
    if (data or {}).get("parameters", {}).get("SetApiGatewayLogsRole", "true") != "false":
        lines.append(f"the account's API Gateway logging role (other APIs of this account and region may log with it):"
                     f" `aws apigateway get-account --region {region} --query cloudwatchRoleArn --output text` prints it;"
                     " once nothing logs with it, `aws iam detach-role-policy --role-name <the ARN's last part> --policy-arn"
                     " arn:aws:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs`, then"
                     " `aws iam delete-role --role-name <the same>`")
    tick = app_parameters.get("TickName") or tick_name
    lines.append(f"a sleeping deployment's wake-up and backstop schedules (they fire once into the deleted tick, and a"
                 f" deployment of the same name within a day meets them): `aws scheduler list-schedules --region {region}"
                 f" --name-prefix {tick}-`, then `aws scheduler delete-schedule --region {region} --name <each>`")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", default="prod")
    parser.add_argument("--stack", help="the app stack (default event-run-engine-<stage>)")
    parser.add_argument("--data-stack", help="the data stack (default <stack>-data)")
    parser.add_argument("--region", default=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"))
    parser.add_argument("--bucket", help="the artifact bucket (default <stack>-artifacts-<account>-<region>)")
    parser.add_argument("--params", type=Path, help="the parameters file (default infra/<stage>.params)")
    parser.add_argument("--out", type=Path, default=ROOT / "out")
    parser.add_argument("--packaged", type=Path, help="use this already built package instead of building one")
    parser.add_argument("--aws", default="aws", help="the AWS CLI to run")
    parser.add_argument("--teardown", action="store_true", help="delete the app stack, then the data stack (make teardown)")
    parser.add_argument("--confirm", help="with --teardown: the app stack's name, as a yes")
    args = parser.parse_args(argv)
    args.stack = args.stack or f"event-run-engine-{args.stage}"
    args.data_stack = args.data_stack or f"{args.stack}-data"
    args.params = args.params or ROOT / "infra" / f"{args.stage}.params"
    command = "make teardown" if args.teardown else "make deploy"
    if not args.region:
        print(f"{command}: set REGION=<aws region> (or AWS_REGION): the stacks, the bucket and Aurora live there", file=sys.stderr)
        return 2

    def package(out: Path, cors_origin: str) -> None:
        if args.packaged:
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(args.packaged, out)
            return
        from infra.package import RuntimeMissing
        from infra.package import package as build

        try:
            build(out, stage=args.stage, cors_origin=cors_origin, region=args.region)
        except RuntimeMissing as missing:
            raise DeployError(str(missing)) from None

    try:
        if args.teardown:
            teardown(args, Aws(args.region, args.aws))
        else:
            deploy(args, Aws(args.region, args.aws), package, resolve=preflight.resolve)
    except preflight.Refused as refused:
        print(f"{command}: refused before any AWS call:\n{refused}", file=sys.stderr)
        return 1
    except DeployError as error:
        print(f"{command}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
