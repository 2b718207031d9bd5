"""The console's routes: its page and assets, the sign-in settings it needs, and who a token is.

Only files in `static/` are ever served, by exact name; nothing else of the
package can be reached through `/console/...`. `config.json` is public because
the page needs it before anyone has signed in, so it carries nothing secret —
except in development, where `make dev` hands its freshly minted tokens to the
one-click login (settings refuse that together with production key sets), and
then only to a request whose Host is 127.0.0.1 or localhost: a DNS-rebinding
page on another name cannot read them. Who a token is (`/console/session`) is
one person's: no answer of it, a refusal neither, is stored or sniffed.

`/console/` (with its slash) is the same page: its relative asset addresses then resolve under
`/console/console/`, which serves the same files, and the page moves itself to `/console` before it calls
anything (the API's addresses are relative to the page's).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

from chalice import Blueprint, Response

from .. import runtime
from ..api import auth
from ..api.errors import error_response, from_exception
from ..api.operations import PRIVATE
from ..events.errors import Forbidden

console = Blueprint(__name__)

STATIC = Path(__file__).with_name("static")
TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}


class Asset:
    """One file of `static/`, read once per container, with its validator."""

    def __init__(self, path: Path):
        self.body = path.read_text(encoding="utf-8")
        self.content_type = TYPES[path.suffix]
        self.etag = '"' + hashlib.sha256(self.body.encode()).hexdigest()[:20] + '"'


@cache
def assets() -> dict[str, Asset]:
    """Read on the first console request, not with the app (the tick function never serves one)."""
    return {path.name: Asset(path) for path in sorted(STATIC.iterdir()) if path.suffix in TYPES}


def _headers(content_type: str, **extra: str) -> dict[str, str | list[str]]:
    return {
        "Content-Type": f"{content_type}; charset=utf-8",
        # Revalidated every time (a 304 is a few bytes), so a deploy is seen at once.
        "Cache-Control": "no-cache",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",  # the sign-in code must not leak in a Referer
        **extra,
    }


def _content_security_policy() -> str:
    settings = runtime.settings()
    # The token endpoint an issuer's discovery names may sit on another host
    # (Cognito's hosted domain), so any https origin may be called; plain http
    # only for a configured issuer (a loopback one in development and tests).
    connect = ["'self'", "https:"]
    issuer = settings.oidc_issuer or settings.jwt_issuer
    if settings.oidc_client_id and issuer and "://" in issuer:
        parts = urlsplit(issuer)
        connect.append(f"{parts.scheme}://{parts.netloc}")
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src {' '.join(connect)}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    )


def _serve(name: str) -> Response:
    asset = assets().get(name)
    if asset is None:
        return error_response(404, [f"no console asset {name[:60]!r}"])
    extra = {"ETag": asset.etag}
    if name == "index.html":
        extra["Content-Security-Policy"] = _content_security_policy()
    if (console.current_request.headers.get("if-none-match") or "") == asset.etag:
        return Response(body="", status_code=304, headers=_headers(asset.content_type, **extra))
    return Response(body=asset.body, status_code=200, headers=_headers(asset.content_type, **extra))


@console.route("/console", methods=["GET"])
def console_page() -> Response:
    return _serve("index.html")


@console.route("/console/config.json", methods=["GET"])
def console_config() -> Response:
    """What the page needs before sign-in: the OpenID Connect client, and dev logins in development."""
    try:
        settings = runtime.settings()
        oidc = None
        issuer = settings.oidc_issuer or settings.jwt_issuer  # by default, the issuer the API trusts
        if issuer and settings.oidc_client_id:
            oidc = {"issuer": issuer, "client_id": settings.oidc_client_id, "scope": settings.oidc_scope}
        if settings.console_dev_logins and not _loopback_host(console.current_request.headers.get("host", "")):
            # DNS rebinding: a page on another name that resolves to this machine must not read the dev logins.
            raise Forbidden("with development logins (make dev) the console's settings are served only to "
                            "http://127.0.0.1 or http://localhost")
        body = {"oidc": oidc, "dev_logins": [{"role": role, "token": token} for role, token in settings.console_dev_logins]}
    except Exception as error:
        return from_exception(error)
    return Response(body=json.dumps(body), status_code=200, headers=_headers("application/json"))


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def _loopback_host(host: str) -> bool:
    """Whether a Host header names this machine by its loopback name or address (any port)."""
    try:
        return urlsplit(f"//{host}").hostname in LOOPBACK_HOSTS
    except ValueError:
        return False


@console.route("/console/session", methods=["GET"])
def console_session() -> Response:
    """Who the bearer token names and what its roles may do, checked exactly as every API route checks it; every
    answer, its refusals too, is PRIVATE, as an API route's behind a token is."""
    try:
        principal = auth.authenticate(console.current_request.headers, runtime.settings()).require(auth.STAFF)
    except Exception as error:
        refused = from_exception(error)
        refused.headers = {**refused.headers, **PRIVATE}
        return refused
    body = {
        "sub": principal.sub,
        "roles": sorted(principal.roles),
        "may": {"control": bool(principal.roles & auth.CONTROLLERS), "define": bool(principal.roles & auth.ADMINS)},
        # "attempt 2 of 3" on a step waiting to be tried again: the ceiling is the deployment's, not the run's.
        "limits": {"step_max_attempts": runtime.settings().step_max_attempts},
    }
    return Response(body=json.dumps(body), status_code=200, headers=_headers("application/json", **PRIVATE))


@console.route("/console/{asset}", methods=["GET"])
def console_asset(asset: str) -> Response:
    return _serve(asset)


@console.route("/console/console/{asset}", methods=["GET"])
def console_asset_below_slash(asset: str) -> Response:
    """The assets as `/console/`'s relative addresses name them (API Gateway and chalice both serve the page there)."""
    if asset == "index.html":
        return error_response(404, [f"no console asset {asset!r}"])
    return _serve(asset)
