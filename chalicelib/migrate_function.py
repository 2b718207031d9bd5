"""The migrate Lambda: the schema, and the engine's own database user, made to match the stacks.

It runs inside the VPC and is the only code that signs in as the database admin
(the RDS-managed secret, which holds a username and password only; the host is
the cluster's writer endpoint from `EVENTS_DB_ADMIN_HOST`). Every run is safe to
repeat: applied migrations are skipped, and the app user is created if missing,
given the app secret's password and exactly the data privileges it needs, and
the app secret's host is pointed at `EVENTS_DB_APP_HOST` (the proxy when there is
one). So running it after any data-stack change repairs the difference. The app
secret also carries the engine's own keys (`ENGINE_KEYS`: the settings name them
as `<app secret arn>:<key>`); a key it lacks is made here, and one it has is
never changed, so a deploy keeps the keys the game side and the webhook
receivers hold.

`{"action": "rotate"}` gives the app user a new password: the database first,
then the secret, whose other keys it writes back as they were. Open connections keep working; a connection opened in between
is refused once with 1045 and succeeds after re-reading the secret. A secret that cannot be written gives the user
its old password back, so a failed rotate changes nothing.

`{"action": "purge", "ended_before": "<date>", "dry_run": false}` deletes the history of runs that finished
before the date (`events/purge.py`), batch by batch until its time is nearly spent; its answer says what went
and whether more is left (`make purge` invokes it again until none is).

`{"action": "unlock"}` clears yoyo's lock row a migration killed mid-way left
behind (the database is private: this function is the operator's only way in),
once it is older than this function's own timeout; a younger lock is a migrate
that may still be running, and is left, named (`migrate.unlock`).

`{"action": "mark_applied", "id": "<migration id>"}` records one migration as
applied without running it: the one a killed migrate left running on the server,
which finished it unrecorded, so every migrate since fails on its "Duplicate key
name". Only the next migration to apply, and only when the tables it changes are
exactly what it makes of them (`migrate.mark_applied`); anything else is refused,
saying why.

A paused Aurora resumes when a connection arrives and holds the handshake
meanwhile (~15 s, ~30 s after a day paused): the admin connection is tried
again, with a growing wait, for up to RESUME_WAIT_SECONDS before migrating.

Invoked by CloudFormation (the app stack's `MigrateSchema` custom resource: an
event with `RequestType` and `ResponseURL`), it migrates on a Create or Update
whose `Schema` is this package's own stamp (`schema_version.stamp()`), does
nothing on Delete (a schema is never dropped), and always answers CloudFormation
at the presigned `ResponseURL` (through the data stack's S3 gateway endpoint):
SUCCESS, or FAILED with the error, which rolls the deploy back before any new
code ran. An Update carrying another stamp is that rollback (CloudFormation sends
the old properties back while this function still runs the new code): it never
migrates, and never asks the database anything (the migration that failed would
fail again, or meet its own lock), only keeps the app secret's host and keys
current, and answers SUCCESS, so the stack rolls back whole instead of stopping
in UPDATE_ROLLBACK_FAILED. The older code runs on the newer schema. It never
raises there: an unanswered request holds the stack until `ServiceTimeout`.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import ssl
import time
from collections.abc import Callable, Mapping
from typing import Any

import boto3
import pymysql

from .db import REACH_RETRY_SECONDS, ConnectionParams, Database, DatabaseClock, tls_for
from .events.errors import ConfigError
from .migrate import STALE_LOCK_SECONDS, Unlocked, mark_applied, migrate, unlock
from .schema_version import stamp as schema_stamp
from .secrets import CLIENT_CONFIG

logger = logging.getLogger(__name__)

APP_PRIVILEGES = "SELECT, INSERT, UPDATE, DELETE"
ACTIONS = ("migrate", "rotate", "unlock", "purge", "mark_applied")
PURGE_KEEP_SECONDS = 60.0  # a purge starts no batch with less of the function's time left (a batch takes seconds)
RESUME_WAIT_SECONDS = 120.0  # a paused Aurora resumes in ~15-30 s; the function has 900 s
ANSWER_SECONDS = 10.0  # the answer to CloudFormation, and the time kept back for it
PHYSICAL_ID = "event-run-engine-schema"  # one schema per stack: an update never replaces it
# The engine's own keys the app secret carries beside the app user's credentials (infra/app.yaml names each
# as `<app secret arn>:<key>`): the signal key the game server signs with, and a webhook channel's key.
ENGINE_KEYS = ("signal_key", "webhook_key")
KEY_BYTES = 36  # 48 URL-safe characters, as long as the keys the templates generated before they shared a secret


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(f"{name} is not set")
    return value


def _identifier(name: str) -> str:
    if not name.replace("_", "").isalnum():
        raise ConfigError(f"refusing the database name {name!r}")
    return f"`{name}`"


def _read_secret(client: Any, arn: str) -> dict[str, Any]:
    return json.loads(client.get_secret_value(SecretId=arn)["SecretString"])


def admin_params(admin_secret: dict[str, Any], app_secret: dict[str, Any], admin_host: str) -> ConnectionParams:
    return ConnectionParams(
        host=admin_host,
        port=int(app_secret.get("port", 3306)),
        user=admin_secret["username"],
        password=admin_secret["password"],
        database=app_secret["dbname"],
    )


def set_app_user(admin: ConnectionParams, username: str, password: str, tls: ssl.SSLContext | None = None) -> None:
    """Create the app user if missing; give it `password` and the data privileges on the one database."""
    conn = Database(admin, tls=tls).connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute("CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s", (username, password))
            cursor.execute("ALTER USER %s@'%%' IDENTIFIED BY %s", (username, password))
            cursor.execute(f"GRANT {APP_PRIVILEGES} ON {_identifier(admin.database)}.* TO %s@'%%'", (username,))
    finally:
        conn.close()


def wait_for_server(
    admin: ConnectionParams,
    seconds: float = RESUME_WAIT_SECONDS,
    *,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    tls: ssl.SSLContext | None = None,
) -> None:
    """Return once the server accepts the admin (a paused Aurora resumes on the first attempt and holds
    the handshake meanwhile); try again with a growing wait for up to `seconds`, then raise the last error."""
    until, wait, failures = monotonic() + seconds, REACH_RETRY_SECONDS[0], 0
    while True:
        try:
            Database(admin, tls=tls).connect(database=False, within=until - monotonic()).close()
        except pymysql.err.OperationalError as error:
            failures += 1
            if until - monotonic() <= wait:
                raise
            logger.info("the database is not accepting connections yet (%s); trying again in %.2g s", error.args[-1], wait)
            sleep(wait)
            wait = min(wait * 2, REACH_RETRY_SECONDS[1])
            continue
        if failures:
            logger.info("the database accepted the admin after %d failed attempt(s)", failures)
        return


def handle(event: Any, env: Mapping[str, str] | None = None, client: Any = None, context: Any = None) -> dict[str, Any]:
    """`make migrate`/`make rotate`/`make unlock`/`make purge`'s invocation, or CloudFormation's custom resource
    request."""
    if isinstance(event, dict) and "RequestType" in event and "ResponseURL" in event:
        return answer_cloudformation(event, env, client, context)
    return _handle(event, env, client, context=context)


def answer_cloudformation(event: dict[str, Any], env: Mapping[str, str] | None, client: Any, context: Any = None,
                          send: Callable[[str, bytes], int] | None = None) -> dict[str, Any]:
    """Migrate for CloudFormation (a Create or Update of this package's schema; Delete does nothing; an Update of
    another package's, a rollback, keeps the app secret current and migrates nothing) and answer it, whatever
    happens."""
    send = send or _put_answer
    answer: dict[str, Any] = {
        "Status": "SUCCESS", "PhysicalResourceId": event.get("PhysicalResourceId") or PHYSICAL_ID,
        "StackId": event["StackId"], "RequestId": event["RequestId"], "LogicalResourceId": event["LogicalResourceId"],
    }
    try:
        if event["RequestType"] in ("Create", "Update"):
            asked = (event.get("ResourceProperties") or {}).get("Schema")
            # guard: cloudformation-migrates-for-another-packages-schema
            if asked == schema_stamp():
                left = context.get_remaining_time_in_millis() / 1000 if context is not None else RESUME_WAIT_SECONDS
                done = _handle({"action": "migrate"}, env, client, wait_seconds=min(RESUME_WAIT_SECONDS, left - 2 * ANSWER_SECONDS))
                answer["Data"] = {"Applied": len(done["applied"]), "AppHost": str(done["app_host"])}
            else:
                logger.warning("CloudFormation asks for schema %s, not this package's %s: a rollback to an older"
                               " package (it runs on the newer schema); nothing migrated, the app secret kept current",
                               asked, schema_stamp())
                kept = app_secret_current(env, client)
                answer["Data"] = {"Applied": 0, "AppHost": str(kept["app_host"])}
    except Exception as error:  # every failure becomes CloudFormation's FAILED, with its reason
        logger.exception("the schema could not be brought up to date for CloudFormation")
        answer["Status"] = "FAILED"
        answer["Reason"] = f"migrate failed: {type(error).__name__}: {error}"[:1000]
    body = json.dumps(answer).encode()
    try:
        status = send(event["ResponseURL"], body)
        if not 200 <= status < 300:
            logger.error("CloudFormation's response URL answered %s to our %s", status, answer["Status"])
    except Exception:
        logger.exception("could not answer CloudFormation (%s); the stack waits for its timeout", answer["Status"])
    return answer


def _put_answer(url: str, body: bytes) -> int:
    from . import outbound

    # A presigned S3 URL: no Content-Type (it is not part of the signature CloudFormation made).
    return outbound.put(outbound.Endpoint.parse(url), body, {}, timeout=ANSWER_SECONDS).status


def _handle(event: Any, env: Mapping[str, str] | None = None, client: Any = None, *,
            wait_seconds: float = RESUME_WAIT_SECONDS, context: Any = None) -> dict[str, Any]:
    env = os.environ if env is None else env
    action = (event or {}).get("action", "migrate") if isinstance(event, dict) else "migrate"
    if action not in ACTIONS:
        raise ConfigError(f"unknown action {action!r}; expected one of {ACTIONS}")
    app_arn = _required(env, "EVENTS_DB_SECRET_ARN")
    client = client or boto3.client("secretsmanager", config=CLIENT_CONFIG)  # a hung read fails in seconds
    app_secret = _read_secret(client, app_arn)
    admin = admin_params(
        _read_secret(client, _required(env, "EVENTS_DB_ADMIN_SECRET_ARN")),
        app_secret,
        _required(env, "EVENTS_DB_ADMIN_HOST"),
    )
    tls_mode, tls_ca = env.get("EVENTS_DB_TLS", "").strip().lower() or None, env.get("EVENTS_DB_TLS_CA", "").strip() or None
    tls = tls_for(admin, tls_mode, tls_ca)  # verified against the shipped RDS bundle unless the host is this machine
    wait_for_server(admin, wait_seconds, tls=tls)
    if action == "rotate":
        kept = app_secret["password"]
        app_secret["password"] = secrets.token_urlsafe(24)
        set_app_user(admin, app_secret["username"], app_secret["password"], tls)
        try:
            client.put_secret_value(SecretId=app_arn, SecretString=json.dumps(app_secret))
        except Exception:
            # The database has the new password and the secret the old: every connection the engine opens would be
            # refused. Give the user the secret's password back, and fail: nothing changed.
            logger.exception("the app secret could not be written; database user %s gets its password back",
                             app_secret["username"])
            set_app_user(admin, app_secret["username"], kept, tls)
            raise
        logger.info("rotated the password of database user %s", app_secret["username"])
        return {"rotated": app_secret["username"]}

    if action == "unlock":
        return _unlocked(unlock(admin, tls_mode=tls_mode, tls_ca=tls_ca))

    if action == "mark_applied":
        migration = str(event.get("id") or "").strip()
        if not migration:
            raise ConfigError('mark_applied needs the migration\'s id: {"action": "mark_applied", "id": "<id>"}')
        marked = mark_applied(admin, migration, tls_mode=tls_mode, tls_ca=tls_ca)
        said = (f"{marked.migration} recorded as applied: {', '.join(marked.tables)} as it makes them; `make migrate`"
                " applies the rest")
        logger.warning("mark_applied: %s", said)
        return {"marked": marked.migration, "said": said}

    if action == "purge":
        return _purged(event, Database(admin, tls=tls), context)

    applied = migrate(admin, tls_mode=tls_mode, tls_ca=tls_ca)
    set_app_user(admin, app_secret["username"], app_secret["password"], tls)
    kept = app_secret_current(env, client, app_secret)
    logger.info("applied %d migration(s); app user %s is current; keys made: %s", len(applied), app_secret["username"],
                ", ".join(kept["keys_made"]) or "none")
    return {"applied": applied, "app_user": app_secret["username"], **kept}


def app_secret_current(env: Mapping[str, str] | None, client: Any, app_secret: dict[str, Any] | None = None) -> dict[str, Any]:
    """The app secret pointed at `EVENTS_DB_APP_HOST` (the proxy when there is one) and given each engine key it
    lacks (one it has is never changed), written back only when either changed; the database is not asked."""
    env = os.environ if env is None else env
    app_arn = _required(env, "EVENTS_DB_SECRET_ARN")
    client = client or boto3.client("secretsmanager", config=CLIENT_CONFIG)
    app_secret = _read_secret(client, app_arn) if app_secret is None else app_secret
    app_host = env.get("EVENTS_DB_APP_HOST", "").strip()
    repointed = bool(app_host) and app_secret.get("host") != app_host
    if repointed:
        app_secret["host"] = app_host
    keys_made = [key for key in ENGINE_KEYS if not app_secret.get(key)]
    for key in keys_made:
        app_secret[key] = secrets.token_urlsafe(KEY_BYTES)
    if repointed or keys_made:
        client.put_secret_value(SecretId=app_arn, SecretString=json.dumps(app_secret))
    return {"app_host": app_secret.get("host"), "repointed": repointed, "keys_made": keys_made}


def _purged(event: dict[str, Any], db: Database, context: Any) -> dict[str, Any]:
    """`purge`'s answer: what this invocation deleted (or, dry, would delete), and `more` when its time ran out
    first (`make purge` invokes it again). Batches stop PURGE_KEEP_SECONDS before the function's timeout."""
    from .events.purge import cut_of, purge

    def keep_going() -> bool:
        return context is None or context.get_remaining_time_in_millis() / 1000 > PURGE_KEEP_SECONDS

    try:
        report = purge(db, cut_of(event.get("ended_before", "")), DatabaseClock(db).now(),
                       dry_run=event.get("dry_run") is True, keep_going=keep_going)
    finally:
        db.close()
    logger.info("purge: %s", json.dumps(report.summary()))
    return report.summary()


def _unlocked(done: Unlocked) -> dict[str, Any]:
    """`unlock`'s answer, said for the operator who reads it from `make unlock`."""
    if done.left_since is None:
        said = "the lock was stale: cleared; `make migrate` may run" if done.cleared else "nothing was locked"
        logger.info("unlock: %s", said)
        return {"unlocked": done.cleared, "said": said}
    said = (f"a migrate (process {done.left_by}) took the lock at {done.left_since.isoformat()} UTC and may still be"
            f" running: it is cleared only once {STALE_LOCK_SECONDS} s old; try again then")
    logger.warning("unlock: %s", said)
    return {"unlocked": done.cleared, "said": said, "locked_since": done.left_since.isoformat(), "locked_by": done.left_by}
