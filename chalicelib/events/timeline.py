"""The projected timeline (the projection; `POST /definitions/{id}/rehearse` answers it): what a version will
do and how long it may take, from its document alone, before it runs in front of players. It reads the clock
and nothing else, and writes nothing. (A dry run, which really runs a version, is `dry_runs.py`.)

The walk is the runner's (`programme.programme_of`): the phases in order, then the ending, each phase's
steps one after another. Offsets count seconds from the run's start.

- Earliest: every person and the game answer at once. A module action takes 0 s, an announcement 0 s, a
  cue is confirmed at once; a `core.wait` of s holds the *next* step of its phase s seconds (a wait that
  ends its phase holds nothing: the runner holds only a next step); a manual phase is advanced, and a
  signal arrives, as its steps finish. A time limit that closes the phase (`on_timeout: advance`) ends it
  at the limit if its steps would take longer; `after` ends it at exactly its seconds.
- Latest: people and the game take as long as they may. A cue waits until its `timeout_seconds`, a phase
  until its own `timeout_seconds`; without one it is unbounded (null), and so is a limit that pauses the
  run (`on_timeout: pause`: the run then waits for a person). Failures and retries are not projected.

A cue's attention fields are read from its params (`core.cue`: `timeout_seconds` with `on_timeout`,
`remind_after_seconds`, `escalate_after_seconds`): a cue waits at most its timeout (unbounded when it then
pauses the run), and escalates after its own `escalate_after_seconds` or the deployment's
EVENT_ESCALATE_AFTER_SECONDS (0: never), as does a phase held for a person to advance (`runner/stalls.py`);
a phase held for a signal is escalated by nothing.

Branches (`branches`): for each cue or signal field an `only_if` reads, each answer it
may give with the phases and steps gated on it that then run and those skipped. The offsets and lengths
count every phase and step, whichever branch a run takes.

Warnings (`{"code", "message"}`): `overlap` (over the next 100 occurrences within 366 days, in the
schedule's time zone, the smallest gap between two is less than the shortest run), `overlap_possible`
(only the longest run, or an unbounded one, exceeds it), each naming the schedule's `overlap` policy and what
it does then, `unbounded_wait` (a signal or manual phase, or
a cue, with neither timeout nor escalation), `night_cue` (a cue whose earliest time falls between 00:00
and 06:00 local time on one of those occurrences, with no escalation) and `fast_reminder` (a cue that
reminds in under 60 s).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import islice, pairwise
from typing import Any

from .calendar import MAX_WINDOW
from .cron import DEFAULT_TIMEZONE, Schedule
from .lifecycle import ConditionKind, CueOnTimeout, OnDeadline, Overlap
from .model import OnlyIf, StepSpec
from .programme import PhaseLimit, PhasePlan, Programme, programme_of

OCCURRENCES_CHECKED = 100
NIGHT_ENDS_HOUR = 6
FAST_REMINDER_SECONDS = 60
# Runs and skips listed under branches in all: each answer lists every place gated on its input, so a document of
# thousands of gated steps naming thousands of values would list millions (a 6 MB answer is Lambda's limit).
MAX_BRANCH_PLACES = 5_000
_WAITS_FOR_PHASE = {ConditionKind.MANUAL: "person", ConditionKind.SIGNAL: "game", ConditionKind.AFTER: "time"}


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


@dataclass
class _Projection:
    steps: list[dict[str, Any]] = field(default_factory=list)
    phases: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    escalate_after_seconds: int = 0  # the deployment's EVENT_ESCALATE_AFTER_SECONDS (0: never)
    cues: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)  # (where, earliest offset, params)

    def warn(self, code: str, message: str) -> None:
        self.warnings.append({"code": code, "message": message})


def _label(plan: PhasePlan) -> str:
    return f"phase {plan.number} ({plan.name})"


def _step(projection: _Projection, plan: PhasePlan, seq: int, spec: StepSpec, offset: int) -> tuple[int, int | None]:
    """Record one step at its earliest `offset`; answer (the hold it puts on the next step, its own longest duration)."""
    params = spec.params
    says: str | None = None
    waits_for: str | None = None
    timeout: int | None = None
    hold = 0
    if spec.action_id == "core.announce":
        says = params.get("message")
    elif spec.action_id == "core.wait":
        waits_for, timeout, hold = "time", int(params["seconds"]), int(params["seconds"])
    elif spec.action_id == "core.cue":
        says, waits_for = params.get("instruction"), "person"
        timeout = params.get("timeout_seconds")
        projection.cues.append((f"{_label(plan)}, step {seq}", offset, params))
    else:
        waits_for = "game"  # the bridge's answer, inside the outbound deadline: counted as 0 s
    projection.steps.append({"phase": plan.number, "seq": seq, "action": spec.action_id, "says": says,
                             "earliest_offset_seconds": offset, "waits_for": waits_for, "timeout_seconds": timeout,
                             **_gate(spec.only_if)})
    if spec.action_id != "core.cue":
        return hold, 0
    # A cue waits until its timeout, then pauses or goes on.
    return hold, None if params.get("on_timeout") == CueOnTimeout.PAUSE else timeout


def _gate(only_if: OnlyIf | None) -> dict[str, Any]:
    """A gated phase's or step's `only_if`, as authored (nothing for one that always runs)."""
    return {} if only_if is None else {"only_if": only_if.public()}


def _longest(advance: ConditionKind, limit: PhaseLimit | None, steps_longest: int | None) -> int | None:
    """How long a phase may last at most; None: unbounded."""
    if advance is ConditionKind.AFTER and limit is not None:
        return limit.seconds
    if advance is ConditionKind.STEPS_DONE and steps_longest is not None and (limit is None or steps_longest <= limit.seconds):
        return steps_longest  # its steps are done by then, however a limit would act
    if limit is not None and limit.on_deadline is OnDeadline.CLOSE:
        return limit.seconds
    return None  # held, or paused at its limit, until a person or the game


def _phase(projection: _Projection, plan: PhasePlan, start: int, latest_start: int | None) -> tuple[int, int | None]:
    """Project one phase opening at `start` (earliest) and `latest_start`; answer its earliest and latest end."""
    cursor, hold = start, 0
    steps_longest: int | None = 0
    for seq, spec in enumerate(plan.specs, 1):
        cursor += hold
        steps_longest = _add(steps_longest, hold)
        hold, longest = _step(projection, plan, seq, spec, cursor)
        steps_longest = _add(steps_longest, longest)
    if plan.specs and plan.specs[-1].action_id == "core.wait" and hold:
        projection.warn("wait_ends_phase", f"{_label(plan)}, step {len(plan.specs)}: the core.wait of {hold} s ends its"
                                           " phase, so it holds nothing and the run goes on at once; put it before the"
                                           " step it should hold back")
    advance = plan.condition.kind
    limit = plan.limit
    if advance is ConditionKind.AFTER and limit is not None:
        end = start + limit.seconds
    elif limit is not None and limit.on_deadline is OnDeadline.CLOSE:
        end = min(cursor, start + limit.seconds)
    else:
        end = cursor
    longest_phase = _longest(advance, limit, steps_longest)
    if limit is None and (advance is ConditionKind.SIGNAL or (advance is ConditionKind.MANUAL and not projection.escalate_after_seconds)):
        waited = f"the signal {plan.signal}" if advance is ConditionKind.SIGNAL else "a person to advance it"
        escalation = "" if advance is ConditionKind.SIGNAL else " and no escalation (EVENT_ESCALATE_AFTER_SECONDS is 0)"
        projection.warn("unbounded_wait", f"{_label(plan)} waits for {waited} with no timeout_seconds{escalation}:"
                                          " the run may wait there for ever")
    latest_end = _add(latest_start, longest_phase)
    projection.phases.append({"number": plan.number, "name": plan.name, "kind": plan.kind.value, "advance": advance.value,
                              "waits_for": _WAITS_FOR_PHASE.get(advance),
                              "timeout_seconds": limit.seconds if limit and advance is not ConditionKind.AFTER else None,
                              "earliest_start_seconds": start, "earliest_end_seconds": end,
                              "latest_end_seconds": latest_end, **_gate(plan.only_if)})
    return end, latest_end


def _cue_warnings(projection: _Projection, occurrences: list[datetime], zone: str | None) -> None:
    from zoneinfo import ZoneInfo  # where a projection reads its schedule, not with the app

    for where, offset, params in projection.cues:
        escalates = params.get("escalate_after_seconds") is not None or projection.escalate_after_seconds > 0
        if params.get("timeout_seconds") is None and not escalates:
            projection.warn("unbounded_wait", f"{where}: the cue waits for a person with neither timeout_seconds nor an"
                                              " escalation (escalate_after_seconds, EVENT_ESCALATE_AFTER_SECONDS)")
        remind = params.get("remind_after_seconds")
        if isinstance(remind, int) and remind < FAST_REMINDER_SECONDS:
            projection.warn("fast_reminder", f"{where}: the cue reminds after {remind} s (under"
                                             f" {FAST_REMINDER_SECONDS} s): the channel will be flooded")
        if escalates or zone is None:
            continue
        for occurrence in occurrences:
            local = (occurrence + timedelta(seconds=offset)).replace(tzinfo=ZoneInfo("UTC")).astimezone(ZoneInfo(zone))
            if local.hour < NIGHT_ENDS_HOUR:
                projection.warn("night_cue", f"{where}: the cue comes at {local:%H:%M} {zone} on {local:%a} {local.day}"
                                             f" {local:%b} {local.year} with no escalation: nobody may be awake to"
                                             " confirm it")
                break


def _branches(projection: _Projection, programme: Programme) -> list[dict[str, Any]]:
    """What each answer runs and skips, per input an only_if reads (a cue, or a signal's field): the phases and
    steps gated on it, for every answer it may give (a cue's choices, the values the only_ifs name) and for
    none (a cue skipped or timed out; a signal that never came, or another value). Steps count from 1. Each
    answer lists every place gated on its input, so at most MAX_BRANCH_PLACES in all; the answers past them
    are left out, with a warning."""
    gated: dict[tuple[str, ...], list[tuple[OnlyIf, dict[str, Any]]]] = {}
    for plan in programme.phases:
        if plan.only_if is not None:
            gated.setdefault(_input(plan.only_if), []).append((plan.only_if, {"phase": plan.number, "seq": None}))
        for seq, spec in enumerate(plan.specs, 1):
            if spec.only_if is not None:
                gated.setdefault(_input(spec.only_if), []).append((spec.only_if, {"phase": plan.number, "seq": seq}))
    found, room, left_out = [], MAX_BRANCH_PLACES, 0
    for key, items in gated.items():
        offered = _offered(programme, key)
        answers = offered if offered is not None else [
            {"value": v, "label": OnlyIf.shown(v)} for v in OnlyIf.distinct(v for only_if, _ in items for v in only_if.among)]
        answers.append({"value": None, "label": "no answer" if key[0] == "cue" else "not sent, or another value"})
        reads = dict(zip(("cue",) if key[0] == "cue" else ("signal", "field"), key[1:], strict=True))
        listed = []
        for answer in answers:
            if len(items) > room:
                left_out += 1
                continue
            room -= len(items)
            listed.append({**answer, "runs": [where for only_if, where in items if only_if.admits(answer["value"])],
                           "skips": [where for only_if, where in items if not only_if.admits(answer["value"])]})
        if listed:
            found.append({"reads": reads, "answers": listed})
    if left_out:
        projection.warn("branches_not_listed", f"{left_out:,} answers are not listed under branches: each lists every"
                                               f" phase and step gated on what it answers, {MAX_BRANCH_PLACES:,} in all"
                                               " at most")
    return found


def _input(only_if: OnlyIf) -> tuple[str, ...]:
    return ("cue", str(only_if.choice)) if only_if.choice is not None else ("signal", str(only_if.signal), str(only_if.field))


def _offered(programme: Programme, key: tuple[str, ...]) -> list[dict[str, Any]] | None:
    """A cue's choices as {value, label}; None for a signal (its values are the only_ifs')."""
    place = programme.named(key[1]) if key[0] == "cue" else None
    spec = None if place is None else programme.spec(*place)
    if spec is None:
        return None
    return [{"value": c["value"], "label": c["label"]} for c in spec.params.get("choices") or ()]


_OVERLAP_DOES = {
    Overlap.ALLOW: "both run",
    Overlap.SKIP: "the later occurrence is skipped",
    Overlap.CANCEL_PREVIOUS: "the earlier run is cancelled",
    Overlap.QUEUE_ONE: "the later occurrence waits for the earlier run to end (one waits; more are skipped)",
}


def _overlap_warning(projection: _Projection, occurrences: list[datetime], shortest: int, longest: int | None,
                     policy: Overlap) -> None:
    if len(occurrences) < 2:
        return
    gap = min(int((b - a).total_seconds()) for a, b in pairwise(occurrences))
    then = f" (overlap: {policy.value}: {_OVERLAP_DOES[policy]})"
    if gap < shortest:
        projection.warn("overlap", f"occurrences come as little as {gap} s apart, and a run takes at least {shortest} s:"
                                   f" runs will overlap{then}")
    elif longest is None or longest > gap:
        projection.warn("overlap_possible", f"occurrences come as little as {gap} s apart, and a run may take"
                                            f" {'without limit' if longest is None else f'{longest} s'}: runs may overlap{then}")


def project(document: dict[str, Any], now: datetime, *, escalate_after_seconds: int) -> dict[str, Any]:
    """The projected timeline of a validated document (`document.validate`), its schedule read from `now`;
    `escalate_after_seconds`: the deployment's EVENT_ESCALATE_AFTER_SECONDS (0: nothing escalates by default)."""
    projection = _Projection(escalate_after_seconds=escalate_after_seconds)
    start: int = 0
    latest: int | None = 0
    programme = programme_of(document)
    for plan in programme.rows:
        start, latest = _phase(projection, plan, start, latest)
    authored = document.get("schedule")
    occurrences: list[datetime] = []
    zone = None
    if authored:
        zone = authored.get("timezone") or DEFAULT_TIMEZONE
        schedule = Schedule(authored["cron"], zone)
        occurrences = list(islice(schedule.between(now, now + MAX_WINDOW), OCCURRENCES_CHECKED))
    _cue_warnings(projection, occurrences, zone)
    _overlap_warning(projection, occurrences, start, latest, programme.overlap)
    branches = _branches(projection, programme)
    return {"steps": projection.steps, "phases": projection.phases, "shortest_seconds": start,
            "longest_seconds": latest, "warnings": projection.warnings, "branches": branches}
