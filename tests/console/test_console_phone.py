"""The console on a phone, 400 px wide (issue 40, item 7): on every page no label, heading, field, button or
link overlaps another (their bounding boxes compared), nothing is wider than the screen, and the runs list's
first run shows on the first screen rather than far below its filters; at 320 px with text at 150% (a phone's text
scaling) the runs list and a run's page neither overlap nor scroll sideways."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from selenium.webdriver.common.by import By

from tests.console.browser import LAPTOP, eventually, screenshot, text_of
from tests.console.pages import cue_banner, escalate, open_run, schedule_now, sign_in
from tests.support.api import ADMIN

PHONE_400 = (400, 844)
PHONE_320 = (320, 640)
# The boxes compared: what a person reads or presses, each a box of its own.
OVERLAPS = """
// Visually hidden (a card table's header row, kept for screen readers): clipped away, not laid over anything.
const clipped = (e) => {
  for (let at = e; at; at = at.parentElement) if (getComputedStyle(at).clipPath !== 'none') return true;
  return false;
};
const picked = [...document.querySelectorAll('main label, main legend, main h1, main h2, main h3, main input, main select,'
  + ' main textarea, main button, main a, main th, main .badge, header a, header button, header label')]
  .filter((e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden' && !clipped(e));
const words = (e) => (e.innerText || e.value || e.getAttribute('aria-label') || '').trim().slice(0, 30);
const named = (e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''} “${words(e)}”`;
const labels = (a, b) => a.tagName === 'LABEL' && a.htmlFor && b.id === a.htmlFor;
// Each box read once, top first: a box is compared only with those that start above its bottom (a sweep), so a
// month of a frequent schedule's occurrences (thousands of boxes) is checked in moments, not pair by pair.
const boxes = picked.map((e) => [e, e.getBoundingClientRect()]).sort((x, y) => x[1].top - y[1].top);
const found = [];
for (let i = 0; i < boxes.length; i += 1) {
  const [a, p] = boxes[i];
  for (let j = i + 1; j < boxes.length && boxes[j][1].top < p.bottom - 1; j += 1) {
    const [b, q] = boxes[j];
    if (a.contains(b) || b.contains(a) || labels(a, b) || labels(b, a)) continue;
    const overlap = Math.min(p.right, q.right) - Math.max(p.left, q.left) > 1 && Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top) > 1;
    if (overlap) found.push(`${named(a)} overlaps ${named(b)}`);
  }
}
// A card's cell labels itself (its ::before, "Current version"): a label taller than its cell runs into the next.
for (const cell of document.querySelectorAll('main table.cards td')) {
  const label = getComputedStyle(cell, '::before');
  if (label.content === 'none' || !cell.getClientRects().length) continue;
  const [needs, has] = [parseFloat(label.height), cell.getBoundingClientRect().height];
  if (needs > has + 1) found.push(`the label “${cell.dataset.label}” (${needs} px) runs out of its cell (${has} px) into the next`);
}
return found;
"""


FIRST_RUNS = "#inbox tr[data-inbox], #runs-list tr[data-run]"  # the inbox comes first, the whole list after


def _overlaps(browser, page: str) -> list[str]:
    return [f"{page}: {found}" for found in browser.execute_script(OVERLAPS)]


def _wider(browser, page: str) -> list[str]:
    """The page, or a table's box (a card pushed wider than the screen scrolls inside it), scrolling sideways."""
    overflow = browser.execute_script("""return [document.documentElement.scrollWidth - window.innerWidth,
        ...[...document.querySelectorAll('.table-wrap')].map((box) => box.scrollWidth - box.clientWidth)]""")
    return [f"{page}: {px} px wider than the phone{' in a table' if i else ''}" for i, px in enumerate(overflow) if px > 0]


def _runs_of_every_name_length(api_client) -> tuple[list[int], str]:
    """Tomorrow's runs of definitions whose names grow a letter at a time, and the calendar's `?month=` of their
    day (the viewer's zone, the machine's): one of them puts its "run N" link at a calendar line's end at 400 px,
    whatever the ids (a link broken there read as "run" and "2073")."""
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
    made = []
    for letters in range(1, 31):
        name = f"Phone walk {'x' * letters} {uuid.uuid4().hex[:6]}"
        definition_id = api_client.call("POST", "/definitions", {"name": name, "grace_seconds": 300, "phases": [
            {"name": "walk", "steps": [{"action": "core.announce", "params": {"message": "Go"}}]}]})["definition"]["id"]
        at = (tomorrow + timedelta(minutes=letters)).strftime("%Y-%m-%dT%H:%M:%SZ")
        made.append(api_client.call("POST", f"/definitions/{definition_id}/runs", {"scheduled_for": at})["run"]["id"])
    day = tomorrow.astimezone()
    return made, f"{day.year}-{day.month:02d}"


def test_no_label_overlaps_its_neighbour_at_400_px_and_the_first_run_is_on_the_first_screen(browser, server, api_client):
    filling, month = _runs_of_every_name_length(api_client)
    for run_id in filling:
        api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "they only fill the calendar"})
    document = {"name": f"Phone garden {uuid.uuid4().hex[:6]}", "grace_seconds": 300, "schedule": {"cron": "0 20 * * 5"},
                "phases": [{"name": "garden", "steps": [{"action": "core.cue", "params": {"instruction": "Count the crows"}}]}]}
    definition_id, run_id = schedule_now(api_client, document)
    sign_in(browser, ADMIN)
    browser.set_window_size(*PHONE_400)
    try:
        eventually(lambda: browser.execute_script("return window.innerWidth") == PHONE_400[0], "the window at 400 px")
        found: list[str] = []
        browser.get(f"{server.console_url}#/runs")
        # Its cue in the inbox (the run parks within a tick or two of being made), not the list read before that.
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"#inbox tr[data-inbox='{run_id}']"), "the run's cue in the inbox")
        first = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, FIRST_RUNS), "the runs list")[0]
        top, screen = browser.execute_script("return [arguments[0].getBoundingClientRect().top, window.innerHeight]", first)
        screenshot(browser, "phone-runs")
        if top > screen - 120:  # its first lines (the run, its definition, its status) on the first screen
            found.append(f"the runs list: the first run starts {top:.0f} px down a {screen} px screen")
        found += _overlaps(browser, "the runs list") + _wider(browser, "the runs list")

        open_run(browser, server.url, run_id)
        cue_banner(browser)
        screenshot(browser, "phone-run")
        found += _overlaps(browser, "a run at its cue") + _wider(browser, "a run at its cue")
        browser.get(f"{server.console_url}#/definitions")
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"a[href='#/definitions/{definition_id}']"), "the definitions")
        found += _overlaps(browser, "the definitions") + _wider(browser, "the definitions")
        browser.get(f"{server.console_url}#/definitions/{definition_id}")
        eventually(lambda: browser.find_elements(By.ID, "add-version"), "the definition")[0].click()
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-path='grace_seconds'] input"), "the editor")
        eventually(lambda: text_of(browser, "#timeline-length"), "the timeline")
        found += _overlaps(browser, "the editor") + _wider(browser, "the editor")
        browser.get(f"{server.console_url}#/calendar?month={month}")
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"li[data-run='{filling[-1]}']"), "the calendar")
        screenshot(browser, "phone-calendar")
        found += _overlaps(browser, "the calendar") + _wider(browser, "the calendar")

        # A smaller phone with its text enlarged: a card's labels beside their values left a badge no room.
        browser.set_window_size(*PHONE_320)
        eventually(lambda: browser.execute_script("return window.innerWidth") == PHONE_320[0], "the window at 320 px")
        browser.execute_script("document.documentElement.style.fontSize = '150%'")
        browser.get(f"{server.console_url}#/runs")
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"#inbox tr[data-inbox='{run_id}']"), "the inbox at 320 px")
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"#runs-list tr[data-run='{run_id}']"), "the list at 320 px")
        found += _overlaps(browser, "the runs list at 320 px, text at 150%") + _wider(browser, "the runs list at 320 px, text at 150%")
        open_run(browser, server.url, run_id)
        cue_banner(browser)
        screenshot(browser, "phone-320-large-text-run")
        found += _overlaps(browser, "a run at 320 px, text at 150%") + _wider(browser, "a run at 320 px, text at 150%")
        assert found == [], "\n".join(found)
    finally:
        browser.execute_script("document.documentElement.style.fontSize = ''")
        browser.set_window_size(*LAPTOP)
        # Its Friday evenings would park a cue in every later test's inbox.
        api_client.call("POST", f"/definitions/{definition_id}/schedule/pause", {"reason": "the test is over"})


LONG_LINK = "https://wiki.example.org/events/" + "harvest-festival-" * 8 + "bonfire"
DIALOG_WIDER = """const d = document.querySelector('dialog[open]');
return d && [d.scrollWidth - d.clientWidth, Math.round(d.getBoundingClientRect().right - window.innerWidth)]"""


@contextmanager
def _cue_on_a_phone(browser, server, api_client, name: str, instruction: str, size=PHONE_400) -> Iterator[tuple[int, int]]:
    """A run parked at a cue with `instruction`, open on an admin's console at `size`: (run id, step id). The window
    is laptop-sized again and the run cancelled after, whatever the test did."""
    _, run_id = schedule_now(api_client, {"name": name, "grace_seconds": 300, "phases": [
        {"name": "opening", "steps": [{"action": "core.cue", "params": {"instruction": instruction}}]}]})
    sign_in(browser, ADMIN)
    browser.set_window_size(*size)
    try:
        eventually(lambda: browser.execute_script("return window.innerWidth") == size[0], f"the window at {size[0]} px")
        open_run(browser, server.url, run_id)
        step_id, _ = cue_banner(browser)
        yield run_id, step_id
    finally:
        browser.set_window_size(*LAPTOP)
        api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})


def test_a_long_unbroken_link_wraps_in_the_banner_and_the_dialog_at_400_px(browser, server, api_client):
    with _cue_on_a_phone(browser, server, api_client, "Phone link", f"Read {LONG_LINK}") as (run_id, step_id):
        found = _wider(browser, "a cue's banner with a long link")
        eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f"[data-cue] [data-control='confirm'][data-step='{step_id}']"),
                   "the cue's Confirm")[0].click()
        wider = eventually(lambda: browser.execute_script(DIALOG_WIDER), "the confirm's dialog")
        if wider != [0, 0] and max(wider) > 0:
            found.append(f"the confirm's dialog: {wider[0]} px wider inside, {wider[1]} px past the screen")
        # At the top of the screen, not centred: the note's on-screen keyboard rises over a phone's lower part,
        # where a centred dialog's buttons were.
        top = browser.execute_script("return document.querySelector('dialog[open]').getBoundingClientRect().top")
        if top > 24:
            found.append(f"the confirm's dialog: it starts {top:.0f} px down the screen, its buttons under a keyboard")
        browser.find_element(By.CSS_SELECTOR, "dialog[open] [data-ask='back']").click()
        api_client.call("POST", f"/runs/{run_id}/pause", {"reason": f"see {LONG_LINK}"})
        eventually(lambda: "harvest-festival" in text_of(browser, "#run-banners .banner-stopped, #run-banners .banner-held")
                   or "harvest-festival" in text_of(browser, "#run-banners [data-paused-by], #run-reason"), "the pause's reason shown")
        found += _wider(browser, "a paused banner with a long link")
        assert found == [], "\n".join(found)


def test_a_cue_banners_buttons_stay_under_the_thumb_when_its_escalation_fires(browser, server, api_client, console_db):
    """The cue banner's buttons came after its timers line and its escalation: an escalation fired (or a reminder's
    line growing a line) slid Confirm down under a thumb with nobody acting. Now they come straight after its story."""
    with _cue_on_a_phone(browser, server, api_client, "Phone thumb", "Light the bonfire") as (run_id, step_id):
        confirm = ("return document.querySelector(arguments[0])?.getBoundingClientRect().top",
                   f"[data-cue] [data-control='confirm'][data-step='{step_id}']")
        before = eventually(lambda: browser.execute_script(*confirm), "the banner's Confirm")
        escalate(console_db, run_id, step_id)
        eventually(lambda: text_of(browser, "[data-cue] [data-escalation]"), "the escalation in the banner")
        assert browser.execute_script(*confirm) == before, "Confirm slid down when the escalation fired"
