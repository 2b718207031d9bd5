"""A wait told in one line of words: what a run needs and from whom, as the inbox's rows (and a chat) tell it.

Invariant: the line is a function of what `waiting.py` derived and of the rows it came from (the parked step,
the step a paused run failed at, the phase held), never of the clock: how long ago and until when are the
wait's `since` and `until`, which a reader renders in the reader's own time, and a fired escalation is the
wait's `escalated` ({channel, attempt, of, at}). A step is named as everywhere (`Step.named`), and a person as
everywhere (`person`): a chat identity ("discord:4242") by the name and platform its `chat.pressed` row gives
("Mira (Discord)"), the one way the API's answers (`waiting.acknowledged_by_named`, `lapsed_by_named`, the
run log's `people`) and these lines say who has a cue.

- a cue: "Waiting for a game master at Run 6 · Phase 1 · step 4 (Light the bonfire); gm-gus has it"
  (or "nobody has it yet", or "gm-gus's hold lapsed: nobody has it"); a cleanup's by-hand revert says what it
  undoes ("… to revert npc crow-1 by hand: Shoo it; …");
- a decision: "Phase 1 · step 3 (world.spawn) waits for a decision: the game may or may not have applied it";
- a pause: "Paused by mod-mia: “boss bugged”"; the engine's, at a failed step: "Phase 1 · step 3 (world.spawn)
  failed: HTTP 400 …; Retry is what it needs"; the engine's otherwise: "Stopped: <its cause>";
- a held phase: "Phase 2 (contest) is done; it ends when someone advances it";
- a signal: "Phase 2 (contest) waits for the game's signal boss_down".
"""

from __future__ import annotations

from typing import Any

from .lifecycle import WaitingFor
from .model import LogEntry, Phase, Step

PLATFORMS = {"discord": "Discord", "slack": "Slack"}


def is_chat(actor: str) -> bool:
    """Whether `actor` is a chat identity (`discord:<user id>`, `slack:<user id>`), which `person` names."""
    platform, _, user = actor.partition(":")
    return platform in PLATFORMS and bool(user)


def person(actor: str, pressed: LogEntry | None) -> str:
    """`actor` as a person reads them: a chat identity by the name and platform of `pressed` (the run's newest
    `chat.pressed` row, or that identity's newest) when that row is theirs, "Mira (Discord)", else by its
    platform, "Discord user 4242"; anyone else (a console sign-in) as the log names them, "gm-gus"."""
    if not is_chat(actor):
        return actor
    platform, _, user = actor.partition(":")
    name = (pressed.detail or {}).get("name") if pressed is not None and pressed.actor == actor else None
    return f"{name} ({PLATFORMS[platform]})" if name else f"{PLATFORMS[platform]} user {user}"


def name_holders(wait: dict[str, Any] | None, pressed: LogEntry | None) -> None:
    """Adds to a cue's `wait` who has it (or whose hold lapsed) as a person reads them, beside the ids the
    controls compare: `acknowledged_by_named`, `lapsed_by_named` (`pressed`: the run's newest chat.pressed row)."""
    for field in ("acknowledged_by", "lapsed_by"):
        if wait is not None and wait.get(field):
            wait[f"{field}_named"] = person(wait[field], pressed)


def phase_named(number: int, phase: Phase | None) -> str:
    """"Phase 2 (contest)", or "Phase 2" for a phase without a name."""
    return f"Phase {number} ({phase.name})" if phase is not None and phase.name else f"Phase {number}"


def _holder(wait: dict[str, Any]) -> str:
    if wait.get("acknowledged_by"):
        return f"{wait.get('acknowledged_by_named') or wait['acknowledged_by']} has it"
    if wait.get("lapsed_by"):
        return f"{wait.get('lapsed_by_named') or wait['lapsed_by']}'s hold lapsed: nobody has it"
    return "nobody has it yet"


def story(wait: dict[str, Any], head: Step | None, failed: Step | None, phase: Phase | None) -> str:
    """The line of `wait` (what `waiting.waiting` answered): `head` the parked step it waits on (a cue or a
    decision), `failed` the step a paused run is stopped at (None: none failed), `phase` the held phase's row."""
    kind = WaitingFor(wait["for"])
    if kind is WaitingFor.RESUME:
        if failed is not None:
            return f"{failed.named} failed: {failed.last_error or 'no reason given'}; Retry is what it needs"
        if wait.get("paused_by"):
            reason = wait.get("reason")
            return f"Paused by {wait['paused_by']}" + (f": “{reason}”" if reason else ", no reason given")
        return f"Stopped: {wait.get('reason') or 'no reason given'}"
    if kind is WaitingFor.CUE and head is not None:
        words = head.params.get("instruction") or head.action_id
        resource = wait.get("resource")
        if resource:
            return f"Waiting for a game master to revert {resource['kind']} {resource['id']} by hand: {words}; {_holder(wait)}"
        # A step without an authored name is named by its instruction (cut, if long): said once, in the name.
        beyond = f": {words}" if head.name and not head.named.endswith(f"({words})") else ""
        return f"Waiting for a game master at {head.named}{beyond}; {_holder(wait)}"
    if kind is WaitingFor.DECISION and head is not None:
        return f"{head.named} waits for a decision: the game may or may not have applied it"
    named = phase_named(wait.get("phase") or 0, phase)
    if kind is WaitingFor.SIGNAL:
        return f"{named} waits for the game's signal {wait.get('signal')}"
    return f"{named} is done; it ends when someone advances it"
