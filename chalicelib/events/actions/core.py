"""The actions that run inside the engine: core.wait, core.cue, core.announce.

They never write the store; each returns an Outcome for the runner to apply.
Their params have been checked against the action's schema before they run
(`perform`), the same schema that validated the definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..errors import ChannelError
from ..lifecycle import CueOnTimeout
from ..model import Attention
from .context import ActionContext
from .notice import Channel, Notice
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


def cue(context: ActionContext, channel: Channel, console_url: str | None = None,
        escalate_after_seconds: int = 0) -> Outcome:
    """Post the instruction (with its choices' labels, for a cue that asks), then park with the cue's timers: a
    person confirms or skips it.

    `escalate_after_seconds` is the deployment's escalation for a cue without its own (0: none)."""
    params = context.step.params
    instruction = params["instruction"]
    # A cue that asks says its answers, as the console's buttons do.
    answers = ", ".join(c["label"] for c in params.get("choices") or ())
    asked = f"{instruction} (answer: {answers})" if answers else instruction
    posted = _post(channel, Notice.of(context.step, "cue", asked, context.now, console_url))
    return posted or Outcome.parked(note=f"waiting for a game master: {instruction}",
                                    attention=cue_attention(context, escalate_after_seconds))


def cue_attention(context: ActionContext, escalate_after_seconds: int) -> Attention:
    """When a cue parked now is first reminded, escalated and timed out, on the run's clock; and how long an
    acknowledge holds it: as long as it waits before its escalation (none: it holds without a bound)."""
    params = context.step.params

    def after(seconds: int | None) -> datetime | None:
        # guard: a-dry-runs-cue-timers-run-on-the-live-clock
        return None if not seconds else context.now + context.scaled(seconds)

    timeout = cue_timeout(params, context.time_scale, context.auto_confirm_seconds)
    escalate = params.get("escalate_after_seconds", escalate_after_seconds)
    return Attention(after(params.get("remind_after_seconds")), after(escalate),
                     None if timeout is None else context.now + timeout.after,
                     context.scaled(escalate).total_seconds() if escalate else None)


@dataclass(frozen=True)
class CueTimeout:
    """When a parked cue times out (after it parked, on the run's clock) and what the timeout does."""

    after: timedelta
    on_timeout: CueOnTimeout
    by_rehearsal: bool  # a rehearsal's engine confirm: it came before the cue's own timeout, or the cue has none
    choice: str | None = None  # the answer a confirm at the timeout assumes, for a cue with choices


def cue_timeout(params: dict[str, Any], time_scale: float, auto_confirm_seconds: int | None) -> CueTimeout | None:
    """The cue's own `timeout_seconds` on the run's clock with its `on_timeout`; in a rehearsal, the engine's
    confirm after `auto_confirm_seconds` (rehearsal seconds) unless the cue's own comes first (at the same
    moment, the engine's confirm). None: it never times out.
    A confirm of a cue with choices assumes its `timeout_choice` (the engine's, else its first choice)."""
    own = params.get("timeout_seconds")
    own_after = timedelta(seconds=own * time_scale) if own else None
    choices = params.get("choices") or []
    # guard: a-dry-runs-engine-confirm-overrides-the-cues-own-earlier-timeout
    if auto_confirm_seconds is not None and (own_after is None or timedelta(seconds=auto_confirm_seconds) <= own_after):
        first = choices[0]["value"] if choices else None
        return CueTimeout(timedelta(seconds=auto_confirm_seconds), CueOnTimeout.CONFIRM, by_rehearsal=True,
                          choice=params.get("timeout_choice", first))
    if own_after is None:
        return None
    on_timeout = CueOnTimeout(params.get("on_timeout", CueOnTimeout.CONTINUE))
    # guard: a-timeout-forgets-its-choice
    choice = params.get("timeout_choice") if on_timeout is CueOnTimeout.CONFIRM else None
    return CueTimeout(own_after, on_timeout, by_rehearsal=False, choice=choice)


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
