"""What `make dev` says on the terminal: one line at a time, flushed; more with EVENTS_DEV_VERBOSE=1."""

from __future__ import annotations

import os


def verbose() -> bool:
    return os.environ.get("EVENTS_DEV_VERBOSE") == "1"


def say(line: str) -> None:
    print(line, flush=True)
