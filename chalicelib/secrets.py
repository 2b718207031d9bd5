"""Secrets Manager reads: cached for MAX_AGE_SECONDS, each read inside a deadline, and a failure named.

A container reads each secret once per MAX_AGE_SECONDS at most (Powertools'
parameters cache; its own default is 5 s, which would cost a call on nearly
every invocation). A longer age is safe for the database password because a
rotation shows itself: the database refuses the old password (MySQL error 1045)
and the database layer re-reads the secret at once, past the cache
(`force_fetch`); so is the game bridge's or a webhook's key when the receiver
answers 401 to a signature (`events/adapters/signing.py`), and each dispatch
reads the key through the cache, so a rotated key is used within
MAX_AGE_SECONDS even without one. A secret that cannot be read — missing, not permitted,
unreachable, or not the shape expected — is `SecretUnreadable`, naming the
setting that points at it; the API answers it 503.

Several keys can share one secret: a setting naming `<secret arn>:<json key>`
reads that key of a JSON secret (`config.secret_reference`). The keys of one
secret share its cache entry, so reading a second costs no call, and reading
one past the cache refreshes them all. A key the secret lacks is a configuration
error, `SecretUnreadable` naming the setting and the key (never a KeyError).

Importing this module imports boto3: callers import it only where a secret ARN
is configured.
"""

from __future__ import annotations

import logging
import threading

from aws_lambda_powertools.utilities import parameters
from botocore.config import Config
from botocore.exceptions import BotoCoreError

from .config import secret_reference
from .db import ConnectionParams
from .errors import SecretUnreadable

logger = logging.getLogger(__name__)

MAX_AGE_SECONDS = 300
# Secrets Manager answers in milliseconds; these bound a read that hangs to ~6 s
# (two tries), inside what an API request can wait.
# guard: secrets-client-without-its-read-timeout
# guard: secrets-client-without-its-connect-timeout
# guard: secrets-client-retries-past-two-tries
CLIENT_CONFIG = Config(connect_timeout=1, read_timeout=2, retries={"mode": "standard", "total_max_attempts": 2})
READ_WORST_SECONDS = 2 * (1 + 2)  # CLIENT_CONFIG's two tries, each a connect and a read timed out

_provider: parameters.SecretsProvider | None = None
_lock = threading.Lock()


def _secrets() -> parameters.SecretsProvider:
    global _provider
    with _lock:
        if _provider is None:
            _provider = parameters.SecretsProvider(boto_config=CLIENT_CONFIG)
        return _provider


def read(arn: str, setting: str, *, json: bool = False, force_fetch: bool = False) -> object:
    """The secret's value (parsed, with `json`), from the cache unless older than MAX_AGE_SECONDS or `force_fetch`."""
    try:
        # guard: secret-read-past-its-cache
        # guard: secret-forced-read-served-from-the-cache
        return _secrets().get(arn, max_age=MAX_AGE_SECONDS, transform="json" if json else None, force_fetch=force_fetch)
    except (parameters.GetParameterError, parameters.TransformParameterError, BotoCoreError) as error:
        logger.warning("the secret named by %s cannot be read: %s", setting, error)
        raise unreadable(setting) from None


def unreadable(setting: str) -> SecretUnreadable:
    return SecretUnreadable(f"the secret named by {setting} cannot be read right now")


def database_params(arn: str, *, force_fetch: bool = False) -> ConnectionParams:
    """The connection of an RDS-style secret (host, port, username, password, dbname)."""
    secret = read(arn, "EVENTS_DB_SECRET_ARN", json=True, force_fetch=force_fetch)
    try:
        if not isinstance(secret, dict):
            raise TypeError("not a JSON object")
        return ConnectionParams.from_secret(secret)
    # guard: database-secret-without-credentials-is-a-500
    except (KeyError, TypeError, ValueError):
        logger.warning("the secret named by EVENTS_DB_SECRET_ARN lacks a host, username or password")
        raise unreadable("EVENTS_DB_SECRET_ARN") from None


def plain_secret(reference: str, setting: str, *, force_fetch: bool = False) -> str:
    """The text `setting` names: a whole secret (`<secret arn>`) or one key of a JSON one (`<secret arn>:<json key>`)."""
    arn, key = secret_reference(reference)
    value = read(arn, setting, force_fetch=force_fetch) if key is None else json_key(arn, key, setting, force_fetch=force_fetch)
    if not isinstance(value, str) or not value:
        logger.warning("the secret named by %s is empty or binary", setting)
        raise unreadable(setting)
    return value


def json_key(arn: str, key: str, setting: str, *, force_fetch: bool = False) -> object:
    """One key of the JSON secret `arn` (through the secret's one cache entry)."""
    secret = read(arn, setting, json=True, force_fetch=force_fetch)
    if not isinstance(secret, dict):
        logger.warning("the secret named by %s is not a JSON object, so it has no key %r", setting, key)
        raise unreadable(setting)
    if key not in secret:
        logger.warning("%s names %s:%s, and that secret has no key %r", setting, arn, key, key)
        raise SecretUnreadable(f"the secret named by {setting} has no key {key!r}: a configuration error"
                               f" (add the key to the secret, or point {setting} at a key it has)")
    return secret[key]


def forget() -> None:
    """Drop the cache and the client (the next read asks Secrets Manager again)."""
    global _provider
    with _lock:
        _provider = None
