"""P11 (issue 42) a chat button's press answered in time, from the signed request to its answer:

- warm: parked cues, each posted to a loopback Discord by a real tick, each confirmed once by a signed press
  to `POST /integrations/discord/interactions` (answered with the message as the press left it), interleaved
  with as many cues confirmed by the console's `POST /runs/{id}/steps/{step}/confirm` (the same command on
  the same kind of cue: the baseline) and as many Slack presses (answered empty at once, the press finished
  after through its response_url: the answer and the edit both timed);
- deferred: Discord presses while the database holds every connection silent (`DatabaseDoor.stall(None)`,
  an Aurora resuming from a pause): each must be answered with the acknowledgement within Discord's 3 s.

Every press timed confirms its own cue (its answer is checked, a deferred press's later edit too), so no
figure is of a refusal or a repeat. Requests go through chalice.test.Client in-process, as P6, P9 and P10's
do: the figure is the app's own handling (signature, routing, the worker the answer waits for, the
transaction), which is what an API Lambda runs behind API Gateway; `chalice local` would add its
single-threaded development server to both sides and nothing Lambda runs. Off AWS a deferred press's second
half runs on the process's own worker (chalicelib/events/chat/answers.py), not the chat function's
asynchronous invocation; only the answer is timed.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field

from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.db import Database, DatabaseClock
from chalicelib.events.chat.answers import DEFERRED_UPDATE, PRESS_ANSWER_SECONDS, UPDATE_MESSAGE
from chalicelib.events.chat.render import parse
from chalicelib.events.commands import Confirm
from chalicelib.events.runner.compose import build_runner
from devtools.kit.fake_chat import FakeChat, Posted
from tests.support.api import GM, hs_settings
from tests.support.chat import GM_ROLE, SLACK_CHANNEL, SLACK_GM, chat_settings
from tests.support.db_door import DatabaseDoor

from .harness import Figure, StatementRecorder, at_most, distribution, median, percentile, scratch_database
from .workload import drain, schedule_runs

DISCORD, SLACK = "/integrations/discord/interactions", "/integrations/slack/interactions"
P99_TARGET = 1.0  # issue 42: a press answered at once while the database is warm
DEFERRED_TARGET = 2.5  # issue 42: every answer while it is silent (Discord drops an interaction not answered in 3 s)
WARM_UP = 3  # presses of each kind not timed: imports, the keys, the press workers' connections
# Presses held silent at once: each press's worker waits EVENT_API_DATABASE_WAIT_SECONDS (20 s) for the
# database at most, so the door opens after each batch of 3 (6 s of answers), well inside it.
DEFERRED_BATCH = 3
FINISH_SECONDS = 30.0  # the most a press may take to be finished once the database answers again
CUE = {
    "grace_seconds": 3600,
    "ending": [],
    "phases": [
        {
            "name": "main",
            "steps": [
                {"action": "core.cue", "params": {"instruction": "Light the bonfire"}},
                {"action": "core.announce", "params": {"message": "Lit"}},
            ],
        }
    ],
}
CONSOLE_HEADERS = {"Authorization": f"Bearer {GM}", "Content-Type": "application/json"}


@dataclass(frozen=True)
class Cue:
    """A parked cue's message in chat, its Confirm button's identifier, and the run and step that names."""

    message: Posted
    button: str
    run_id: int
    step_id: int


def posted_cues(db: Database, fake: FakeChat, settings: Settings, count: int) -> list[Cue]:
    """`count` new runs parked at a cue, posted by one tick to `settings`' cue channel (Discord or Slack)."""
    platform = settings.cue_channel.partition(":")[0]
    before = {m.id for m in fake.messages(platform)}
    schedule_runs(db, CUE, count, label=f"p11-{platform}")
    runner = build_runner(settings, db, DatabaseClock(db))
    try:
        drain(runner)
    finally:
        runner.close()
    cues = [
        Cue(m, button, pressed.run_id, pressed.step_id)
        for m in fake.messages(platform)
        if m.id not in before
        for button in m.custom_ids
        if (pressed := parse(button)) is not None and pressed.control == Confirm.name
    ]
    if len(cues) != count:
        raise RuntimeError(f"P11: {len(cues)} of {count} cues were posted to {platform}")
    return cues


