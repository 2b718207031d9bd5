"""The base layer's exceptions: what configuration, secrets, tokens and outbound HTTP raise, below the engine.

    Exception
     ├── EngineError             a refusal meant for the caller; `messages` lists every problem found,
     │    │                      `detail` the fields a client reads instead of parsing a message
     │    ├── Unauthorized       no token, or one that does not verify
     │    ├── Forbidden          a valid token without a role the operation needs (detail: roles_needed, roles_held)
     │    ├── AuthUnavailable    tokens cannot be checked (not configured, or the key set unreachable or unusable)
     │    ├── SecretUnreadable   a secret the engine needs cannot be read (missing, not permitted, unreachable, malformed)
     │    └── SchemaBehind       the database lacks a migration this code ships (an upgrade not migrated yet)
     ├── ConfigError             a setting is missing or out of range (also a ValueError)
     ├── MigrationFailed         a migration failed: named, with the server's own error and, when its change
     │                           may be in the database already, the way out (`make mark-applied`)
     ├── NotMarked               `mark_applied` refused: why, and what to run instead
     └── OutboundError           an outbound call got no complete answer; `sent`: a byte of the request had
          │                      left, so the peer may have acted (False: it cannot have)
          ├── DeadlineExceeded   the overall deadline passed before the whole answer arrived
          └── ConnectionFailed   unreachable, hung up, or answered something that is not HTTP/1.1

The engine's own refusals (Invalid, NotFound, Conflict, …) extend this tree in
`chalicelib.events.errors`; nothing here imports from `events/`. The HTTP status
of each lives in `chalicelib.api.errors` alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class EngineError(Exception):
    """A refusal meant for the caller; one message per problem, and the fields a client may act on."""

    def __init__(self, *messages: str, detail: dict[str, Any] | None = None):
        super().__init__("; ".join(messages))
        self.messages = list(messages)
        self.detail: dict[str, Any] = dict(detail or {})


class Unauthorized(EngineError):
    pass


class Forbidden(EngineError):
    """A refusal for want of a role: `roles_needed` (any one of them will do) and `roles_held` travel beside the message.

    Without roles (a refusal that no role would lift), no detail.
    """

    def __init__(self, message: str, *, roles_needed: Iterable[str] = (), roles_held: Iterable[str] = ()):
        needed = sorted(roles_needed)
        super().__init__(message, detail={"roles_needed": needed, "roles_held": sorted(roles_held)} if needed else None)
        self.roles_needed = needed


class AuthUnavailable(EngineError):
    pass


class SecretUnreadable(EngineError):
    pass


class SchemaBehind(EngineError):
    pass


class ConfigError(ValueError):
    pass


class OutboundError(Exception):
    def __init__(self, message: str, *, sent: bool = False):
        super().__init__(message)
        self.sent = sent  # the request's first byte had been sent: the peer may or may not have acted on it


class DeadlineExceeded(OutboundError):
    pass


class ConnectionFailed(OutboundError):
    pass


class MigrationFailed(Exception):
    """A migration that failed (`migration`, its id), said with the server's own error (`migrate.py` words it)."""

    def __init__(self, migration: str, said: str):
        super().__init__(said)
        self.migration = migration


class NotMarked(Exception):
    """`mark_applied` refused: the message says why, and what to run instead."""
