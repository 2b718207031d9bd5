"""Upgrades and the first deploy: new code meeting an older schema answers 503 / skips its tick with one line,
the migrate function waits for a resuming Aurora, and it answers CloudFormation's custom resource whatever
happens (tests/test_infra_templates.py checks the API and the tick depend on that resource)."""

import hashlib
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest
from chalice.test import Client
from moto import mock_aws

from app import app
from chalicelib import runtime, schema_version
from chalicelib.config import Settings
from chalicelib.db import ConnectionParams, Database
from chalicelib.errors import SchemaBehind
from chalicelib.migrate import migrate
from chalicelib.migrate_function import answer_cloudformation, handle, wait_for_server
from devtools.kit.lambda_invocation import SCHEDULED_EVENT, lambda_context
from tests.support.api import ADMIN, hs_settings
from tests.support.db_door import DatabaseDoor


@pytest.fixture
def scratch(db_params):
    """A database of its own on the test server, created empty; dropped after the test."""
    params = ConnectionParams(db_params.host, db_params.port, db_params.user, db_params.password,
                              f"events_upgrade_{uuid.uuid4().hex[:8]}", db_params.unix_socket)
    admin = Database(db_params).connect(database=False)
    with admin.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE `{params.database}`")
    schema_version.forget()
    yield params
    schema_version.forget()
    with admin.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{params.database}`")
    admin.close()


def migrate_all_but_the_newest(params: ConnectionParams) -> None:
    """The schema of the previous release: every migration this code ships but the newest."""
    from yoyo import get_backend, read_migrations

    from chalicelib.migrate import MIGRATIONS, _yoyo_url

    backend = get_backend(_yoyo_url(params))
    try:
        with backend.lock():
            pending = backend.to_apply(read_migrations(str(MIGRATIONS)))
            assert pending[-1].id == schema_version.newest()
            backend.apply_migrations(pending[:-1])
    finally:
        backend.connection.close()


def test_an_api_request_meeting_an_older_schema_answers_503_until_the_migration_has_run(scratch, clock, monkeypatch):
    migrate_all_but_the_newest(scratch)
    older = Database(scratch)
    with runtime.override(database=older, clock=clock, settings=hs_settings(scratch)), Client(app) as client:
        answer = client.http.get("/runs", headers={"Authorization": f"Bearer {ADMIN}"})
        assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
        [message] = answer.json_body["errors"]
        assert message.startswith(f"the schema is older than this code: migration {schema_version.newest()} is not applied yet")
        assert client.http.get("/health").status_code == 200  # the routes open to anyone read no database
        migrate(scratch, create=False)  # the deploy's migration
        monkeypatch.setattr(schema_version, "RECHECK_SECONDS", 0.0)
        assert client.http.get("/runs", headers={"Authorization": f"Bearer {ADMIN}"}).status_code == 200
    older.close()


def test_the_schema_is_read_once_per_process_once_it_is_current(db, clock):
    schema_version.forget()
    reads = []
    autocommit = db.autocommit
    db.autocommit = lambda work: reads.append(1) or autocommit(work)
    for _ in range(3):
        assert schema_version.behind(db) is None
    assert len(reads) == 1


def test_a_tick_meeting_a_schema_behind_its_code_fails_its_invocation_naming_the_fix(scratch, clock, capsys):
    """It used to log a WARNING and end normally: no alarm fired, and an event night could pass with nothing
    running. A deployment's tick only meets this when a migration failed or was undone; failing the invocation
    is what TickErrorsAlarm counts and what the failure record on the alarm topic carries."""
    from app import tick as tick_handler  # the function Lambda calls, middleware and all

    empty = Database(scratch)
    try:
        with runtime.override(settings=Settings(db_url=scratch.url()), database=empty, clock=clock):
            for _ in range(2):  # two minutes: each fails alike
                with pytest.raises(SchemaBehind) as failed:
                    tick_handler(SCHEDULED_EVENT, lambda_context())
                assert str(failed.value).startswith("schema not migrated yet")
                assert "no run moves until it is; `make migrate` applies it (after `make unlock`" in str(failed.value)
    finally:
        empty.close()
    assert '"_aws"' not in capsys.readouterr().out  # no figure is made up for a tick that read nothing


@pytest.mark.realtime
def test_migrate_waits_for_a_database_that_holds_the_handshake_as_a_resuming_aurora_does(db_params):
    with DatabaseDoor(db_params) as door:
        door.stall(7.0)  # longer than one 5 s connection attempt: the old migrate failed here
        started = time.monotonic()
        wait_for_server(ConnectionParams.from_url(door.url()), 60)
        assert 7.0 <= time.monotonic() - started < 30 and door.accepted >= 2


@pytest.mark.realtime
def test_migrate_gives_up_when_the_database_never_answers(db_params):
    with DatabaseDoor(db_params) as door:
        door.refuse()
        started = time.monotonic()
        with pytest.raises(Exception, match=r"(?i)can't connect|refused|no time left"):
            wait_for_server(ConnectionParams.from_url(door.url()), 2.0)
        assert time.monotonic() - started < 8


class ResponseUrl:
    """CloudFormation's presigned response URL, played by a loopback server that keeps each PUT."""

    def __init__(self):
        self.bodies: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self):
                outer.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/cloudformation-response?X-Amz-Signature=abc"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def response_url():
    server = ResponseUrl()
    yield server
    server.close()


@pytest.fixture
def deployment(scratch, db_params, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    app_user = f"events_app_{uuid.uuid4().hex[:8]}"
    with mock_aws():
        client = boto3.client("secretsmanager", region_name="eu-west-1")
        admin_arn = client.create_secret(Name="admin", SecretString=json.dumps(
            {"username": db_params.user, "password": db_params.password}))["ARN"]
        app_arn = client.create_secret(Name="app", SecretString=json.dumps({
            "username": app_user, "password": "first-password-0123456789", "host": db_params.host,
            "port": db_params.port, "dbname": scratch.database}))["ARN"]
        yield {"EVENTS_DB_SECRET_ARN": app_arn, "EVENTS_DB_ADMIN_SECRET_ARN": admin_arn,
               "EVENTS_DB_ADMIN_HOST": db_params.host, "EVENTS_DB_APP_HOST": db_params.host}, client
    admin = Database(db_params).connect(database=False)
    with admin.cursor() as cursor:
        cursor.execute("DROP USER IF EXISTS %s@'%%'", (app_user,))
    admin.close()


def request(kind: str, url: str, schema: str | None = None) -> dict:
    """CloudFormation's request to MigrateSchema; its Schema this package's stamp unless another is given."""
    return {"RequestType": kind, "ResponseURL": url, "StackId": "arn:aws:cloudformation:eu-west-1:123456789012:stack/app/1",
            "RequestId": "r-1", "LogicalResourceId": "MigrateSchema", "ResourceType": "Custom::Migrate",
            "ServiceToken": "arn:aws:lambda:eu-west-1:123456789012:function:app-migrate",
            "ResourceProperties": {"Schema": schema or schema_version.stamp()}}


def test_cloudformations_create_migrates_and_answers_success(deployment, response_url, scratch):
    env, client = deployment
    answer = handle(request("Create", response_url.url), env, client, context=lambda_context(300_000))
    assert response_url.bodies == [answer]
    assert answer["Status"] == "SUCCESS" and answer["PhysicalResourceId"] == "event-run-engine-schema"
    assert answer["Data"]["Applied"] == len(list(schema_version.MIGRATIONS.glob("*.sql")))
    assert schema_version.behind(Database(scratch)) is None


def test_a_failed_migration_answers_failed_with_its_reason_and_a_delete_changes_nothing(deployment, response_url):
    env, client = deployment
    broken = dict(env, EVENTS_DB_ADMIN_HOST="127.0.0.1", EVENTS_DB_ADMIN_SECRET_ARN="arn:aws:secretsmanager:eu-west-1:1:secret:gone")
    failed = handle(request("Update", response_url.url), broken, client, context=lambda_context(300_000))
    assert failed["Status"] == "FAILED" and failed["Reason"].startswith("migrate failed: ")  # the stack rolls back
    deleted = handle({**request("Delete", response_url.url), "PhysicalResourceId": "event-run-engine-schema"}, broken, client)
    assert deleted["Status"] == "SUCCESS" and "Data" not in deleted  # nothing was asked of the database
    assert [b["Status"] for b in response_url.bodies] == ["FAILED", "SUCCESS"]


def test_an_unreachable_response_url_is_logged_not_raised(deployment):
    env, client = deployment
    sent = []

    def refuse(url, body):
        sent.append(json.loads(body))
        raise ConnectionRefusedError("no route to S3")

    answer = answer_cloudformation(request("Delete", "https://example.invalid/x"), env, client, send=refuse)
    assert answer["Status"] == "SUCCESS" and sent == [answer]


def test_the_table_read_is_the_one_yoyo_writes():
    from yoyo.migrations import default_migration_table, get_migration_hash

    assert default_migration_table == "_yoyo_migration"
    assert get_migration_hash("0001.x") == hashlib.sha256(b"0001.x").hexdigest()


def applied_migrations(params: ConnectionParams) -> set[str]:
    return set(Database(params).autocommit(lambda tx: [row["migration_id"] for row in tx.all(
        "SELECT migration_id FROM _yoyo_migration")]))


def test_a_rollbacks_update_to_the_new_code_migrates_nothing_and_answers_success(deployment, response_url, scratch):
    """An upgrade's migration failed (here: timed out, its lock row left, the newest migration not applied) and
    CloudFormation rolls back: it sends MigrateSchema an Update with the previous package's Schema while the migrate
    function still runs the new code. That code used to migrate again, fail the same way (the lock, or the same SQL
    error), answer FAILED, and leave the app stack in UPDATE_ROLLBACK_FAILED. It now migrates only for its own
    stamp: the rollback answers SUCCESS, the database untouched, the app secret's host and keys kept current."""
    env, client = deployment
    migrate_all_but_the_newest(scratch)
    before = applied_migrations(scratch)
    killed_at = Database(scratch).autocommit(lambda tx: tx.scalar("SELECT UTC_TIMESTAMP(6)"))
    Database(scratch).autocommit(lambda tx: tx.execute("INSERT INTO yoyo_lock (locked, ctime, pid) VALUES (1, %s, 9)",
                                                       (killed_at,)))  # the killed migrate's lock, a second old
    previous = schema_version.stamp(schema_version.needed()[:-1])
    moved = dict(env, EVENTS_DB_APP_HOST="events-proxy.proxy-abc.eu-west-1.rds.amazonaws.com")
    started = time.monotonic()
    answer = handle(request("Update", response_url.url, previous), moved, client, context=lambda_context(900_000))
    assert answer["Status"] == "SUCCESS" and response_url.bodies == [answer]
    assert time.monotonic() - started < 5  # no wait for the lock, nor for the database
    assert answer["Data"] == {"Applied": 0, "AppHost": moved["EVENTS_DB_APP_HOST"]}
    assert applied_migrations(scratch) == before  # the failed migration is not tried again
    assert Database(scratch).autocommit(lambda tx: tx.scalar("SELECT COUNT(*) FROM yoyo_lock")) == 1  # nor its lock touched
    secret = json.loads(client.get_secret_value(SecretId=env["EVENTS_DB_SECRET_ARN"])["SecretString"])
    assert secret["host"] == moved["EVENTS_DB_APP_HOST"] and secret["signal_key"] and secret["webhook_key"]


def test_a_rollbacks_update_answers_success_with_the_database_unreachable(deployment, response_url):
    """The rollback asks nothing of the database, so a database that does not answer (a migration that outran the
    function, a cluster resuming slowly) cannot fail it; this package's own Update still migrates, and fails."""
    env, client = deployment
    unreachable = dict(env, EVENTS_DB_ADMIN_HOST="127.0.0.1", EVENTS_DB_ADMIN_SECRET_ARN="arn:aws:secretsmanager:eu-west-1:1:secret:gone")
    rolled_back = handle(request("Update", response_url.url, "0081.x-of-80-abcdef012345"), unreachable, client,
                         context=lambda_context(25_000))
    assert rolled_back["Status"] == "SUCCESS"
    upgraded = handle(request("Update", response_url.url), unreachable, client, context=lambda_context(25_000))
    assert upgraded["Status"] == "FAILED"
