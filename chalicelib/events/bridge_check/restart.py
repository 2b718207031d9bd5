"""The bridge-check's restart half: `--record FILE` writes the keys a run delivered done, `--replay FILE` sends
them again after the operator restarted the game.

Invariant: a replay sends each recorded key at an attempt above any the first
run named (a fence a status request raised survives a restart too) and passes
only when every key is answered its recorded answer, so a bridge that forgot
its keys across the restart fails.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import BridgeCaseFailed as Failed
from .checker import KEY_HINT, Checker, done_in, shown

RESTART_NOTE = ("persistence across a restart was not checked (bridge-check cannot restart the game): run with --record"
                " FILE, restart the game, then run with --replay FILE")
REPLAYED = "keys of the first run answered as recorded"


def recording(check: Checker) -> dict[str, Any]:
    """What --record writes: each key delivered done, its action, params and answer, and the attempt a replay
    sends (above any the run named: a fence raised by a status request survives a restart too)."""
    entries = [dict(entry, attempt=check.attempts.get(key, 1) + 1) for key, entry in check.recorded.items()]
    return {"url": check.options.url, "written": check.now().isoformat(timespec="seconds"), "keys": entries}


def read_recording(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, ValueError) as error:
        raise ValueError(f"--replay {path}: not a file --record wrote ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list) or not data["keys"]:
        raise ValueError(f"--replay {path}: no keys recorded in it (was the first run's --record passing?)")
    return data


def case_replay(check: Checker) -> str:
    """The keys of the first run (--record), sent again after the game restarted: each answered its recorded
    answer, so a re-send the engine makes after a restart is not applied again."""
    recorded = read_recording(check.options.replay or "")["keys"]
    forgot = []
    for entry in recorded:
        action, key, attempt = entry["action"], entry["key"], entry["attempt"]
        if check.asks_status and (said := check.status_of(action, key, attempt)) != "applied":
            forgot.append(f"{key} ({action}): the status endpoint said {said!r}, but the first run applied it")
            continue
        answer = check.deliver(action, key, attempt, params=entry["params"])
        if answer.status == 401:
            raise Failed(f"expected the recorded answers, got {shown(answer)}: {KEY_HINT}")
        try:
            again = done_in(answer)
        except Failed:
            again = None
        if again != entry["answer"]:
            forgot.append(f"{key} ({action}) answered {shown(answer)}, recorded {json.dumps(entry['answer'])[:200]}")
    if forgot:
        raise Failed(f"{len(forgot)} of {len(recorded)} keys of the first run were not answered as before: {forgot[0]}:"
                     " if the game restarted in between, it forgot its keys, and the engine's re-send of a step in"
                     " doubt would be applied again; give the bridge a store that keeps them (not the kits'"
                     " MemoryStore), with the world change, on disk")
    return f"{len(recorded)} keys of the first run each answered their recorded answer" + (
        ", status applied first" if check.asks_status else "")
