"""`python -m devtools dev` (`make dev`, or `python -m devtools.dev`): the whole engine on one machine, on a seeded demo event.

It migrates the database named by EVENTS_DB_URL, seeds a demo definition and a
run due in a few seconds, starts a demo game bridge on loopback (it checks each
request's signature and answers done), serves the API and the console with
`chalice local` (printing the console's URL; it opens nothing), and ticks in the
foreground until Ctrl-C. The console offers a one-click login with tokens minted
here for each role; only this command hands them to the API. The dev stage's settings come from
`.chalice/config.json`, so the API, the tick loop and the printed tokens agree.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
API_PORT = int(os.environ.get("EVENTS_DEV_API_PORT", "8000"))
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
            ],
        },
    ],
    "ending": [{"action": "core.announce", "params": {"message": "Thanks for coming!"}}],
}


def dev_stage_environment() -> dict[str, str]:
    config = json.loads((PROJECT / ".chalice" / "config.json").read_text())
    return {**config.get("environment_variables", {}), **config["stages"]["dev"].get("environment_variables", {})}


def with_dev_stage(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the dev stage's settings filling in what it does not set (a setting set empty stays empty)."""
    return {**dev_stage_environment(), **env}


class DemoBridge(BaseHTTPRequestHandler):
    """Answers every signed action with done; a bad signature gets 401."""

    secret = b""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        signed = f"{self.headers.get('X-Event-Timestamp', '')}.".encode() + body
        expected = "sha256=" + hmac.new(self.secret, signed, hashlib.sha256).hexdigest()
        good = hmac.compare_digest(expected, self.headers.get("X-Event-Signature", ""))
        answer = {"outcome": "done"} if good else {"reason": "bad signature"}
        payload = json.dumps(answer).encode()
        self.send_response(200 if good else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        print(f"[game bridge] {self.path} -> {'done' if good else 'bad signature'}", flush=True)

    def log_message(self, *args) -> None:  # the line above says enough
        pass


def start_demo_bridge(url: str, secret: str) -> ThreadingHTTPServer:
    host, port = url.split("//", 1)[1].split(":")
    handler = type("Bridge", (DemoBridge,), {"secret": secret.encode()})
    server = ThreadingHTTPServer((host, int(port)), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def seed_demo(db, now) -> tuple[int, int]:
    """The demo definition (created once) and a fresh run of it due in five seconds."""
    from chalicelib.events import authoring, occurrences

    existing = db.autocommit(
        lambda tx: tx.one("SELECT id FROM event_definitions WHERE name = %s ORDER BY id LIMIT 1", (DEMO_NAME,))
    )
    definition_id = existing["id"] if existing else authoring.create(db, DEMO_DOCUMENT, actor="dev", now=now).id
    run, _ = occurrences.schedule_run(db, definition_id, now + timedelta(seconds=5), actor="dev", now=now)
    return definition_id, run.id


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt  # a TERM stops dev as cleanly as Ctrl-C: the API server goes with it


def run_dev() -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    if not os.environ.get("EVENTS_DB_URL"):
        print("set EVENTS_DB_URL (make dev does it for you)", file=sys.stderr)
        return 2
    os.environ.update({k: v for k, v in dev_stage_environment().items() if k not in os.environ})

    from chalicelib import runtime
    from chalicelib.api.auth import ADMIN, ROLES
    from chalicelib.events.runner.invocation import process_runner, tick_forever
    from chalicelib.migrate import migrate

    from .tokens import mint

    runtime.reset()
    settings = runtime.settings()
    migrate(runtime.db_params(settings))
    db, clock = runtime.database(), runtime.clock()
    definition_id, run_id = seed_demo(db, clock.now())
    if not settings.game_bridge_url:
        print("the dev stage sets GAME_BRIDGE_URL; set it to where the demo bridge should listen", file=sys.stderr)
        return 2
    bridge = start_demo_bridge(settings.game_bridge_url, settings.game_bridge_secret or "")
    # The console's one-click development login: tokens minted here, handed to the dev API only.
    logins = {role: mint(settings, sub=f"dev-{role}", roles=[role], ttl_seconds=24 * 3600) for role in ROLES}
    api = subprocess.Popen(  # noqa: S603 — chalice from this venv, with fixed arguments, no shell
        [str(Path(sys.executable).with_name("chalice")), "local", "--stage", "dev", "--port", str(API_PORT), "--no-autoreload"],
        cwd=PROJECT,
        env={**os.environ, "EVENTS_CONSOLE_DEV_TOKENS": json.dumps(logins)},
    )
    token = logins[ADMIN]
    print(
        f"\nconsole: http://127.0.0.1:{API_PORT}/console  (one-click development login as admin, moderator or gm)\n"
        f"API on http://127.0.0.1:{API_PORT}  game bridge on {settings.game_bridge_url}"
        f"  demo definition {definition_id}, run {run_id} due in 5 s\n"
        f"admin token (1 day): {token}\n"
        f"  curl -s -H 'Authorization: Bearer {token}' http://127.0.0.1:{API_PORT}/runs/{run_id}\n"
        f"the run parks at the bonfire cue; confirm it with:\n"
        f"  curl -s -X POST -H 'Authorization: Bearer {token}' -H 'Content-Type: application/json'"
        f" -d '{{\"note\": \"lit\"}}' http://127.0.0.1:{API_PORT}/runs/{run_id}/steps/<step_id>/confirm\n"
        "ticking whenever a run wakes; Ctrl-C stops everything\n",
        flush=True,
    )
    try:
        tick_forever(process_runner(), settings.tick_seconds, lambda report: print(json.dumps(report.summary()), flush=True))
    finally:
        api.terminate()
        api.wait(10)
        bridge.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(run_dev())
