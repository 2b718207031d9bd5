"""The migrate Lambda (Secrets Manager under moto, a real MariaDB): schema, the app user, the engine's keys it keeps in
the app secret, rotation."""

import json
import uuid
from datetime import UTC, datetime, timedelta

import boto3
import pymysql
import pytest
from moto import mock_aws

from chalicelib import secrets as engine_secrets
from chalicelib.db import ConnectionParams, Database
from chalicelib.events.errors import ConfigError, Invalid
from chalicelib.migrate import MIGRATIONS
from chalicelib.migrate_function import ENGINE_KEYS, handle

ACCESS_DENIED = {1142, 1044}  # table-level and database-level "command denied"
BAD_PASSWORD = 1045


@pytest.fixture
def deployment(db_params, monkeypatch):
    """A fresh database, an admin secret (RDS-style: no host) and an app secret, as the data stack makes them."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    suffix = uuid.uuid4().hex[:8]
    database, app_user = f"events_deploy_{suffix}", f"events_app_{suffix}"
    with mock_aws():
        client = boto3.client("secretsmanager", region_name="eu-west-1")
        admin_arn = client.create_secret(
            Name="rds!cluster-admin", SecretString=json.dumps({"username": db_params.user, "password": db_params.password})
        )["ARN"]
        app_arn = client.create_secret(Name="events/app", SecretString=json.dumps({
            "engine": "mysql", "username": app_user, "password": "first-password-0123456789",
            "host": db_params.host, "port": db_params.port, "dbname": database,
        }))["ARN"]
        env = {
            "EVENTS_DB_SECRET_ARN": app_arn,
            "EVENTS_DB_ADMIN_SECRET_ARN": admin_arn,
            "EVENTS_DB_ADMIN_HOST": db_params.host,
            "EVENTS_DB_APP_HOST": db_params.host,
        }
        yield env, client
    admin = Database(db_params).connect(database=False)
    with admin.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{database}`")
        cursor.execute("DROP USER IF EXISTS %s@'%%'", (app_user,))
    admin.close()


def app_secret(client, env) -> dict:
    return json.loads(client.get_secret_value(SecretId=env["EVENTS_DB_SECRET_ARN"])["SecretString"])


def connect_as_app(secret: dict) -> pymysql.connections.Connection:
    return Database(ConnectionParams.from_secret(secret)).connect()


def test_migrate_builds_the_schema_and_an_app_user_that_can_use_data_but_not_change_the_schema(deployment):
    env, client = deployment
    result = handle({}, env, client)
    assert len(result["applied"]) == len(list(MIGRATIONS.glob("*.sql")))
    conn = connect_as_app(app_secret(client, env))
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM event_runs")
            assert cursor.fetchone() == (0,)
            cursor.execute(
                "INSERT INTO event_definitions (name, current_version, created_at, updated_at) "
                "VALUES ('x', 1, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))"
            )
            cursor.execute("DELETE FROM event_definitions")
            with pytest.raises(pymysql.err.OperationalError) as denied:
                cursor.execute("CREATE TABLE sneaky (id INT)")
            assert denied.value.args[0] in ACCESS_DENIED
            with pytest.raises(pymysql.err.OperationalError) as denied:
                cursor.execute("DROP TABLE event_run_log")
            assert denied.value.args[0] in ACCESS_DENIED
    finally:
        conn.close()


def test_a_second_migrate_applies_nothing_and_keeps_the_app_user_working(deployment):
    env, client = deployment
    handle({}, env, client)
    assert handle({"action": "migrate"}, env, client)["applied"] == []
    connect_as_app(app_secret(client, env)).close()


def test_migrate_points_the_app_secret_at_the_proxy_when_there_is_one(deployment):
    env, client = deployment
    result = handle({}, dict(env, EVENTS_DB_APP_HOST="events-proxy.proxy-abc.eu-west-1.rds.amazonaws.com"), client)
    assert result["repointed"] is True
    assert app_secret(client, env)["host"] == "events-proxy.proxy-abc.eu-west-1.rds.amazonaws.com"
    assert handle({}, env, client)["repointed"] is True  # and back, when the proxy goes
    assert app_secret(client, env)["host"] == env["EVENTS_DB_APP_HOST"]


def test_rotate_changes_the_password_in_the_database_and_the_secret_together(deployment):
    env, client = deployment
    handle({}, env, client)
    before = app_secret(client, env)
    open_before = connect_as_app(before)  # a connection opened before rotation keeps working
    try:
        assert handle({"action": "rotate"}, env, client) == {"rotated": before["username"]}
        after = app_secret(client, env)
        assert after["password"] != before["password"] and {k: v for k, v in after.items() if k != "password"} == {
            k: v for k, v in before.items() if k != "password"
        }
        connect_as_app(after).close()
        with pytest.raises(pymysql.err.OperationalError) as refused:
            connect_as_app(before)
        assert refused.value.args[0] == BAD_PASSWORD
        with open_before.cursor() as cursor:
            cursor.execute("SELECT 1")
    finally:
        open_before.close()


def test_migrate_makes_the_keys_the_app_secret_lacks_once_and_never_changes_one(deployment):
    """The app secret shares the engine's own keys: the first migrate makes each it lacks (48 characters, each its
    own), a key put by hand (the game side's copy) is kept, and a later migrate changes none."""
    env, client = deployment
    client.put_secret_value(SecretId=env["EVENTS_DB_SECRET_ARN"],
                            SecretString=json.dumps({**app_secret(client, env), "signal_key": "the-game-servers-copy"}))
    assert handle({}, env, client)["keys_made"] == ["webhook_key"]
    made = app_secret(client, env)
    assert made["signal_key"] == "the-game-servers-copy" and len(made["webhook_key"]) == 48
    assert handle({}, env, client)["keys_made"] == []
    assert app_secret(client, env) == made


def test_make_rotate_changes_the_password_and_leaves_the_engines_keys_in_the_shared_secret_untouched(deployment, monkeypatch):
    """`make rotate` rotates one key of the shared secret, the password: the signal and webhook keys stay as they
    were, and the engine reads each by its `<arn>:<json key>` reference, before and after."""
    env, client = deployment
    handle({}, env, client)
    before = app_secret(client, env)
    assert set(ENGINE_KEYS) <= set(before) and before["signal_key"] != before["webhook_key"]
    handle({"action": "rotate"}, env, client)
    after = app_secret(client, env)
    assert after["password"] != before["password"]
    assert {key: after[key] for key in ENGINE_KEYS} == {key: before[key] for key in ENGINE_KEYS}
    connect_as_app(after).close()
    monkeypatch.setattr(engine_secrets, "_provider", None)  # a client of its own inside moto, the one before put back after
    monkeypatch.setattr(engine_secrets, "MAX_AGE_SECONDS", 0)  # every read asks Secrets Manager
    arn = env["EVENTS_DB_SECRET_ARN"]
    assert engine_secrets.plain_secret(f"{arn}:signal_key", "EVENTS_SIGNAL_SECRET_ARN") == before["signal_key"]
    assert engine_secrets.plain_secret(f"{arn}:webhook_key", "WEBHOOK_SECRET_ARN") == before["webhook_key"]
    assert engine_secrets.database_params(arn).password == after["password"]


def test_a_missing_setting_or_an_unknown_action_is_named(deployment):
    env, client = deployment
    with pytest.raises(ConfigError, match="EVENTS_DB_ADMIN_HOST"):
        handle({}, {k: v for k, v in env.items() if k != "EVENTS_DB_ADMIN_HOST"}, client)
    with pytest.raises(ConfigError, match="drop-everything"):
        handle({"action": "drop-everything"}, env, client)


def test_unlock_clears_a_stale_migration_lock_and_names_a_live_one(deployment, db_params):
    """`make unlock`: the migrate function is the only way into the private database, so it is the one that
    clears the lock a killed migrate left; a lock a running migrate may hold is named and kept."""
    env, client = deployment
    handle({}, env, client)
    database = app_secret(client, env)["dbname"]
    admin = Database(ConnectionParams(db_params.host, db_params.port, db_params.user, db_params.password, database,
                                      db_params.unix_socket))

    def lock(age: timedelta) -> None:
        taken = datetime.now(UTC).replace(tzinfo=None) - age
        admin.autocommit(lambda tx: tx.execute("INSERT INTO yoyo_lock (locked, ctime, pid) VALUES (1, %s, 7)", (taken,)))

    lock(timedelta(hours=1))
    assert handle({"action": "unlock"}, env, client) == {
        "unlocked": 1, "said": "the lock was stale: cleared; `make migrate` may run"}
    assert handle({"action": "unlock"}, env, client) == {"unlocked": 0, "said": "nothing was locked"}
    lock(timedelta(seconds=5))
    kept = handle({"action": "unlock"}, env, client)
    assert kept["unlocked"] == 0 and kept["locked_by"] == 7 and "may still be running" in kept["said"]
    assert admin.autocommit(lambda tx: tx.scalar("SELECT COUNT(*) AS n FROM yoyo_lock")) == 1
    admin.close()


def test_purge_deletes_old_history_and_says_when_its_time_ran_out(deployment, db_params, monkeypatch):
    """`make purge`: the function deletes whole runs that finished before the cut, stops a batch short of its
    timeout saying `more`, and refuses a cut too recent before deleting anything."""
    from chalicelib.events import purge as purging
    from tests.support.factory import document
    from tests.support.runner_kit import schedule, step

    env, client = deployment
    handle({}, env, client)
    admin = Database(ConnectionParams(db_params.host, db_params.port, db_params.user, db_params.password,
                                      app_secret(client, env)["dbname"], db_params.unix_socket))
    long_ago = datetime.now(UTC).replace(tzinfo=None) - timedelta(days=40)
    for _ in range(3):  # runs missed 40 days ago: a scheduled run's rows, then its end
        run = schedule(admin, long_ago, document([[step("world.spawn")]]))
        admin.autocommit(lambda tx, r=run: tx.execute(
            "UPDATE event_runs SET status = 'missed', finished_at = %s WHERE id = %s", (long_ago, r.id)))
    cut = (long_ago + timedelta(days=10)).date().isoformat()

    with pytest.raises(Invalid, match="too recent"):
        handle({"action": "purge", "ended_before": datetime.now(UTC).date().isoformat()}, env, client)
    dry = handle({"action": "purge", "ended_before": cut, "dry_run": True}, env, client)
    assert (dry["runs"], dry["more"], dry["dry_run"]) == (3, False, True)

    class NearlyOut:  # a Lambda context with less than PURGE_KEEP_SECONDS left
        @staticmethod
        def get_remaining_time_in_millis() -> int:
            return 30_000

    monkeypatch.setattr(purging, "MOST_RUNS", 1)
    first = handle({"action": "purge", "ended_before": cut}, env, client, context=NearlyOut())
    assert (first["runs"], first["more"]) == (1, True)
    rest = handle({"action": "purge", "ended_before": cut}, env, client)
    assert (rest["runs"], rest["more"]) == (2, False)
    assert admin.autocommit(lambda tx: tx.scalar("SELECT COUNT(*) FROM event_runs")) == 0
    admin.close()


@pytest.mark.realtime  # waits out two real read timeouts
def test_a_hung_secrets_manager_fails_the_migrate_after_two_tries_not_minutes(monkeypatch):
    """Its client had botocore's defaults: 60 s to connect and to read, legacy retries (five tries), so a hung
    Secrets Manager held the deploy's MigrateSchema past its 300 s."""
    from botocore.exceptions import ReadTimeoutError

    from tests.support.silent_server import SilentServer

    server = SilentServer()
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", f"http://127.0.0.1:{server.port}")
        for name, value in (("AWS_DEFAULT_REGION", "eu-west-1"), ("AWS_ACCESS_KEY_ID", "t"), ("AWS_SECRET_ACCESS_KEY", "t")):
            monkeypatch.setenv(name, value)
        env = {"EVENTS_DB_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:1:secret:app", "EVENTS_DB_ADMIN_SECRET_ARN": "a",
               "EVENTS_DB_ADMIN_HOST": "127.0.0.1"}
        with pytest.raises(ReadTimeoutError):
            handle({}, env)
        assert server.connections == 2
    finally:
        server.close()


def test_mark_applied_records_the_migration_a_killed_migrate_left_finished_and_needs_its_id(deployment, db_params):
    """`make mark-applied ID=…`: the database is private, so the migrate function is the operator's way to record
    a migration whose DDL the server finished after the function was killed; without it every migrate failed."""
    from chalicelib.errors import MigrationFailed
    from tests.support.half_migrated import INDEX_BUILD, migrate_up_to, run_as_the_server_finished_it

    env, client = deployment
    database = app_secret(client, env)["dbname"]
    params = ConnectionParams(db_params.host, db_params.port, db_params.user, db_params.password, database,
                              db_params.unix_socket)
    migrate_up_to(params, INDEX_BUILD)
    run_as_the_server_finished_it(params, INDEX_BUILD)
    with pytest.raises(MigrationFailed, match=f"`make mark-applied ID={INDEX_BUILD}` checks that it is and records it"):
        handle({}, env, client)
    with pytest.raises(ConfigError, match="mark_applied needs the migration's id"):
        handle({"action": "mark_applied"}, env, client)
    assert handle({"action": "mark_applied", "id": INDEX_BUILD}, env, client) == {
        "marked": INDEX_BUILD, "said": f"{INDEX_BUILD} recorded as applied: event_run_log as it makes them; `make migrate`"
                                       " applies the rest"}
    assert INDEX_BUILD not in handle({}, env, client)["applied"]  # the rest applied
    connect_as_app(app_secret(client, env)).close()


def test_a_rotate_whose_secret_cannot_be_written_gives_the_database_its_old_password_back(deployment):
    """The database is changed first: a rotate that then failed to write the secret (Secrets Manager refusing or out
    of reach) left the app user on a password nobody knew, and every connection the engine opened refused (1045)."""
    env, client = deployment
    handle({}, env, client)
    before = app_secret(client, env)

    class Refusing:  # the client, its put refused
        def __getattr__(self, name):
            return getattr(client, name)

        def put_secret_value(self, **_):
            raise ConnectionError("Secrets Manager out of reach")

    with pytest.raises(ConnectionError):
        handle({"action": "rotate"}, env, Refusing())
    assert app_secret(client, env) == before
    connect_as_app(before).close()  # the secret's password still signs in
