"""A resolver stand-in for `make deploy`'s preflight (infra/preflight.py): host names answered from a table, never
from the network, so a test says which peers have an IPv6 address and which do not.

    python -m tests.support.resolver [infra.deploy arguments]   # make deploy, every host dual-stack
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from infra import deploy, preflight


class Hosts:
    """Every name dual-stack, but those given as IPv4-only (an A record alone) or unknown (no record at all)."""

    def __init__(self, ipv4_only: Iterable[str] = (), unknown: Iterable[str] = ()):
        self.ipv4_only, self.unknown = set(ipv4_only), set(unknown)
        self.asked: list[str] = []

    def __call__(self, host: str) -> preflight.Addresses:
        self.asked.append(host)
        if host in self.unknown:
            return preflight.Addresses(ipv4=False, ipv6=False)
        return preflight.Addresses(ipv4=True, ipv6=host not in self.ipv4_only)


if __name__ == "__main__":
    preflight.resolve = Hosts()
    sys.exit(deploy.main(sys.argv[1:]))
