"""P12 a long run's page in the console: how long the browser is busy showing a change, from the last answer
its read needed to the next frame on screen (the page's own JSON, grouping, drawing and layout), on a run of
many steps against a run of 200 (the baseline, measured in the same run, same browser, same page).

Each round marks one step of each run done in the database and tells the page it is looked at again (a focus
event: a paused run's page reads at once), so the page reads the whole run (its steps a page of 1,000 at a time,
then the log) and redraws. A MutationObserver on the steps' section sees the redraw; a requestAnimationFrame
after it, the frame that shows it; Resource Timing, when the last answer before it ended. Fetching is not in
the figure (the development server answers it), only what the browser does with the answers. Real headless
Chromium, as the console's tests drive it; the API is the test suite's server (Chalice's local server in a
thread), and the database a scratch one.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from selenium.webdriver.common.by import By

from chalicelib.db import Database, Tx
from chalicelib.events.lifecycle import RunStatus, StepStatus
from chalicelib.events.model import Run, StepSpec
from tests.console.browser import eventually, start_chromium, stop_chromium
from tests.console.pages import open_run, sign_in
from tests.console.server import ConsoleServer
from tests.support.api import ADMIN, hs_settings
from tests.support.factory import make_run, materialise

from .harness import Figure, scratch_database

SHORT_STEPS = 200  # the baseline: one window of steps.js's STEPS_SHOWN, every row drawn either way
WATCH = """
const done = arguments[arguments.length - 1];
window.__drawnMs = null;
performance.setResourceTimingBufferSize(10000);
performance.clearResourceTimings();
new MutationObserver((_, observer) => {
  observer.disconnect();
  requestAnimationFrame(() => {
    const shown = performance.now();
    const answers = performance.getEntriesByType('resource').filter((entry) => entry.name.includes('/runs/'));
    window.__drawnMs = shown - Math.max(...answers.map((entry) => entry.responseEnd));
  });
}).observe(document.getElementById('run-phases'), { childList: true });
window.dispatchEvent(new Event('focus'));
done(true);
"""


def _paused_run(db: Database, steps: int) -> Run:
    """A paused run (the tick leaves it be; its page polls idly and reads at once on focus) of `steps` steps."""
    run = make_run(db, datetime.now(UTC).replace(tzinfo=None), status=RunStatus.PAUSED, current_phase=1)
    materialise(db, run, 1, [StepSpec("core.announce", {"message": f"line {n}"}) for n in range(steps)])
    return run


def _drawn_ms(driver, db: Database, base: str, run: Run, rounds: int) -> float:
    """The best of `rounds` changes on `run`'s page: ms from the last answer to the frame showing it."""
    open_run(driver, base, run.id)
    eventually(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-step-row]"), f"run {run.id}'s steps", 120)
    best = float("inf")
    for seq in range(rounds):
        now = datetime.now(UTC).replace(tzinfo=None)

        def done(tx: Tx, seq: int = seq, now: datetime = now) -> None:  # the step's change the page is to show
            tx.execute("UPDATE event_run_steps SET status = %s, started_at = %s, finished_at = %s"
                       " WHERE run_id = %s AND seq = %s", (StepStatus.DONE.value, now, now, run.id, seq))

        db.transaction(done)
        driver.execute_async_script(WATCH)
        best = min(best, eventually(lambda: driver.execute_script("return window.__drawnMs"), "the change drawn", 120))
        time.sleep(0.5)  # the page settles (its ledger's read) before the next change
    return best


def measure(long_steps: int, rounds: int) -> Figure:
    """The figure: a run of `long_steps` steps against one of SHORT_STEPS, the best of `rounds` changes each."""
    with scratch_database("p12") as db:
        server = ConsoleServer(hs_settings(db.params), db).start()
        driver, profile = start_chromium()
        try:
            short, long = _paused_run(db, SHORT_STEPS), _paused_run(db, long_steps)
            driver.get(f"{server.url}/console")
            sign_in(driver, ADMIN)
            baseline = _drawn_ms(driver, db, server.url, short, rounds)
            figure = _drawn_ms(driver, db, server.url, long, rounds)
        finally:
            stop_chromium(driver, profile)
            server.stop()
    return Figure("P12", f"a change on the page of a run of {long_steps:,} steps, last answer → on screen"
                         f" (Chromium, best of {rounds})", figure, "ms",
                  baseline=baseline, baseline_what=f"(a run of {SHORT_STEPS} steps)")


def run(sizes) -> list[Figure]:
    return [measure(9_800 if sizes.rounds > 1 else 2_000, 3 * sizes.rounds)]
