"""Two or more real processes whose interleaving a test forces: each is started spawned, each puts its one
(name, answer) on the shared queue, and the test reads the answers once every process has exited cleanly."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from typing import Any

WAIT = 60  # seconds; each wait ends on its condition, this is only the give-up
POLL = 0.05  # seconds between two looks at a condition

SPAWN = multiprocessing.get_context("spawn")


def answers_of(*processes: tuple[Callable[..., None], tuple[Any, ...]], results: Any) -> dict[str, Any]:
    """Run each (target, args) in a process of its own; the answers they put on `results`, by name."""
    workers = [SPAWN.Process(target=target, args=args) for target, args in processes]
    for worker in workers:
        worker.start()
    answers = dict(results.get(timeout=WAIT) for _ in workers)
    for worker in workers:
        worker.join(WAIT)
        assert worker.exitcode == 0
    return answers


def until(condition: Callable[[], bool], what: str, every: float = POLL) -> None:
    """Return once `condition()` holds, looking every `every` seconds; AssertionError(`what`) after WAIT seconds.
    The other process may take seconds to start on a loaded machine (a spawned interpreter imports everything)."""
    give_up = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > give_up:
            raise AssertionError(what)
        time.sleep(every)
