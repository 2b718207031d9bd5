"""The engine's exceptions, on top of the base layer's (`chalicelib.errors`); none knows about HTTP.

    chalicelib.errors.EngineError   a refusal meant for the caller (the base tree: Unauthorized,
     │                              Forbidden, AuthUnavailable, SecretUnreadable, SchemaBehind)
     ├── Invalid                    the input breaks a rule (also a ValueError)
     ├── NotFound                   no such definition, run or step
     └── Conflict                   the guarded change did not take: the row is not in a state it allows
                                    (detail: run_status, and step_status / step_parked for a step's control)
    ValueError
     ├── InvalidCron                a schedule that is not standard five-field cron, or an unknown time zone
     └── UnreadableDocument         a stored document the runner cannot walk
    Exception
     └── ChannelError               a notification post failed; the step is retried with the same key

The base layer's classes are re-exported here for the engine's own modules.
Plain ValueErrors raised by the store are programming errors (a caller broke a
precondition), not answers to a client, and stay ValueErrors.
"""

from __future__ import annotations

from ..errors import AuthUnavailable as AuthUnavailable
from ..errors import ConfigError as ConfigError
from ..errors import ConnectionFailed as ConnectionFailed
from ..errors import DeadlineExceeded as DeadlineExceeded
from ..errors import EngineError as EngineError
from ..errors import Forbidden as Forbidden
from ..errors import OutboundError as OutboundError
from ..errors import SchemaBehind as SchemaBehind
from ..errors import SecretUnreadable as SecretUnreadable
from ..errors import Unauthorized as Unauthorized


class Invalid(EngineError, ValueError):
    pass


class NotFound(EngineError):
    pass


class Conflict(EngineError):
    """`run_status` (and for a step's control `step_status`, `step_parked`) travel beside the message."""

    def __init__(self, message: str, *, run_status: str, step_status: str | None = None, step_parked: bool | None = None):
        detail: dict[str, str | bool] = {"run_status": run_status}
        if step_status is not None:
            detail["step_status"] = step_status
        if step_parked is not None:
            detail["step_parked"] = step_parked
        super().__init__(message, detail=detail)


class InvalidCron(ValueError):
    pass


class UnreadableDocument(ValueError):
    pass


class ChannelError(Exception):
    pass
