"""A step's one name on every surface (issue 40, item 3), for one run in real Chromium: "Run 6 · Phase 1 · step 2
(light the bonfire)" in the notices a cue posts (the webhook channel Discord and Slack read, and the log channel,
both from the notice chat reuses), the terminal's lines and curl hint, the log rows as the page renders them, the
banner, the ledger panel and the API's refusals; the step's database id only in a URL, and beside its name."""

from __future__ import annotations

import json
import logging
import re
import urllib.error
from datetime import UTC, datetime

import pytest
from selenium.webdriver.common.by import By

from chalicelib.events.actions.notice import Notice
from chalicelib.events.adapters.channels import channel_for
from chalicelib.events.store import log, steps
from devtools.kit.game_bridge import Answer, GameBridge
from devtools.narrate import lines, named_steps
from tests.console.browser import eventually, text_of
from tests.console.pages import cue_banner, log_rows, open_run, schedule_now, sign_in
from tests.support.api import GM, MODERATOR

CONSOLE = "https://events.example.com/console"
# A step's name anywhere: its run, its phase and its place, and its name, instruction or action in brackets.
NAMED = re.compile(r"Run \d+ · Phase \d+ · step \d+ \([^)]+\)")


def _refusal(api_client, path: str, body: dict, token: str) -> str:
    """The API's words of a refused press (a 409)."""
    with pytest.raises(urllib.error.HTTPError) as refused:
        api_client.call("POST", path, body, token)
    assert refused.value.code == 409
    return " ".join(json.loads(refused.value.read())["errors"])


class _Kept(logging.Handler):
    """The log channel's lines, as Lambda's log would keep them."""

    def __init__(self, kept: list[str]):
        super().__init__(logging.WARNING)
        self.kept = kept

    def emit(self, record: logging.LogRecord) -> None:
        self.kept.append(record.getMessage())


def test_one_runs_step_is_named_one_way_on_every_surface(browser, server, api_client, bridge, console_db):
    bridge.script("lantern.hang_one_name", Answer(200, {"resources": [
        {"kind": "lantern", "id": "lantern-9", "revert": {"action": "garden.scare", "params": {"lantern": "lantern-9"}}}]}))
    _, run_id = schedule_now(api_client, {"name": "Bonfire (one name)", "grace_seconds": 300, "phases": [
        {"name": "opening", "steps": [
            {"action": "lantern.hang_one_name"},
            {"action": "core.cue", "name": "light_the_bonfire",
             "params": {"instruction": "Light the bonfire, then confirm this step"}}]}]})
    name = f"Run {run_id} · Phase 1 · step 2 (light the bonfire)"
    hang_name = f"Run {run_id} · Phase 1 · step 1 (lantern.hang_one_name)"
    sign_in(browser, MODERATOR)
    open_run(browser, server.url, run_id)
    cue_id, banner = cue_banner(browser)
    hang, cue = console_db.autocommit(lambda tx: steps.list_for_run(tx, run_id))
    assert (hang.named, cue.named) == (hang_name, name)
    texts: dict[str, list[str]] = {}

    # The page: the banner names the step once, its buttons are short; the log and the ledger panel name it.
    assert banner.count(name) == 1, banner
    buttons = browser.find_elements(By.CSS_SELECTOR, f"[data-cue='{cue_id}'] button")
    assert {b.text for b in buttons} <= {"Confirm", "Skip", "I have it"}, [b.text for b in buttons]
    assert all(b.get_attribute("aria-label").endswith(f", {name}") for b in buttons)
    rows = eventually(lambda: [text for _, text in log_rows(browser) if name in text], "the cue's log rows")
    texts["log rows"] = [text for _, text in log_rows(browser) if "step" in text]
    texts["ledger panel"] = [eventually(lambda: text_of(browser, "[data-resource='lantern lantern-9']"), "the ledger")]
    assert rows and hang_name in texts["ledger panel"][0], texts["ledger panel"]

    # The notices its cue posts, built from its row as the runner builds them: the webhook channel's Discord
    # content, Slack text and event, and the log channel's line.
    now = datetime.now(UTC)
    notices = [Notice.of(cue, "cue", cue.params["instruction"], now, CONSOLE), Notice.reminder(cue, 1, 2, 300, now, CONSOLE),
               Notice.escalation(cue, 900, now, CONSOLE)]
    logged: list[str] = []
    handler = _Kept(logged)
    logging.getLogger("chalicelib.events.adapters.channels").addHandler(handler)
    with GameBridge(default=Answer(204, "")) as receiver:  # Discord's answer; a receiver of its own
        hook = channel_for(f"webhook:{receiver.url}/hooks/cue", "cue", timeout=5.0, webhook_secret="hook-secret")
        try:
            for notice in notices:
                hook.post(notice)
                channel_for("log", "cue", timeout=5.0).post(notice)
        finally:
            logging.getLogger("chalicelib.events.adapters.channels").removeHandler(handler)
        posted = [request.json for request in receiver.received("cue")]
    texts["webhook"] = [part for body in posted for part in (body["content"], body["text"], body["event"]["step_named"])]
    texts["log channel"] = logged
    assert len(texts["webhook"]) == 9 and len(texts["log channel"]) == 3

    # The terminal: `make dev`'s lines for the run's log, and its hint with the curl command.
    entries = console_db.autocommit(lambda tx: log.after(tx, run_id, 0, 1000))
    told = lines(entries, console_db.autocommit(lambda tx: named_steps(tx, {run_id})))
    texts["terminal"] = [line for line in told if line.startswith("run ")]
    hint = next(line for line in told if "curl" in line)
    assert hint.startswith(f"  confirm {name} on the console") and hint.endswith(f"/runs/{run_id}/steps/{cue_id}/confirm")

    # The API's refusals naming a step.
    skipped = _refusal(api_client, f"/runs/{run_id}/steps/{hang.id}/skip", {"reason": "late"}, MODERATOR)
    api_client.call("POST", f"/runs/{run_id}/steps/{cue_id}/acknowledge", {}, GM)
    had = _refusal(api_client, f"/runs/{run_id}/steps/{cue_id}/acknowledge", {"note": "mine"}, MODERATOR)
    texts["API errors"] = [skipped, had]
    assert texts["API errors"][0].startswith(f"{hang_name}: this step is done"), texts["API errors"]
    assert texts["API errors"][1].startswith(f"{name}: gm-gus has it since"), texts["API errors"]

    # Every text about a step names it one way: the terminal's line says its run once, at its head.
    for surface, said in texts.items():
        for text in said:
            if surface == "terminal":
                assert text.startswith(f"run {run_id} · ") and "step id" not in text, (surface, text)
                continue
            found = NAMED.findall(text.replace("@\u200b", "@"))
            assert found and set(found) <= {name, hang_name}, (surface, text)
    assert any(name in text for text in texts["log rows"]) and any(name in text for text in texts["webhook"])
    assert any("Phase 1 · step 2 (light the bonfire) parked" in line for line in texts["terminal"]), texts["terminal"]


