"""`python -m devtools dev` (`make dev`): the whole engine on one machine, on a seeded demo event.

Start-up is ordered so that a failure leaves nothing behind: the settings are
checked, then the demo game bridge takes its port and `chalice local` (the API
and the console) takes its own and answers; only then is the database migrated
and the demo run scheduled. Each failure a newcomer can cause is one line and
an exit code: 2 a setting missing or out of range, 3 the database cannot be
reached, 4 a port in use (named, with the setting that moves it) or an API that
did not start; 0 after Ctrl-C (under `make dev` too: `own_the_terminal`).

The terminal stays readable: the token once, `curl` lines with the real ids,
one line per run each tick moved (`narrate`), a person's control no tick
follows (a pause, a cancel) within a second, the notices the `log` channel
posts, and nothing of the access log of the console's polling unless
EVENTS_DEV_VERBOSE=1. The console offers a one-click login with tokens minted
here for each role; only this command hands them to the API. The dev stage's
settings come from `.chalice/config.json`, so the API, the tick loop and the
printed tokens agree.

`--demo none` starts no demo bridge: the game bridge at GAME_BRIDGE_URL is your
own (a bridge kit's example, docs/game-bridge.md), signing with the dev stage's
GAME_BRIDGE_SECRET. `--demo failures` makes the demo bridge go wrong on purpose, once per step:
`world.spawn` fails once (the run pauses until someone presses Retry),
`world.give_item` answers 503 twice (retried after a backoff), and
`world.fireworks` takes 8 s.

`--chat discord` (`make dev CHAT=discord`) starts a loopback fake Discord (devtools/kit/fake_chat.py) and
points CUE_CHANNEL and ESCALATION_CHANNEL at it: the cue arrives there as a message with its buttons, and
its page (the URL is printed) presses one as a game master of the fake server would — signed, sent to the
dev API's real /integrations/discord/interactions, the message edited with the answer ("Confirmed by …").

The demo bridge is also the worked example of the bridge contract's status endpoint
and attempt fence (docs/contract.md, "The game bridge"): the dev stage runs with
GAME_BRIDGE_STATUS=on, so a step in doubt is asked about before it is re-sent.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from .demo_bridge import DemoScript, listen_demo_bridge, say_port_in_use
from .output import say, verbose

PROJECT = Path(__file__).resolve().parents[1]
EXIT_STOPPED, EXIT_SETTING, EXIT_DATABASE, EXIT_LISTENER = 0, 2, 3, 4
DEMOS = ("calm", "failures", "none")  # none: no demo bridge; the game bridge at GAME_BRIDGE_URL is your own
CHATS = ("none", "discord")  # discord: the cues to a loopback fake Discord whose page presses their buttons
FAKE_CHANNEL, FAKE_GM_ROLE, FAKE_GM = "100000000000000001", "910000000000000001", ("4242", "mira")
API_READY_SECONDS = 60
PEOPLE_POLL_SECONDS = 1.0  # how soon a person's control no tick follows (a pause, a cancel) reaches the terminal
DEMO_NAME = "Harvest festival (demo)"
DEMO_DOCUMENT: dict[str, Any] = {
    "name": DEMO_NAME,
    "grace_seconds": 300,
    "phases": [
        {
            "name": "opening",
            "steps": [
                {"action": "core.announce", "params": {"message": "The harvest festival begins in the square!"}},
                {"action": "core.wait", "params": {"seconds": 10}},
                {"action": "world.spawn", "params": {"npc": "scarecrow", "at": "square"}, "on_failure": "pause"},
                {"action": "core.cue", "params": {"instruction": "Light the bonfire, then confirm this step"}},
            ],
        },
        {
            "name": "contest",
            "steps": [
                {"action": "core.announce", "params": {"message": "The pumpkin contest is open"}},
                {"action": "world.give_item", "params": {"item": "pumpkin_seed", "to": "everyone"}},
                {"action": "world.fireworks", "params": {"show": "harvest"}},
            ],
        },
    ],
    "ending": [{"action": "core.announce", "params": {"message": "Thanks for coming!"}}],
}
# What `--demo failures` does to each module action, counted per idempotency key (so per step).
FAILURES_RETRY_SECONDS = "10"  # the backoff between the 503s, unless EVENT_STEP_RETRY_SECONDS is set
ACCESS_LOG = re.compile(r'^\S+ - - \[[^\]]*\] "')  # http.server's access log line, as chalice local prints it
CHALICE_CHATTER = ("Serving on ", "Aborted!", "Restarting local dev server")


def dev_stage_environment() -> dict[str, str]:
    config = json.loads((PROJECT / ".chalice" / "config.json").read_text())
    return {**config.get("environment_variables", {}), **config["stages"]["dev"].get("environment_variables", {})}


def with_dev_stage(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the dev stage's settings filling in what it does not set (a setting set empty stays empty)."""
    return {**dev_stage_environment(), **env}


