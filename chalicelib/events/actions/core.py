"""The actions that run inside the engine: core.wait, core.cue, core.announce.

They never write the store; each returns an Outcome for the runner to apply.
Their params have been checked against the action's schema before they run
(`perform`), the same schema that validated the definition.
"""

from __future__ import annotations

from ..errors import ChannelError
from .channels import Channel
from .context import ActionContext
from .notice import Notice
from .outcome import Outcome


def wait(context: ActionContext) -> Outcome:
    """Done at once; the *next* step waits (a sleeping wait would hold its lease for the delay).

    The hold is measured from the wait's first start, which the claim keeps
    across attempts, so a re-dispatch computes the same moment and the store
    refuses to push the next step out a second time.
    """
    seconds = context.step.params["seconds"]
    started = context.step.started_at or context.now  # the claim wrote now if this is the first attempt
    return Outcome.done(hold_until=started + context.scaled(seconds))


def cue(context: ActionContext, channel: Channel, console_url: str | None = None) -> Outcome:
    """Post the instruction, then park: a person confirms or skips it."""
    instruction = context.step.params["instruction"]
    posted = _post(channel, Notice.of(context.step, "cue", instruction, context.now, console_url))
    return posted or Outcome.parked(note=f"waiting for a game master: {instruction}")


def announce(context: ActionContext, channel: Channel, console_url: str | None = None) -> Outcome:
    message = context.step.params["message"]
    return _post(channel, Notice.of(context.step, "announce", message, context.now, console_url)) or Outcome.done()


def _post(channel: Channel, notice: Notice) -> Outcome | None:
    """None when delivered; otherwise a retry: the same key goes out again after the backoff."""
    try:
        channel.post(notice)
    except ChannelError as error:
        return Outcome.retry(f"{channel.name} channel: {error}")
    return None
