"""Bearer tokens, checked in the app itself so `chalice local` and tests see what production sees.

The algorithm is pinned by configuration, never taken from the token: HS256
when EVENTS_JWT_SECRET is set, RS256 with keys from EVENTS_JWT_JWKS_URL
otherwise (only the set's RSA keys for RS256: a token whose kid names any other
key is refused, 401). `exp`, `iss`, `aud` and `sub` are required, and a token valid for longer than
EVENT_TOKEN_MAX_LIFETIME_SECONDS (`exp - iat`, or `exp - now` without `iat`) is
refused, naming the limit; roles come from the claim named
by EVENTS_JWT_ROLES_CLAIM (default `roles`; a list, or a comma-separated
string); the actor is `sub`.

PyJWT (and with it `cryptography`'s key and certificate modules) is imported on
the first token checked, not with the app: the tick function and the routes
without a token never load it.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..errors import AuthUnavailable, Forbidden, Unauthorized
from ..roles import ADMIN as ADMIN
from ..roles import ADMINS as ADMINS
from ..roles import CONTROLLERS as CONTROLLERS
from ..roles import GM as GM
from ..roles import MODERATOR as MODERATOR
from ..roles import ROLES as ROLES
from ..roles import STAFF as STAFF
from ..roles import named as named_roles

LEEWAY_SECONDS = 30


@dataclass(frozen=True)
class Principal:
    sub: str
    roles: frozenset[str]

    def require(self, allowed: frozenset[str]) -> Principal:
        if not self.roles & allowed:
            raise Forbidden(f"this needs the role {named_roles(allowed)}; the token has"
                            f" {', '.join(sorted(self.roles)) or 'none'}",
                            roles_needed=allowed, roles_held=self.roles)
        return self


if TYPE_CHECKING:
    import jwt

_jwks_clients: dict[str, jwt.PyJWKClient] = {}
_jwks_lock = threading.Lock()


JWKS_DEADLINE_SECONDS = 5.0  # the whole fetch: connect, send, headers and body
JWKS_MAX_BYTES = 256 * 1024  # a key set is a few kB; anything near this is not one


def _jwks_client(url: str) -> jwt.PyJWKClient:
    # One client per URL for the container's life: it caches the keys between invocations.
    import jwt

    from .. import outbound
    from ..errors import OutboundError

    class BoundedJWKClient(jwt.PyJWKClient):
        """PyJWT's client, fetching through the engine's outbound HTTP: one overall deadline and a size cap
        (urllib's timeout is per socket read, and it reads an answer of any size)."""

        def fetch_data(self) -> Any:
            try:
                answer = outbound.get(outbound.Endpoint.parse(self.uri), timeout=JWKS_DEADLINE_SECONDS,
                                      max_answer_bytes=JWKS_MAX_BYTES)
            except (OutboundError, ValueError) as error:
                raise jwt.PyJWKClientConnectionError(f"cannot fetch the key set: {error}") from None
            if answer.status != 200 or answer.truncated:
                raise jwt.PyJWKClientConnectionError(
                    f"the key set answered HTTP {answer.status}" + (f", over {JWKS_MAX_BYTES} bytes" if answer.truncated else ""))
            try:
                jwk_set = json.loads(answer.body)
            except ValueError:
                raise _unreadable("is not JSON") from None
            _require_a_signing_key(jwk_set)
            if self.jwk_set_cache is not None:
                self.jwk_set_cache.put(jwk_set)
            self._last_successful_fetch = time.monotonic()  # PyJWT's own limit on refetches for unknown keys
            return jwk_set

    with _jwks_lock:
        if url not in _jwks_clients:
            _jwks_clients[url] = BoundedJWKClient(url, cache_keys=True, lifespan=300)
        return _jwks_clients[url]


def _verifies_rs256(key: jwt.PyJWK) -> bool:
    """An RSA key for RS256 (its `alg` absent or RS256): the only keys of the set a token is checked with."""
    return key.key_type == "RSA" and key.algorithm_name == "RS256"


def _unreadable(why: str) -> AuthUnavailable:
    # An answer of 200 that is no usable key set is the identity provider's trouble, as an outage is: a 503 the
    # console retries, saying so. A 401 would send every staff member back to sign-in, to meet it again.
    return AuthUnavailable(f"the token signing keys cannot be read right now: the identity provider's key set {why}")


def _require_a_signing_key(jwk_set: Any) -> None:
    """A key set holding an RS256 signing key PyJWT will find by kid, or AuthUnavailable (never cached, so the next
    request asks again). Only then may a token whose kid is not in it be refused with 401."""
    import jwt

    if not isinstance(jwk_set, dict):
        raise _unreadable("is not a JSON object")
    try:
        keys = jwt.PyJWKSet.from_dict(jwk_set).keys
    except jwt.PyJWKSetError:  # no `keys`, not a list, or none of them a key PyJWT can read
        raise _unreadable("holds no key") from None
    if not any(_verifies_rs256(key) and key.public_key_use in ("sig", None) and key.key_id for key in keys):
        raise _unreadable("holds no RS256 signing key")


def _key_and_algorithm(token: str, settings: Settings) -> tuple[Any, str]:
    if settings.jwt_secret:
        return settings.jwt_secret, "HS256"
    if settings.jwt_jwks_url:
        import jwt

        try:
            signing_key = _jwks_client(settings.jwt_jwks_url).get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as error:  # its reason is logged with the answer, not sent
            raise AuthUnavailable("the token signing keys cannot be fetched right now") from error
        except (jwt.PyJWKClientError, jwt.InvalidTokenError):
            raise Unauthorized("the token is not signed by a known key") from None
        if not _verifies_rs256(signing_key):
            # An EC or OKP key handed to RS256 makes jwt.decode raise TypeError: a forged header's 500.
            raise Unauthorized(f"the token is not signed by a known key: its kid names the set's {signing_key.key_type}"
                               f" {signing_key.algorithm_name} key, and tokens here are RS256")
        return signing_key.key, "RS256"
    raise AuthUnavailable("token checking is not configured (EVENTS_JWT_SECRET or EVENTS_JWT_JWKS_URL)")


def roles_claim(claims: Mapping[str, Any], name: str) -> Any:
    """The claim called `name`: a top-level key as written (`cognito:groups`), else a
    dotted path into nested objects (`realm_access.roles`); None when absent."""
    if name in claims:
        return claims[name]
    value: Any = claims
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _roles(claim: Any) -> frozenset[str]:
    if isinstance(claim, str):
        claim = claim.split(",")
    if not isinstance(claim, list):
        return frozenset()
    return frozenset(r.strip() for r in claim if isinstance(r, str) and r.strip())


NOT_A_JWT = "the token is not a JWT (expected three base64url parts)"
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")


def _shaped_like_a_jwt(token: str) -> bool:
    """Three base64url parts, the first a JSON object (the header): anything else is not a token at all."""
    parts = token.split(".")
    if len(parts) != 3 or not all(_BASE64URL.fullmatch(part) for part in parts):
        return False
    try:
        header = json.loads(base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4)))
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return False
    return isinstance(header, dict)


