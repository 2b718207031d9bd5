"""The process-wide pieces, built lazily once per Lambda container (or CLI process).

Settings, the database and the clock are created on first use and reused across
invocations; tests swap them with `override()`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .config import Settings
from .db import Clock, ConnectionParams, Database, DatabaseClock
from .events.errors import ConfigError

_lock = threading.Lock()
_state: dict[str, object] = {}


def settings() -> Settings:
    with _lock:
        if "settings" not in _state:
            _state["settings"] = Settings.from_env()
        return _state["settings"]  # type: ignore[return-value]


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
        if "database" not in _state:
            _state["database"] = Database(db_params(config))
        return _state["database"]  # type: ignore[return-value]


def clock() -> Clock:
    db = database()
    with _lock:
        if "clock" not in _state:
            _state["clock"] = DatabaseClock(db)
        return _state["clock"]  # type: ignore[return-value]


def reset() -> None:
    """Forget everything built so far (the next use reads the environment again)."""
    with _lock:
        db = _state.get("database")
        _state.clear()
    if isinstance(db, Database):
        db.close()


@contextmanager
def override(**parts: object) -> Iterator[None]:
    """Use the given settings=, database= and/or clock= inside the block."""
    with _lock:
        saved = dict(_state)
        _state.update(parts)
    try:
        yield
    finally:
        with _lock:
            _state.clear()
            _state.update(saved)
