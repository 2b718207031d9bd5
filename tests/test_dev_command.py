"""`make dev`'s engine: the seeded demo event runs to its cue, a person confirms, it completes."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

from chalicelib.db import ConnectionParams, Database


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url, token, body=None):
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


def test_dev_runs_the_demo_event_through_the_api_and_the_tick_loop(db_params):
    p = db_params
    params = ConnectionParams(p.host, p.port, p.user, p.password, f"events_dev_{uuid.uuid4().hex[:8]}", p.unix_socket)
    api_port, bridge_port = _free_port(), _free_port()
    env = {**os.environ, "EVENTS_DB_URL": params.url(), "EVENTS_DEV_API_PORT": str(api_port),
           "GAME_BRIDGE_URL": f"http://127.0.0.1:{bridge_port}", "EVENT_TICK_SECONDS": "1"}
    dev = subprocess.Popen([sys.executable, "-m", "devtools", "dev"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    output = []
    # Drained by a thread so the tick summaries can never fill the pipe and stall dev.
    threading.Thread(target=lambda: output.extend(iter(dev.stdout.readline, "")), daemon=True).start()
    try:
        token = _wait_for(lambda: next((line.split()[-1] for line in list(output) if "admin token" in line), None),
                          60, "the admin token")
        base = f"http://127.0.0.1:{api_port}"

        def parked_cue():
            try:
                runs = _get(f"{base}/runs?limit=1", token)["runs"]
                detail = _get(f"{base}/runs/{runs[0]['id']}", token)
            except OSError:
                return None  # the API is still starting
            return next(((detail["run"]["id"], s["id"]) for s in detail["steps"]
                         if s["action_id"] == "core.cue" and s["parked"]), None)

        run_id, cue_id = _wait_for(parked_cue, 60, "the demo run to park at its cue")
        assert any(f"console: {base}/console" in line for line in output), "make dev prints the console's URL"
        with urllib.request.urlopen(f"{base}/console/config.json", timeout=10) as answer:
            logins = {login["role"]: login["token"] for login in json.loads(answer.read())["dev_logins"]}
        assert set(logins) == {"admin", "moderator", "gm"}
        assert _get(f"{base}/console/session", logins["gm"])["roles"] == ["gm"]
        confirmed = _get(f"{base}/runs/{run_id}/steps/{cue_id}/confirm", token, {"note": "bonfire lit"})
        assert confirmed["step"]["status"] == "done"
        finished = _wait_for(lambda: (r := _get(f"{base}/runs/{run_id}", token)["run"])["status"] == "completed" and r,
                             30, "the demo run to complete")
        assert finished["health"] == "ok"
    finally:
        dev.send_signal(signal.SIGTERM)
        dev.wait(20)
        Database(params).connect(database=False).cursor().execute(f"DROP DATABASE IF EXISTS `{params.database}`")
    assert dev.returncode == 0, "".join(output)