def _expired(token: str) -> str:
    """When an expired token's `exp` was, and how long ago (wall time, as PyJWT checked it)."""
    import jwt

    exp = jwt.decode(token, options={"verify_signature": False})["exp"]
    now = time.time()
    try:
        at, today = datetime.fromtimestamp(exp, UTC), datetime.fromtimestamp(now, UTC)
    except (OverflowError, ValueError, OSError):  # an `exp` before year 1 or beyond any calendar: signed, but no date
        return "the token expired (its exp is no date)"
    when = f"{at:%H:%M:%S}" if at.date() == today.date() else f"{at:%Y-%m-%d %H:%M:%S}"
    return f"the token expired at {when} UTC ({_ago(now - exp)})"


def _ago(seconds: float) -> str:
    return f"{_span(seconds)} ago"


def _span(seconds: float) -> str:
    """A length of time as a person says it: "45 s", "3 min", "25 h", "30 days"."""
    if seconds < 90:
        return f"{int(seconds)} s"
    if seconds < 90 * 60:
        return f"{int(seconds // 60)} min"
    if seconds < 48 * 3600:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} days"


def _lifetime(claims: Mapping[str, Any]) -> tuple[int, str]:
    """How long the token is valid for, and how that was read: exp - iat, or exp - now when it has no iat. Whole
    seconds, read as PyJWT read them (int(), which it has checked succeeds): an exp of 400 digits is no float."""
    if "iat" in claims:
        return int(claims["exp"]) - int(claims["iat"]), "exp - iat"
    return int(claims["exp"]) - int(time.time()), "exp - now"


def authenticate(headers: Mapping[str, str], settings: Settings) -> Principal:
    """The verified caller, or Unauthorized."""
    if not (settings.jwt_issuer and settings.jwt_audience):
        raise AuthUnavailable("token checking needs EVENTS_JWT_ISSUER and EVENTS_JWT_AUDIENCE")
    scheme, _, token = (headers.get("authorization") or "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("send Authorization: Bearer <token>")
    if not _shaped_like_a_jwt(token):
        raise Unauthorized(NOT_A_JWT)
    key, algorithm = _key_and_algorithm(token, settings)
    import jwt

    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=[algorithm],
            audience=settings.jwt_audience,
            issuer=settings.jwt_issuer,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iss", "aud", "sub"]},
        )
    except jwt.ExpiredSignatureError:
        raise Unauthorized(_expired(token)) from None
    except jwt.InvalidSignatureError:
        raise Unauthorized("the token's signature does not verify: it was signed with another key") from None
    except jwt.DecodeError:
        raise Unauthorized(NOT_A_JWT) from None
    except jwt.InvalidTokenError as error:
        raise Unauthorized(f"invalid token: {error}") from None
    sub = claims["sub"]
    if not isinstance(sub, str) or not sub.strip() or len(sub) > 191:
        raise Unauthorized("invalid token: sub must name the caller")
    lifetime, read = _lifetime(claims)
    longest = settings.token_max_lifetime_seconds
    # guard: a-token-may-live-longer-than-the-limit
    if lifetime > longest:
        valid = f"{_span(lifetime)} ({lifetime} s, {read})" if lifetime < 10**9 else f"more than 30 years ({read})"
        raise Unauthorized(f"the token is valid for {valid}, longer than the {_span(longest)} ({longest} s)"
                           " EVENT_TOKEN_MAX_LIFETIME_SECONDS allows: ask for a shorter-lived token")
    return Principal(sub=sub, roles=_roles(roles_claim(claims, settings.jwt_roles_claim)))
