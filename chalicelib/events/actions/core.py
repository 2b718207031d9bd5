"""The actions that run inside the engine: core.wait, core.cue, core.announce.

They never write the store; each returns an Outcome for the runner to apply.
Their params have been checked against the action's schema before they run
(`perform`), the same schema that validated the definition.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ..errors import ChannelError
from ..model import Step
from .channels import Channel
from .notice import Notice
from .outcome import Outcome


def wait(step: Step, now: datetime) -> Outcome:
    """Done at once; the *next* step waits (a sleeping wait would hold its lease for the delay).

    The hold is measured from the wait's first start, which the claim keeps
    across attempts, so a re-dispatch computes the same moment and the store
    refuses to push the next step out a second time.
    """
    seconds = step.params["seconds"]
    started = step.started_at or now  # the claim wrote now if this is the first attempt
    return Outcome.done(hold_until=started + timedelta(seconds=seconds))


def cue(step: Step, channel: Channel, now: datetime, console_url: str | None = None) -> Outcome:
    """Post the instruction, then park: a person confirms or skips it."""
    instruction = step.params["instruction"]
    posted = _post(channel, Notice.of(step, "cue", instruction, now, console_url))
    return posted or Outcome.parked(note=f"waiting for a game master: {instruction}")


def announce(step: Step, channel: Channel, now: datetime, console_url: str | None = None) -> Outcome:
    message = step.params["message"]
    return _post(channel, Notice.of(step, "announce", message, now, console_url)) or Outcome.done()


def _post(channel: Channel, notice: Notice) -> Outcome | None:
    """None when delivered; otherwise a retry: the same key goes out again after the backoff."""
    try:
        channel.post(notice)
    except ChannelError as error:
        return Outcome.retry(f"{channel.name} channel: {error}")
    return None
