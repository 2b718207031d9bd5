"""`python -m devtools token` mints a development token the API accepts."""

import os
import subprocess
import sys
from pathlib import Path

import jwt
import pytest

from tests.support.api import AUDIENCE, ISSUER, SECRET

pytestmark = pytest.mark.realtime  # each runs the command in a process of its own


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


def _without_token_settings() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("EVENTS_JWT_")}


def test_the_token_command_signs_with_the_dev_stage_settings_by_default_and_prints_only_the_token():
    from devtools.dev import dev_stage_environment

    done = subprocess.run([sys.executable, "-m", "devtools", "token"], env=_without_token_settings(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout.count("\n") == 1
    dev = dev_stage_environment()
    claims = jwt.decode(done.stdout.strip(), dev["EVENTS_JWT_SECRET"], algorithms=["HS256"],
                        audience=dev["EVENTS_JWT_AUDIENCE"], issuer=dev["EVENTS_JWT_ISSUER"])
    assert (claims["sub"], claims["roles"], claims["exp"] - claims["iat"]) == ("dev-admin", ["admin"], 8 * 3600)


def test_the_token_command_refuses_a_ttl_that_is_not_positive():
    for ttl in ("0", "-10"):
        done = subprocess.run([sys.executable, "-m", "devtools", "token", "--ttl", ttl], env=_without_token_settings(),
                              capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == f"--ttl must be a positive number of seconds, got {ttl}\n"


def test_the_token_command_mints_no_token_the_api_would_refuse_as_too_long_lived(api):
    """--ttl is bounded by EVENT_TOKEN_MAX_LIFETIME_SECONDS (issue 38): the longest it allows mints a token the API
    accepts, a second more mints nothing and names the limit."""
    longest = _token_command("--ttl", "86400", EVENTS_JWT_SECRET=SECRET, EVENTS_JWT_ISSUER=ISSUER, EVENTS_JWT_AUDIENCE=AUDIENCE)
    assert longest.returncode == 0, longest.stderr
    assert api.get("/runs", auth=longest.stdout.strip()).status == 200
    longer = _token_command("--ttl", "86401", EVENTS_JWT_SECRET=SECRET, EVENTS_JWT_ISSUER=ISSUER, EVENTS_JWT_AUDIENCE=AUDIENCE)
    assert (longer.returncode, longer.stdout) == (2, "")
    assert longer.stderr == ("configuration error: a token may be valid for at most 86400 s (EVENT_TOKEN_MAX_LIFETIME_SECONDS),"
                             " not 86401 s\n")
    shorter = _token_command("--ttl", "7200", EVENTS_JWT_SECRET=SECRET, EVENTS_JWT_ISSUER=ISSUER, EVENTS_JWT_AUDIENCE=AUDIENCE,
                             EVENT_TOKEN_MAX_LIFETIME_SECONDS="3600")
    assert shorter.returncode == 2 and "at most 3600 s" in shorter.stderr


def test_make_token_prints_only_the_token_for_the_role_asked():
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(["make", "-s", "token", "ROLE=moderator", "SUB=carol", "TTL=120"], cwd=root,
                          env=_without_token_settings(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (token,) = done.stdout.splitlines()
    claims = jwt.decode(token, options={"verify_signature": False})
    assert (claims["sub"], claims["roles"], claims["exp"] - claims["iat"]) == ("carol", ["moderator"], 120)
