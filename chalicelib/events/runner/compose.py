"""The runner's composition root: the one place a runner is built from the settings, the database and the clock.

Invariant: a process (a Lambda container, the operator's `tick`, `make dev`) has
one runner and one set of sleep switches, rebuilt only when the runtime's parts
change; everything the runner sends out shares one deadline rule (`bridge_timeout`).
The Lambda handler (`lambda_handler`) and the operator's command (`command`) only
take what is built here. A live setting that cannot be used stops the build (no
live event runs half-configured); a dry run's setting that cannot be used (the
sandbox's key missing or unreadable; the rehearsal channel's webhook key or, when
no live channel shares its platform, its bot's token, missing or unreadable)
never does: it is logged as an ERROR, and fails each dry run step that needs it,
with the cause on its log, while live runs go on.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from ... import runtime
from ...config import Settings
from ...db import Clock, Database, must_exist
from ..actions.notice import Channel
from ..actions.perform import Actions
from ..adapters.aws import AwsSwitches, aws_switches
from ..adapters.bridge import BridgeClient
from ..adapters.channels import channel_for as plain_channel
from ..adapters.rehearsal import UnusableBridge, UnusableChannel, rehearsal_actions
from ..adapters.signing import SigningKey
from ..chat import ChatApis
from ..chat.channel import ChatChannel
from ..chat.platforms import DiscordApi, SlackApi
from ..chat.render import mapped_roles
from ..errors import ConfigError, SecretUnreadable
from ..setting_keys import setting_key
from .outcomes import Rules
from .tick import Runner

logger = logging.getLogger(__name__)

MAX_BRIDGE_TIMEOUT_SECONDS = 10.0


def bridge_timeout(settings: Settings) -> float:
    """The overall deadline of one outbound call (the bridge, a webhook, SNS): well inside
    the lease — a quarter of it, at most ten seconds — so an attempt is over long before
    a sweep could hand its step to another."""
    return min(MAX_BRIDGE_TIMEOUT_SECONDS, settings.step_lease_seconds / 4)


def chat_apis(settings: Settings, timeout: float) -> ChatApis | None:
    """The bots of a deployment with a `discord:` or `slack:` channel (None: none), their tokens read through
    the secrets cache (and again after a 401). A platform without its token has no bot: a channel on it is
    then not built (`build_runner`). A bot only REHEARSAL_CHANNEL needs is a dry run's setting: its token is
    read as one (`for_dry_runs`)."""
    live = _live_schemes(settings)
    used = live | {_scheme(settings.rehearsal_channel)}
    discord = slack = None
    # guard: a-rehearsal-bots-token-is-read-as-a-live-setting
    if "discord" in used:
        token = _secret(settings.discord_bot_token, settings.discord_bot_token_secret_arn, "DISCORD_BOT_TOKEN_SECRET_ARN",
                        for_dry_runs="discord" not in live)
        discord = None if token is None else DiscordApi(settings.discord_api_url, token, timeout=timeout,
                                                        mapped_roles=mapped_roles(settings, "discord"))
    if "slack" in used:
        token = _secret(settings.slack_bot_token, settings.slack_bot_token_secret_arn, "SLACK_BOT_TOKEN_SECRET_ARN",
                        for_dry_runs="slack" not in live)
        slack = None if token is None else SlackApi(settings.slack_api_url, token, timeout=timeout,
                                                    mapped_roles=mapped_roles(settings, "slack"))
    return ChatApis(discord, slack) if discord or slack else None


def _scheme(channel: str) -> str:
    """What carries a channel setting's posts: `discord`, `slack`, `webhook`, `sns` or `log`."""
    return channel.partition(":")[0]


def _live_schemes(settings: Settings) -> set[str]:
    """What carries the live channels' posts (CUE_CHANNEL, ANNOUNCE_CHANNEL, ESCALATION_CHANNEL): what a live
    run needs, so what stops the runner's build when it cannot be used."""
    return {_scheme(c) for c in (settings.cue_channel, settings.announce_channel, settings.escalation_channel or "")}


