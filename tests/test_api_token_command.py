"""`python -m devtools token` mints a development token the API accepts."""

import os
import subprocess
import sys

import jwt

from tests.support.api import AUDIENCE, ISSUER, SECRET


def _token_command(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "devtools", "token", *args],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=60,
    )


def test_the_token_command_mints_a_token_the_api_accepts(api):
    done = _token_command("--role", "moderator", "--role", "gm", "--sub", "alice",
                          EVENTS_JWT_SECRET=SECRET, EVENTS_JWT_ISSUER=ISSUER, EVENTS_JWT_AUDIENCE=AUDIENCE)
    assert done.returncode == 0, done.stderr
    minted = done.stdout.strip()
    claims = jwt.decode(minted, SECRET, algorithms=["HS256"], audience=AUDIENCE, issuer=ISSUER)
    assert (claims["sub"], claims["roles"]) == ("alice", ["moderator", "gm"])
    assert api.get("/runs", auth=minted).status == 200


def test_the_token_command_needs_the_secret_issuer_and_audience():
    done = _token_command("--role", "admin", "--sub", "alice", EVENTS_JWT_SECRET="", EVENTS_JWT_ISSUER=ISSUER)
    assert done.returncode == 2 and "EVENTS_JWT_SECRET" in done.stderr
