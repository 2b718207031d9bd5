"""Every numeric setting has a range, checked at start-up with the setting's name."""

import re
import subprocess
import sys

import pytest

from chalicelib.config import RANGES, Settings, secret_reference
from chalicelib.events.errors import ConfigError


@pytest.mark.parametrize("name", sorted(RANGES))
def test_each_numeric_setting_accepts_its_bounds_and_refuses_one_past_them(name):
    _, lowest, highest = RANGES[name]
    for value in (lowest, highest):
        Settings.from_env({name: str(value)})
    for value in (lowest - 1, highest + 1):
        with pytest.raises(ConfigError, match=rf"^{name} must be from {lowest} to {highest}, got {value}$"):
            Settings.from_env({name: str(value)})


def test_the_torture_suites_short_lease_and_a_zero_retry_delay_are_in_range():
    settings = Settings.from_env({"EVENT_STEP_LEASE_SECONDS": "2", "EVENT_STEP_RETRY_SECONDS": "0"})
    assert (settings.step_lease_seconds, settings.step_retry_seconds) == (2, 0)


@pytest.mark.realtime  # the tick command
def test_a_huge_lease_stops_the_tick_command_at_start_up_naming_the_setting():
    env = {"EVENTS_DB_URL": "mysql://root@127.0.0.1:9/none", "EVENT_STEP_LEASE_SECONDS": "99999999999999", "PATH": ""}
    done = subprocess.run([sys.executable, "-m", "chalicelib", "tick", "--once"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert done.stderr == "configuration error: EVENT_STEP_LEASE_SECONDS must be from 2 to 3600, got 99999999999999\n"


def test_a_setting_that_is_not_a_number_is_named_with_its_range():
    with pytest.raises(ConfigError, match=r"^EVENT_TICK_CONCURRENCY must be a whole number from 1 to 64, got 'many'$"):
        Settings.from_env({"EVENT_TICK_CONCURRENCY": "many"})


def test_a_tick_shard_is_index_slash_count_and_anything_else_is_named():
    assert Settings.from_env({}).tick_shard == (0, 1)
    assert Settings.from_env({"EVENT_TICK_SHARD": "1/2"}).tick_shard == (1, 2)
    for bad in ("2/2", "1", "-1/2", "0/0", "a/b", "0/65"):
        with pytest.raises(ConfigError, match=r"^EVENT_TICK_SHARD must be index/count"):
            Settings.from_env({"EVENT_TICK_SHARD": bad})


def test_the_signal_key_is_the_game_servers_own_never_the_bridges():
    settings = Settings.from_env({"EVENTS_SIGNAL_SECRET": "signal-key", "GAME_BRIDGE_SECRET": "bridge-key"})
    assert (settings.signal_secret, settings.game_bridge_secret) == ("signal-key", "bridge-key")
    assert "signal-key" not in repr(settings)
    with pytest.raises(ConfigError, match=r"^EVENTS_SIGNAL_SECRET must be the game server's own key, not GAME_BRIDGE_SECRET's$"):
        Settings.from_env({"EVENTS_SIGNAL_SECRET": "same", "GAME_BRIDGE_SECRET": "same"})


ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:events-app-AbCdEf"


def test_a_key_setting_names_a_whole_secret_or_one_key_of_a_json_secret():
    """`<secret arn>` names the whole secret, `<secret arn>:<json key>` one key of it (the engine's keys share one)."""
    settings = Settings.from_env({"EVENTS_DB_SECRET_ARN": ARN, "EVENTS_SIGNAL_SECRET_ARN": f"{ARN}:signal_key",
                                  "WEBHOOK_SECRET_ARN": f"{ARN}:webhook_key", "GAME_BRIDGE_SECRET_ARN": "events/bridge"})
    assert secret_reference(settings.signal_secret_arn) == (ARN, "signal_key")
    assert secret_reference(settings.webhook_secret_arn) == (ARN, "webhook_key")
    assert secret_reference(ARN) == (ARN, None) and secret_reference("events/bridge") == ("events/bridge", None)


@pytest.mark.parametrize("env, named", [
    ({"EVENTS_SIGNAL_SECRET_ARN": f"{ARN}:"}, "EVENTS_SIGNAL_SECRET_ARN must be a secret's ARN, or its ARN and a key"),
    ({"WEBHOOK_SECRET_ARN": f"{ARN}:web hook"}, "WEBHOOK_SECRET_ARN must be a secret's ARN, or its ARN and a key"),
    ({"EVENTS_DB_SECRET_ARN": f"{ARN}:password"}, "EVENTS_DB_SECRET_ARN must be a secret's ARN, got"),
    ({"GAME_BRIDGE_SECRET_ARN": f"{ARN}:bridge", "EVENTS_SIGNAL_SECRET_ARN": f"{ARN}:bridge"},
     "EVENTS_SIGNAL_SECRET_ARN must name a key of its own, not GAME_BRIDGE_SECRET_ARN's"),
    ({"GAME_BRIDGE_SECRET_ARN": ARN, "GAME_BRIDGE_SANDBOX_SECRET_ARN": ARN},
     "GAME_BRIDGE_SANDBOX_SECRET_ARN must name a key of its own, not GAME_BRIDGE_SECRET_ARN's"),
], ids=["empty key", "key with a space", "the database's credentials are the whole secret", "signal = bridge", "sandbox = bridge"])
def test_a_malformed_or_shared_key_reference_is_refused_at_start_up_naming_the_setting(env, named):
    """A reference that is neither form, a database secret narrowed to one key, or two purposes naming one key."""
    with pytest.raises(ConfigError, match="^" + re.escape(named)):
        Settings.from_env(env)
