"""`python -m chalicelib bridge-check <url>`: a game team's bridge driven through the protocol, case by case.

Invariant: the check judges the bridge exactly as the engine would — every
request is sent by the engine's own client (`outbound`: one overall deadline,
the 1 MB answer cap), every answer classified by the engine's own rules
(`adapters.bridge.classify`, `read_status`, `ledger.listed`) — so a bridge
that passes is one the engine runs against, and a failure says what was
expected and what came back. It sends only the action the team names
(`--action`, harmless: the kits' `test.noop`), the one that can be slowed
(`--slow-action`) and the one that leaves a resource (`--spawn-action`) with its
revert, each under keys of its own (`bridge-check-…`). It sees answers, never
the game's world: "applied once" is judged by a repeat's answer being the
first's, passed only for an action that answers two fresh keys differently
(the kits' test actions answer a receipt unique to each application, so a
bridge that applies again shows; one answering every application alike
fails). It cannot restart the game: a run says
so (a NOTE line), and `--record FILE` then `--replay FILE` (after the operator
restarts the game) checks the keys survived, each asked about (applied) and
answered its recorded answer again.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import BridgeCaseFailed as Failed
from ..errors import BridgeUnreachable
from .cases import Listed, cases
from .checker import CLOCK_WARN_SECONDS, KEY_HINT, PATH_HINT, SIGNED_BEFORE_SENT_SECONDS, Checker, Options
from .plain_http import in_the_clear
from .restart import REPLAYED, RESTART_NOTE, case_replay, read_recording, recording

__all__ = ["KEY_HINT", "PATH_HINT", "REPLAYED", "RESTART_NOTE", "Options", "Report", "add_arguments", "main",
           "options_from", "run"]

DEADLINE_NOTE = ("the engine's deadline is min(10 s, EVENT_STEP_LEASE_SECONDS/4): 10 s under a lease of 40 s or more;"
                 " with a shorter lease run with --deadline <the lease/4>")


@dataclass
class Case:
    name: str
    verdict: str = "PASS"  # PASS | FAIL | SKIP, as the lines print them
    said: str = ""  # what was expected and what came back; why it was skipped


@dataclass
class Report:
    url: str
    cases: list[Case] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # NOTE (what was not checked) and WARN (passed only just) lines

    @property
    def passed(self) -> bool:
        return all(case.verdict != "FAIL" for case in self.cases)

    def lines(self) -> Iterator[str]:
        for case in self.cases:
            yield f"{case.verdict:4} {case.name}" + (f": {case.said}" if case.said else "")
        yield from self.notes
        failed = sum(case.verdict == "FAIL" for case in self.cases)
        yield f"{len(self.cases)} cases: {failed} failed, {sum(c.verdict == 'SKIP' for c in self.cases)} skipped"

    def as_json(self) -> dict[str, Any]:
        return {"url": self.url, "passed": self.passed, "cases": [asdict(case) for case in self.cases],
                "notes": self.notes}



def run(options: Options, *, progress: Callable[[str], None] | None = None) -> Report:
    check, report = Checker(options), Report(options.url)
    if options.replay:
        read_recording(options.replay)  # a file that is no recording is the operator's mistake, said before anything
    for listed in [Listed(REPLAYED, case_replay, None)] if options.replay else cases(options):
        if check.stopped:
            result = Case(listed.name, "SKIP", f"not run: {check.stopped}")
        elif listed.skipped:
            result = Case(listed.name, "SKIP", listed.skipped)
        elif listed.needs_status and not check.asks_status:
            result = Case(listed.name, "SKIP", "not run: the bridge serves no status endpoint (above)")
        else:
            try:
                result = Case(listed.name, "PASS", listed.run(check))
            except Failed as failed:
                result = Case(listed.name, "FAIL", str(failed))
                if isinstance(failed, BridgeUnreachable):
                    check.stopped = "the engine cannot reach the bridge at this address (above)"
        report.cases.append(result)
        if progress:
            progress(next(iter(Report(options.url, [result]).lines())))
    report.notes = notes(check)
    return report


def notes(check: Checker) -> list[str]:
    """The NOTE and WARN lines: the deadline judged against, an answer slower than half of it, a URL in the clear,
    a bridge clock off this machine's, and what was (or was not) done about a restart."""
    options, said = check.options, []
    took, what = check.slowest
    if took > options.deadline / 2:
        said.append(f"WARN the slowest answer took {took:.1f} s ({what}), more than half the {options.deadline:g} s"
                    " deadline: a busier game or a shorter EVENT_STEP_LEASE_SECONDS would cut it off; answer at once"
                    " and do long work after answering (or in the action's own steps)")
    if exposed := in_the_clear(options.url):
        said.append(f"WARN {options.url} is {exposed}")
    if abs(check.clock_ahead) > CLOCK_WARN_SECONDS:
        said.append(f"WARN the bridge's clock is {abs(check.clock_ahead):.0f} s {'ahead of' if check.clock_ahead > 0 else 'behind'}"
                    " this machine's (its answers' Date): the engine's signature is up to"
                    f" {SIGNED_BEFORE_SENT_SECONDS} s old when it arrives and a bridge allows 300 s either side, so"
                    " a clock further off refuses some of the engine's requests: keep the game's clock synced (NTP)")
    said.append(f"NOTE answers were judged against a {options.deadline:g} s deadline; {DEADLINE_NOTE}")
    if options.replay:
        return said
    if options.record and not check.stopped:
        entries = recording(check)
        folder = os.path.dirname(os.path.abspath(options.record))
        temporary = os.path.join(folder, f".{os.path.basename(options.record)}.{check.run_id}")
        with open(temporary, "w", encoding="utf-8") as file:
            json.dump(entries, file, indent=1)
        os.replace(temporary, options.record)
        said.append(f"NOTE recorded {len(entries['keys'])} keys and their answers in {options.record}: restart the"
                    f" game, then run bridge-check {options.url} --replay {options.record} (each key must be answered"
                    " as recorded)")
    else:
        said.append(f"NOTE {RESTART_NOTE}")
    return said


