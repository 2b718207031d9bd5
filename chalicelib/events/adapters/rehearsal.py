"""What a dry run meets instead of the world: a simulated bridge, and channels that say it is a rehearsal.

The invariant: a rehearsal's Actions (`rehearsal_actions`) hold no live bridge and no live channel. Every
notice it posts goes to the rehearsal channel (REHEARSAL_CHANNEL) with "[REHEARSAL]" before its text; its
module actions are answered done here (simulate) or sent to the sandbox bridge (its own URL and key), or,
when the sandbox's settings cannot be used, fail with the cause (`UnusableBridge`), never sent elsewhere; and
when the rehearsal channel cannot be built, its posts fail with the cause (`UnusableChannel`), never sent
elsewhere either.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from ..actions.context import ActionContext
from ..actions.notice import Channel, Notice
from ..actions.outcome import Outcome
from ..actions.perform import Actions, Bridge
from ..errors import ChannelError
from ..lifecycle import RehearsalBridge

logger = logging.getLogger(__name__)


class SimulatedBridge:
    """Answers every module action done, inside the engine: no game server is asked."""

    timeout = 0.0

    def dispatch(self, context: ActionContext) -> Outcome:
        return Outcome.done(result={"outcome": "done", "simulated": True})


class UnusableBridge:
    """A dry run's bridge whose settings cannot be used (`cause`): each module action is sent nowhere and
    fails with the cause, on its step's log and as an ERROR line."""

    timeout = 0.0

    def __init__(self, cause: str):
        self.cause = cause

    def dispatch(self, context: ActionContext) -> Outcome:
        logger.error("dry run %s: step %s not sent: %s", context.step.run_id, context.step.id, self.cause)
        return Outcome.failed(f"not sent: {self.cause}")


class UnusableChannel:
    """A dry run's channel whose settings cannot be used (`cause`): each notice is sent nowhere and fails as a
    channel's post does (ChannelError: the step's retry, then its failure), with the cause, and as an ERROR line."""

    timeout = 0.0

    def __init__(self, name: str, cause: str):
        self.name, self.cause = name, cause

    def post(self, notice: Notice) -> None:
        logger.error("dry run %s: a notice to the %s channel not sent: %s", notice.run_id, self.name, self.cause)
        raise ChannelError(f"not sent: {self.cause}")


class RehearsalChannel:
    """A channel whose every notice says it comes from a rehearsal."""

    def __init__(self, inner: Channel):
        self.inner, self.name, self.timeout = inner, inner.name, inner.timeout

    def post(self, notice: Notice) -> None:
        # guard: a-dry-runs-posts-are-not-marked-rehearsal
        self.inner.post(replace(notice, rehearsal=True))


def rehearsal_actions(live: Actions, channel: Channel, sandbox: Bridge | None) -> dict[RehearsalBridge, Actions]:
    """A dry run's Actions by its bridge: the live ones' console link and escalation rule, every channel the
    rehearsal channel, the bridge simulated or the sandbox (None: not configured)."""
    prefixed = RehearsalChannel(channel)

    def of(bridge: Bridge | None, setting: str) -> Actions:
        # guard: a-dry-run-never-escalates
        return Actions(bridge=bridge, cue_channel=prefixed, announce_channel=prefixed, console_url=live.console_url,
                       escalation_channel=prefixed, escalate_after_seconds=live.escalate_after_seconds,
                       bridge_setting=setting)

    return {RehearsalBridge.SIMULATE: of(SimulatedBridge(), "the simulated bridge"),
            RehearsalBridge.SANDBOX: of(sandbox, "GAME_BRIDGE_SANDBOX_URL")}
