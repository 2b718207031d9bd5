"""Settings from the environment, validated once.

A bad value fails loudly at start-up with the setting's name and its allowed
range, rather than as a strange error deep inside a tick: every number has a
range (`RANGES`) that keeps the arithmetic built on it sane. Settings that would
let a dry run reach the live game or the live channels (the sandbox as the
bridge or with its key, REHEARSAL_CHANNEL as a live channel) are refused too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .errors import ConfigError
from .sameness import same_secret_key, same_url

# (default, lowest, highest) of each numeric setting. Leases as short as 2 s
# serve crash tests; an hour is past any step worth leasing. A tick longer than
# a minute would overlap the next scheduled invocation.
RANGES: dict[str, tuple[int, int, int]] = {
    "EVENT_TICK_SECONDS": (15, 1, 60),
    "EVENT_STEP_LEASE_SECONDS": (120, 2, 3600),
    "EVENT_STEP_MAX_ATTEMPTS": (3, 1, 20),
    "EVENT_STEP_RETRY_SECONDS": (30, 0, 3600),
    "EVENT_TICK_CONCURRENCY": (8, 1, 64),
    # How long a run may wait for a person before one escalation (0: never); a cue may set its own.
    "EVENT_ESCALATE_AFTER_SECONDS": (900, 0, 7 * 24 * 3600),
    # How long a signal or a control (what moves a live event) waits for a database resuming from a pause
    # before it answers 503: at most 20 s, so the work itself still has 9 s of API Gateway's 29.
    "EVENT_API_DATABASE_WAIT_SECONDS": (20, 0, 20),
    # The longest a staff token may be valid for (exp - iat, or exp - now without iat): a day, as the common
    # identity providers' longest defaults; a leaked token outlives it by no more than this.
    "EVENT_TOKEN_MAX_LIFETIME_SECONDS": (24 * 3600, 60, 30 * 24 * 3600),
}


def _int_in_range(env: Mapping[str, str], name: str) -> int:
    default, lowest, highest = RANGES[name]
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number from {lowest} to {highest}, got {raw!r}") from None
    if not lowest <= value <= highest:
        raise ConfigError(f"{name} must be from {lowest} to {highest}, got {value}")
    return value


SNS_TOPIC_ARN = re.compile(r"arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?")


DISCORD_ID = re.compile(r"\d{1,20}")  # a snowflake: a channel, guild, role or user id
SLACK_ID = re.compile(r"[A-Z0-9]{1,30}")  # a Slack channel, team, user or user-group id


def _channel(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "log").strip() or "log"
    scheme, _, target = value.partition(":")
    if value == "log" or (scheme == "sns" and SNS_TOPIC_ARN.fullmatch(target)) or (scheme == "webhook" and _http_url(target)) \
            or (scheme == "discord" and DISCORD_ID.fullmatch(target)) or (scheme == "slack" and SLACK_ID.fullmatch(target)):
        return value
    raise ConfigError(f"{name} must be 'log', 'sns:<topic arn>', 'webhook:<http(s) url>', 'discord:<channel id>' or"
                      f" 'slack:<channel id>', got {value!r}")


def same_channel(one: str, other: str) -> bool:
    """Whether two channel settings post to the same place: webhooks compared as places (`same_url`), a Discord or
    Slack channel by its id, an SNS topic by its ARN; `log` is no place (every channel may be it). make deploy's
    preflight refuses the same settings with it before deploying (infra/preflight.py)."""
    scheme, _, target = one.partition(":")
    other_scheme, _, other_target = other.partition(":")
    if scheme != other_scheme or one == "log":
        return False
    # guard: a-rehearsal-webhook-is-compared-as-text
    return same_url(target, other_target) if scheme == "webhook" else target == other_target


def _chat_roles(env: Mapping[str, str], name: str, ids: re.Pattern[str]) -> tuple[tuple[str, str], ...]:
    """DISCORD_ROLES / SLACK_ROLES: `<id>=<engine role>,…` (a Discord guild role id; a Slack user or user-group
    id), the chat identities an engine role is given to; unset: nobody in the chat may press."""
    from .roles import ROLES

    pairs = []
    for part in filter(None, (p.strip() for p in env.get(name, "").split(","))):
        chat_id, equals, role = (s.strip() for s in part.partition("="))
        if not equals or not ids.fullmatch(chat_id) or role not in ROLES:
            raise ConfigError(f"{name} must be <id>=<role>,… with a role among {', '.join(ROLES)}, got {part!r}")
        pairs.append((chat_id, role))
    return tuple(pairs)


def _chat_id(env: Mapping[str, str], name: str, ids: re.Pattern[str]) -> str | None:
    value = (env.get(name) or "").strip()
    if value and not ids.fullmatch(value):
        raise ConfigError(f"{name} must be an id ({ids.pattern}), got {value!r}")
    return value or None


def _api_url(env: Mapping[str, str], name: str, default: str) -> str:
    value = (env.get(name) or "").strip().rstrip("/") or default
    if not _http_url(value):
        raise ConfigError(f"{name} must be an http(s) URL, got {value!r}")
    return value


def _public_key(env: Mapping[str, str], name: str) -> str | None:
    value = (env.get(name) or "").strip().lower()
    if value and not re.fullmatch(r"[0-9a-f]{64}", value):
        raise ConfigError(f"{name} must be the application's public key: 64 hexadecimal digits, got {value!r}")
    return value or None


SECRET_ARN_PARTS = 7  # arn:<partition>:secretsmanager:<region>:<account>:secret:<name>


def secret_reference(reference: str) -> tuple[str, str | None]:
    """The secret a `*_SECRET_ARN` setting names, and the key of its JSON it names (None: the whole secret).

    `<secret arn>` is the whole secret; `<secret arn>:<json key>` one key of a JSON secret, so that several
    keys can share one secret (the engine's own keys share the app secret: docs/operations.md, "Secrets").
    """
    parts = reference.split(":")
    if parts[0] != "arn" or len(parts) <= SECRET_ARN_PARTS:
        return reference, None
    return ":".join(parts[:SECRET_ARN_PARTS]), ":".join(parts[SECRET_ARN_PARTS:])


def _secret_setting(env: Mapping[str, str], name: str, *, keyed: bool = True) -> str | None:
    """A secret's ARN, or (`keyed`) its ARN and one key of its JSON; refused with the forms when it is neither."""
    value = (env.get(name) or "").strip()
    if not value:
        return None
    _, key = secret_reference(value)
    if key is not None and (not keyed or not re.fullmatch(r"[\w.-]{1,128}", key)):
        forms = "a secret's ARN, or its ARN and a key of its JSON (<secret arn>:<json key>)" if keyed else "a secret's ARN"
        raise ConfigError(f"{name} must be {forms}, got {value!r}")
    return value


def _discord_role(env: Mapping[str, str], name: str) -> str | None:
    """A Discord role id (its snowflake: digits), or None when unset."""
    value = (env.get(name) or "").strip()
    if not value:
        return None
    if not re.fullmatch(r"\d{1,20}", value):
        raise ConfigError(f"{name} must be a Discord role id (digits only, as <@&id> takes it), got {value!r}")
    return value


MAX_SHARDS = 64


def _shard(env: Mapping[str, str], name: str) -> tuple[int, int]:
    """`index/count` (default `0/1`, every run): this tick advances the runs whose id modulo count is index."""
    raw = env.get(name, "").strip() or "0/1"
    index, slash, count = raw.partition("/")
    if slash and index.isdigit() and count.isdigit() and 0 <= int(index) < int(count) <= MAX_SHARDS:
        return int(index), int(count)
    raise ConfigError(f"{name} must be index/count with 0 <= index < count <= {MAX_SHARDS} (for example 0/2), got {raw!r}")


# A module action's id, matched whole ("world.spawn\n" is not one): the registry's rule, and EVENT_MODULE_ACTIONS'.
MODULE_ACTION_ID = re.compile(r"[a-z][a-z0-9_]{0,48}\.[a-z][a-z0-9_]{0,48}")


def _module_actions(env: Mapping[str, str]) -> frozenset[str] | None:
    """EVENT_MODULE_ACTIONS: the module actions the game bridge serves, comma-separated; unset: not declared
    (any well-formed `module.name` is accepted at save, as before, with a warning)."""
    raw = env.get("EVENT_MODULE_ACTIONS", "")
    if not raw.strip():
        return None
    ids = [part.strip() for part in raw.split(",") if part.strip()]
    bad = [i for i in ids if not MODULE_ACTION_ID.fullmatch(i) or i.startswith("core.")]
    if bad:
        raise ConfigError(f"EVENT_MODULE_ACTIONS must list module action ids (module.name, comma-separated), got {bad[0]!r}")
    return frozenset(ids)


def _console_url(env: Mapping[str, str]) -> str | None:
    value = env.get("EVENTS_CONSOLE_URL", "").strip()
    if value and not _http_url(value):
        raise ConfigError(f"EVENTS_CONSOLE_URL must be an http(s) URL, got {value!r}")
    return value or None


def _sandbox_url(env: Mapping[str, str]) -> str | None:
    value = (env.get("GAME_BRIDGE_SANDBOX_URL") or "").strip().rstrip("/")
    if value and not _http_url(value):
        raise ConfigError(f"GAME_BRIDGE_SANDBOX_URL must be an http(s) URL, got {value!r}")
    return value or None


def _db_tls(env: Mapping[str, str]) -> str | None:
    value = env.get("EVENTS_DB_TLS", "").strip().lower()
    if value and value not in ("off", "verify"):
        raise ConfigError(f"EVENTS_DB_TLS must be 'off' or 'verify', got {value!r}")
    return value or None


def _on_off(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name, "").strip().lower() or "off"
    if value not in ("on", "off"):
        raise ConfigError(f"{name} must be 'on' or 'off', got {value!r}")
    return value == "on"


def _http_url(value: str) -> bool:
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.hostname) and "@" not in parts.netloc