# ── the API and console (chalice local) ────────────────────────────────────
def port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server binds: TIME_WAIT is no obstacle
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def relay(stream: Any, keep: Callable[[str], bool]) -> None:
    """Pass chalice local's output through, less its access log and start-up chatter (unless verbose)."""
    for line in iter(stream.readline, ""):
        if verbose() or keep(line):
            sys.stdout.write(line)
            sys.stdout.flush()


def quiet(line: str) -> bool:
    return bool(line.strip()) and not (ACCESS_LOG.match(line) or line.startswith(CHALICE_CHATTER))


def start_api(port: int, logins: dict[str, str]) -> subprocess.Popen[str] | None:
    """`chalice local` on `port`, once it answers; None (and one line said) when it cannot start."""
    api = subprocess.Popen(  # noqa: S603 — our own venv's chalice, with fixed arguments
        [str(Path(sys.executable).with_name("chalice")), "local", "--stage", "dev", "--port", str(port), "--no-autoreload"],
        cwd=PROJECT, env={**os.environ, "EVENTS_CONSOLE_DEV_TOKENS": json.dumps(logins), "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    said: deque[str] = deque(maxlen=20)
    def keep(line: str) -> bool:
        said.append(line)
        return quiet(line)

    threading.Thread(target=relay, args=(api.stdout, keep), daemon=True).start()
    deadline = time.monotonic() + API_READY_SECONDS
    while time.monotonic() < deadline and api.poll() is None and not answers(port):
        time.sleep(0.1)
    if api.poll() is None and answers(port):
        return api
    stop(api)
    last = next((line.strip() for line in reversed(said) if line.strip()), "no output")
    print(f"the API did not start on port {port}: {last}", file=sys.stderr, flush=True)
    return None


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ── the demo event ─────────────────────────────────────────────────────────
def seed_demo(db: Any, now: Any) -> tuple[int, int]:
    """The demo definition (created once, and versioned when this file's document changes) and a fresh run of it
    due in five seconds."""
    from chalicelib.events import authoring, occurrences
    from chalicelib.events.document import validate
    from chalicelib.events.store import definitions

    def current_document(tx: Any) -> tuple[int, Any] | None:
        row = tx.one("SELECT id FROM event_definitions WHERE name = %s ORDER BY id LIMIT 1", (DEMO_NAME,))
        if row is None:
            return None
        definition = definitions.get(tx, row["id"])
        version = definition and definitions.get_version(tx, definition.id, definition.current_version)
        return row["id"], version.document if version else None

    existing = db.autocommit(current_document)
    if existing is None:
        definition_id = authoring.create(db, DEMO_DOCUMENT, actor="dev", now=now).definition.id
    else:
        definition_id = existing[0]
        if existing[1] != validate(DEMO_DOCUMENT):  # an older demo: its next version is this one
            authoring.add_version(db, definition_id, DEMO_DOCUMENT, actor="dev", now=now)
    run, _ = occurrences.schedule_run(db, definition_id, now + timedelta(seconds=5), actor="dev", now=now)
    return definition_id, run.id


class OneLine(logging.Formatter):
    """A notice the `log` channel posts (a cue is three lines) as one indented line."""

    def format(self, record: logging.LogRecord) -> str:
        return "  " + " · ".join(part for part in super().format(record).splitlines() if part.strip())


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # a TERM stops dev as cleanly as Ctrl-C: the API server goes with it


def fake_discord_environment(fake: Any) -> dict[str, str]:
    """The settings that point the engine (this process and the API's) at the fake Discord `fake`."""
    from devtools.kit.fake_chat import GUILD_ID

    channel = f"discord:{FAKE_CHANNEL}"
    return {"CUE_CHANNEL": channel, "ESCALATION_CHANNEL": channel, "DISCORD_API_URL": fake.discord_url,
            "DISCORD_BOT_TOKEN": fake.token, "DISCORD_PUBLIC_KEY": fake.public_key, "DISCORD_GUILD_ID": GUILD_ID,
            "DISCORD_ROLES": f"{FAKE_GM_ROLE}=gm"}


def own_the_terminal() -> Callable[[], None]:
    """Make Ctrl-C this process's alone, as `make dev` promises it exits 0 after one: make re-raises a SIGINT it
    receives itself (so `make dev` would exit 130 whatever this process does), and the terminal sends Ctrl-C to
    its foreground process group, make's. Started in that group (under make, with a terminal), this process
    takes a group of its own (the API server it starts joins it) and makes it the terminal's foreground: Ctrl-C
    reaches only it, it stops cleanly and exits 0, and so does make. Ctrl-Z is ignored here: it would stop this
    group while make, which the shell waits on, runs on, and the terminal would hang. Answers how to hand the
    terminal back."""
    try:
        terminal = sys.stdin.fileno()
        if not os.isatty(terminal) or os.getpgrp() == os.getpid() or os.tcgetpgrp(terminal) != os.getpgrp():
            return lambda: None  # no terminal, a group of its own already (a shell's job), or not in the foreground
    except (OSError, ValueError):
        return lambda: None
    before = os.getpgrp()
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # a group not in the foreground may set the terminal's
    signal.signal(signal.SIGTSTP, signal.SIG_IGN)  # the API server started later inherits it
    os.setpgid(0, 0)
    os.tcsetpgrp(terminal, os.getpgrp())

    def give_back() -> None:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(terminal, before)

    return give_back


def run_dev(demo: str = "calm", chat: str = "none") -> int:
    give_back = own_the_terminal()
    try:
        return _run_dev(demo, chat)
    finally:
        give_back()


def _run_dev(demo: str, chat: str) -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    if not os.environ.get("EVENTS_DB_URL"):
        print("set EVENTS_DB_URL (make dev does it for you)", file=sys.stderr)
        return EXIT_SETTING
    if demo == "failures":
        os.environ.setdefault("EVENT_STEP_RETRY_SECONDS", FAILURES_RETRY_SECONDS)
    fake = None
    if chat == "discord":
        from devtools.kit.fake_chat import FakeChat

        fake = FakeChat()
        os.environ.update(fake_discord_environment(fake))
    os.environ.update({k: v for k, v in dev_stage_environment().items() if k not in os.environ})
    api_port = int(os.environ.get("EVENTS_DEV_API_PORT") or 8000)
    notices = logging.StreamHandler(sys.stdout)
    notices.setFormatter(OneLine("%(message)s"))
    logging.getLogger("chalicelib").addHandler(notices)

    from chalicelib import runtime
    from chalicelib.api.auth import ADMIN, ROLES
    from chalicelib.events.runner.command import tick_forever
    from chalicelib.events.runner.compose import process_runner

    from .tokens import mint

    runtime.reset()
    settings = runtime.settings()  # a bad setting stops here, in one line (exit 2)
    if not settings.game_bridge_url:
        print("the dev stage sets GAME_BRIDGE_URL; set it to where the demo game bridge should listen", file=sys.stderr)
        return EXIT_SETTING
    # The console's one-click development login: tokens minted here, handed to the dev API only.
    lasting = min(24 * 3600, settings.token_max_lifetime_seconds)  # a day, unless the API allows less
    logins = {role: mint(settings, sub=f"dev-{role}", roles=[role], ttl_seconds=lasting) for role in ROLES}

    # Every listener up before anything is written: a second `make dev` must not schedule a stray run.
    bridge = None
    if demo != "none":
        bridge = listen_demo_bridge(settings.game_bridge_url, settings.game_bridge_secret or "", DemoScript(demo))
        if bridge is None:
            return EXIT_LISTENER
    api = None
    try:
        if not port_free(api_port):
            say_port_in_use(api_port, "the API and the console", "EVENTS_DEV_API_PORT", f"EVENTS_DEV_API_PORT={api_port + 1}")
            return EXIT_LISTENER
        api = start_api(api_port, logins)
        if api is None:
            return EXIT_LISTENER
        if fake is not None:
            fake.serve_page(f"http://127.0.0.1:{api_port}", user=FAKE_GM[0], name=FAKE_GM[1], roles=[FAKE_GM_ROLE])
            say(f"fake Discord: {fake.url}/  (the cues arrive there; press Confirm as @{FAKE_GM[1]}, a gm)")
        return _demo(demo, api_port, settings, logins[ADMIN], runtime, process_runner, tick_forever)
    except KeyboardInterrupt:  # Ctrl-C before the ticks began
        return EXIT_STOPPED
    finally:
        if api is not None:
            stop(api)
        if bridge is not None:
            bridge.shutdown()
        if fake is not None:
            fake.close()


def _demo(demo: str, api_port: int, settings: Any, token: str, runtime: Any, process_runner: Any, tick_forever: Any) -> int:
    from chalicelib.events.journal import RUNNER
    from chalicelib.events.model import LogEntry
    from chalicelib.events.store.log import COLUMNS
    from chalicelib.migrate import migrate

    from .narrate import lines, named_steps

    migrate(runtime.db_params(settings))
    db, clock = runtime.database(), runtime.clock()
    definition_id, run_id = seed_demo(db, clock.now())
    last_id = db.autocommit(lambda tx: tx.scalar("SELECT COALESCE(MAX(id), 0) FROM event_run_log"))
    api = f"http://127.0.0.1:{api_port}"
    bridge = {"failures": "the demo game bridge on {} (fails on purpose: see the README)",
              "none": "your game bridge on {} (no demo bridge started)"}.get(demo, "the demo game bridge on {} (answers done)")
    say(f"\nmake dev: the API and the console on {api}, {bridge.format(settings.game_bridge_url)}")
    say(f"console: {api}/console  (one click signs in as admin, moderator or gm)")
    say("in another terminal, for curl (an admin token for 1 day):")
    say(f"  export API={api} TOKEN={token}")
    say(f"  curl -s -H \"Authorization: Bearer $TOKEN\" $API/runs/{run_id}")
    say(f"run {run_id} of \"{DEMO_NAME}\" (definition {definition_id}) starts in 5 s; Ctrl-C stops everything\n")

    told = threading.Lock()

    def tell(only_people: bool = False) -> None:
        """Say the log rows since the last told; `only_people`: only if a person wrote them all (a control no tick
        follows, such as a pause), else they wait for the tick's report, told together."""
        nonlocal last_id
        with told:
            rows = db.autocommit(lambda tx: tx.all(
                f"SELECT {COLUMNS} FROM event_run_log WHERE id > %s ORDER BY id LIMIT 1000",  # noqa: S608 — COLUMNS is a constant
                (last_id,),
            ))
            if not rows or (only_people and any(row["actor"] == RUNNER for row in rows)):
                return
            last_id = rows[-1]["id"]
            names = db.autocommit(lambda tx: named_steps(tx, {row["run_id"] for row in rows}))
            for line in lines((LogEntry.from_row(row) for row in rows), names):
                say(line)

    stopping = threading.Event()

    def people() -> None:
        while not stopping.wait(PEOPLE_POLL_SECONDS):
            try:
                tell(only_people=True)
            except Exception as error:  # the narration must never stop the engine: the tick's own goes on
                say(f"  (the terminal's narration missed a read: {error})")

    threading.Thread(target=people, daemon=True).start()
    try:
        tick_forever(process_runner(), settings.tick_seconds, lambda _report: tell())
    finally:
        stopping.set()
    return EXIT_STOPPED


if __name__ == "__main__":
    sys.exit(run_dev())
