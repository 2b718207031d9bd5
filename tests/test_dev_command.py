"""`make dev`'s engine: the seeded demo runs to its cue, a person confirms, it completes; the terminal says so in
words, with the token once and the real ids; a port in use is one line and nothing is written; the failures demo
fails, retries and waits as promised."""

import contextlib
import fcntl
import json
import os
import pty
import re
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from chalicelib.db import ConnectionParams, Database

pytestmark = pytest.mark.slow
# The demo's spawn and its cue, by their one names (the cue's has no name: its instruction, cut at a word).
SPAWN = r"Phase 1 · step \d+ \(world\.spawn\)"
CUE = r"Phase 1 · step \d+ \(Light the bonfire, then confirm this…\)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call(url, token, body=None):
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def _wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


class Dev:
    """`python -m devtools dev` on free ports and a database of its own, its terminal captured."""

    def __init__(self, db_params, *args, **env):
        p = db_params
        self.params = ConnectionParams(p.host, p.port, p.user, p.password, f"events_dev_{uuid.uuid4().hex[:8]}",
                                       p.unix_socket)
        self.api_port, self.bridge_port = _free_port(), _free_port()
        self.base = f"http://127.0.0.1:{self.api_port}"
        quiet = {name: value for name, value in os.environ.items() if name != "EVENTS_DEV_VERBOSE"}
        self.env = {**quiet, "EVENTS_DB_URL": self.params.url(), "EVENTS_DEV_API_PORT": str(self.api_port),
                    "GAME_BRIDGE_URL": f"http://127.0.0.1:{self.bridge_port}", "EVENT_TICK_SECONDS": "1", **env}
        self.args = args
        self.output: list[str] = []

    def start(self):
        self.process = subprocess.Popen([sys.executable, "-m", "devtools", "dev", *self.args], env=self.env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        # Drained by a thread so the terminal's lines can never fill the pipe and stall dev.
        threading.Thread(target=lambda: self.output.extend(iter(self.process.stdout.readline, "")), daemon=True).start()
        return self

    def token(self):
        found = _wait_for(lambda: next((re.search(r"TOKEN=(\S+)", line) for line in list(self.output)
                                        if line.startswith("  export API=")), None), 90, "the admin token")
        return found.group(1)

    def said(self, pattern, timeout=60):
        return _wait_for(lambda: next((m for line in list(self.output) if (m := re.search(pattern, line))), None),
                         timeout, f"a line matching {pattern!r}; the terminal said:\n{''.join(self.output)}")

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(20)
        self.drop()
        return self.process.returncode

    def database_exists(self):
        with Database(self.params).connect(database=False).cursor() as cursor:
            return bool(cursor.execute("SHOW DATABASES LIKE %s", (self.params.database,)))

    def drop(self):
        Database(self.params).connect(database=False).cursor().execute(f"DROP DATABASE IF EXISTS `{self.params.database}`")


def test_dev_runs_the_demo_event_and_the_terminal_says_so_in_words(db_params):
    dev = Dev(db_params).start()
    try:
        token = dev.token()
        run_id = int(dev.said(r"^run (\d+) of \"Harvest festival \(demo\)\"").group(1))
        assert dev.said(rf"curl -s -H \"Authorization: Bearer \$TOKEN\" \$API/runs/{run_id}$")
        for _ in range(5):  # what the console's polling does: none of it reaches the terminal
            _call(f"{dev.base}/runs?limit=1", token)
        assert dev.said(rf"^run {run_id} · phase 1 · {SPAWN} done · {CUE} parked: waiting for a game master$")
        hint = dev.said(rf"^  confirm Run {run_id} · {CUE} on the console, or: .* \$API/runs/{run_id}/steps/(\d+)/confirm$")
        cue_id = int(hint.group(1))  # the step's id only in the URL, beside its name
        # The demo bridge's spawn leaves its npc in the ledger, with the revert a cleanup sends: the run page's
        # "Left in the game world" reads these counts and this list.
        assert _call(f"{dev.base}/runs/{run_id}", token)["ledger"]["counts"] == {"live": 1}
        [npc] = _call(f"{dev.base}/runs/{run_id}/resources", token)["resources"]
        assert (npc["kind"], npc["revert"], npc["status"]) == ("npc", {"action": "world.despawn", "params": {"id": npc["id"]}}, "live")
        assert npc["id"].startswith(f"scarecrow-{run_id}-")
        with urllib.request.urlopen(f"{dev.base}/console/config.json", timeout=10) as answer:
            logins = {login["role"]: login["token"] for login in json.loads(answer.read())["dev_logins"]}
        assert set(logins) == {"admin", "moderator", "gm"}
        rebound = urllib.request.Request(f"{dev.base}/console/config.json", headers={"Host": f"rebind.example:{dev.api_port}"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(rebound, timeout=10)
        assert refused.value.code == 403, "a DNS-rebinding page on another name gets no login"
        assert _call(f"{dev.base}/console/session", logins["gm"])["roles"] == ["gm"]
        _call(f"{dev.base}/runs/{run_id}/pause", token, {"reason": "a break"})  # no tick follows a pause
        assert dev.said(rf"^run {run_id} · phase 1 · paused by dev-admin: a break$", 10)
        _call(f"{dev.base}/runs/{run_id}/resume", token, {})
        assert dev.said(rf"^run {run_id} · phase 1 · resumed by dev-admin$", 10)
        confirmed = _call(f"{dev.base}/runs/{run_id}/steps/{cue_id}/confirm", token, {"note": "bonfire lit"})
        assert confirmed["step"]["status"] == "done"
        assert dev.said(rf"^run {run_id} · .*{CUE} confirmed by dev-admin: bonfire lit")
        assert dev.said(rf"^run {run_id} · .*phase 2 contest")
        assert dev.said(rf"^run {run_id} · .*completed$", 30)
        assert _call(f"{dev.base}/runs/{run_id}", token)["run"]["health"] == "ok"

        # Cancel with cleanup, as the console's dialog offers it: the demo bridge despawns the npc.
        definition_id = _call(f"{dev.base}/runs/{run_id}", token)["run"]["definition_id"]
        again = _call(f"{dev.base}/definitions/{definition_id}/runs", token,
                      {"scheduled_for": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})["run"]["id"]
        assert dev.said(rf"^run {again} · .*{CUE} parked: waiting for a game master$", 60)
        assert _call(f"{dev.base}/runs/{again}/cleanup-plan", token)["counts"]["reverts"] == 1
        _call(f"{dev.base}/runs/{again}/cancel", token, {"reason": "storm", "cleanup": True})
        _wait_for(lambda: _call(f"{dev.base}/runs/{again}", token)["run"]["status"] == "cancelled", 60, "the cleanup")
        assert [r["status"] for r in _call(f"{dev.base}/runs/{again}/resources", token)["resources"]] == ["reverted"]
    finally:
        code = dev.stop()
    terminal = "".join(dev.output)
    assert code == 0, terminal
    assert terminal.count(token) == 1, "the token is printed once"
    assert not re.search(r'"(GET|POST) /', terminal), "no access log line"
    assert not re.search(r"^\{", terminal, re.M), "no JSON tick report"
    assert "Traceback" not in terminal


def test_verbose_shows_the_access_log_and_the_game_bridges_answers(db_params):
    dev = Dev(db_params, EVENTS_DEV_VERBOSE="1").start()
    try:
        token = dev.token()
        dev.said(r"^run (\d+) of \"Harvest festival \(demo\)\"")
        _call(f"{dev.base}/runs?limit=1", token)
        assert dev.said(r'"GET /runs\?limit=1 HTTP/1\.1" 200'), "the console's polls are in the access log"
        assert dev.said(r"^\[game bridge\] world\.spawn -> 200 ")
    finally:
        assert dev.stop() == 0, "".join(dev.output)


@pytest.mark.parametrize("taken, setting", [("api", "EVENTS_DEV_API_PORT"), ("bridge", "GAME_BRIDGE_URL")])
def test_a_port_in_use_is_one_line_naming_it_and_the_setting_and_nothing_is_written(db_params, taken, setting):
    dev = Dev(db_params)
    port = dev.api_port if taken == "api" else dev.bridge_port
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        done = subprocess.run([sys.executable, "-m", "devtools", "dev"], env=dev.env, capture_output=True, text=True,
                              timeout=60)
    who = "the API and the console" if taken == "api" else "the demo game bridge"
    moved = f"EVENTS_DEV_API_PORT={port + 1}" if taken == "api" else f"GAME_BRIDGE_URL=http://127.0.0.1:{port + 1}"
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == (f"port {port} is in use: {who} listens there under make dev;"
                           f" set {setting} to move it ({moved} make dev)\n")
    assert not dev.database_exists(), "nothing migrated, seeded or scheduled"


def test_the_failures_demo_fails_once_answers_503_twice_and_takes_8_seconds(db_params):
    dev = Dev(db_params, "--demo", "failures", EVENT_STEP_RETRY_SECONDS="1").start()
    try:
        token = dev.token()
        run_id = int(dev.said(r"^run (\d+) of ").group(1))
        assert dev.said(rf"^run {run_id} · phase 1 · {SPAWN} failed: HTTP 400: the square is full: "
                        r"no room to spawn the scarecrow · paused$")
        retry = dev.said(rf"press Retry on Run {run_id} · {SPAWN} on the console, or: .* \$API/runs/{run_id}/steps/(\d+)/retry$")
        spawn_id = int(retry.group(1))
        _call(f"{dev.base}/runs/{run_id}/steps/{spawn_id}/retry", token, {})
        assert dev.said(rf"{SPAWN} done · {CUE} parked")
        cue_id = int(dev.said(rf"^  confirm Run {run_id} · {CUE} on the console, or: .*/steps/(\d+)/confirm$").group(1))
        _call(f"{dev.base}/runs/{run_id}/steps/{cue_id}/confirm", token, {"note": "lit"})
        # the game's own reason beside its status
        assert dev.said(r"\(world\.give_item\) attempt 1 failed \(HTTP 503: the item service is restarting\): it will be retried")
        assert dev.said(r"\(world\.give_item\) attempt 2 failed \(HTTP 503: the item service is restarting\): it will be retried")
        dev.said(rf"^run {run_id} · .*completed$", 60)
        log = _call(f"{dev.base}/runs/{run_id}/log?limit=1000", token)["entries"]
    finally:
        assert dev.stop() == 0, "".join(dev.output)
    dispatches = [(e["detail"]["action"], e["detail"]["attempt"], e["detail"]["outcome"], e["detail"]["latency_ms"])
                  for e in log if e["kind"] == "step.dispatch" and e["detail"]["action"].startswith("world.")]
    assert [d[:3] for d in dispatches] == [
        ("world.spawn", 1, "failed"), ("world.spawn", 2, "done"),  # a person's Retry: the next attempt, never a lower one
        ("world.give_item", 1, "retry"), ("world.give_item", 2, "retry"), ("world.give_item", 3, "done"),
        ("world.fireworks", 1, "done"),
    ]
    assert dispatches[-1][3] >= 8000, "the fireworks take 8 s"


ROOT = Path(__file__).resolve().parents[1]


def _sh_blocks(doc: str, start: str | None = None, end: str | None = None) -> list[str]:
    """The sh blocks of `doc`, or of its section from the heading `start` to `end` (else its next ## heading)."""
    section = (ROOT / doc).read_text()
    if start is not None:
        section = section.split(start, 1)[1]
        section = section.split(end, 1)[0] if end else section.split("\n## ", 1)[0]
    return re.findall(r"^```sh\n(.*?)^```", section, re.S | re.M)


def _curls(blocks: list[str]) -> int:
    """How many curl commands the blocks hold (a command continued with a backslash is one)."""
    return sum(len(re.findall(r"^curl ", block, re.M)) for block in blocks)


def test_the_readme_and_definitions_examples_run_as_written_in_order_against_make_devs_stack(db_params):
    """Copy-paste runnable: every sh block of the README that holds a curl, in its order (the walk-through, then
    rehearsal's), then the definitions guide's examples, in one shell at the repository's root, each curl failing
    on an HTTP error, on `make dev`'s fresh database. Every curl the README's commands show runs."""
    readme = [block for block in _sh_blocks("README.md") if "curl " in block]
    blocks = [*readme, *_sh_blocks("docs/definitions.md", "## Examples")]
    assert (len(readme), _curls(readme)) == (3, 7), "the README's curls: the walk-through's five and rehearsal's two"
    dev = Dev(db_params).start()
    try:
        dev.token()
        assert dev.said(rf"^run 1 · phase 1 · {SPAWN} done · {CUE} parked"), "names as the README says"
        assert dev.said(r"\$API/runs/1/steps/4/confirm$"), "ids as the README says"
        script = "\n".join(["set -euo pipefail", "curl() { command curl --fail-with-body \"$@\"; echo; }",
                            *blocks]).replace("127.0.0.1:8000", f"127.0.0.1:{dev.api_port}")
        done = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300,
                              env={k: v for k, v in dev.env.items() if not k.startswith("EVENTS_JWT_")})
        assert done.returncode == 0, (done.stdout, done.stderr)
        answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        assert len(answers) == _curls(blocks) == 10, done.stdout
        assert answers[2]["step"]["status"] == "done", "the README's confirm took"
        assert answers[3] == {"definition": {"id": 2, "version": 1}, "warnings": []}
        assert answers[4]["run"]["status"] == "scheduled"
        assert {"steps", "phases", "shortest_seconds", "longest_seconds", "warnings"} <= set(answers[5]), "the timeline"
        assert (answers[6]["run"]["mode"], answers[6]["run"]["rehearsal"]["speed"]) == ("rehearsal", 60), "the dry run"
        assert answers[7]["definition"] == {"id": 2, "version": 2}
        [kept] = answers[7]["warnings"]  # the README's run, scheduled an hour ahead, plays version 1
        assert kept["code"] == "runs_keep_their_version" and f"run {answers[4]['run']['id']} at" in kept["message"], kept
        assert answers[9]["run"]["definition_version"] == 2
        dev.said(r"^run 1 · .*completed$", 30)
    finally:
        assert dev.stop() == 0, "".join(dev.output)


@pytest.mark.parametrize("change, code, line", [
    ({"EVENT_TICK_SECONDS": "0"}, 2, r"configuration error: EVENT_TICK_SECONDS must be from 1 to 60, got 0"),
    ({"EVENTS_DB_URL": "mysql://root@127.0.0.1:{closed}/events"}, 3,
     r"database unavailable: can't connect to the database at 127\.0\.0\.1:\d+ \(.*\)"),
    ({"args": ["--demo", "bogus"]}, 2, r"python -m devtools dev: argument --demo: invalid choice: 'bogus' .*"),
])
def test_a_start_up_failure_is_one_line_and_its_exit_code_and_leaves_no_listener(db_params, change, code, line):
    dev = Dev(db_params)
    args = change.pop("args", [])
    dev.env.update({k: v.format(closed=_free_port()) for k, v in change.items()})
    done = subprocess.run([sys.executable, "-m", "devtools", "dev", *args], env=dev.env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == code and done.stdout == "", done
    assert re.fullmatch(line + "\n", done.stderr), done.stderr
    for port in (dev.api_port, dev.bridge_port):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT, still refused beside a listener
            s.bind(("127.0.0.1", port))  # nothing left listening


def test_a_newcomer_runs_the_demo_against_the_node_kits_example_and_bridge_check_passes(db_params):
    """docs/game-bridge.md's path: the Node kit's example on loopback, `make dev DEMO=none` pointed at it, the demo
    event to completion with each action applied once, then `bridge-check` green against the same bridge."""
    from chalicelib.events import bridge_check
    from tests.support.kits import node_example

    key = "dev-bridge-secret"  # the dev stage's GAME_BRIDGE_SECRET
    with node_example(key) as bridge_url:
        dev = Dev(db_params, "--demo", "none", GAME_BRIDGE_URL=bridge_url).start()
        try:
            token = dev.token()
            assert dev.said(rf"your game bridge on {re.escape(bridge_url)} \(no demo bridge started\)")
            run_id = int(dev.said(r"^run (\d+) of \"Harvest festival \(demo\)\"").group(1))
            parked = dev.said(rf"^  confirm Run {run_id} · {CUE} on the console, or: .*/steps/(\d+)/confirm$")
            _call(f"{dev.base}/runs/{run_id}/steps/{int(parked.group(1))}/confirm", token, {"note": "bonfire lit"})
            assert dev.said(rf"^run {run_id} · .*completed$", 60)
            run = _call(f"{dev.base}/runs/{run_id}", token)
            sent = [s for s in run["steps"] if s["action_id"].startswith("world.")]
            assert [(s["action_id"], s["status"], s["attempts"]) for s in sent] == [
                ("world.spawn", "done", 1), ("world.give_item", "done", 1), ("world.fireworks", "done", 1)]
            resources = _call(f"{dev.base}/runs/{run_id}/resources", token)["resources"]
            assert [(r["kind"], r["status"]) for r in resources] == [("npc", "live")]  # the kit's spawn, revertable
        finally:
            assert dev.stop() == 0, "".join(dev.output)
        report = bridge_check.run(bridge_check.Options(bridge_url, key, slow_action="test.slow", slow_seconds=1.0))
    assert [c.name for c in report.cases if c.verdict != "PASS"] == []


def test_dev_with_a_fake_discord_posts_the_cue_there_and_its_page_confirms_it_through_the_signed_endpoint(db_params):
    """`make dev CHAT=discord`: the cue is a message of the loopback fake Discord with its buttons; pressing Confirm on
    the fake's page signs the press as Discord does and sends it to the dev API's interaction endpoint, which confirms
    the step (the run goes on) and answers with the message edited to name who pressed."""
    dev = Dev(db_params, "--chat", "discord").start()
    try:
        page = dev.said(r"^fake Discord: (http://127\.0\.0\.1:\d+)/  \(the cues arrive there").group(1)
        run_id = int(dev.said(r"^run (\d+) of \"Harvest festival \(demo\)\"").group(1))
        dev.said(rf"^run {run_id} · phase 1 · .* parked", 90)

        def cue_on_the_page():
            with urllib.request.urlopen(f"{page}/", timeout=10) as answer:
                text = answer.read().decode()
            return text if f"ev:{run_id}:" in text else None

        shown = _wait_for(cue_on_the_page, 30, "the cue's message")
        cue_id = int(re.search(rf"ev:{run_id}:(\d+):confirm", shown).group(1))
        assert "Light the bonfire" in shown and ">Confirm<" in shown and ">Skip<" in shown and ">I have it<" in shown
        message_id = re.search(r'name="message" value="(\d+)"', shown).group(1)
        form = f"message={message_id}&custom_id=ev:{run_id}:{cue_id}:confirm".encode()
        with urllib.request.urlopen(urllib.request.Request(f"{page}/press", data=form), timeout=10) as answer:
            after = answer.read().decode()  # the redirect back to the page, the message as the engine's answer left it
        assert "Confirmed by @mira at" in after and f"ev:{run_id}:{cue_id}:confirm" not in after
        assert dev.said(rf"^run {run_id} · .* confirmed by discord:4242")
        assert dev.said(rf"^run {run_id} · .*completed$", 60)
    finally:
        code = dev.stop()
    assert code == 0 and "Traceback" not in "".join(dev.output), "".join(dev.output)


def _make_in_a_terminal(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int, list[str]]:
    """`make dev` in a terminal of its own (a pty, its controlling terminal), as a person starts it: the process,
    the terminal's other end (what a person types goes there) and what the terminal shows, read as it comes. The
    dev loop's install stamp counts as made (`-o`): the test never installs into the venv."""
    stamp = subprocess.run(["make", "-s", "--eval", "loop-stamp: ; @echo $(LOOP)", "loop-stamp"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.strip()
    keyboard, terminal = pty.openpty()
    process = subprocess.Popen(["make", "-s", "-o", stamp, "dev"], cwd=ROOT, env=env,
                               stdin=terminal, stdout=terminal, stderr=terminal, start_new_session=True,
                               preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(terminal)
    shown: list[str] = []

    def read() -> None:
        with contextlib.suppress(OSError):  # EIO once the last process holding the terminal is gone
            while chunk := os.read(keyboard, 4096):
                shown.append(chunk.decode(errors="replace"))

    threading.Thread(target=read, daemon=True).start()
    return process, keyboard, shown


def test_ctrl_c_typed_in_make_devs_terminal_stops_everything_and_make_exits_0(db_params):
    """The README's promise, `make dev` exits 0 after Ctrl-C: typed into its terminal, Ctrl-C reaches the dev
    process alone (make re-raises a SIGINT it receives: `make dev` exited 130), which stops its API and bridge."""
    dev = Dev(db_params)
    process, keyboard, shown = _make_in_a_terminal(dev.env)
    try:
        _wait_for(lambda: "Ctrl-C stops everything" in "".join(shown), 120, "make dev to schedule the demo")
        os.write(keyboard, b"\x1a")  # Ctrl-Z first: ignored (a stopped dev under a running make would hang the terminal)
        os.write(keyboard, b"\x03")  # Ctrl-C, as the terminal's line discipline turns it into SIGINT
        code = process.wait(30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(20)
        os.close(keyboard)
        dev.drop()
    assert code == 0, "".join(shown)
    assert "Traceback" not in "".join(shown)
    for port in (dev.api_port, dev.bridge_port):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))  # nothing left listening


def test_sigint_stops_the_dev_process_with_exit_0(db_params):
    """The dev process itself, sent SIGINT (Ctrl-C outside make): exit 0, its listeners gone."""
    dev = Dev(db_params).start()
    try:
        dev.said(r"Ctrl-C stops everything", 120)
        dev.process.send_signal(signal.SIGINT)
        code = dev.process.wait(30)
    finally:
        if dev.process.poll() is None:
            dev.process.kill()
        dev.drop()
    assert code == 0, "".join(dev.output)
    assert "Traceback" not in "".join(dev.output)
