"""An OpenID Connect issuer on loopback that tests script: authorisation code + PKCE (S256), RS256 tokens, a JWKS.

Like Cognito, it puts the person's groups in a claim of its own naming and
gives its access token no `aud`: only the ID token is addressed to the client.
The authorisation endpoint signs in whoever `person` names without a login
form, and every code exchange is recorded with whether its PKCE verifier matched.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

KID = "loopback-issuer-1"


@dataclass(frozen=True)
class Person:
    sub: str
    groups: tuple[str, ...]


@dataclass(frozen=True)
class Exchange:
    client_id: str
    pkce_matched: bool
    had_secret: bool


class OidcIssuer:
    def __init__(self, client_id: str, groups_claim: str = "cognito:groups", token_seconds: int = 3600):
        self.client_id = client_id
        self.groups_claim = groups_claim
        self.token_seconds = token_seconds
        self.person = Person("oidc-olga", ("moderator",))
        self.exchanges: list[Exchange] = []
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._codes: dict[str, dict] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> OidcIssuer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def discovery(self) -> dict:
        return {
            "issuer": self.url, "authorization_endpoint": f"{self.url}/authorize", "token_endpoint": f"{self.url}/token",
            "jwks_uri": f"{self.url}/jwks", "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
            "id_token_signing_alg_values_supported": ["RS256"], "subject_types_supported": ["public"],
        }

    def jwks(self) -> dict:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self._key.public_key()))
        return {"keys": [{**public, "kid": KID, "alg": "RS256", "use": "sig"}]}

    def _sign(self, claims: dict) -> str:
        return jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": KID})

    def authorize(self, query: dict[str, str]) -> tuple[int, dict[str, str]]:
        """302 back to the client with a code, or 400 when the request is not code + S256 for this client."""
        if (query.get("response_type") != "code" or query.get("client_id") != self.client_id
                or query.get("code_challenge_method") != "S256" or not query.get("code_challenge")
                or not query.get("redirect_uri") or not query.get("state")):
            return 400, {}
        code = secrets.token_urlsafe(24)
        self._codes[code] = {"challenge": query["code_challenge"], "redirect_uri": query["redirect_uri"],
                             "nonce": query.get("nonce"), "person": self.person}
        return 302, {"Location": f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"}

    def token(self, form: dict[str, str]) -> tuple[int, dict]:
        granted = self._codes.pop(form.get("code", ""), None)  # a code is good once
        if granted is None or form.get("grant_type") != "authorization_code":
            return 400, {"error": "invalid_grant"}
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        matched = secrets.compare_digest(challenge, granted["challenge"])
        self.exchanges.append(Exchange(form.get("client_id", ""), matched, "client_secret" in form))
        if not matched or form.get("redirect_uri") != granted["redirect_uri"] or form.get("client_id") != self.client_id:
            return 400, {"error": "invalid_grant", "error_description": "PKCE verifier, redirect or client mismatch"}
        now = int(time.time())
        person: Person = granted["person"]
        common = {"iss": self.url, "sub": person.sub, "iat": now, "exp": now + self.token_seconds,
                  self.groups_claim: list(person.groups)}
        id_token = self._sign({**common, "aud": self.client_id, "nonce": granted["nonce"], "token_use": "id"})
        access_token = self._sign({**common, "client_id": self.client_id, "token_use": "access", "scope": "openid"})
        return 200, {"id_token": id_token, "access_token": access_token, "token_type": "Bearer", "expires_in": self.token_seconds}

    def _handler(self):
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, status: int, body: dict | None = None, headers: dict | None = None) -> None:
                payload = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Access-Control-Allow-Origin", "*")  # the console calls discovery and token from its page
                self.send_header("Cache-Control", "no-store")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if parts.path == "/.well-known/openid-configuration":
                    self._answer(200, issuer.discovery())
                elif parts.path == "/jwks":
                    self._answer(200, issuer.jwks())
                elif parts.path == "/authorize":
                    status, headers = issuer.authorize(query)
                    self._answer(status, None if status == 302 else {"error": "invalid_request"}, headers)
                else:
                    self._answer(404, {"error": "not_found"})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if urlsplit(self.path).path != "/token":
                    return self._answer(404, {"error": "not_found"})
                status, body = issuer.token({k: v[0] for k, v in parse_qs(raw).items()})
                self._answer(status, body)

            def log_message(self, *args) -> None:
                pass

        return Handler