def _post(client: Client, path: str, headers: dict[str, str], body: bytes) -> tuple[float, dict]:
    """The request's seconds to its answer, and the answer (anything but a 200 stops the benchmark)."""
    started = time.perf_counter()
    answer = client.http.post(path, headers=headers, body=body)
    elapsed = time.perf_counter() - started
    if answer.status_code != 200:
        raise RuntimeError(f"P11: {path} answered {answer.status_code}: {answer.body[:300]!r}")
    return elapsed, json.loads(answer.body or b"{}")


def discord_press(client: Client, fake: FakeChat, cue: Cue) -> tuple[float, dict, str]:
    """A GM's signed press of the cue's Confirm: its seconds to the answer, the answer, its interaction token."""
    payload = fake.discord_interaction(cue.message, cue.button, roles=[GM_ROLE])
    return (*_post(client, DISCORD, *fake.discord_signed(payload)), payload["token"])


def confirmed_in_chat(client: Client, fake: FakeChat, cue: Cue) -> float:
    elapsed, answer, _ = discord_press(client, fake, cue)
    if answer.get("type") != UPDATE_MESSAGE or "Confirmed by" not in answer["data"]["content"]:
        raise RuntimeError(f"P11: a press was answered without its confirmation: {answer}")
    return elapsed


def confirmed_on_console(client: Client, cue: Cue) -> float:
    return _post(client, f"/runs/{cue.run_id}/steps/{cue.step_id}/confirm", CONSOLE_HEADERS, b'{"note": "lit"}')[0]


def confirmed_in_slack(client: Client, fake: FakeChat, cue: Cue) -> tuple[float, float]:
    """A Slack press: (seconds to its answer, seconds to its message edited through the response_url)."""
    payload = fake.slack_interaction(cue.message, cue.button, user=SLACK_GM)
    started = time.perf_counter()
    answered = _post(client, SLACK, *fake.slack_signed(payload))[0]
    deadline = time.monotonic() + FINISH_SECONDS
    while "Confirmed by" not in fake.message(cue.message.id).text:
        if time.monotonic() > deadline:
            raise RuntimeError(f"P11: a Slack press was not finished: {fake.message(cue.message.id).text!r}")
        time.sleep(0.001)
    return answered, time.perf_counter() - started


def statements_of(client: Client, fake: FakeChat, in_chat: Cue, on_console: Cue) -> tuple[int, int]:
    """The statements one chat press and one console confirm each send (recorded, COMMITs counted)."""
    counts = []
    for press in (lambda: confirmed_in_chat(client, fake, in_chat), lambda: confirmed_on_console(client, on_console)):
        recorder = StatementRecorder()
        with recorder.installed():
            press()
        counts.append(sum(len(unit.statements) + unit.transactional for unit in recorder.units))
    return counts[0], counts[1]


@dataclass
class Warm:
    """Seconds to each answer (Slack's: to its answer, and to its message edited), and the statements per press."""

    chat: list[float] = field(default_factory=list)
    console: list[float] = field(default_factory=list)
    slack_answered: list[float] = field(default_factory=list)
    slack_edited: list[float] = field(default_factory=list)
    chat_statements: int = 0
    console_statements: int = 0


def warm(db: Database, fake: FakeChat, settings: Settings, count: int) -> Warm:
    """`count` timed presses of each kind, interleaved (chat and console taking turns to go first), after
    WARM_UP of each untimed; then one of chat and console each with its statements recorded."""
    chat, console = (posted_cues(db, fake, settings, WARM_UP + count + 1) for _ in range(2))
    slack = posted_cues(db, fake, dataclasses.replace(settings, cue_channel=f"slack:{SLACK_CHANNEL}"), WARM_UP + count)
    timed = Warm()
    with runtime.override(settings=settings, database=db, clock=DatabaseClock(db)), Client(app) as client:
        for i, (in_chat, on_console, in_slack) in enumerate(zip(chat, console, slack, strict=False)):
            chat_first = i % 2 == 0
            if chat_first:
                timed.chat.append(confirmed_in_chat(client, fake, in_chat))
            timed.console.append(confirmed_on_console(client, on_console))
            if not chat_first:
                timed.chat.append(confirmed_in_chat(client, fake, in_chat))
            answered, edited = confirmed_in_slack(client, fake, in_slack)
            timed.slack_answered.append(answered)
            timed.slack_edited.append(edited)
        timed.chat_statements, timed.console_statements = statements_of(client, fake, chat[-1], console[-1])
    for seconds in (timed.chat, timed.console, timed.slack_answered, timed.slack_edited):
        del seconds[:WARM_UP]
    return timed