def _dev_logins(env: Mapping[str, str], name: str) -> tuple[tuple[str, str], ...]:
    """`{"role": "token", ...}`, set only by `python -m devtools dev` (make dev) for the console's one-click login."""
    raw = env.get(name, "").strip()
    if not raw:
        return ()
    try:
        logins = json.loads(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a JSON object of role to token") from None
    if not isinstance(logins, dict) or not all(isinstance(v, str) and v for v in logins.values()):
        raise ConfigError(f"{name} must be a JSON object of role to token")
    return tuple(logins.items())


@dataclass(frozen=True)
class Settings:
    db_url: str | None = None
    db_secret_arn: str | None = None
    db_tls: str | None = None  # off | verify; None: off for a server on this machine, verify otherwise
    db_tls_ca: str | None = None  # the CA file to verify with (default: the shipped RDS bundle)
    tick_seconds: int = RANGES["EVENT_TICK_SECONDS"][0]
    step_lease_seconds: int = RANGES["EVENT_STEP_LEASE_SECONDS"][0]
    step_max_attempts: int = RANGES["EVENT_STEP_MAX_ATTEMPTS"][0]
    step_retry_seconds: int = RANGES["EVENT_STEP_RETRY_SECONDS"][0]
    tick_concurrency: int = RANGES["EVENT_TICK_CONCURRENCY"][0]
    tick_shard: tuple[int, int] = (0, 1)  # EVENT_TICK_SHARD: several ticks at once, each on its share of the runs
    module_actions: frozenset[str] | None = None  # EVENT_MODULE_ACTIONS; None: not declared
    game_bridge_url: str | None = None
    game_bridge_secret: str | None = field(default=None, repr=False)
    game_bridge_secret_arn: str | None = None
    # Where a sandbox dry run's module actions go, signed with the sandbox's own key (never the bridge's).
    game_bridge_sandbox_url: str | None = None
    game_bridge_sandbox_secret: str | None = field(default=None, repr=False)
    game_bridge_sandbox_secret_arn: str | None = None
    rehearsal_channel: str = "log"  # REHEARSAL_CHANNEL: where everything a dry run posts goes
    game_bridge_status: bool = False  # GAME_BRIDGE_STATUS: a step in doubt is asked about before it is re-sent
    jwt_secret: str | None = field(default=None, repr=False)
    jwt_jwks_url: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_roles_claim: str = "roles"
    token_max_lifetime_seconds: int = RANGES["EVENT_TOKEN_MAX_LIFETIME_SECONDS"][0]
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_scope: str = "openid"
    console_dev_logins: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    cue_channel: str = "log"
    announce_channel: str = "log"
    escalation_channel: str | None = None  # ESCALATION_CHANNEL; None: the cue channel
    escalation_mention: str | None = None  # ESCALATION_MENTION: a Discord role id escalations ping (webhook:, discord:)
    escalate_after_seconds: int = RANGES["EVENT_ESCALATE_AFTER_SECONDS"][0]
    api_database_wait_seconds: int = RANGES["EVENT_API_DATABASE_WAIT_SECONDS"][0]
    cors_origin: str = "*"
    console_url: str | None = None
    webhook_secret: str | None = field(default=None, repr=False)
    webhook_secret_arn: str | None = None
    # The game server's own key for signing signals (POST /runs/{id}/signals/{name}); never the bridge's.
    signal_secret: str | None = field(default=None, repr=False)
    signal_secret_arn: str | None = None
    # Interactive chat channels (docs/chat.md): the bots' tokens, the APIs they post to, who may press.
    discord_bot_token: str | None = field(default=None, repr=False)
    discord_bot_token_secret_arn: str | None = None
    discord_api_url: str = "https://discord.com/api/v10"
    discord_public_key: str | None = None  # the application's Ed25519 key: interactions are signed with it
    discord_guild_id: str | None = None  # the one guild (server) whose presses count
    discord_roles: tuple[tuple[str, str], ...] = ()  # (guild role id, engine role)
    slack_bot_token: str | None = field(default=None, repr=False)
    slack_bot_token_secret_arn: str | None = None
    slack_api_url: str = "https://slack.com/api"
    slack_signing_secret: str | None = field(default=None, repr=False)
    slack_signing_secret_arn: str | None = None
    slack_team_id: str | None = None  # the one workspace whose presses count
    slack_roles: tuple[tuple[str, str], ...] = ()  # (user or user-group id, engine role)
    chat_function_arn: str | None = None  # EVENTS_CHAT_FUNCTION_ARN: finishes a press the 3 s did not (on AWS)
    # EVENTS_SLEEP: the tick sleeps between events; the tick then needs the three names
    # below, the API the rule's name and the function's ARN (its nudge turns the one on
    # and invokes the other; each checks when it first uses them).
    sleep: bool = False
    tick_rule_name: str | None = None
    tick_function_arn: str | None = None
    wake_role_arn: str | None = None

    @property
    def sandbox_configured(self) -> bool:
        """A sandbox dry run has somewhere to go: the deployment names a sandbox (GAME_BRIDGE_SANDBOX_URL). The
        API asks only this (it never holds the sandbox's key); the tick, which signs for it, also needs the key."""
        return self.game_bridge_sandbox_url is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        settings = cls(
            db_url=env.get("EVENTS_DB_URL") or None,
            db_secret_arn=_secret_setting(env, "EVENTS_DB_SECRET_ARN", keyed=False),
            db_tls=_db_tls(env),
            db_tls_ca=env.get("EVENTS_DB_TLS_CA", "").strip() or None,
            tick_seconds=_int_in_range(env, "EVENT_TICK_SECONDS"),
            step_lease_seconds=_int_in_range(env, "EVENT_STEP_LEASE_SECONDS"),
            step_max_attempts=_int_in_range(env, "EVENT_STEP_MAX_ATTEMPTS"),
            step_retry_seconds=_int_in_range(env, "EVENT_STEP_RETRY_SECONDS"),
            tick_concurrency=_int_in_range(env, "EVENT_TICK_CONCURRENCY"),
            tick_shard=_shard(env, "EVENT_TICK_SHARD"),
            module_actions=_module_actions(env),
            game_bridge_url=(env.get("GAME_BRIDGE_URL") or "").rstrip("/") or None,
            game_bridge_secret=env.get("GAME_BRIDGE_SECRET") or None,
            game_bridge_secret_arn=_secret_setting(env, "GAME_BRIDGE_SECRET_ARN"),
            game_bridge_sandbox_url=_sandbox_url(env),
            game_bridge_sandbox_secret=env.get("GAME_BRIDGE_SANDBOX_SECRET") or None,
            game_bridge_sandbox_secret_arn=_secret_setting(env, "GAME_BRIDGE_SANDBOX_SECRET_ARN"),
            rehearsal_channel=_channel(env, "REHEARSAL_CHANNEL"),
            game_bridge_status=_on_off(env, "GAME_BRIDGE_STATUS"),
            jwt_secret=env.get("EVENTS_JWT_SECRET") or None,
            jwt_jwks_url=env.get("EVENTS_JWT_JWKS_URL") or None,
            jwt_issuer=env.get("EVENTS_JWT_ISSUER") or None,
            jwt_audience=env.get("EVENTS_JWT_AUDIENCE") or None,
            jwt_roles_claim=env.get("EVENTS_JWT_ROLES_CLAIM", "").strip() or "roles",
            token_max_lifetime_seconds=_int_in_range(env, "EVENT_TOKEN_MAX_LIFETIME_SECONDS"),
            oidc_issuer=(env.get("EVENTS_OIDC_ISSUER") or "").strip().rstrip("/") or None,
            oidc_client_id=(env.get("EVENTS_OIDC_CLIENT_ID") or "").strip() or None,
            oidc_scope=(env.get("EVENTS_OIDC_SCOPE") or "").strip() or "openid",
            console_dev_logins=_dev_logins(env, "EVENTS_CONSOLE_DEV_TOKENS"),
            cue_channel=_channel(env, "CUE_CHANNEL"),
            announce_channel=_channel(env, "ANNOUNCE_CHANNEL"),
            escalation_channel=_channel(env, "ESCALATION_CHANNEL") if (env.get("ESCALATION_CHANNEL") or "").strip() else None,
            escalation_mention=_discord_role(env, "ESCALATION_MENTION"),
            escalate_after_seconds=_int_in_range(env, "EVENT_ESCALATE_AFTER_SECONDS"),
            api_database_wait_seconds=_int_in_range(env, "EVENT_API_DATABASE_WAIT_SECONDS"),
            cors_origin=env.get("EVENTS_CORS_ORIGIN", "*").strip() or "*",
            console_url=_console_url(env),
            webhook_secret=env.get("WEBHOOK_SECRET") or None,
            webhook_secret_arn=_secret_setting(env, "WEBHOOK_SECRET_ARN"),
            signal_secret=env.get("EVENTS_SIGNAL_SECRET") or None,
            signal_secret_arn=_secret_setting(env, "EVENTS_SIGNAL_SECRET_ARN"),
            discord_bot_token=env.get("DISCORD_BOT_TOKEN") or None,
            discord_bot_token_secret_arn=_secret_setting(env, "DISCORD_BOT_TOKEN_SECRET_ARN"),
            discord_api_url=_api_url(env, "DISCORD_API_URL", "https://discord.com/api/v10"),
            discord_public_key=_public_key(env, "DISCORD_PUBLIC_KEY"),
            discord_guild_id=_chat_id(env, "DISCORD_GUILD_ID", DISCORD_ID),
            discord_roles=_chat_roles(env, "DISCORD_ROLES", DISCORD_ID),
            slack_bot_token=env.get("SLACK_BOT_TOKEN") or None,
            slack_bot_token_secret_arn=_secret_setting(env, "SLACK_BOT_TOKEN_SECRET_ARN"),
            slack_api_url=_api_url(env, "SLACK_API_URL", "https://slack.com/api"),
            slack_signing_secret=env.get("SLACK_SIGNING_SECRET") or None,
            slack_signing_secret_arn=_secret_setting(env, "SLACK_SIGNING_SECRET_ARN"),
            slack_team_id=_chat_id(env, "SLACK_TEAM_ID", SLACK_ID),
            slack_roles=_chat_roles(env, "SLACK_ROLES", SLACK_ID),
            chat_function_arn=(env.get("EVENTS_CHAT_FUNCTION_ARN") or "").strip() or None,
            sleep=_on_off(env, "EVENTS_SLEEP"),
            tick_rule_name=(env.get("EVENTS_TICK_RULE_NAME") or "").strip() or None,
            tick_function_arn=(env.get("EVENTS_TICK_FUNCTION_ARN") or "").strip() or None,
            wake_role_arn=(env.get("EVENTS_WAKE_ROLE_ARN") or "").strip() or None,
        )
        if settings.jwt_secret and settings.jwt_jwks_url:
            raise ConfigError("set EVENTS_JWT_SECRET (HS256) or EVENTS_JWT_JWKS_URL (RS256), not both")
        # guard: the-sandbox-may-share-the-bridges-key
        if settings.game_bridge_sandbox_secret and settings.game_bridge_sandbox_secret == settings.game_bridge_secret:
            raise ConfigError("GAME_BRIDGE_SANDBOX_SECRET must be the sandbox's own key, not GAME_BRIDGE_SECRET's")
        # Compared as places, not as text: another spelling of the bridge's URL (its host's address, a default port,
        # a dot segment, another case) is the bridge all the same.
        # guard: the-sandbox-may-be-the-real-bridge
        if settings.game_bridge_sandbox_url and settings.game_bridge_url and \
                same_url(settings.game_bridge_sandbox_url, settings.game_bridge_url):
            raise ConfigError(f"GAME_BRIDGE_SANDBOX_URL must be the sandbox, not GAME_BRIDGE_URL: {settings.game_bridge_sandbox_url}"
                              f" reaches the same place as {settings.game_bridge_url}")
        # A dry run posts to REHEARSAL_CHANNEL alone: were it where a live channel posts, players and game masters
        # would read every rehearsal as the live event.
        for name, live in (("CUE_CHANNEL", settings.cue_channel), ("ANNOUNCE_CHANNEL", settings.announce_channel),
                           ("ESCALATION_CHANNEL", settings.escalation_channel)):
            # guard: the-rehearsal-channel-may-be-a-live-one
            if live and same_channel(settings.rehearsal_channel, live):
                raise ConfigError(f"REHEARSAL_CHANNEL must be a channel of its own, not {name}'s:"
                                  f" {settings.rehearsal_channel} is the same place as {live}, so every dry run would"
                                  " post there; set REHEARSAL_CHANNEL to a channel no live post goes to, or unset it (log)")
        if settings.signal_secret and settings.signal_secret == settings.game_bridge_secret:
            raise ConfigError("EVENTS_SIGNAL_SECRET must be the game server's own key, not GAME_BRIDGE_SECRET's")
        # Keys may share a secret, each under its own JSON key; two purposes naming the same one share a key.
        for name, reference in (("EVENTS_SIGNAL_SECRET_ARN", settings.signal_secret_arn),
                                ("GAME_BRIDGE_SANDBOX_SECRET_ARN", settings.game_bridge_sandbox_secret_arn)):
            # guard: a-key-may-share-the-bridges-secret-spelled-otherwise
            if reference and settings.game_bridge_secret_arn and \
                    same_secret_key(secret_reference(reference), secret_reference(settings.game_bridge_secret_arn)):
                raise ConfigError(f"{name} must name a key of its own, not GAME_BRIDGE_SECRET_ARN's ({reference} names"
                                  f" the same key as {settings.game_bridge_secret_arn})")
        # guard: discord-presses-on-with-no-server
        if settings.discord_public_key and not settings.discord_guild_id:
            raise ConfigError("DISCORD_PUBLIC_KEY turns Discord presses on: set DISCORD_GUILD_ID to the server whose"
                              " presses count (without it every press would be refused)")
        # guard: slack-presses-on-with-no-workspace
        if (settings.slack_signing_secret or settings.slack_signing_secret_arn) and not settings.slack_team_id:
            raise ConfigError("SLACK_SIGNING_SECRET turns Slack presses on: set SLACK_TEAM_ID to the workspace whose"
                              " presses count (without it every press would be refused)")
        escalated_to = settings.escalation_channel or settings.cue_channel
        # guard: an-escalation-mention-nobody-sends
        if settings.escalation_mention and escalated_to.partition(":")[0] not in ("webhook", "discord"):
            raise ConfigError(f"ESCALATION_MENTION pings a Discord role, and escalations go to {escalated_to}"
                              f" ({'ESCALATION_CHANNEL' if settings.escalation_channel else 'CUE_CHANNEL'}), which"
                              " cannot ping it: set ESCALATION_CHANNEL to webhook:<url> or discord:<channel id>, or"
                              " unset ESCALATION_MENTION")
        if settings.console_dev_logins and not settings.jwt_secret:
            raise ConfigError("EVENTS_CONSOLE_DEV_TOKENS is for development only: it needs EVENTS_JWT_SECRET, not a JWKS")
        return settings
