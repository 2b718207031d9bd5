"""The runner: the tick that starts runs, claims and dispatches steps, and applies their outcomes.

    tick.py       one tick: one clock read, reclaim, plan, walk the runs whose wake time has come
    reclaim.py    expired leases back to pending, or failed at the ceiling with their on_failure
    planner.py    a run per cron occurrence of recurring definitions
    walk.py       one run: the loop that composes the moves below, each unit of work ending in the next claim
      lease.py        the run lease: taken before the walk, released after it
      cursor.py       where the walk stands: NeedsRead, Head, Drained, Closing, Held, Done
      context.py      what the moves are given: the tick's clock read, budget, rules, actions
      start.py        the start (or the miss) of a scheduled run; where a run under way is picked up
      attempt.py      a step attempt: may it start, what it comes to (doubt asked about), its outcome settled
      phase_end.py    a drained phase left, held or closed; the cleanup phase's reverts and end
      cue_timeout.py  a parked cue's timeout, as its on_timeout says
      hold_post.py    a manual phase's hold told on the cue channel
    attention.py  a parked cue's reminders and escalation tries
    stalls.py     runs that waited too long for a person (paused, or held for an advance), escalated
    outcomes.py   a dispatch's outcome as one fenced write, its log rows, the on_failure disposition
    budget.py     when a tick stops taking work
    loop.py       ticks over time: tick when the earliest wake time comes, read it about once a second (ten while a person is awaited)
    sleep.py      the deployment asleep when idle, and awake again
    compose.py    the composition root: the process's one runner and sleep switches, built from the settings
    lambda_handler.py  the `tick` Lambda's invocation
    command.py    the operator's `tick --once` and `tick`
"""

from .budget import Budget
from .outcomes import Rules
from .tick import Runner, TickReport

__all__ = ["Budget", "Rules", "Runner", "TickReport"]
