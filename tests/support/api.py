"""Calling the HTTP API in-process (chalice.test.Client) with real tokens, the test database and clock."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.config import Settings

SECRET = "test-only-secret-0123456789abcdef0123456789"
ISSUER = "events-test"
AUDIENCE = "events-console"


def hs_settings(db_params, **extra) -> Settings:
    return Settings(db_url=db_params.url(), jwt_secret=SECRET, jwt_issuer=ISSUER, jwt_audience=AUDIENCE, **extra)


def token(*roles: str, sub: str = "alice", ttl: int = 3600, key: Any = SECRET, algorithm: str = "HS256",
          headers: dict | None = None, roles_claim: Any = None, **claims) -> str:
    now = datetime.now(UTC)
    body = {"sub": sub, "roles": list(roles) if roles_claim is None else roles_claim, "iss": ISSUER, "aud": AUDIENCE,
            "iat": now, "exp": now + timedelta(seconds=ttl), **claims}
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm=algorithm, headers=headers)


@dataclass
class Answer:
    status: int
    headers: dict
    body: Any


class Api:
    def __init__(self, client: Client):
        self.client = client

    def call(self, method: str, path: str, body: Any = None, *, auth: str | None = None, raw: bytes | str | None = None,
             headers: dict | None = None) -> Answer:
        sent = {"Content-Type": "application/json", **(headers or {})}
        if auth is not None:
            sent["Authorization"] = f"Bearer {auth}"
        payload = raw.encode() if isinstance(raw, str) else raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        response = self.client.http.request(method, path, headers=sent, body=payload)
        text = response.body.decode() if response.body else ""
        return Answer(response.status_code, dict(response.headers), json.loads(text) if text else None)

    def get(self, path: str, **kw) -> Answer:
        return self.call("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw) -> Answer:
        return self.call("POST", path, body, **kw)

    def put(self, path: str, body: Any = None, **kw) -> Answer:
        return self.call("PUT", path, body, **kw)


@pytest.fixture
def api(db, clock, db_params):
    with runtime.override(database=db, clock=clock, settings=hs_settings(db_params)), Client(app) as client:
        yield Api(client)


ADMIN = token("admin", sub="root-admin")
MODERATOR = token("moderator", sub="mod-mia")
GM = token("gm", sub="gm-gus")
