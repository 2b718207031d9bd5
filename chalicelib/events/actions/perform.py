"""From a claimed step to an Outcome: the registry says which handler, the handler does it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

from ..model import kept_note
from . import core
from .channels import Channel
from .context import ActionContext
from .outcome import Outcome
from .registry import lookup, params_problem

logger = logging.getLogger(__name__)


class Bridge(Protocol):
    """Where module actions go: the game bridge (`bridge.BridgeClient`), the sandbox, or a rehearsal's simulation."""

    timeout: float  # the longest one dispatch may take

    def dispatch(self, context: ActionContext) -> Outcome:
        """The action's outcome; never raises for what the other side answered."""


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
    def longest_dispatch_seconds(self) -> float:
        """The longest one action may take: the slowest of its outbound deadlines."""
        bridge = self.bridge.timeout if self.bridge else 0.0
        return max(bridge, self.cue_channel.timeout, self.announce_channel.timeout)

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
