"""Real headless Chromium driven by Selenium, with Debian's driver pinned so nothing is downloaded.

`make test` installs `chromium` and `chromium-driver` with apt when they are missing.
"""

from __future__ import annotations

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
SCREENSHOTS = Path(__file__).resolve().parents[2] / ".local" / "screenshots" / "console"
DOC_SCREENS = Path(__file__).resolve().parents[2] / "docs" / "screens"  # referenced from docs/console.md
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
    """The page as docs/console.md shows it: 1000 px wide, the size then restored (the test goes on)."""
    before = driver.get_window_size()
    driver.set_window_size(*DOC_WIDTH)
    try:
        time.sleep(0.3)  # a layout at the new width
        DOC_SCREENS.mkdir(parents=True, exist_ok=True)
        path = DOC_SCREENS / f"{name}.png"
        driver.save_screenshot(str(path))
    finally:
        driver.set_window_size(before["width"], before["height"])
    return path
