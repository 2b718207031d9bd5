"""`make deploy`'s preflight, its second half: what only the account can tell, by read-only calls through the AWS
CLI `make deploy` uses, before anything is created (`preflight.py` checks the file itself first).

The invariant: every call only reads, and every reason is refused at once: a team-made secret that does not
exist, is another region's or account's, is named by a partial ARN or is encrypted with a key of the team's (no
role may decrypt it); a data-stack parameter that applies only at the first create (`SET_ONCE`) changed from the
deployed stack's; and a Lambda concurrency quota the stack's reserved concurrency would leave under Lambda's 100
unreserved.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from chalicelib.config import secret_reference
from chalicelib.sameness import same_secret_key
from infra.preflight import APP_TEMPLATE, TEAM_SECRETS, Names, Refused

OWN_KEY = "alias/aws/secretsmanager"  # Secrets Manager's own key, which any role allowed the secret may decrypt
# Data-stack parameters that apply only when the stack is first created: why each cannot change afterwards.
SET_ONCE = {
    "DatabaseName": "CloudFormation would replace the database cluster",
    "MasterUsername": "CloudFormation would replace the database cluster",
    "AppUsername": "CloudFormation would regenerate the app secret: the app user's password and the engine's keys",
    "VpcCidr": "the created VPC, and the cluster in it, would be replaced",
    "ExistingVpcId": "the cluster cannot move to another network",
    "ExistingSubnetIds": "the cluster cannot move to another network",
}
# A stack in these holds nothing a deploy keeps: a first create that rolled back (make deploy deletes it and creates
# it again), or one whose first change set is still under review (no parameters yet).
NOT_MADE = ("ROLLBACK_COMPLETE", "REVIEW_IN_PROGRESS")
LAMBDA_UNRESERVED = 100  # Lambda keeps this much of the account's concurrency unreserved, and refuses a reservation into it
LAMBDA_QUOTA = "L-B99A9384"  # Service Quotas' code of AWS Lambda's "Concurrent executions"


class Cli(Protocol):
    """The AWS CLI as make deploy calls it (infra/deploy.py's Aws)."""

    region: str

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]: ...

    def json(self, *args: str) -> Any: ...

    def described(self, stack: str) -> dict[str, Any] | None: ...


def reservations(values: Mapping[str, str], template: Path = APP_TEMPLATE) -> dict[str, int]:
    """Each function's ReservedConcurrentExecutions in the app template (a number, or `!Ref` a parameter read from
    `values`), by its logical name; read from its lines as infra/deploy.py reads its parameters."""
    found: dict[str, int] = {}
    inside, resource = False, ""
    for line in template.read_text().splitlines():
        if line and not line.startswith((" ", "#")):
            inside = line.rstrip() == "Resources:"
        elif inside and (match := re.fullmatch(r"  (\w+):\s*", line)):
            resource = match.group(1)
        elif inside and (match := re.fullmatch(r"\s+ReservedConcurrentExecutions:\s*([^#]*?)\s*(#.*)?", line)):
            value = match.group(1)
            if (ref := re.fullmatch(r"!Ref (\w+)", value)) is not None:
                value = values[ref.group(1)]
            if not value.isdigit():
                raise ValueError(f"{template.name}: {resource}'s ReservedConcurrentExecutions is neither a number nor "
                                 f"!Ref a parameter: {match.group(1)!r}")
            found[resource] = int(value)
    return found


def parameters(stack: Mapping[str, Any] | None) -> dict[str, str] | None:
    """A described stack's parameters, or None when there is no stack as a deploy would find it."""
    if stack is None or stack.get("StackStatus") in NOT_MADE:
        return None
    return {p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])}


def set_once_problems(deployed: Mapping[str, str], data: Mapping[str, str], data_stack: str) -> list[str]:
    """A parameter that applies only at the data stack's first create, sent with another value than the stack has."""
    problems = []
    for name, why in SET_ONCE.items():
        if name not in deployed or name not in data:
            continue
        old, new = deployed[name].strip(), data[name].strip()
        if name == "ExistingSubnetIds":  # the same subnets in any order (moto shows the list as Python writes one)
            same = {s.strip(" '\"[]") for s in old.split(",")} - {""} == {s.strip() for s in new.split(",")} - {""}
        elif name == "VpcCidr":
            same = old == new or bool(deployed.get("ExistingVpcId"))  # with the team's own VPC it names nothing
        else:
            same = old == new
        if not same:
            problems.append(f"{name} is set once, at the first deploy: the data stack {data_stack} has {name}={old}, "
                            f"and the parameters file would make it {new or '(empty)'} ({why}): put {name}={old} back "
                            "in the parameters file")
    return problems


