"""`make migrate` / `make rotate` / `make unlock` / `make purge` / `make mark-applied`: invoke the deployed migrate
function and print what it did.

The function runs inside the VPC (the database is private); this runs wherever
the operator's AWS credentials are. It finds the function through the app
stack's `MigrateFunctionName` output and exits non-zero when the function failed.
A purge is invoked again while its answer says `more` (each invocation stops
before the function's timeout), its running total printed after each, and the
total printed at the end. The function runs one invocation at a time (reserved
concurrency 1): one refused for that (throttled) says another migrate, purge,
rotate, unlock or mark-applied, or a deploy's migration, is running, and exits
non-zero without a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

# The function's 900 s (migrations, an Aurora resume of ~15-30 s, a purge's batches) and a margin.
READ_TIMEOUT_SECONDS = 930


def function_name(cloudformation, stack: str) -> str:
    try:
        outputs = cloudformation.describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
    except ClientError as error:
        if "does not exist" not in str(error):
            raise
        raise SystemExit(f"no stack {stack} in {cloudformation.meta.region_name}: set REGION=<the stack's region>"
                         " (and STAGE or STACK as make deploy was given them)") from None
    for output in outputs:
        if output["OutputKey"] == "MigrateFunctionName":
            return output["OutputValue"]
    raise SystemExit(f"stack {stack} has no MigrateFunctionName output: deploy infra/app.yaml with it first")


class Busy(SystemExit):
    """The migrate function is running another invocation (it runs one at a time): try again once it has ended."""


def invoke(lambda_client, name: str, action: str, **given) -> tuple[bool, dict]:
    try:
        answer = lambda_client.invoke(FunctionName=name, InvocationType="RequestResponse",
                                      Payload=json.dumps({"action": action, **given}))
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "TooManyRequestsException":
            raise
        raise Busy(f"{action}: the migrate function is running something else (it runs one invocation at a time): another"
                   " make migrate, purge, rotate, unlock or mark-applied, or a make deploy's migration. This invocation"
                   " did nothing; run it again once that has ended (its log: /aws/lambda/<stack>-migrate)") from None
    payload = json.loads(answer["Payload"].read() or b"null")
    return "FunctionError" not in answer, payload


def purge(lambda_client, name: str, ended_before: str, dry_run: bool) -> tuple[bool, dict]:
    """Invoke the purge until it says nothing more is left (or fails); the totals of every invocation."""
    total: dict = {"ended_before": ended_before, "dry_run": dry_run, "runs": 0, "rows": {}}
    while True:
        ok, payload = invoke(lambda_client, name, "purge", ended_before=ended_before, dry_run=dry_run)
        if not ok:
            return False, payload
        total["ended_before"] = payload["ended_before"]
        total["runs"] += payload["runs"]
        for table, count in payload["rows"].items():
            total["rows"][table] = total["rows"].get(table, 0) + count
        if not payload["more"]:
            return True, total
        print(f"purged {total['runs']} run(s) so far; going on", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", required=True, help="the app stack's name")
    parser.add_argument("--action", choices=("migrate", "rotate", "unlock", "purge", "mark_applied"), default="migrate")
    parser.add_argument("--id", default="", help="mark_applied: the migration's id (its file's name without .sql)")
    parser.add_argument("--ended-before", default="", help="purge: the cut, YYYY-MM-DD (UTC) or an ISO date and time")
    parser.add_argument("--dry-run", action="store_true", help="purge: count what would go, delete nothing")
    parser.add_argument("--region", default=None, help="the stacks' region (default: the AWS CLI's, from the environment or profile)")
    args = parser.parse_args(argv)
    if args.action == "purge" and not args.ended_before.strip():
        raise SystemExit("purge needs a cut: make purge ENDED_BEFORE=<YYYY-MM-DD> STAGE=<stage> REGION=<region> [DRY_RUN=1]")
    if args.action == "mark_applied" and not args.id.strip():
        raise SystemExit("mark_applied needs the migration: make mark-applied ID=<its id, as `make migrate` named it>"
                         " STAGE=<stage> REGION=<region>")
    session = boto3.session.Session(region_name=args.region or None)
    if session.region_name is None:
        raise SystemExit(f"no region: make {args.action} STAGE=<stage> REGION=<the stacks' region>")
    print(f"{args.action}: stack {args.stack} in {session.region_name}", file=sys.stderr)
    name = function_name(session.client("cloudformation"), args.stack)
    lambda_client = session.client("lambda", config=Config(read_timeout=READ_TIMEOUT_SECONDS, retries={"max_attempts": 0}))
    if args.action == "purge":
        ok, payload = purge(lambda_client, name, args.ended_before.strip(), args.dry_run)
    elif args.action == "mark_applied":
        ok, payload = invoke(lambda_client, name, args.action, id=args.id.strip())
    else:
        ok, payload = invoke(lambda_client, name, args.action)
    print(json.dumps(payload, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
