"""From a claimed step to an Outcome: the registry says which handler, the handler does it.

This is the contract's side of the outside: a `Bridge` takes module actions, a
`Channel` (`notice.py`) carries what core actions post; the adapters
(`events/adapters/`) implement them and this package imports none of them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import Protocol, runtime_checkable

from ..model import Step, kept_note
from . import core
from .context import ActionContext
from .notice import Channel
from .outcome import Outcome, Probe
from .registry import lookup, params_problem

logger = logging.getLogger(__name__)


class Bridge(Protocol):
    """Where module actions go: the game bridge (`adapters/bridge.BridgeClient`), the sandbox, or a rehearsal's
    simulation."""

    timeout: float  # the longest one dispatch may take

    def dispatch(self, context: ActionContext) -> Outcome:
        """The action's outcome; never raises for what the other side answered."""


@runtime_checkable
class StatusBridge(Bridge, Protocol):
    """A bridge whose game can be asked about a step in doubt (the game bridge's status endpoint); a dry run's
    simulation is not one."""

    asks_status: bool  # GAME_BRIDGE_STATUS: a step in doubt is asked about before it is re-sent

    def probe(self, context: ActionContext) -> Probe:
        """What the game says of the step in doubt before `context.attempt` is sent; never raises."""


@dataclass(frozen=True)
class Actions:
    bridge: Bridge | None
    cue_channel: Channel
    announce_channel: Channel
    console_url: str | None = None  # cues link to their run's page here
    escalation_channel: Channel | None = None  # escalations go here (None: the cue channel)
    escalate_after_seconds: int = 0  # EVENT_ESCALATE_AFTER_SECONDS: a human wait's escalation (0: none)
    bridge_setting: str = "GAME_BRIDGE_URL"  # what configures `bridge`, for the failure when it is not

    @property
    def escalations(self) -> Channel:
        return self.escalation_channel or self.cue_channel

    @property
    def escalation_interval(self) -> timedelta | None:
        """How long a wait for a person goes on before it is escalated, on a live run's clock (None: never,
        EVENT_ESCALATE_AFTER_SECONDS is 0)."""
        return timedelta(seconds=self.escalate_after_seconds) if self.escalate_after_seconds else None

    def escalation_due(self, now: datetime, time_scale: float = 1.0) -> datetime | None:
        """When a wait for a person that begins now is escalated, on its run's clock (`time_scale`: a dry run's
        1/speed divides the interval); None: never."""
        interval = self.escalation_interval
        # guard: a-dry-runs-decision-escalates-after-the-live-interval
        return None if interval is None else now + interval * time_scale

    @cached_property
    def longest_dispatch_seconds(self) -> float:
        """The longest one action may take: the slowest of its outbound deadlines (fixed: read once)."""
        bridge = self.bridge.timeout if self.bridge else 0.0
        return max(bridge, self.cue_channel.timeout, self.announce_channel.timeout)

    @cached_property
    def longest_attempt_seconds(self) -> float:
        """The longest one attempt at any step may take: `longest_dispatch_seconds`, and the status GET's
        deadline before it where a step in doubt is asked about first (GAME_BRIDGE_STATUS on)."""
        if isinstance(self.bridge, StatusBridge) and self.bridge.asks_status:
            return self.longest_dispatch_seconds + self.bridge.timeout
        return self.longest_dispatch_seconds

    def asks_status_of(self, step: Step) -> bool:
        """Whether a step in doubt is asked about before it is re-sent: a module action sent to the game bridge,
        GAME_BRIDGE_STATUS on (a dry run's simulation or sandbox is never asked)."""
        spec = lookup(step.action_id)
        # guard: a-core-action-is-asked-about
        return isinstance(self.bridge, StatusBridge) and self.bridge.asks_status and spec is not None and not spec.core

    def dispatch_seconds(self, step: Step) -> float:
        """The longest one attempt at `step` may take: two outbound deadlines for a step in doubt that is asked
        about first (the status GET, then the delivery), else one."""
        asked = self.bridge.timeout if step.in_doubt and self.bridge is not None and self.asks_status_of(step) else 0.0
        # guard: a-probed-attempt-counts-one-deadline
        return self.longest_dispatch_seconds + asked

    def probe(self, context: ActionContext) -> Probe | None:
        """What the game says of the step in doubt before this attempt; None when it is not asked."""
        if not isinstance(self.bridge, StatusBridge) or not self.asks_status_of(context.step):
            return None
        return self.bridge.probe(context)

    @cached_property
    def core_handlers(self) -> dict[str, Callable[[ActionContext], Outcome]]:
        """One handler per core action of the registry (built once: every dispatch looks one up)."""
        return {
            "core.wait": core.wait,
            "core.cue": lambda context: core.cue(context, self.cue_channel, self.console_url, self.escalate_after_seconds),
            "core.announce": lambda context: core.announce(context, self.announce_channel, self.console_url),
        }

    def perform(self, context: ActionContext) -> Outcome:
        """Never raises: an unexpected error is an interruption, retried like a lost answer."""
        try:
            return self._perform(context)
        except Exception as error:  # a bug must not strand the claim until its lease expires
            logger.exception("action %s of step %s raised", context.step.action_id, context.step.id)
            return Outcome.retry(kept_note(f"internal error: {type(error).__name__}: {error}") or "internal error")

    def _perform(self, context: ActionContext) -> Outcome:
        step = context.step
        spec = lookup(step.action_id)
        if spec is None:
            return Outcome.failed(f"unknown action {step.action_id!r}")
        if spec.core and step.action_version not in spec.versions:
            return Outcome.failed(f"{spec.id} has no version {step.action_version}")
        problem = params_problem(spec, step.params, f"{step.action_id} params")
        if problem:  # stored before its action's schema said so: fail as validation would have refused it
            return Outcome.failed(problem)
        if spec.core:
            return self.core_handlers[spec.id](context)
        if self.bridge is None:
            return Outcome.failed(f"{self.bridge_setting} is not set: module actions cannot be dispatched")
        return self.bridge.dispatch(context)
