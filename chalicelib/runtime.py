"""The process-wide pieces, built lazily once per Lambda container (or CLI process).

Settings, the database and the clock are created on first use and reused across
invocations; tests swap them with `override()`. A process that answers HTTP
requests says so (`http_middleware`) before its database is built, and gets
connections that give up on a silent database after API_READ_SECONDS, so a
request answers 503 well inside API Gateway's 29 s; a tick's connections wait
TICK_READ_SECONDS, long enough to outlast a lock wait (50 s by default).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from .config import Settings
from .db import Clock, ConnectionParams, Database, DatabaseClock, tls_for
from .errors import ConfigError, SecretUnreadable
from .health import SecretsHealth

API_READ_SECONDS = 8.0
TICK_READ_SECONDS = 60.0
# Settings that name a secret, and the plain setting that, when set, stands in for it.
SECRET_SETTINGS = (
    ("EVENTS_DB_SECRET_ARN", "db_secret_arn", "db_url"),
    ("GAME_BRIDGE_SECRET_ARN", "game_bridge_secret_arn", "game_bridge_secret"),
    ("GAME_BRIDGE_SANDBOX_SECRET_ARN", "game_bridge_sandbox_secret_arn", "game_bridge_sandbox_secret"),
    ("WEBHOOK_SECRET_ARN", "webhook_secret_arn", "webhook_secret"),
    ("EVENTS_SIGNAL_SECRET_ARN", "signal_secret_arn", "signal_secret"),
    ("DISCORD_BOT_TOKEN_SECRET_ARN", "discord_bot_token_secret_arn", "discord_bot_token"),
    ("SLACK_BOT_TOKEN_SECRET_ARN", "slack_bot_token_secret_arn", "slack_bot_token"),
    ("SLACK_SIGNING_SECRET_ARN", "slack_signing_secret_arn", "slack_signing_secret"),
)

@dataclass
class _Built:
    """What this process has built so far (each part once, on first use)."""

    settings: Settings | None = None
    database: Database | None = None
    health: SecretsHealth | None = None
    clock: Clock | None = None
    read_timeout: float | None = None  # set by the API's middleware before its first connection


_lock = threading.Lock()
_state = _Built()


def settings() -> Settings:
    with _lock:
        if _state.settings is None:
            _state.settings = Settings.from_env()
        return _state.settings


def db_params(config: Settings | None = None) -> ConnectionParams:
    config = config or settings()
    if config.db_url:
        return ConnectionParams.from_url(config.db_url)
    if config.db_secret_arn:
        from .secrets import database_params

        return database_params(config.db_secret_arn)
    raise ConfigError("set EVENTS_DB_URL (mysql://user:pass@host:port/db) or EVENTS_DB_SECRET_ARN")


def database() -> Database:
    config = settings()
    with _lock:
        if _state.database is None:
            params = db_params(config)
            _state.database = Database(
                params,
                tls=tls_for(params, config.db_tls, config.db_tls_ca),
                read_timeout=TICK_READ_SECONDS if _state.read_timeout is None else _state.read_timeout,
                refresh_params=_reread_secret(None if config.db_url else config.db_secret_arn),
            )
        return _state.database


def _reread_secret(arn: str | None) -> Callable[[], ConnectionParams] | None:
    if not arn:
        return None

    def reread() -> ConnectionParams:
        from .secrets import database_params

        return database_params(arn, force_fetch=True)

    return reread


def http_middleware(request: object, get_response: Callable[[object], object]) -> object:
    """Chalice HTTP middleware: this process answers requests, so its database connections (built
    after this) give up on a silent database after API_READ_SECONDS."""
    if _state.read_timeout is None:
        _state.read_timeout = API_READ_SECONDS
    return get_response(request)


def check_secrets(config: Settings | None = None) -> None:
    """Read every secret this process is configured with (from the cache while it is fresh).

    SecretUnreadable lists each that cannot be read; no database is asked.
    """
    config = config or settings()
    named = [(name, getattr(config, arn)) for name, arn, plain in SECRET_SETTINGS
             if getattr(config, arn) and not getattr(config, plain)]
    if not named:
        return
    from . import secrets  # boto3 only where a secret ARN is configured

    problems = []
    for name, arn in named:
        try:
            if name == "EVENTS_DB_SECRET_ARN":
                secrets.database_params(arn)
            else:
                secrets.plain_secret(arn, name)
        except SecretUnreadable as error:
            problems += error.messages
    if problems:
        raise SecretUnreadable(*problems)


def secrets_health() -> SecretsHealth:
    """GET /health's bounded check of `check_secrets`, its failure remembered briefly (`health`)."""
    with _lock:
        if _state.health is None:
            _state.health = SecretsHealth(check_secrets)
        return _state.health


def clock() -> Clock:
    db = database()
    with _lock:
        if _state.clock is None:
            _state.clock = DatabaseClock(db)
        return _state.clock


def reset() -> None:
    """Forget everything built so far (the next use reads the environment again)."""
    global _state
    with _lock:
        db, _state = _state.database, _Built()
    if db is not None:
        db.close()
    if "chalicelib.secrets" in sys.modules:  # loaded only where a secret ARN is configured
        sys.modules["chalicelib.secrets"].forget()


@contextmanager
def override(**parts: Any) -> Iterator[None]:
    """Use the given settings=, database= and/or clock= inside the block."""
    global _state
    with _lock:
        saved, _state = _state, replace(_state, **parts)
    try:
        yield
    finally:
        with _lock:
            _state = saved
