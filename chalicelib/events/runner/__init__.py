"""The runner: the tick that starts runs, claims and dispatches steps, and applies their outcomes.

    tick.py       one tick: one clock read, reclaim, plan, advance the runs whose wake time has come
    reclaim.py    expired leases back to pending, or failed at the ceiling with their on_failure
    planner.py    a run per cron occurrence of recurring definitions
    advance.py    one run: start it, work its phase serially, move it on
    outcomes.py   a dispatch's outcome as one fenced write, its log rows, the on_failure disposition
    budget.py     when a tick stops taking work
    loop.py       ticks over time: tick when the earliest wake time comes, read it about once a second
    sleep.py      the deployment asleep when idle, and awake again
    compose.py    the composition root: the process's one runner and sleep switches, built from the settings
    lambda_handler.py  the `tick` Lambda's invocation
    command.py    the operator's `tick --once` and `tick`
"""

from .budget import Budget
from .outcomes import Rules
from .tick import Runner, TickReport

__all__ = ["Budget", "Rules", "Runner", "TickReport"]
