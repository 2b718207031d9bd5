"""A manual phase's hold told on the cue channel, once its unit of work has committed.

The invariant: the post is made after the commit, outside any transaction, and
at most once: one that fails (or finds the tick's time spent) is logged and not
retried — the run's page and its `waiting` say the same, and the hold itself is
in the rows. A hold for anything but a person (a signal, a time) posts nothing.
"""

from __future__ import annotations

import logging

from ..actions.notice import Notice
from ..errors import ChannelError
from ..lifecycle import Manual
from ..programme import Programme
from .context import WalkContext
from .cursor import Held

logger = logging.getLogger(__name__)


def post_hold(ctx: WalkContext, run_id: int, programme: Programme, held: Held) -> None:
    """The cue channel is told of a manual phase's hold, with the run's console link."""
    plan = programme.phase(held.phase)
    if not isinstance(plan.condition, Manual):
        return
    notice = Notice.of_hold(run_id, plan.number, plan.name, ctx.now, ctx.actions.console_url)
    if not ctx.budget.allows(ctx.actions.cue_channel.timeout):
        logger.warning("run %s: the hold of phase %s was not posted: the tick's time is spent", run_id, plan.number,
                       extra={"run_id": run_id, "phase": plan.number})
        return
    try:
        ctx.actions.cue_channel.post(notice)
    except ChannelError as error:
        logger.warning("run %s: the hold of phase %s was not posted: %s", run_id, plan.number, error,
                       extra={"run_id": run_id, "phase": plan.number})
