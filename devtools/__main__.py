"""Development commands: `python -m devtools dev | token`. The operator commands that ship are `python -m chalicelib`."""

from __future__ import annotations

import argparse
import sys

from chalicelib.__main__ import answered
from chalicelib.api.auth import ROLES
from chalicelib.config import Settings
from chalicelib.events.errors import ConfigError


def cmd_token(args: argparse.Namespace) -> int:
    from .tokens import mint

    try:
        print(mint(Settings.from_env(), sub=args.sub, roles=args.role, ttl_seconds=args.ttl))
    except ValueError as error:
        raise ConfigError(str(error)) from None
    return 0


def cmd_dev(args: argparse.Namespace) -> int:
    from .dev import run_dev

    return run_dev()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m devtools", description="Event run engine development commands")
    sub = parser.add_subparsers(dest="command", required=True)
    token = sub.add_parser("token", help="print a development token signed with EVENTS_JWT_SECRET")
    token.add_argument("--role", action="append", required=True, choices=ROLES, help="a role to grant (repeatable)")
    token.add_argument("--sub", required=True, help="who the token names (the actor in the run log)")
    token.add_argument("--ttl", type=int, default=8 * 3600, help="seconds until it expires (default 8 hours)")
    token.set_defaults(run=cmd_token)
    sub.add_parser("dev", help="the engine locally: API, demo game bridge and tick loop on a seeded demo event").set_defaults(
        run=cmd_dev
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return answered(lambda: args.run(args))


if __name__ == "__main__":
    sys.exit(main())
