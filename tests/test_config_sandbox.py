"""The sandbox is never the live bridge, however either is spelled (issue 38): the settings compare the two URLs
as places (scheme and host without case, the host's addresses, the port with its default, the path with its dot
segments, escapes and repeated slashes resolved) and the secret references as keys (an ARN without case, a
partial ARN as its full one), where they compared text. Host names are answered from a table
(`tests/support/resolver.py`), never the network, but for the one lookup that hangs, which start-up outwaits
by RESOLVE_SECONDS at most."""

import re
import socket
import threading
import time

import pytest

from chalicelib import sameness
from chalicelib.config import Settings
from chalicelib.events.errors import ConfigError
from tests.support.resolver import Table

LIVE = "http://bridge.internal:8765/bridge"
HOSTS = {"bridge.internal": {"10.0.0.5"}, "game-alias.internal": {"10.0.0.5", "fd00::5"},
         "sandbox.internal": {"10.0.0.6"}, "localhost": {"127.0.0.1", "::1"}}


@pytest.fixture
def hosts(monkeypatch) -> Table:
    table = Table(HOSTS)
    monkeypatch.setattr(sameness, "resolve", table)
    return table


def _settings(sandbox: str, live: str = LIVE) -> Settings:
    return Settings.from_env({"GAME_BRIDGE_URL": live, "GAME_BRIDGE_SECRET": "live-key",
                              "GAME_BRIDGE_SANDBOX_URL": sandbox, "GAME_BRIDGE_SANDBOX_SECRET": "sandbox-key"})


@pytest.mark.parametrize("sandbox", [
    "HTTP://Bridge.Internal:8765/Bridge",  # case
    "http://bridge.internal.:8765/bridge/",  # the root's dot, a trailing slash
    "http://bridge.internal:8765/./bridge",  # a dot segment
    "http://bridge.internal:8765/sandbox/../bridge",
    "http://bridge.internal:8765//bridge",
    "http://bridge.internal:8765/%62ridge",  # an escaped unreserved character
    "http://10.0.0.5:8765/bridge",  # the host's address
    "http://game-alias.internal:8765/bridge",  # another name of it
    "http://[::ffff:10.0.0.5]:8765/bridge",  # its IPv4-mapped IPv6 address
])
def test_another_spelling_of_the_live_bridge_is_refused_as_the_sandbox(hosts, sandbox):
    named = f"GAME_BRIDGE_SANDBOX_URL must be the sandbox, not GAME_BRIDGE_URL: {sandbox.rstrip('/')}"
    with pytest.raises(ConfigError, match="^" + re.escape(named)):
        _settings(sandbox)


@pytest.mark.parametrize("sandbox, live", [
    ("http://localhost:8765/bridge", "http://127.0.0.1:8765/bridge"),
    ("http://127.0.0.1:8765", "http://LOCALHOST:8765/"),
    ("http://bridge.internal:80/bridge", "http://bridge.internal/bridge"),  # the default port, written or not
    ("https://bridge.internal/bridge", "https://bridge.internal:443/bridge"),
])
def test_a_host_by_name_or_address_and_a_port_written_or_default_are_the_same_place(hosts, sandbox, live):
    with pytest.raises(ConfigError, match="must be the sandbox, not GAME_BRIDGE_URL"):
        _settings(sandbox, live)


@pytest.mark.parametrize("sandbox", [
    "http://sandbox.internal:8765/bridge",  # another address
    "http://bridge.internal:8766/bridge",  # another port
    "http://bridge.internal:8765/sandbox",  # another path
    "https://bridge.internal:8765/bridge",  # another scheme
    "http://bridge.internal:8765/bridge?sandbox=1",  # another query
    "http://unknown.internal:8765/bridge",  # a name with no address: compared as text
])
def test_a_sandbox_elsewhere_is_accepted(hosts, sandbox):
    assert _settings(sandbox).game_bridge_sandbox_url == sandbox


def test_only_names_that_could_be_the_same_place_are_looked_up(hosts):
    _settings("http://sandbox.internal:9000/bridge")  # another port: no lookup needed
    _settings("http://BRIDGE.internal:8765/./sandbox")  # another path
    assert hosts.asked == []
    _settings("http://sandbox.internal:8765/bridge")
    assert hosts.asked == ["sandbox.internal", "bridge.internal"]


def test_localhost_is_127_0_0_1_by_the_systems_own_resolver():
    with pytest.raises(ConfigError, match="must be the sandbox"):
        _settings("http://localhost:8765/bridge", "http://127.0.0.1:8765/bridge")


def test_a_resolver_that_hangs_holds_start_up_no_longer_than_its_bound(monkeypatch):
    monkeypatch.setattr(sameness, "RESOLVE_SECONDS", 0.5)
    never = threading.Event()

    def hanging(*args, **kwargs):
        never.wait(30)
        raise socket.gaierror("gave up")

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    started = time.monotonic()
    try:
        settings = _settings("http://sandbox.internal:8765/bridge")
    finally:
        never.set()
    assert time.monotonic() - started < 0.5 + 0.5
    assert settings.game_bridge_sandbox_url == "http://sandbox.internal:8765/bridge"  # not resolved: compared as text


ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:events-app-AbCdEf"
PARTIAL = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:events-app"


@pytest.mark.parametrize("sandbox, live", [
    (f"{PARTIAL}:bridge_key", f"{ARN}:bridge_key"),  # a partial ARN is its full one's
    (f"{ARN}:bridge_key", f"{PARTIAL}:bridge_key"),
    (f"{ARN.replace('eu-west-1', 'EU-West-1').replace('events-app', 'Events-App')}:bridge_key", f"{ARN}:bridge_key"),
    (PARTIAL, ARN),  # the whole secret
    ("events-app", ARN),  # a bare name is any ARN's of that name
])
def test_another_spelling_of_the_bridges_secret_key_is_refused_for_the_sandbox_and_the_signal(sandbox, live):
    for setting in ("GAME_BRIDGE_SANDBOX_SECRET_ARN", "EVENTS_SIGNAL_SECRET_ARN"):
        with pytest.raises(ConfigError, match="^" + re.escape(f"{setting} must name a key of its own, not GAME_BRIDGE_SECRET_ARN's")):
            Settings.from_env({"GAME_BRIDGE_SECRET_ARN": live, setting: sandbox})


@pytest.mark.parametrize("sandbox, live", [
    (f"{ARN}:sandbox_key", f"{ARN}:bridge_key"),  # one secret, a key of its own (the documented sharing)
    (f"{PARTIAL}:sandbox_key", f"{ARN}:bridge_key"),
    (f"{ARN}:bridge_key", ARN),  # a key of the secret, not the whole of it
    (ARN.replace("123456789012", "210987654321"), ARN),  # another account's
    (ARN.replace("AbCdEf", "XyZ123"), ARN),  # another secret of that name, made after the first was deleted
    (f"{PARTIAL}-sandbox", ARN),  # another name that only begins like it
])
def test_a_key_of_its_own_is_accepted(sandbox, live):
    settings = Settings.from_env({"GAME_BRIDGE_SECRET_ARN": live, "GAME_BRIDGE_SANDBOX_SECRET_ARN": sandbox})
    assert settings.game_bridge_sandbox_secret_arn == sandbox
