"""A stand-in for the AWS CLI on PATH: records each call (argv as JSON, one a line) and answers as AWS would.

Only for what the deploy does once the app stack is up, which moto cannot show (tests/test_infra_deploy.py's
docstring): moto creates no stack from the AWS::Serverless template, and its SNS never leaves an e-mail
subscription pending. The rest of the sequence runs against moto there.

    FAKE_AWS_STATE=<dir> fake_aws <service> <operation> [args…]

State lives in `<dir>/state.json` (which buckets exist, each stack's last
parameters, a status a test gives a stack: UPDATE_COMPLETE unless said); calls go to `<dir>/calls.jsonl`. Anything not played here exits 2,
so a new call in the deploy sequence shows up as a failure, not a silent pass.
The data stack's outputs follow its parameters as the template's would
(AppDatabaseHost is the proxy's endpoint with EnableProxy=true, UseDualStackEndpoints
"false" with EnableInterfaceEndpoints=true).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

ACCOUNT = "123456789012"


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def overrides(argv: list[str]) -> dict[str, str]:
    if "--parameter-overrides" not in argv:
        return {}
    values = {}
    for item in argv[argv.index("--parameter-overrides") + 1:]:
        if item.startswith("--"):
            break
        name, _, value = item.partition("=")
        values[name] = value
    return values


def outputs(stack: str, params: dict[str, str], region: str) -> list[dict[str, str]]:
    if "DataStack" not in params:  # the data stack
        proxy = params.get("EnableProxy") == "true"
        values = {
            "AppDatabaseHost": f"{stack}-proxy.proxy-abc.{region}.rds.amazonaws.com" if proxy
            else f"{stack}.cluster-abc.{region}.rds.amazonaws.com",
            "UseDualStackEndpoints": "false" if params.get("EnableInterfaceEndpoints") == "true" else "true",
            "GameBridgeSecretArn": f"arn:aws:secretsmanager:{region}:{ACCOUNT}:secret:bridge-AbCdEf",
            "AppSecretArn": f"arn:aws:secretsmanager:{region}:{ACCOUNT}:secret:AppSecret-AbCdEf",
        }
    else:
        api = f"https://a1b2c3.execute-api.{region}.amazonaws.com/api/"
        values = {"EndpointURL": api, "ConsoleRedirectUri": api + "console",
                  "AlarmTopicArn": f"arn:aws:sns:{region}:{ACCOUNT}:{stack}-AlarmTopic-X",
                  "CueTopicArn": f"arn:aws:sns:{region}:{ACCOUNT}:{stack}-CueTopic-X",
                  "MigrateFunctionName": f"{stack}-Migrate-X"}
    return [{"OutputKey": k, "OutputValue": v} for k, v in values.items()]


def main(argv: list[str]) -> int:
    home = Path(os.environ["FAKE_AWS_STATE"])
    with (home / "calls.jsonl").open("a") as calls:
        calls.write(json.dumps(argv) + "\n")
    state_file = home / "state.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {"buckets": [], "stacks": {}}
    region = option(argv, "--region") or ""
    call = tuple(argv[:2])
    answer: object = None
    if call == ("sts", "get-caller-identity"):
        answer = {"Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/deployer", "UserId": "AIDA"}
    elif call == ("s3api", "head-bucket"):
        if option(argv, "--bucket") not in state["buckets"]:
            print("An error occurred (404) when calling the HeadBucket operation: Not Found", file=sys.stderr)
            return 254
    elif call == ("s3api", "create-bucket"):
        state["buckets"].append(option(argv, "--bucket"))
        answer = {"Location": f"http://{option(argv, '--bucket')}.s3.amazonaws.com/"}
    elif call == ("s3api", "put-public-access-block"):
        pass
    elif call == ("cloudformation", "deploy"):
        template = Path(option(argv, "--template-file") or "")
        if not template.exists():
            print(f"Invalid template path {template}", file=sys.stderr)
            return 255
        stack = option(argv, "--stack-name") or ""
        state["stacks"][stack] = {**state["stacks"].get(stack, {}), **overrides(argv)}
        print(f"\nWaiting for changeset to be created..\nSuccessfully created/updated stack - {stack}")
    elif call == ("cloudformation", "describe-stacks"):
        stack = option(argv, "--stack-name") or ""
        if stack not in state["stacks"]:
            print(f"An error occurred (ValidationError): Stack with id {stack} does not exist", file=sys.stderr)
            return 254
        answer = {"Stacks": [{"StackName": stack, "StackStatus": state.get("statuses", {}).get(stack, "UPDATE_COMPLETE"),
                              "Outputs": outputs(stack, state["stacks"][stack], region)}]}
    elif call == ("cloudformation", "delete-stack"):
        stack = option(argv, "--stack-name") or ""
        state["stacks"].pop(stack, None)
        state.get("statuses", {}).pop(stack, None)
    elif call == ("cloudformation", "wait"):
        pass  # the stand-in's operations are done when they answer
    elif call == ("cloudformation", "package"):
        shutil.copy(option(argv, "--template-file") or "", option(argv, "--output-template-file") or "")
    elif call == ("sns", "list-subscriptions-by-topic"):  # the stack's e-mail for the topic, still unconfirmed
        topic = option(argv, "--topic-arn") or ""
        params: dict[str, str] = next((p for stack, p in state["stacks"].items()
                                       if topic.split(":")[-1].startswith(f"{stack}-")), {})
        email = params.get("CueEmail" if "-CueTopic-" in topic else "AlarmEmail", "")
        answer = {"Subscriptions": [{"Protocol": "email", "Endpoint": email, "SubscriptionArn": "PendingConfirmation",
                                     "TopicArn": topic}] if email else []}
    else:
        print(f"fake aws: unexpected call {argv}", file=sys.stderr)
        return 2
    state_file.write_text(json.dumps(state))
    if answer is not None:
        print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
