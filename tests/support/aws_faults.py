"""AWS faults for boto3 clients, through botocore's event hooks: an operation's call fails, or times out.

`Faults(client, …)` hooks each client ahead of everything else (moto's stub
included), so the fault is met where a real one would be: in the client, with
botocore's own retries around it. A fault set with `attempts=1` fails only the
first attempt of the call (the retry goes through); with the default it fails
every attempt, and the call raises to its caller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from botocore.exceptions import ConnectionClosedError, ReadTimeoutError


@dataclass
class _Fault:
    operation: str | None  # None: the next call, whatever it is
    nth: int  # of that operation's calls from now, 1-based
    kind: str  # "error" (the connection drops) | "timeout" (no answer within the read timeout)
    attempts: float
    seen: int = 0
    active: bool = False


class Faults:
    def __init__(self, *clients):
        self.calls: list[str] = []  # every call's operation, in order (one per call, not per attempt)
        self.attempts: list[str] = []  # every attempt sent
        self.failed: list[str] = []  # the attempts that met a fault
        self._faults: list[_Fault] = []
        for client in clients:
            client.meta.events.register_first("before-call", self._before_call)
            client.meta.events.register_first("before-send", self._before_send)

    def fail(self, operation: str | None = None, kind: str = "error", attempts: float = math.inf, nth: int = 1) -> None:
        """The `nth` call of `operation` from now (any operation if None) meets `kind` on `attempts` attempts."""
        self._faults.append(_Fault(operation, nth, kind, attempts))

    def armed(self) -> bool:
        """A fault is set whose call has not come yet."""
        return any(fault.seen < fault.nth for fault in self._faults)

    def clear(self) -> None:
        self._faults.clear()

    def _before_call(self, model, **kwargs):
        self.calls.append(model.name)
        for fault in self._faults:
            fault.active = False
        for fault in self._faults:
            if fault.operation in (None, model.name):
                fault.seen += 1
                if fault.seen == fault.nth:
                    fault.active = True
                    break

    def _before_send(self, request, **kwargs):
        name = kwargs.get("event_name", "").rsplit(".", 1)[-1]
        self.attempts.append(name)
        for fault in self._faults:
            if fault.active and fault.attempts > 0:
                fault.attempts -= 1
                self.failed.append(name)
                if fault.kind == "timeout":
                    raise ReadTimeoutError(endpoint_url=request.url)
                raise ConnectionClosedError(endpoint_url=request.url)
        return None
