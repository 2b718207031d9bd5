"""Real actors at once against the real database: each on a thread of its own with a connection of its own,
released together by one barrier, as two presses, a press and a save, or two planners meet in production.
No sleep and no process: a test built on it stays in the fast tier."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from chalicelib.db import ConnectionParams, Database

WAIT = 60  # seconds; only the give-up of a thread that never finishes


def at_once(db_params: ConnectionParams, *actors: Callable[[Database], Any]) -> list[Any]:
    """What each actor answered, in their order: its return value, or the exception it raised (an Exception, never
    swallowed silently: the test reads it). Each actor gets a `Database` of its own, closed after."""
    start = threading.Barrier(len(actors))
    answers: list[Any] = [None] * len(actors)

    def act(i: int, actor: Callable[[Database], Any]) -> None:
        own = Database(db_params)
        try:
            start.wait(WAIT)
            answers[i] = actor(own)
        except Exception as error:  # the answer of an actor that lost: the test asserts on it
            answers[i] = error
        finally:
            own.close()

    threads = [threading.Thread(target=act, args=(i, actor)) for i, actor in enumerate(actors)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive(), "an actor never finished"
    return answers
