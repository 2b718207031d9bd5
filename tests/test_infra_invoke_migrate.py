"""`make migrate`'s client: finds the function from the stack, invokes it, and fails when it failed."""

import io
import json

import boto3
from botocore.response import StreamingBody
from botocore.stub import Stubber

from infra import invoke_migrate


def body(payload) -> StreamingBody:
    raw = json.dumps(payload).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def test_it_invokes_the_stacks_migrate_function_and_reports_a_failure():
    cloudformation = boto3.client("cloudformation", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    lam = boto3.client("lambda", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(cloudformation) as cfn, Stubber(lam) as fn:
        cfn.add_response("describe_stacks", {"Stacks": [{
            "StackName": "event-run-engine-prod", "CreationTime": "2026-11-30T00:00:00Z", "StackStatus": "CREATE_COMPLETE",
            "Outputs": [{"OutputKey": "MigrateFunctionName", "OutputValue": "event-run-engine-prod-Migrate-abc"}]}]},
            {"StackName": "event-run-engine-prod"})
        name = invoke_migrate.function_name(cloudformation, "event-run-engine-prod")
        assert name == "event-run-engine-prod-Migrate-abc"
        expected = {"FunctionName": name, "InvocationType": "RequestResponse", "Payload": json.dumps({"action": "rotate"})}
        fn.add_response("invoke", {"StatusCode": 200, "Payload": body({"rotated": "events_app"})}, expected)
        assert invoke_migrate.invoke(lam, name, "rotate") == (True, {"rotated": "events_app"})
        fn.add_response("invoke", {"StatusCode": 200, "FunctionError": "Unhandled",
                                   "Payload": body({"errorMessage": "EVENTS_DB_ADMIN_HOST is not set"})}, expected)
        ok, payload = invoke_migrate.invoke(lam, name, "rotate")
        assert not ok and "EVENTS_DB_ADMIN_HOST" in payload["errorMessage"]
