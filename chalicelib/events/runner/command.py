"""The operator's `tick` command (`python -m chalicelib tick`, `make dev`): one tick, or ticks until Ctrl-C.

Invariant: a tick takes work only inside its budget, and a stopped loop lets each
worker finish the step in hand before the runner closes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from .budget import Budget
from .loop import Loop
from .tick import Runner, TickReport


def tick_once(runner: Runner, budget_seconds: float) -> TickReport:
    """One tick that takes work for `budget_seconds` (the operator's `tick --once`). A step it starts has room
    for its worst case after that, a step in doubt's two outbound deadlines included: the budget bounds when
    work is taken, never which step."""
    # guard: tick-once-leaves-room-for-one-deadline
    return runner.tick(Budget.for_seconds(budget_seconds, hard_seconds=budget_seconds + runner.doubt_worst_case_seconds))


def tick_forever(
    runner: Runner,
    tick_seconds: float,
    on_report: Callable[[TickReport], None],
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Tick on wake times until Ctrl-C; then workers finish the step in hand and stop."""
    loop = Loop(runner, math.inf, tick_seconds, sleep=sleep, on_report=on_report)
    try:
        loop.run()
    except KeyboardInterrupt:
        loop.stop.set()
    finally:
        runner.close()
