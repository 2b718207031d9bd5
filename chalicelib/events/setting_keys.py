"""The key a setting names: its value fixed, or its secret read on each use.

Invariant: a key given by value is used as given; one given by a secret ARN is read through the secrets cache
on each use and past the cache after a 401 (`adapters/signing.py`), the setting's name in every error; neither
given is None, and its user says what is missing.
"""

from __future__ import annotations

from .adapters.signing import SigningKey


def setting_key(value: str | None, arn: str | None, setting: str) -> SigningKey | None:
    if value is None and arn:
        from ..secrets import READ_WORST_SECONDS, plain_secret  # boto3 only where a secret ARN is configured

        return SigningKey(lambda force: plain_secret(arn, setting, force_fetch=force), read_worst_seconds=READ_WORST_SECONDS)
    return None if value is None else SigningKey.fixed(value)
