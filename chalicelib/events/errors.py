"""The engine's exceptions, on top of the base layer's (`chalicelib.errors`); none knows about HTTP.

    chalicelib.errors.EngineError   a refusal meant for the caller (the base tree: Unauthorized,
     │                              Forbidden, AuthUnavailable, SecretUnreadable, SchemaBehind)
     ├── Invalid                    the input breaks a rule (also a ValueError)
     ├── NotFound                   no such definition, run or step
     ├── Conflict                   the guarded change did not take: the row is not in a state it allows
     │                              (detail: run_status, and step_status / step_parked for a step's control)
     ├── Stale                      a control's If-Match (or `expected`) names a state the run or step has left
     │                              (detail: the statuses now, and the current etag)
     ├── KeyReused                  an Idempotency-Key pressed before with another control, or over 24 h ago
     ├── NewerRow                   a row holds a word (a status, a mode, a park reason) this version does not
     │                              know: a newer version wrote it, and this one neither shows nor moves it
     └── Clash                      the change collides with a row that stands: a name another definition
                                    holds (detail: definition_id, definition_name), a skipped occurrence (skipped),
                                    an Idempotency-Key another actor pressed (key_used_by, key_used_for, …),
                                    a stored schedule that no longer reads (schedule_unreadable)
    ValueError
     ├── InvalidCron                a schedule that is not standard five-field cron, or an unknown time zone
     └── UnreadableDocument         a stored document the runner cannot walk
    Exception
     ├── ChannelError               a notification post failed; the step is retried with the same key (a
     │                              platform's own wait, or that what the call named is gone, beside it)
     ├── Refused                    a chat press refused before the database is asked (who, where, which control)
     ├── TooLate                    not a failure: a chat press the API's worker would begin after its answer had
     │                              gone; the platform's other half (`chat_press`) makes it
     ├── AnsweredBefore             not a failure: a control's Idempotency-Key was pressed within 24 h; its
     │                              first answer travels in it (the transaction it leaves wrote nothing)
     └── BridgeCaseFailed           a `bridge-check` case whose expectation the game's bridge did not meet:
         │                          what was expected and what came back
         └── BridgeUnreachable      nothing answered at the bridge's address (no byte sent): the cases after
                                    it are not run

The base layer's classes are re-exported here for the engine's own modules.
Plain ValueErrors raised by the store are programming errors (a caller broke a
precondition), not answers to a client, and stay ValueErrors.
"""

from __future__ import annotations

from typing import Any

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


class Stale(EngineError):
    """The tag a person saw is not the run's or step's now: `etag` (the current one) and the statuses travel
    beside the message, which names the state now."""

    def __init__(self, message: str, *, etag: str, run_status: str, step_status: str | None = None,
                 step_parked: bool | None = None):
        detail: dict[str, str | bool] = {"etag": etag, "run_status": run_status}
        if step_status is not None:
            detail["step_status"] = step_status
        if step_parked is not None:
            detail["step_parked"] = step_parked
        super().__init__(message, detail=detail)
        self.etag = etag


class KeyReused(EngineError):
    pass


class NewerRow(EngineError):
    pass


class Clash(EngineError):
    """What the change collides with travels beside the message (`detail`)."""


class InvalidCron(ValueError):
    pass


class UnreadableDocument(ValueError):
    pass


class ChannelError(Exception):
    """`retry_after`: the seconds the platform asked to wait (a rate limit); `gone`: the message or channel the
    call named is no more (deleted), so sending it again cannot take."""

    def __init__(self, words: str, *, retry_after: float | None = None, gone: bool = False):
        super().__init__(words)
        self.retry_after, self.gone = retry_after, gone


class Refused(Exception):
    """A chat press refused before the database is asked (who, where, which control): answered privately (on
    Slack through the press's `response_url`)."""

    def __init__(self, words: str, response_url: str = ""):
        super().__init__(words)
        self.response_url = response_url


class TooLate(Exception):
    """A press its worker would begin after its answer has gone: the other half makes it (`chat/answers.py`)."""


class AnsweredBefore(Exception):
    """A repeat of a control pressed within 24 h with the same Idempotency-Key: `body` is its first answer."""

    def __init__(self, body: dict[str, Any]):
        super().__init__("answered before")
        self.body = body


class BridgeCaseFailed(Exception):
    """A conformance case failed: its message says what was expected, what came back and what to fix."""


class BridgeUnreachable(BridgeCaseFailed):
    """The bridge could not be reached at all (refused, unresolvable): every later case would fail the same way."""
