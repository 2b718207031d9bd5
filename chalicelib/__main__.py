"""Operator commands that ship: `python -m chalicelib migrate | tick | purge | bridge-check` (development commands are in
devtools)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

import pymysql

from .config import Settings
from .events import bridge_check
from .events.errors import ConfigError
from .runtime import db_params

if TYPE_CHECKING:  # typing only: migrate does not load the runner
    from .events.runner.tick import TickReport


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    from .migrate import migrate

    applied = migrate(db_params(settings), tls_mode=settings.db_tls, tls_ca=settings.db_tls_ca)
    print(f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else "; schema is current"))
    return 0


def cmd_tick(args: argparse.Namespace, settings: Settings) -> int:
    from .events.runner.command import tick_forever, tick_once
    from .events.runner.compose import process_runner

    def show(report: TickReport) -> None:
        print(json.dumps(report.summary()), flush=True)

    runner = process_runner()
    if args.once:
        try:
            report = tick_once(runner, args.budget or settings.tick_seconds)
        finally:
            runner.close()
        show(report)
        return 1 if report.errors else 0
    print("ticking whenever a run wakes (looking once a second); Ctrl-C stops after the steps in hand", file=sys.stderr, flush=True)
    tick_forever(runner, settings.tick_seconds, show)
    print("stopped", file=sys.stderr, flush=True)
    return 0


def parse_cut(text: str) -> datetime:
    from .events.errors import Invalid
    from .events.purge import cut_of

    try:
        return cut_of(text)
    except Invalid as refused:
        raise argparse.ArgumentTypeError(str(refused)) from None


def cmd_purge(args: argparse.Namespace, settings: Settings) -> int:
    from . import runtime
    from .events.errors import Invalid
    from .events.purge import purge
    from .events.store.history import Purged

    def show(so_far: Purged) -> None:
        print(f"purged {so_far.runs} run(s) so far: " + ", ".join(f"{n} {table}" for table, n in so_far.rows.items() if n),
              file=sys.stderr, flush=True)

    try:
        report = purge(runtime.database(), args.ended_before, runtime.clock().now(), dry_run=args.dry_run, progress=show)
    except Invalid as refused:
        print(f"refused: {refused}", file=sys.stderr)
        return 2
    print(json.dumps(report.summary()), flush=True)
    return 0


def cmd_bridge_check(args: argparse.Namespace) -> int:
    import os

    key = os.environ.get("GAME_BRIDGE_SECRET", "")
    if not key:
        raise ConfigError("GAME_BRIDGE_SECRET must hold the bridge key the bridge checks signatures with")
    try:
        return bridge_check.main(bridge_check.options_from(args, key), as_json=args.json)
    except ValueError as error:  # the URL, or --record and --replay as given
        raise ConfigError(str(error)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m chalicelib", description="Event run engine operator commands")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="bring the database to the current schema").set_defaults(run=cmd_migrate)
    tick = sub.add_parser("tick", help="tick whenever a run wakes until Ctrl-C (or once, with --once)")
    tick.add_argument("--once", action="store_true", help="exactly one tick, then exit")
    tick.add_argument("--budget", type=float, help="seconds the tick may take work for (default EVENT_TICK_SECONDS)")
    tick.set_defaults(run=cmd_tick)
    purge = sub.add_parser("purge", help="delete the history of runs that finished before a date",
                           description="Deletes every row of the runs that finished before the cut (at least 7 days"
                                       " ago), a batch per transaction, oldest first; keeps a run whose cleanup is under"
                                       " way or that left something a cleanup may still revert. Safe to stop and run"
                                       " again. Prints its progress, then one JSON summary.")
    purge.add_argument("--ended-before", required=True, type=parse_cut, metavar="DATE",
                       help="the cut: YYYY-MM-DD (midnight UTC) or an ISO date and time")
    purge.add_argument("--dry-run", action="store_true", help="count what would be deleted, delete nothing")
    purge.set_defaults(run=cmd_purge)
    check = sub.add_parser("bridge-check", help="drive a game bridge through the protocol and say what is wrong",
                           description="Each case on one line, passed, failed (what was expected, what came back) or"
                                       " skipped (why); exits 1 on any failure. The key: GAME_BRIDGE_SECRET.")
    bridge_check.add_arguments(check)
    check.set_defaults(run=None, check=cmd_bridge_check)
    return parser


def answered(command: Callable[[], int]) -> int:
    """A command's exit status; a configuration error exits 2 and an unreachable database 3, each said in one line."""
    try:
        return command()
    except ConfigError as error:
        print(f"configuration error: {error}", file=sys.stderr)
        return 2
    except pymysql.err.OperationalError as error:  # connection attempts already spent: say so in one line
        print(f"database unavailable: {error.args[-1]}", file=sys.stderr)
        return 3


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.run is None:  # needs no settings and no database
        return answered(lambda: args.check(args))
    return answered(lambda: args.run(args, Settings.from_env()))


if __name__ == "__main__":
    sys.exit(main())
