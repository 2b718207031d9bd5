"""Every exception the engine raises on purpose, in one tree; none knows about HTTP.

    Exception
     ├── EngineError             a request the engine refuses; `messages` lists every problem found
     │    ├── Invalid            the input breaks a rule (also a ValueError)
     │    ├── NotFound           no such definition, run or step
     │    ├── Conflict           the guarded change did not take: the row is not in a state it allows
     │    ├── Unauthorized       no token, or one that does not verify
     │    ├── Forbidden          a valid token without a role the operation needs
     │    ├── AuthUnavailable    tokens cannot be checked (not configured, or the key set is unreachable)
     │    ├── SecretUnreadable   a secret the engine needs cannot be read (missing, not permitted, unreachable, malformed)
     │    └── SchemaBehind       the database lacks a migration this code ships (an upgrade not migrated yet)
     ├── ConfigError             a setting is missing or out of range (also a ValueError)
     ├── InvalidCron             a schedule that is not standard five-field cron, or an unknown time zone (also a ValueError)
     ├── UnreadableDocument      a stored document the runner cannot walk (also a ValueError)
     ├── ChannelError            a notification post failed; the step is retried with the same key
     └── OutboundError           an outbound call got no complete answer; the peer may or may not have acted
          ├── DeadlineExceeded   the overall deadline passed before the whole answer arrived
          └── ConnectionFailed   unreachable, hung up, or answered something that is not HTTP/1.1

The HTTP status of each lives in `chalicelib.api.errors` alone. Plain ValueErrors
raised by the store are programming errors (a caller broke a precondition), not
answers to a client, and stay ValueErrors.
"""

from __future__ import annotations


class EngineError(Exception):
    """A refusal meant for the caller; one message per problem."""

    def __init__(self, *messages: str):
        super().__init__("; ".join(messages))
        self.messages = list(messages)


class Invalid(EngineError, ValueError):
    pass


class NotFound(EngineError):
    pass


class Conflict(EngineError):
    pass


class Unauthorized(EngineError):
    pass


class Forbidden(EngineError):
    pass


class AuthUnavailable(EngineError):
    pass


class SecretUnreadable(EngineError):
    pass


class SchemaBehind(EngineError):
    pass


class ConfigError(ValueError):
    pass


class InvalidCron(ValueError):
    pass


class UnreadableDocument(ValueError):
    pass


class ChannelError(Exception):
    pass


class OutboundError(Exception):
    pass


class DeadlineExceeded(OutboundError):
    pass


class ConnectionFailed(OutboundError):
    pass