def secret_problems(aws: Cli, app: Mapping[str, str], account: str, bridge_secret: str | None) -> list[str]:
    """What `describe-secret` says of each team-made secret the offline check let through (`secret_arn_problems`)."""
    problems = []
    for name in TEAM_SECRETS:
        arn = app.get(name, "").strip()
        if not arn:
            continue
        if (owner := arn.split(":")[4]) != account:
            problems.append(f"{name}'s secret is in account {owner}, and the stack deploys to {account}, whose roles "
                            f"cannot decrypt another account's secret with Secrets Manager's own key: make it in "
                            f"{account} (docs/deploy.md, \"Secrets you make\") and set {name} to its ARN")
            continue
        if name == "GameBridgeSandboxSecretArn" and bridge_secret and \
                same_secret_key(secret_reference(arn), secret_reference(bridge_secret)):
            problems.append(f"{name} is the game bridge's own key (the data stack's GameBridgeSecretArn), so a dry run "
                            "would sign as the live engine (the tick refuses it at start): make a secret of the "
                            f"sandbox's own key and set {name} to its ARN")
            continue
        done = aws("secretsmanager", "describe-secret", "--secret-id", arn, "--output", "json", check=False)
        if done.returncode:
            error = done.stderr.strip() or done.stdout.strip()
            problems.append(
                f"{name}: no secret {arn} in {aws.region}: make it (`aws secretsmanager create-secret --region "
                f"{aws.region} --name <name> --secret-string <value>`, docs/deploy.md) and set {name} to the ARN it "
                "prints" if "ResourceNotFoundException" in error else
                f"{name}: make deploy could not describe the secret {arn} ({error}): the deploying credentials need "
                "secretsmanager:DescribeSecret (infra/deployer-policy.json)")
            continue
        secret = json.loads(done.stdout)
        if secret.get("ARN") != arn:
            problems.append(f"{name}={arn} is a partial ARN (its name ends in 6 characters of its own): the stack "
                            f"grants its functions this ARN as given, and IAM matches it to no read: set {name}="
                            f"{secret.get('ARN')}")
        elif secret.get("DeletedDate"):
            problems.append(f"{name}'s secret {arn} is scheduled for deletion, and no function may read it meanwhile: "
                            f"`aws secretsmanager restore-secret --region {aws.region} --secret-id {arn}`, or make "
                            "another")
        elif (key := secret.get("KmsKeyId")) and not str(key).endswith(OWN_KEY):
            problems.append(f"{name}'s secret {arn} is encrypted with the KMS key {key}, which none of the stack's roles "
                            f"may decrypt (no kms:Decrypt): encrypt it with Secrets Manager's own key, `aws "
                            f"secretsmanager update-secret --region {aws.region} --secret-id {arn} --kms-key-id {OWN_KEY}`")
    return problems


def concurrency_problems(settings: Mapping[str, Any], reserved: Mapping[str, int], held: int, region: str) -> list[str]:
    """Whether the account can reserve what the app stack reserves (beyond what it holds already) and still keep
    Lambda's 100 unreserved: otherwise the app stack's create fails 10-15 minutes in, at its first function."""
    limit = settings["AccountLimit"]
    unreserved, total = int(limit["UnreservedConcurrentExecutions"]), int(limit["ConcurrentExecutions"])
    needed = sum(reserved.values()) - held + LAMBDA_UNRESERVED
    if unreserved >= needed:
        return []
    short = needed - unreserved
    each = ", ".join(f"{name} {count}" for name, count in reserved.items())
    api = reserved.get("APIHandler", 0)
    lower = f", or lower ApiReservedConcurrency to {api - short} (the API's containers at once)" if api > short else ""
    said = (f"the account's Lambda concurrency is too low for the app stack: {unreserved} of its {total} are unreserved, "
            f"and the stack reserves {sum(reserved.values())} ({each}){f' beyond the {held} it holds' if held else ''} "
            f"while Lambda keeps {LAMBDA_UNRESERVED} unreserved, so {needed} must be: ask for a \"Concurrent "
            f"executions\" quota of at least {total + short} (Service Quotas, AWS Lambda: `aws service-quotas "
            f"request-service-quota-increase --region {region} --service-code lambda --quota-code {LAMBDA_QUOTA} "
            f"--desired-value {total + short}`) and deploy once it is granted{lower}")
    return [said]


def check_account(aws: Cli, names: Names, data: Mapping[str, str], app: Mapping[str, str],
                  template: Path = APP_TEMPLATE) -> None:
    """Refuse (Refused, every reason at once) what the account says cannot work. `data` and `app` are the values the
    deploy sends (the parameters file's over the templates' defaults); every call only reads."""
    account = aws.json("sts", "get-caller-identity")["Account"]
    data_stack = aws.described(names.data_stack)
    deployed_data = parameters(data_stack)
    refusals = set_once_problems(deployed_data, data, names.data_stack) if deployed_data is not None else []
    outputs = {o["OutputKey"]: o["OutputValue"] for o in (data_stack or {}).get("Outputs", [])}
    refusals += secret_problems(aws, app, account, outputs.get("GameBridgeSecretArn"))
    deployed_app = parameters(aws.described(names.stack))
    held = sum(reservations({**app, **deployed_app}, template).values()) if deployed_app is not None else 0
    settings = aws.json("lambda", "get-account-settings")
    refusals += concurrency_problems(settings, reservations(app, template), held, aws.region)
    if refusals:
        raise Refused("\n".join(f"- {reason}" for reason in refusals))
