"""The migrate Lambda: the schema, and the engine's own database user, made to match the stacks.

It runs inside the VPC and is the only code that signs in as the database admin
(the RDS-managed secret, which holds a username and password only; the host is
the cluster's writer endpoint from `EVENTS_DB_ADMIN_HOST`). Every run is safe to
repeat: applied migrations are skipped, and the app user is created if missing,
given the app secret's password and exactly the data privileges it needs, and
the app secret's host is pointed at `EVENTS_DB_APP_HOST` (the proxy when there is
one). So running it after any data-stack change repairs the difference.

`{"action": "rotate"}` gives the app user a new password: the database first,
then the secret. Open connections keep working; a connection opened in between
is refused once with 1045 and succeeds after re-reading the secret.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from collections.abc import Mapping
from typing import Any

import boto3

from .db import ConnectionParams, Database
from .events.errors import ConfigError
from .migrate import migrate

logger = logging.getLogger(__name__)

APP_PRIVILEGES = "SELECT, INSERT, UPDATE, DELETE"
ACTIONS = ("migrate", "rotate")


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


def set_app_user(admin: ConnectionParams, username: str, password: str) -> None:
    """Create the app user if missing; give it `password` and the data privileges on the one database."""
    conn = Database(admin).connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute("CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s", (username, password))
            cursor.execute("ALTER USER %s@'%%' IDENTIFIED BY %s", (username, password))
            cursor.execute(f"GRANT {APP_PRIVILEGES} ON {_identifier(admin.database)}.* TO %s@'%%'", (username,))
    finally:
        conn.close()


def handle(event: Any, env: Mapping[str, str] | None = None, client: Any = None) -> dict[str, Any]:
    env = os.environ if env is None else env
    action = (event or {}).get("action", "migrate") if isinstance(event, dict) else "migrate"
    if action not in ACTIONS:
        raise ConfigError(f"unknown action {action!r}; expected one of {ACTIONS}")
    app_arn = _required(env, "EVENTS_DB_SECRET_ARN")
    client = client or boto3.client("secretsmanager")
    app_secret = _read_secret(client, app_arn)
    admin = admin_params(
        _read_secret(client, _required(env, "EVENTS_DB_ADMIN_SECRET_ARN")),
        app_secret,
        _required(env, "EVENTS_DB_ADMIN_HOST"),
    )
    if action == "rotate":
        app_secret["password"] = secrets.token_urlsafe(24)
        set_app_user(admin, app_secret["username"], app_secret["password"])
        client.put_secret_value(SecretId=app_arn, SecretString=json.dumps(app_secret))
        logger.info("rotated the password of database user %s", app_secret["username"])
        return {"rotated": app_secret["username"]}

    applied = migrate(admin)
    set_app_user(admin, app_secret["username"], app_secret["password"])
    app_host = env.get("EVENTS_DB_APP_HOST", "").strip()
    repointed = bool(app_host) and app_secret.get("host") != app_host
    if repointed:
        app_secret["host"] = app_host
        client.put_secret_value(SecretId=app_arn, SecretString=json.dumps(app_secret))
    logger.info("applied %d migration(s); app user %s is current", len(applied), app_secret["username"])
    return {"applied": applied, "app_user": app_secret["username"], "app_host": app_secret.get("host"), "repointed": repointed}
