"""Real headless Chromium driven by Selenium, with Debian's driver pinned so nothing is downloaded.

`make test` installs `chromium` and `chromium-driver` with apt when they are missing. Screenshots land in
`.local/` (git-ignored) only: the tracked ones in docs/screens/ change only through `make screens`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / ".local" / "screenshots" / "console"
DOC_SHOTS = ROOT / ".local" / "screenshots" / "docs"  # each run's take of the docs' screenshots
DOC_SCREENS = ROOT / "docs" / "screens"  # the tracked ones docs/console.md shows
UPDATE_DOC_SCREENS = "EVENTS_UPDATE_DOC_SCREENS"  # =1 (`make screens`): copy each take into DOC_SCREENS
DOC_WIDTH = (1000, 760)
LAPTOP = (1280, 900)
PHONE = (390, 844)
FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)

T = TypeVar("T")


def start_chromium() -> tuple[webdriver.Chrome, str]:
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not Path(path).exists()]
    if missing:
        raise RuntimeError(f"{', '.join(missing)} missing: apt-get install -y chromium chromium-driver (make test does it as root)")
    profile = tempfile.mkdtemp(prefix="console-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={LAPTOP[0]},{LAPTOP[1]}")
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    return driver, profile


def stop_chromium(driver: webdriver.Chrome, profile: str) -> None:
    try:
        driver.quit()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def eventually(check: Callable[[], T], what: str, timeout: float = 30.0) -> T:
    """The first truthy value of `check()`, polled until `timeout`; a stale element just means try again."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except (StaleElementReferenceException, WebDriverException) as error:
            last_error = error
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}" + (f" (last error: {last_error})" if last_error else ""))


def text_of(driver: WebDriver, css: str) -> str:
    """The visible text of everything `css` matches, read in one go (a re-render cannot make it stale)."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => e.innerText).join(' ').trim()", css)


def screenshot(driver: webdriver.Chrome, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def doc_screenshot(driver: webdriver.Chrome, name: str) -> Path:
    """The page as docs/console.md shows it: 1000 px wide, the size then restored (the test goes on). Into
    .local/ always; into docs/screens/ too only when asked (`make screens`), so a test run leaves the tree clean."""
    before = driver.get_window_size()
    driver.set_window_size(*DOC_WIDTH)
    try:
        eventually(lambda: driver.execute_script("return window.innerWidth") == DOC_WIDTH[0], "the window at the docs' width")
        # Two frames: the page's layout at the new width, painted.
        driver.execute_async_script("requestAnimationFrame(() => requestAnimationFrame(arguments[0]))")
        DOC_SHOTS.mkdir(parents=True, exist_ok=True)
        path = DOC_SHOTS / f"{name}.png"
        driver.save_screenshot(str(path))
    finally:
        driver.set_window_size(before["width"], before["height"])
    if os.environ.get(UPDATE_DOC_SCREENS) == "1":
        DOC_SCREENS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOC_SCREENS / path.name)
    return path