def build_runner(settings: Settings, db: Database, clock: Clock) -> Runner:
    timeout = bridge_timeout(settings)
    chat = chat_apis(settings, timeout)

    def channel_for(setting: str, name: str, **webhook: Any) -> Channel:
        """The channel a setting names: a bot's (`discord:`, `slack:`), or a plain one (`adapters/channels.py`);
        ConfigError when it cannot be built (its bot's token or its webhook's key not set)."""
        scheme, _, target = setting.partition(":")
        api = None if chat is None else chat.of(scheme)
        if api is not None:
            return ChatChannel(name, api, target, db, clock, mention_role=webhook.get("mention_role"))
        if scheme in ("discord", "slack"):
            token = f"{scheme.upper()}_BOT_TOKEN"
            raise ConfigError(f"{name} channel is {scheme}:<channel id>: set {token} or {token}_SECRET_ARN")
        return plain_channel(setting, name, **webhook)

    bridge = None
    if settings.game_bridge_url:
        secret = _secret(settings.game_bridge_secret, settings.game_bridge_secret_arn, "GAME_BRIDGE_SECRET_ARN")
        if not secret:
            raise ConfigError("GAME_BRIDGE_URL is set: set GAME_BRIDGE_SECRET or GAME_BRIDGE_SECRET_ARN too")
        bridge = BridgeClient(settings.game_bridge_url, secret, timeout=timeout, asks_status=settings.game_bridge_status)
    live_webhooks = "webhook" in _live_schemes(settings)
    webhook_secret = _secret(settings.webhook_secret, settings.webhook_secret_arn, "WEBHOOK_SECRET_ARN") if live_webhooks else None
    actions = Actions(
        bridge=bridge,
        cue_channel=channel_for(settings.cue_channel, "cue", timeout=timeout, webhook_secret=webhook_secret),
        announce_channel=channel_for(settings.announce_channel, "announce", timeout=timeout, webhook_secret=webhook_secret),
        console_url=settings.console_url,
        escalation_channel=channel_for(
            settings.escalation_channel or settings.cue_channel, "escalation", timeout=timeout,
            webhook_secret=webhook_secret, mention_role=settings.escalation_mention)
        if settings.escalation_channel or settings.escalation_mention else None,
        escalate_after_seconds=settings.escalate_after_seconds,
    )
    rules = Rules(
        lease_seconds=settings.step_lease_seconds,
        max_attempts=settings.step_max_attempts,
        retry_seconds=settings.step_retry_seconds,
        module_actions=settings.module_actions,
    )
    rehearsal_key = webhook_secret
    if rehearsal_key is None and _scheme(settings.rehearsal_channel) == "webhook":  # the dry runs' alone
        rehearsal_key = _secret(settings.webhook_secret, settings.webhook_secret_arn, "WEBHOOK_SECRET_ARN",
                                for_dry_runs=True)
    try:
        rehearsal_channel = channel_for(settings.rehearsal_channel, "rehearsal", timeout=timeout, webhook_secret=rehearsal_key)
    except ConfigError as unusable:
        # guard: a-rehearsal-channel-that-cannot-be-built-stops-the-tick
        logger.error("%s; until then every dry run's post fails, and live runs go on", unusable)
        rehearsal_channel = UnusableChannel("rehearsal", str(unusable))
    rehearsals = rehearsal_actions(actions, rehearsal_channel, _sandbox(settings, timeout))
    return Runner(db, clock, actions, rules, concurrency=settings.tick_concurrency, shard=settings.tick_shard,
                  rehearsals=rehearsals, chat=chat)


def _sandbox(settings: Settings, timeout: float) -> BridgeClient | UnusableBridge | None:
    """The bridge of sandbox dry runs: its own URL and key, never the live bridge's; None when not configured.
    Without its key, a bridge that sends nothing and fails each sandbox step with the cause."""
    if not settings.sandbox_configured:
        return None
    key = _secret(settings.game_bridge_sandbox_secret, settings.game_bridge_sandbox_secret_arn,
                  "GAME_BRIDGE_SANDBOX_SECRET_ARN", for_dry_runs=True)
    if key is None:
        # guard: a-sandbox-without-its-key-stops-the-tick
        cause = ("GAME_BRIDGE_SANDBOX_URL is set, so the tick signs for the sandbox: set its own key in"
                 " GAME_BRIDGE_SANDBOX_SECRET or GAME_BRIDGE_SANDBOX_SECRET_ARN")
        logger.error("%s; until then every sandbox dry run's module step fails, and live runs go on", cause)
        return UnusableBridge(cause)
    return BridgeClient(must_exist(settings.game_bridge_sandbox_url), key, timeout=timeout, rehearsal=True)


def _secret(value: str | None, arn: str | None, setting: str, *, for_dry_runs: bool = False) -> SigningKey | None:
    """The signing key a setting names: fixed, or read from its secret ARN on each use (through the cache)
    and past the cache after a 401 (`signing`). The secret is read once here: for a live setting, one that
    cannot be read stops the runner's build, as a missing setting does; for a dry run's (`for_dry_runs`) the
    failure is logged and the key is read again at its first use (a signed request that cannot have its key
    is not sent, and fails with the cause)."""
    key = setting_key(value, arn, setting)
    if value is None and key is not None:
        try:
            key.current()
        except SecretUnreadable as error:
            # guard: a-dry-runs-unreadable-secret-stops-the-tick
            if not for_dry_runs:
                raise
            logger.error("%s: dry runs that need it fail their steps until it can be read; live runs go on",
                         error.messages[0])
    return key


@dataclass
class _ProcessRunner:
    parts: tuple[Settings, Database, Clock]
    runner: Runner


_process: _ProcessRunner | None = None
_process_lock = threading.Lock()


def process_runner() -> Runner:
    """The runner of this process (Lambda container or CLI), rebuilt if the runtime's parts change."""
    global _process
    parts = (runtime.settings(), runtime.database(), runtime.clock())
    with _process_lock:
        if _process is None or any(a is not b for a, b in zip(_process.parts, parts, strict=True)):
            if _process is not None:
                _process.runner.close()
            _process = _ProcessRunner(parts, build_runner(*parts))
        return _process.runner


_switches: AwsSwitches | None = None


def process_switches(settings: Settings) -> AwsSwitches:
    """The minute rule and the wake-up schedule of this deployment, built once per container."""
    global _switches
    rule, function, role = settings.tick_rule_name, settings.tick_function_arn, settings.wake_role_arn
    if not (rule and function and role):
        raise ConfigError("EVENTS_SLEEP=on: set EVENTS_TICK_RULE_NAME, EVENTS_TICK_FUNCTION_ARN and EVENTS_WAKE_ROLE_ARN")
    with _process_lock:
        if _switches is None or (_switches.rule_name, _switches.function_arn, _switches.role_arn) != (rule, function, role):
            _switches = aws_switches(rule, function, role)
        return _switches
