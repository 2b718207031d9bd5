"""Development commands: `python -m devtools dev | token`. The operator commands that ship are `python -m chalicelib`."""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn

from chalicelib.__main__ import answered
from chalicelib.api.auth import ADMIN, ROLES
from chalicelib.config import Settings
from chalicelib.events.errors import ConfigError

from .dev import CHATS, DEMOS


def cmd_token(args: argparse.Namespace) -> int:
    from .dev import with_dev_stage
    from .tokens import mint

    if args.ttl <= 0:
        print(f"--ttl must be a positive number of seconds, got {args.ttl}", file=sys.stderr)
        return 2
    roles = args.role or [ADMIN]
    try:
        settings = Settings.from_env(with_dev_stage(os.environ))
        print(mint(settings, sub=args.sub or f"dev-{roles[0]}", roles=roles, ttl_seconds=args.ttl))
    except ValueError as error:
        raise ConfigError(str(error)) from None
    return 0


def cmd_dev(args: argparse.Namespace) -> int:
    from .dev import run_dev

    return run_dev(args.demo, args.chat)


class OneLineParser(argparse.ArgumentParser):
    """A wrong argument is one line (the usage is a --help away), exit 2 as argparse's."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m devtools", description="Event run engine development commands")
    sub = parser.add_subparsers(dest="command", required=True)
    token = sub.add_parser("token", help="print a development token (only the token), signed with EVENTS_JWT_SECRET:"
                           " the dev stage's settings in .chalice/config.json unless the environment sets them")
    token.add_argument("--role", action="append", choices=ROLES, help="a role to grant (repeatable; default admin)")
    token.add_argument("--sub", help="who the token names, the actor in the run log (default dev-<first role>)")
    token.add_argument("--ttl", type=int, default=8 * 3600, help="seconds until it expires (default 8 hours)")
    token.set_defaults(run=cmd_token)
    dev = sub.add_parser("dev", help="the engine locally: API, demo game bridge and tick loop on a seeded demo event")
    dev.add_argument("--demo", choices=DEMOS, default="calm",
                     help="calm: the demo bridge answers done; failures: a step fails once, another answers 503 twice,"
                          " a third takes 8 s; none: no demo bridge, your own at GAME_BRIDGE_URL (docs/game-bridge.md)")
    dev.add_argument("--chat", choices=CHATS, default="none",
                     help="discord: the cues to a loopback fake Discord whose page (its URL printed) presses their buttons")
    dev.set_defaults(run=cmd_dev)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return answered(lambda: args.run(args))


if __name__ == "__main__":
    sys.exit(main())
