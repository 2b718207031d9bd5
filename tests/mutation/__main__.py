"""`python -m tests.mutation [--check] [--only NAME ...]`: run the guard mutations, print the score."""

from __future__ import annotations

import argparse
import sys

from .catalogue import MUTATIONS
from .engine import DEFAULT_TIMEOUT, Result, baseline, check, run


def _line(i: int, total: int, result: Result) -> None:
    m = result.mutation
    what = {
        "killed": f"killed by {result.killer}",
        "timeout": "killed (its tests hung past the timeout)",
        "survived": "SURVIVED" if m.equivalent is None else "survived (equivalent)",
        "broken": "BROKEN: the mutant does not import or collect",
    }[result.verdict]
    print(f"[{i:>3}/{total}] {m.name:<48} {what}  ({result.seconds:.0f} s)", flush=True)
    if result.verdict in ("survived", "broken") and m.equivalent is None:
        print("\n".join("        " + line for line in result.output.strip().splitlines()[-15:]), flush=True)


def score(results: list[Result]) -> int:
    real = [r for r in results if r.mutation.equivalent is None]
    killed = [r for r in real if r.killed]
    print(f"\nscore: {len(killed)} of {len(real)} non-equivalent guard mutations killed"
          + (f" ({100 * len(killed) / len(real):.0f} %)" if real else ""))
    for r in real:
        if not r.killed:
            print(f"  {r.verdict}: {r.mutation.name} (guard {r.mutation.guard})")
    for r in results:
        if r.mutation.equivalent is not None:
            note = "" if not r.killed else f"  <- but killed by {r.killer}: is it really equivalent?"
            print(f"  equivalent: {r.mutation.name}: {r.mutation.equivalent}{note}")
    return 0 if len(killed) == len(real) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only verify each guard is marked once and each snippet occurs once in it")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run just these mutations")
    parser.add_argument("--list", action="store_true", help="print the mutations' names and guards")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the named modules")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per mutation's test run")
    args = parser.parse_args(argv)

    problems = check(MUTATIONS)
    if problems:
        print("the mutation list no longer matches the code (move a marker with its clause, or fix the snippet in catalogue.py):")
        print("\n".join("  " + p for p in problems))
        return 2
    if args.check:
        print(f"{len(MUTATIONS)} mutations, every snippet applies exactly once")
        return 0
    chosen = MUTATIONS
    if args.only:
        by_name = {m.name: m for m in MUTATIONS}
        unknown = [n for n in args.only if n not in by_name]
        if unknown:
            print(f"unknown mutation(s): {', '.join(unknown)}")
            return 2
        chosen = [by_name[n] for n in args.only]
    if args.list:
        for m in chosen:
            print(f"{m.name:<48} {m.guard}" + ("  (equivalent)" if m.equivalent else ""))
        return 0
    if not args.no_baseline:
        print("baseline: the named test modules, unmutated …", flush=True)
        passed, output = baseline(chosen, timeout=args.timeout)
        if not passed:
            print(output[-4000:])
            print("the unmutated tests fail: no kill would mean anything")
            return 2
    print(f"{len(chosen)} mutations, each on a scratch copy", flush=True)
    return score(run(chosen, timeout=args.timeout, progress=_line))


if __name__ == "__main__":
    sys.exit(main())
