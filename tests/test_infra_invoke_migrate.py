"""`make migrate`'s client: finds the function from the stack, invokes it, and fails when it failed."""

import io
import json

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from moto import mock_aws

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


def test_without_a_region_it_says_to_give_one(monkeypatch, tmp_path, capsys):
    """`make unlock STAGE=prod`, as the docs once wrote it, ended in botocore's NoRegionError traceback."""
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))  # no profile's region either
    with pytest.raises(SystemExit) as refused:
        invoke_migrate.main(["--stack", "event-run-engine-prod", "--action", "unlock"])
    assert str(refused.value) == "no region: make unlock STAGE=<stage> REGION=<the stacks' region>"


def test_a_stack_not_in_the_region_given_is_named_with_the_region(monkeypatch):
    """The stack looked for in another region (a profile's default) ended in a ClientError traceback."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    with mock_aws(), pytest.raises(SystemExit) as refused:
        invoke_migrate.main(["--stack", "event-run-engine-prod", "--action", "unlock", "--region", "eu-north-1"])
    assert str(refused.value).startswith("no stack event-run-engine-prod in eu-north-1: set REGION=<the stack's region>")


def test_a_purge_is_invoked_again_while_it_says_more_and_its_totals_are_summed(capsys):
    lam = boto3.client("lambda", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    asked = {"FunctionName": "f", "InvocationType": "RequestResponse",
             "Payload": json.dumps({"action": "purge", "ended_before": "2026-01-01", "dry_run": False})}
    first = {"ended_before": "2026-01-01T00:00:00", "dry_run": False, "runs": 100, "rows": {"event_run_log": 900}, "more": True}
    last = {"ended_before": "2026-01-01T00:00:00", "dry_run": False, "runs": 7, "rows": {"event_run_log": 60}, "more": False}
    with Stubber(lam) as fn:
        fn.add_response("invoke", {"StatusCode": 200, "Payload": body(first)}, asked)
        fn.add_response("invoke", {"StatusCode": 200, "Payload": body(last)}, asked)
        assert invoke_migrate.purge(lam, "f", "2026-01-01", False) == (True, {
            "ended_before": "2026-01-01T00:00:00", "dry_run": False, "runs": 107, "rows": {"event_run_log": 960}})
    assert "purged 100 run(s) so far; going on" in capsys.readouterr().err


def test_a_purge_without_its_cut_says_how_to_give_one():
    with pytest.raises(SystemExit) as refused:
        invoke_migrate.main(["--stack", "event-run-engine-prod", "--action", "purge", "--region", "eu-north-1"])
    assert str(refused.value).startswith("purge needs a cut: make purge ENDED_BEFORE=<YYYY-MM-DD>")


def test_an_invocation_refused_because_another_is_running_says_so_without_a_traceback():
    """The function runs one invocation at a time (reserved concurrency 1): `make purge` during a deploy's migration,
    or two operators at once, met Lambda's TooManyRequestsException and printed botocore's traceback."""
    lam = boto3.client("lambda", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(lam) as fn:
        fn.add_client_error("invoke", service_error_code="TooManyRequestsException", http_status_code=429,
                            service_message="Rate Exceeded.")
        with pytest.raises(SystemExit) as refused:
            invoke_migrate.invoke(lam, "f", "purge", ended_before="2026-01-01", dry_run=False)
    said = str(refused.value)
    assert said.startswith("purge: the migrate function is running something else (it runs one invocation at a time)")
    assert "a make deploy's migration. This invocation did nothing" in said
    with Stubber(lam) as fn:  # any other refusal is not this one
        fn.add_client_error("invoke", service_error_code="ResourceNotFoundException", http_status_code=404)
        with pytest.raises(lam.exceptions.ResourceNotFoundException):
            invoke_migrate.invoke(lam, "f", "migrate")


def test_mark_applied_sends_the_migrations_id_and_without_one_says_how_to_give_it():
    lam = boto3.client("lambda", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    asked = {"FunctionName": "f", "InvocationType": "RequestResponse",
             "Payload": json.dumps({"action": "mark_applied", "id": "0079.event-run-log-kind"})}
    with Stubber(lam) as fn:
        fn.add_response("invoke", {"StatusCode": 200, "Payload": body({"marked": "0079.event-run-log-kind"})}, asked)
        assert invoke_migrate.invoke(lam, "f", "mark_applied", id="0079.event-run-log-kind") == (
            True, {"marked": "0079.event-run-log-kind"})
    with pytest.raises(SystemExit) as refused:
        invoke_migrate.main(["--stack", "event-run-engine-prod", "--action", "mark_applied", "--region", "eu-north-1"])
    assert str(refused.value).startswith("mark_applied needs the migration: make mark-applied ID=<its id")
