"""axe-core's accessibility audit, run in the page the test is on.

axe-core comes from npm (package.json, `npm ci` by the Makefile into node_modules/); it is injected through
the driver, which the page's Content-Security-Policy does not govern, so the console itself loads nothing.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from selenium.webdriver.remote.webdriver import WebDriver

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = {"serious", "critical"}


@cache
def _axe_source() -> str:
    if not AXE.exists():
        raise RuntimeError(f"{AXE} is missing: `make lint` (or `npm ci`) installs it from package-lock.json")
    return AXE.read_text(encoding="utf-8")


def serious_findings(driver: WebDriver) -> list[str]:
    """axe's serious and critical violations on the page as it stands, each as rule: target (help)."""
    driver.execute_script(_axe_source())
    violations = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then((r) => done(r.violations), (e) => done([{id: 'axe', impact: 'critical',"
        " help: String(e), nodes: []}]));")
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:5]} — {v['help']}"
            for v in violations if v.get("impact") in BLOCKING]


def dark(driver: WebDriver, on: bool) -> None:
    """The system's colour scheme as the page sees it (prefers-color-scheme)."""
    scheme = {"name": "prefers-color-scheme", "value": "dark" if on else "light"}
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [scheme]})
