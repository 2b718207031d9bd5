"""Operator commands that ship: `python -m chalicelib migrate | tick` (development commands are in devtools)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import pymysql

from .config import Settings
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m chalicelib", description="Event run engine operator commands")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="bring the database to the current schema").set_defaults(run=cmd_migrate)
    tick = sub.add_parser("tick", help="tick whenever a run wakes until Ctrl-C (or once, with --once)")
    tick.add_argument("--once", action="store_true", help="exactly one tick, then exit")
    tick.add_argument("--budget", type=float, help="seconds the tick may take work for (default EVENT_TICK_SECONDS)")
    tick.set_defaults(run=cmd_tick)
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
    return answered(lambda: args.run(args, Settings.from_env()))


if __name__ == "__main__":
    sys.exit(main())
