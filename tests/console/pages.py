"""What a person does on the console, as steps a test can say in one line."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from chalicelib.events import journal
from chalicelib.events.store import log, steps
from devtools.dev import DEMO_DOCUMENT
from tests.console.browser import eventually, text_of
from tests.support.api import MODERATOR

# A cue's banner: how long it has waited, then the instruction (the demo's and the tests' cue).
CUE_WAITING = re.compile(r"Waiting for a game master for \d+ (s|min): Light the bonfire")


def demo_document(name: str) -> dict:
    """`make dev`'s demo event under a test's own name, its 10 s wait cut to 1 s."""
    document = copy.deepcopy(DEMO_DOCUMENT)
    document["name"] = name
    for phase in document["phases"]:
        for step in phase["steps"]:
            if step["action"] == "core.wait":
                step["params"]["seconds"] = 1
    return document


def new_definition(driver: WebDriver, base: str, token: str) -> None:
    """Signed in with `token`, the editor of a new definition, its form built."""
    sign_in(driver, token)
    driver.get(f"{base}/console#/definitions/new")
    eventually(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-path='name'] input"), "the editor's form")


def editor_field(driver: WebDriver, path: str):
    """The editor's input, choice or box for the document's `path` ("phases[0].steps[1].params.seconds")."""
    return eventually(lambda: driver.find_elements(By.CSS_SELECTOR, f"[data-path='{path}'] > :is(input, select, textarea)"),
                      f"the field {path}")[0]


def sign_in(driver: WebDriver, token: str) -> None:
    box = eventually(lambda: driver.find_elements(By.ID, "token-input"), "the sign-in page")[0]
    box.clear()
    box.send_keys(token)
    driver.find_element(By.ID, "token-sign-in").click()
    eventually(lambda: driver.find_elements(By.ID, "signed-in-as"), "the signed-in header")


def schedule_now(client, document: dict) -> tuple[int, int]:
    """A definition and a run of it due now, made through the API: (definition id, run id)."""
    definition_id = client.call("POST", "/definitions", document)["definition"]["id"]
    now = datetime.now(UTC) - timedelta(seconds=1)
    run = client.call("POST", f"/definitions/{definition_id}/runs", {"scheduled_for": now.strftime("%Y-%m-%dT%H:%M:%SZ")})
    return definition_id, run["run"]["id"]


@contextmanager
def moderator_at_bonfire_cue(client, driver: WebDriver, base: str, name: str) -> Iterator[int]:
    """A run due now whose one step cues "Light the bonfire", open on a moderator's console at its cue: its id.
    The run is cancelled after, whatever the test did."""
    _, run_id = schedule_now(client, {"name": name, "grace_seconds": 300, "phases": [
        {"name": "opening", "steps": [{"action": "core.cue", "params": {"instruction": "Light the bonfire"}}]}]})
    try:
        sign_in(driver, MODERATOR)
        open_run(driver, base, run_id)
        cue_banner(driver)
        yield run_id
    finally:
        client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})


def held_runs_ticked(client, driver: WebDriver, base: str, name: str, count: int = 2) -> list[int]:
    """`count` runs held at a cue, made through the API and running, ticked in the runs list: their ids."""
    document = {"grace_seconds": 300, "phases": [
        {"name": "opening", "steps": [{"action": "core.cue", "params": {"instruction": "Hold here"}}]}]}
    ids = [schedule_now(client, {**document, "name": f"{name} {i}"})[1] for i in range(count)]
    def running(run_id: int) -> bool:
        return client.call("GET", f"/runs/{run_id}")["run"]["status"] == "running"

    def box(run_id: int) -> list:
        return driver.find_elements(By.CSS_SELECTOR, f"input[data-select='{run_id}']")

    for run_id in ids:
        eventually(partial(running, run_id), f"run {run_id} running")
    driver.get(f"{base}/console#/runs")
    for run_id in ids:
        eventually(partial(box, run_id), f"run {run_id}'s box")[0].click()
    return ids


def escalate(console_db, run_id: int, step_id: int) -> None:
    """The row a cue's first escalation try writes (the tick loop here has no escalation channel to post to)."""
    def write(tx):
        step = steps.get(tx, step_id)
        log.append(tx, journal.step_escalated(step, "#staff", 1, 3, f"{run_id}:escalate:{step_id}", 60),
                   tx.scalar("SELECT UTC_TIMESTAMP(6)"))
    console_db.transaction(write)


def open_run(driver: WebDriver, base: str, run_id: int) -> None:
    driver.get(f"{base}/console#/runs/{run_id}")
    eventually(lambda: driver.find_elements(By.CSS_SELECTOR, "#run-status"), f"run {run_id}'s page")


def run_status(driver: WebDriver) -> str:
    return driver.execute_script("return document.querySelector('#run-status')?.dataset.status || ''")


def wait_for_status(driver: WebDriver, status: str, timeout: float = 40) -> None:
    eventually(lambda: run_status(driver) == status, f"the run to show {status} (it shows {run_status(driver)!r})", timeout)


def cue_banner(driver: WebDriver, timeout: float = 40) -> tuple[int, str]:
    """The parked cue's banner, once it shows: (step id, its text)."""
    read = "const b = document.querySelector('[data-cue]'); return b && [+b.dataset.cue, b.innerText]"
    step_id, text = eventually(lambda: driver.execute_script(read), "the parked cue's banner", timeout)
    return step_id, text


def press(driver: WebDriver, control: str, step_id: int | None = None, text: str | None = None) -> None:
    """Click a control; if it asks for a reason or note, give `text` and go on."""
    css = f"[data-control='{control}']" + (f"[data-step='{step_id}']" if step_id else ":not([data-step])")
    eventually(lambda: driver.find_elements(By.CSS_SELECTOR, css), f"the {control} button")[0].click()
    if text is not None:
        answer = eventually(lambda: driver.find_elements(By.ID, "ask-text"), "the reason box")[0]
        answer.send_keys(text)
        driver.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()


def confirm_dialog(driver: WebDriver) -> str:
    """Says yes to the open question (a costly control's confirmation); its words, read before."""
    asked = eventually(lambda: driver.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the confirmation")[0].text
    driver.find_element(By.CSS_SELECTOR, "[data-ask='go']").click()
    return asked


def listed(driver: WebDriver) -> list[tuple[int, str]]:
    """The runs list as (run id, status), read in one go (the list re-renders as it refreshes)."""
    rows = driver.execute_script(
        "return [...document.querySelectorAll('#runs-list tr[data-run]')].map(r => [+r.dataset.run, r.dataset.status])")
    return [(run, status) for run, status in rows]


def log_rows(driver: WebDriver) -> list[tuple[str, str]]:
    """The log as (actor, text) pairs."""
    rows = driver.execute_script(
        "return [...document.querySelectorAll('#run-log li')].map(li => [li.dataset.actor, li.innerText])")
    return [(actor, text) for actor, text in rows]


def notice_text(driver: WebDriver) -> str:
    return text_of(driver, "#notice")


def phase_facts(driver: WebDriver, number: int) -> str:
    """The line under a phase's heading: when it ends, its deadline, or how it ended."""
    return text_of(driver, f"[data-phase-facts='{number}']")
