"""Operator commands: `python -m chalicelib <command>` (SPEC §9)."""

from __future__ import annotations

import argparse
import sys

from .config import ConfigError, Settings
from .runtime import db_params


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    from .migrate import migrate

    applied = migrate(db_params(settings))
    print(f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else "; schema is current"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m chalicelib", description="Event run engine operator commands")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="bring the database to the current schema").set_defaults(run=cmd_migrate)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args, Settings.from_env())
    except ConfigError as error:
        print(f"configuration error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
