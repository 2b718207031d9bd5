"""Dry runs: a version really run for practice (its mode is `rehearsal`), started now and driven by the tick like
any run. (What a version would do, projected without running it, is `timeline.py`.)

The invariant: a dry run never reaches the live game or the live channels. Its row says it is one
(`Run.rehearsal`), and the tick picks its bridge (simulated, or the sandbox) and its channels (the
rehearsal channel, every post prefixed) from that row; its occurrence key is in a namespace no
schedule's key is in, so it is never an occurrence of the schedule's. A sandbox dry run is refused
(409) when no sandbox is configured, before anything is written.
"""

from __future__ import annotations

from datetime import datetime

from ..db import Database, Tx
from . import journal
from .document import grace_seconds_of
from .errors import Clash, NotFound
from .lifecycle import RehearsalBridge, RunStatus
from .model import Rehearsal, Run
from .store import definitions, log, runs

AUTO_CONFIRM_SECONDS = 10  # the default: long enough for a person watching to press confirm first


def start(db: Database, definition_id: int, rehearsal: Rehearsal, *, version: int | None, sandbox_configured: bool,
          actor: str, now: datetime) -> Run:
    """The dry run of `version` (default: the current one), scheduled for now, with its log row."""
    # guard: a-sandbox-dry-run-starts-with-no-sandbox
    if rehearsal.bridge is RehearsalBridge.SANDBOX and not sandbox_configured:
        raise Clash("no sandbox bridge is configured: set GAME_BRIDGE_SANDBOX_URL and GAME_BRIDGE_SANDBOX_SECRET"
                    " (or GAME_BRIDGE_SANDBOX_SECRET_ARN), or rehearse with the simulated bridge",
                    detail={"bridge": rehearsal.bridge.value})

    def work(tx: Tx) -> Run:
        definition = definitions.get(tx, definition_id)
        if definition is None:
            raise NotFound(f"no definition {definition_id}")
        number = definition.current_version if version is None else version
        found = definitions.get_version(tx, definition_id, number)
        if found is None:
            raise NotFound(f"definition {definition_id} has no version {number}")
        run = runs.insert_rehearsal(tx, definition_id=definition_id, definition_version=number,
                                    grace_seconds=grace_seconds_of(found.document), now=now, rehearsal=rehearsal)
        cause = f"dry run by {actor} at speed {rehearsal.speed}, bridge {rehearsal.bridge.value}"
        log.append(tx, journal.run_status(run.id, None, None, RunStatus.SCHEDULED, actor=actor, cause=cause,
                                          rehearsal=True), now)
        return run

    return db.transaction(work)