def main(options: Options, *, as_json: bool, out: Callable[[str], None] = print) -> int:
    report = run(options, progress=None if as_json else out)
    if as_json:
        out(json.dumps(report.as_json(), indent=2))
    else:
        for line in [*report.notes, list(report.lines())[-1]]:
            out(line)
    return 0 if report.passed else 1


def add_arguments(check: argparse.ArgumentParser) -> None:
    """The bridge-check command's arguments (`python -m chalicelib bridge-check`)."""
    check.add_argument("url", help="the bridge's base URL, as GAME_BRIDGE_URL")
    check.add_argument("--action", default="test.noop", help="a harmless action to deliver (default test.noop)")
    check.add_argument("--slow-action", help="an action that takes params {\"seconds\"} that long (the kits' test.slow)")
    check.add_argument("--spawn-action", default="test.spawn",
                       help="an action that leaves a resource with a revert (default test.spawn; '' to skip)")
    check.add_argument("--no-status", action="store_true", help="the bridge serves no status endpoint")
    check.add_argument("--deadline", type=float, default=10.0,
                       help="seconds an exchange may take (default 10): the engine's is min(10,"
                            " EVENT_STEP_LEASE_SECONDS/4), so pass the lease/4 when it is under 40 s; an answer"
                            " slower than half of it is warned about")
    check.add_argument("--record", metavar="FILE", help="write the keys delivered and their answers to FILE, to"
                                                        " --replay them after restarting the game")
    check.add_argument("--replay", metavar="FILE", help="after restarting the game, send the keys --record wrote"
                                                        " again and expect their recorded answers (runs only that)")
    check.add_argument("--json", action="store_true", help="one JSON report for CI instead of lines")


def options_from(args: argparse.Namespace, key: str) -> Options:
    """The Options of parsed `add_arguments`; ValueError for a bad URL or a --replay file that is no recording."""
    if args.record and args.replay:
        raise ValueError("--record and --replay are the two halves of a restart check: one per run")
    if args.replay:
        read_recording(args.replay)
    return Options(args.url, key, args.action, args.slow_action, args.spawn_action or None, not args.no_status,
                   args.deadline, record=args.record, replay=args.replay)