# The run's first read answers it as it was before its second phase began: without that phase's steps (its log,
# read after, has their rows). Only the first answer: a read after that answers the run as it is.
BEFORE_PHASE_2 = """
const real = window.fetch.bind(window);
let first = true;
window.fetch = async (url, init = {}) => {
  const answer = await real(url, init);
  if (!first || (init.method || 'GET') !== 'GET' || !/\\/runs\\/\\d+$/.test(new URL(String(url)).pathname)) return answer;
  first = false;
  const body = await answer.json();
  body.steps = body.steps.filter((s) => s.phase < 2);
  return new Response(JSON.stringify(body), { status: answer.status, headers: answer.headers });
};
"""


def test_a_log_row_of_a_step_the_page_has_not_read_yet_is_named_once_it_is_read(browser, server, api_client):
    """Review 1, item 5: the live-tailed log named a new phase's steps "step id 25", and a run that then finished
    kept those names; a row naming a step the page does not know makes it read the steps again."""
    _, run_id = schedule_now(api_client, {"name": "Two phases (tail)", "grace_seconds": 300, "phases": [
        {"name": "opening", "steps": [{"action": "core.announce", "params": {"message": "The fair opens"}}]},
        {"name": "contest", "steps": [{"action": "core.announce", "params": {"message": "The contest begins"}}]}],
        "ending": []})
    eventually(lambda: api_client.call("GET", f"/runs/{run_id}")["run"]["status"] == "completed", "the run completed", 40)
    sign_in(browser, GM)
    browser.execute_script(BEFORE_PHASE_2)
    browser.execute_script(f"location.hash = '#/runs/{run_id}'")
    eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#run-status"), "the run's page")
    rows = eventually(lambda: [text for _, text in log_rows(browser) if "Phase 2" in text], "phase 2's log rows")
    assert all("step id" not in text for text in rows), rows
    assert any(f"Run {run_id} · Phase 2 · step 1 (core.announce)" in text for text in rows), rows