def deferred(db: Database, fake: FakeChat, settings: Settings, count: int) -> list[float]:
    """Seconds to the answer of `count` Discord presses made while the database says nothing, DEFERRED_BATCH at
    a time; each batch's presses finished (their messages edited through `@original`) once it answers again."""
    cues = posted_cues(db, fake, settings, count)
    answers = []
    with DatabaseDoor(db.params) as door:
        for start in range(0, count, DEFERRED_BATCH):
            door.stall(None)
            silent = dataclasses.replace(settings, db_url=door.url())
            # The database and its clock built anew by the app itself, through the door, as a new Lambda's are:
            # the connections are new ones, held silent (the last batch's, made while the door was open, would pass).
            with runtime.override(settings=silent, database=None, clock=None), Client(app) as client:
                tokens = []
                for cue in cues[start : start + DEFERRED_BATCH]:
                    elapsed, answer, token = discord_press(client, fake, cue)
                    if answer != {"type": DEFERRED_UPDATE}:
                        raise RuntimeError(f"P11: a press to a silent database was answered {answer}")
                    answers.append(elapsed)
                    tokens.append(token)
                door.open()
                finished(fake, tokens)
    return answers


def finished(fake: FakeChat, tokens: list[str]) -> None:
    """Wait until each deferred press (by its interaction token) has edited its message, saying it confirmed."""
    deadline = time.monotonic() + FINISH_SECONDS
    while len(edits := [r for t in tokens for r in fake.received("PATCH", f"/{t}/messages/@original")]) < len(tokens):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"P11: {len(tokens) - len(edits)} deferred presses were not finished {FINISH_SECONDS:g} s after the database answered again"
            )
        time.sleep(0.05)
    unconfirmed = [edit.json["content"] for edit in edits if "Confirmed by" not in edit.json["content"]]
    if unconfirmed:
        raise RuntimeError(f"P11: deferred presses finished without confirming: {unconfirmed}")


def run(sizes) -> list[Figure]:
    with scratch_database("p11") as db, FakeChat() as fake:
        settings = chat_settings(fake, hs_settings(db.params))
        timed = warm(db, fake, settings, sizes.chat_presses)
        held = deferred(db, fake, settings, sizes.deferred_presses)
    print(
        "\nP11 (ms, sorted):\n  "
        + "\n  ".join(
            distribution(name, seconds)
            for name, seconds in (
                ("Discord press -> answer, warm", timed.chat),
                ("console confirm -> answer, warm", timed.console),
                ("Slack press -> answer", timed.slack_answered),
                ("Slack press -> message edited", timed.slack_edited),
                ("Discord press -> answer, database silent", held),
            )
        )
    )
    ms = 1000
    return [
        Figure(
            "P11",
            "Discord press -> answer, warm, median (in-process)",
            median(timed.chat) * ms,
            "ms",
            baseline=median(timed.console) * ms,
            baseline_what="(console confirm)",
        ),
        Figure(
            "P11",
            "Discord press -> answer, warm, p99",
            percentile(timed.chat, 99) * ms,
            "ms",
            baseline=percentile(timed.console, 99) * ms,
            baseline_what="(console confirm)",
            target=at_most(P99_TARGET * ms),
        ),
        Figure(
            "P11",
            "statements per press (COMMITs counted)",
            timed.chat_statements,
            "",
            baseline=timed.console_statements,
            baseline_what="(console confirm)",
        ),
        Figure(
            "P11", "Slack press -> answer (empty), p99", percentile(timed.slack_answered, 99) * ms, "ms", target=at_most(P99_TARGET * ms)
        ),
        Figure("P11", "Slack press -> message edited, p99", percentile(timed.slack_edited, 99) * ms, "ms"),
        Figure(
            "P11",
            f"Discord press -> answer, database silent, p99 (waits {PRESS_ANSWER_SECONDS:g} s by design)",
            percentile(held, 99) * ms,
            "ms",
            target=at_most(DEFERRED_TARGET * ms),
        ),
        Figure("P11", "Discord press -> answer, database silent, max", max(held) * ms, "ms", target=at_most(DEFERRED_TARGET * ms)),
    ]
