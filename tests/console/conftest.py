"""One browser, one API server, one game bridge and one tick loop for every console test.

They are shared because starting Chromium and a tick process per test would
cost more than the tests; each test makes its own definitions and runs, and
signs in afresh in a clean tab.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from chalicelib.db import Database
from devtools.kit.game_bridge import SECRET, GameBridge
from tests.console.browser import LAPTOP, eventually, start_chromium, stop_chromium
from tests.console.server import ConsoleServer
from tests.support.api import ADMIN, hs_settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="package")
def console_db(db_params) -> Iterator[Database]:
    database = Database(db_params)
    yield database
    database.close()


@pytest.fixture(scope="package")
def bridge() -> Iterator[GameBridge]:
    with GameBridge() as game_bridge:
        yield game_bridge


@pytest.fixture(scope="package")
def tick_loop(db_params, bridge):
    """`python -m chalicelib tick`: the real tick loop, a tick a second, against the test database."""
    env = {**os.environ, "EVENTS_DB_URL": db_params.url(), "GAME_BRIDGE_URL": bridge.url, "GAME_BRIDGE_SECRET": SECRET,
           "EVENT_TICK_SECONDS": "1", "EVENT_STEP_RETRY_SECONDS": "1", "EVENT_TICK_CONCURRENCY": "2",
           # The reverts a game may list (the tick records any other never to be sent); steps were checked at save.
           "EVENT_MODULE_ACTIONS": "garden.shoo,garden.scare",
           # No __pycache__ in the working tree: `make package` would ship it instead of its own bytecode.
           "PYTHONDONTWRITEBYTECODE": "1"}
    loop = subprocess.Popen([sys.executable, "-m", "chalicelib", "tick"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    yield loop
    loop.terminate()
    loop.wait(20)


@pytest.fixture(scope="package")
def server(db_params, console_db) -> Iterator[ConsoleServer]:
    started = ConsoleServer(hs_settings(db_params), console_db).start()
    yield started
    started.stop()


@pytest.fixture(scope="package")
def chromium():
    driver, profile = start_chromium()
    yield driver
    stop_chromium(driver, profile)


@pytest.fixture
def browser(chromium, server, tick_loop):
    """The shared browser in one clean tab at the sign-in page, laptop-sized."""
    driver = chromium
    for handle in driver.window_handles[1:]:
        driver.switch_to.window(handle)
        driver.close()
    driver.switch_to.window(driver.window_handles[0])
    driver.set_window_size(*LAPTOP)
    driver.get(server.console_url)
    driver.execute_script("sessionStorage.clear()")
    driver.get(server.console_url)
    eventually(lambda: driver.find_elements(By.ID, "token-input"), "the sign-in page")
    yield driver
    assert tick_loop.poll() is None, "the tick loop died during the test"


class Client:
    """The API over HTTP, as a script (not the page) would call it."""

    def __init__(self, base: str):
        self.base = base

    def call(self, method: str, path: str, body=None, token: str = ADMIN):
        request = urllib.request.Request(
            self.base + path, method=method, data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=15) as answer:
            return json.loads(answer.read())


@pytest.fixture
def api_client(server) -> Client:
    return Client(server.url)
