"""`make deploy STAGE=prod`: the whole deployment, in order, with the AWS CLI — from nothing, or as an upgrade.

    python -m infra.deploy --stage prod --region eu-west-1 --params infra/prod.params

1. who and where: `aws sts get-caller-identity` (the account), the region given;
2. the artifact bucket (`<stack>-artifacts-<account>-<region>` unless named), created
   private if missing: CloudFormation reads the code from it;
3. the data stack (`infra/data.yaml`: network, Aurora, secrets), with the data
   parameters of the parameters file;
4. the data stack's outputs: `AppDatabaseHost` and `UseDualStackEndpoints` become
   app parameters (not imports, so turning EnableProxy or EnableInterfaceEndpoints
   on later is one more `make deploy`);
5. the package (`infra/package.py`), with the CorsOrigin of the parameters file;
6. `aws cloudformation package` (the zip to the bucket) and `deploy` of the app
   stack (its template through the bucket too: it is over CloudFormation's 51,200
   bytes for a template sent inline): CloudFormation runs the package's migrations
   (the MigrateSchema custom resource) before it creates or updates the API and the
   tick, which depend on it;
7. the app stack's outputs, the alarm e-mail subscription's state, and what is
   left to do by hand (the OIDC client's second pass, the game side's key).

The parameters file holds `Name=Value` lines (`#` starts a comment), each a
parameter of `infra/data.yaml` or `infra/app.yaml`; `infra/example.params` lists
them all. Anything else is refused before AWS is called, and so is an OIDC client
whose tokens the API would refuse (`JwtAudience` must be the client id).
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

ROOT = Path(__file__).resolve().parents[1]
DATA_TEMPLATE = ROOT / "infra" / "data.yaml"
APP_TEMPLATE = ROOT / "infra" / "app.yaml"
FROM_DATA_STACK = ("AppDatabaseHost", "UseDualStackEndpoints")  # outputs the app takes as parameters
FILLED_HERE = ("DataStack", *FROM_DATA_STACK)


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


def overrides(values: dict[str, str]) -> list[str]:
    return ["--parameter-overrides", *(f"{k}={v}" for k, v in values.items())] if values else []


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


def ensure_bucket(aws: Aws, bucket: str) -> None:
    if aws("s3api", "head-bucket", "--bucket", bucket, check=False).returncode == 0:
        return
    location = [] if aws.region == "us-east-1" else ["--create-bucket-configuration", f"LocationConstraint={aws.region}"]
    aws("s3api", "create-bucket", "--bucket", bucket, *location)
    aws("s3api", "put-public-access-block", "--bucket", bucket, "--public-access-block-configuration",
        "BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true")


def deploy(args: argparse.Namespace, aws: Aws, package: Callable[[Path, str], Any]) -> dict[str, str]:
    data_params, app_params = split_params(read_params(args.params))
    account = aws.json("sts", "get-caller-identity")["Account"]
    aws.echo(f"account {account}, region {aws.region}: data stack {args.data_stack}, app stack {args.stack}")
    bucket = args.bucket or f"{args.stack}-artifacts-{account}-{aws.region}"
    ensure_bucket(aws, bucket)

    aws("cloudformation", "deploy", "--template-file", str(DATA_TEMPLATE), "--stack-name", args.data_stack,
        "--capabilities", "CAPABILITY_IAM", "--no-fail-on-empty-changeset", *overrides(data_params))
    data_out = aws.outputs(args.data_stack)
    missing = [name for name in FROM_DATA_STACK if name not in data_out]
    if missing:
        raise DeployError(f"the data stack {args.data_stack} has no output {', '.join(missing)}: is it infra/data.yaml?")

    package(args.out, app_params.get("CorsOrigin", "*"))
    packaged = args.out / "packaged.yaml"
    aws("cloudformation", "package", "--template-file", str(args.out / "sam.yaml"), "--s3-bucket", bucket,
        "--s3-prefix", args.stack, "--output-template-file", str(packaged))
    filled = {"DataStack": args.data_stack, **{name: data_out[name] for name in FROM_DATA_STACK}}
    # Through the bucket: CloudFormation takes a template of over 51,200 bytes (the packaged one is ~110 kB)
    # only from S3, and the CLI refuses a bigger --template-file without --s3-bucket.
    aws("cloudformation", "deploy", "--template-file", str(packaged), "--stack-name", args.stack,
        "--s3-bucket", bucket, "--s3-prefix", args.stack,
        "--capabilities", "CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND", "--no-fail-on-empty-changeset",
        *overrides({**filled, **app_params}))
    app_out = aws.outputs(args.stack)
    report(aws, app_params, app_out, data_out)
    return app_out


def report(aws: Aws, app_params: dict[str, str], app_out: dict[str, str], data_out: dict[str, str]) -> None:
    say = aws.echo
    say(f"\nAPI: {app_out.get('EndpointURL')}   console: {app_out.get('EndpointURL', '')}console")
    if app_params.get("AlarmEmail"):
        subscriptions = aws.json("sns", "list-subscriptions-by-topic", "--topic-arn", app_out["AlarmTopicArn"])["Subscriptions"]
        pending = [s["Endpoint"] for s in subscriptions if s["SubscriptionArn"] == "PendingConfirmation"]
        if pending:
            say(f"TO DO: {', '.join(pending)} must open AWS's 'Subscription Confirmation' e-mail and confirm: "
                "until then no alarm reaches anyone")
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
    args = parser.parse_args(argv)
    args.stack = args.stack or f"event-run-engine-{args.stage}"
    args.data_stack = args.data_stack or f"{args.stack}-data"
    args.params = args.params or ROOT / "infra" / f"{args.stage}.params"
    if not args.region:
        print("make deploy: set REGION=<aws region> (or AWS_REGION): the stacks, the bucket and Aurora live there", file=sys.stderr)
        return 2

    def package(out: Path, cors_origin: str) -> None:
        if args.packaged:
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(args.packaged, out)
            return
        from infra.package import package as build

        build(out, stage=args.stage, cors_origin=cors_origin, region=args.region)

    try:
        deploy(args, Aws(args.region, args.aws), package)
    except DeployError as error:
        print(f"make deploy: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
