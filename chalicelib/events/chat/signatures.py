"""The platforms' signatures on an interaction, checked before anything of it is read.

Invariant: a press is read only when its platform signed exactly these bytes a moment ago: Discord's
Ed25519 signature (`X-Signature-Ed25519`) over `X-Signature-Timestamp` and the raw body with the
application's public key (DISCORD_PUBLIC_KEY), Slack's `v0=` HMAC-SHA256 of `v0:{timestamp}:{body}` with
SLACK_SIGNING_SECRET; either timestamp more than MAX_AGE from now (a replay of an old press) is refused.
A missing, malformed or wrong signature is Unauthorized (401): Discord sends one to check the endpoint.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from ..errors import Unauthorized

MAX_AGE_SECONDS = 300  # Slack's five minutes; Discord's presses are held to the same


def _fresh(timestamp: str, now: float) -> None:
    # ASCII digits only, and a dozen of them at most: isdigit() alone takes "²", which int() refuses
    # guard: a-chat-timestamp-int-refuses-is-read
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12 or abs(now - int(timestamp)) > MAX_AGE_SECONDS:
        raise Unauthorized("the request's timestamp is missing or more than five minutes from now (a replay?)")


def check_discord(headers: Mapping[str, str], body: bytes, public_key: str | None, now: float) -> None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    signature, timestamp = headers.get("x-signature-ed25519", ""), headers.get("x-signature-timestamp", "")
    if public_key is None:
        raise Unauthorized("this deployment takes no Discord interactions: DISCORD_PUBLIC_KEY is not set")
    try:
        raw_signature = bytes.fromhex(signature)
        # guard: a-discord-press-is-read-unsigned
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key)).verify(raw_signature, timestamp.encode() + body)
    except (ValueError, InvalidSignature):
        raise Unauthorized("the interaction's Ed25519 signature is missing or wrong") from None
    _fresh(timestamp, now)


def check_slack(headers: Mapping[str, str], body: bytes, secret: str | None, now: float) -> None:
    signature, timestamp = headers.get("x-slack-signature", ""), headers.get("x-slack-request-timestamp", "")
    if secret is None:
        raise Unauthorized("this deployment takes no Slack interactions: SLACK_SIGNING_SECRET is not set")
    expected = "v0=" + hmac.new(secret.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256).hexdigest()
    # guard: a-slack-press-is-read-unsigned
    if not hmac.compare_digest(signature.encode(), expected.encode()):
        raise Unauthorized("the request's Slack signature (X-Slack-Signature) is missing or wrong")
    _fresh(timestamp, now)
