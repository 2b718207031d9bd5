"""The connection's live region during an outage, in real Chromium: it is announced when the kind of trouble changes,
not at every retry. Before, each retry (every 5 s, an attempt number and a time in its words) and each failed read
replaced the region's words, a new announcement each time (and a new alert for each failed read), talking over
whatever a screen-reader user was reading. Now the words that say what is wrong are put there once; the countdown
and the attempt change beside them, in a part not announced (aria-live off)."""

from __future__ import annotations

from tests.console.browser import eventually, text_of
from tests.console.pages import moderator_at_bonfire_cue

# Each announcement the region makes: a node put into it, or text changed in it, outside a part marked not announced.
WATCH = """
const region = document.getElementById('connection');
window.announced = [];
const quiet = (node) => (node.nodeType === 1 ? node : node.parentElement)?.closest('[aria-live="off"]');
new MutationObserver((records) => {
  for (const record of records) {
    const added = [...record.addedNodes].filter((node) => !quiet(node));
    if ((record.type === 'characterData' && !quiet(record.target)) || added.length) window.announced.push(region.innerText);
  }
}).observe(region, { childList: true, subtree: true, characterData: true });
"""


def _announced(browser) -> list[str]:
    return browser.execute_script("return window.announced")


def test_an_outage_is_announced_once_per_kind_not_at_every_retry(browser, server, api_client):
    with moderator_at_bonfire_cue(api_client, browser, server.url, "Bonfire (outage said once)") as run_id:
        browser.execute_script(WATCH)
        with server.failing(f"/runs/{run_id}", 503):  # the database waking: each read retried every 5 s
            eventually(lambda: "(attempt 3)" in text_of(browser, "#connection"), "the third retry", 30)
        said = _announced(browser)
        assert len(said) == 1 and "The service is unavailable" in said[0], said
        eventually(lambda: not text_of(browser, "#connection"), "the outage over", 20)

        browser.execute_script("window.announced = []")
        with server.failing(f"/runs/{run_id}", 502):  # each read fails at once, and is tried again within seconds
            failed = f"/runs/{run_id}"
            since = len(server.requested(failed, method="GET"))
            eventually(lambda: len(server.requested(failed, method="GET")) >= since + 3, "three failed reads", 30)
        said = _announced(browser)
        assert len(said) == 1 and "The run could not be loaded" in said[0], said
        assert len(browser.find_elements("css selector", "#connection [role='alert']")) <= 1
