"""Development tokens: HS256, signed with EVENTS_JWT_SECRET, for `make dev` and for trying the API.

Production tokens come from the identity provider; nothing in the deployed
package mints one, so this lives outside chalicelib.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import jwt

from chalicelib.config import Settings


def mint(settings: Settings, *, sub: str, roles: list[str], now: datetime | None = None, ttl_seconds: int = 8 * 3600) -> str:
    """A development token signed with EVENTS_JWT_SECRET (HS256), valid for `ttl_seconds` (at most the API's
    EVENT_TOKEN_MAX_LIFETIME_SECONDS: ValueError past it)."""
    if not (settings.jwt_secret and settings.jwt_issuer and settings.jwt_audience):
        raise ValueError("minting needs EVENTS_JWT_SECRET, EVENTS_JWT_ISSUER and EVENTS_JWT_AUDIENCE")
    if ttl_seconds > settings.token_max_lifetime_seconds:  # the API would refuse it
        raise ValueError(f"a token may be valid for at most {settings.token_max_lifetime_seconds} s"
                         f" (EVENT_TOKEN_MAX_LIFETIME_SECONDS), not {ttl_seconds} s")
    now = now or datetime.now(UTC)
    claims = {
        "sub": sub,
        settings.jwt_roles_claim: roles,  # as a top-level key, which roles_claim() reads first
        "iss": settings.jwt_issuer,
        "aud": settings.jwt_audience,
        "iat": now,
        "exp": now + timedelta(seconds=ttl_seconds),
    }
    return jwt.encode(claims, settings.jwt_secret, algorithm="HS256")
